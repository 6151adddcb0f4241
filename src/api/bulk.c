/*-------------------------------------------------------------------------
 *
 * bulk.c
 *	  openwop.resolve_interrupts(interrupt_ids, resume_value,
 *	  idempotency_key): one answer given to a set of interrupts.  Each is
 *	  resolved in a subtransaction of its own, exactly as resolve_interrupt()
 *	  resolves it (eligibility, policies, separation of duties, quorum, the
 *	  record, tokens spent), and itemised with the HTTP status and body the
 *	  single call answers: a refused item undoes nothing of another.
 *
 * Items are resolved in the order of their runs, so two bulk calls over
 * the same runs take the run locks in one order and do not deadlock; they
 * are answered in the order given.  An error that is not a refusal (a
 * serialization failure, a cancel, out of memory) ends the whole call, as
 * it would end the single one.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "base/base.h"
#include "store/store.h"
#include "auth/auth.h"
#include "api/internal.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

PG_FUNCTION_INFO_V1(ow_resolve_interrupts);

#define BULK_ENDPOINT "resolve_interrupts"

static int	ow_bulk_resolve_max = 500;

void
ow_define_bulk_settings(void)
{
	DefineCustomIntVariable("openwop.bulk_resolve_max",
							"The most interrupts one call of openwop.resolve_interrupts() may name.",
							"A longer list is refused whole (400 validation_error): each item holds its run's lock to the end of the transaction.",
							&ow_bulk_resolve_max,
							500, 1, 10000,
							PGC_SUSET,
							0,
							NULL, NULL, NULL);
}

/* One item: its id as given, and what it was answered. */
typedef struct BulkItem
{
	const OwCaller *caller;
	const char *interrupt_id;	/* as given; NULL: a null element */
	char	   *canonical;		/* "tenant/opaque" when it names an interrupt of
								 * the caller's tenant, else NULL */
	Jsonb	   *value;
	MemoryContext resultctx;
	char	   *run_id;			/* its run and node, when known (its id as stored in */
	char	   *node_id;		/* the caller's tenant): the order items are resolved in */
	int			position;		/* in the list given */
	int			status;
	Jsonb	   *result;
} BulkItem;

/*
 * One item, in an SPI connection of its own: all it reads and builds is
 * freed when it is done but a copy of its answer (in resultctx), so a call
 * of 500 items works in the memory of one rather than of 500 (before: 2.2x
 * the backend CPU of single resolves per item, most of it page faults).
 */
static void
resolve_item(void *arg)
{
	BulkItem	   *it = arg;
	MemoryContext itemctx;
	Jsonb	   *answer;

	if (it->interrupt_id == NULL)
		ow_validation_error("interruptIds", "an interrupt id must not be null");
	SPI_connect();
	itemctx = CurrentMemoryContext;
	if (it->run_id)
		answer = ow_resolve_in_run(it->caller, it->canonical, it->run_id, it->node_id, it->value, itemctx);
	else
		answer = ow_resolve_by_id(it->caller, it->interrupt_id, it->value, itemctx);
	it->result = MemoryContextAlloc(it->resultctx, VARSIZE(answer));
	memcpy(it->result, answer, VARSIZE(answer));
	SPI_finish();
}

/* By run (items whose run is not known first), then as given. */
static int
item_order(const void *a, const void *b)
{
	const BulkItem *x = *(BulkItem *const *) a;
	const BulkItem *y = *(BulkItem *const *) b;

	if ((x->run_id == NULL) != (y->run_id == NULL))
		return x->run_id == NULL ? -1 : 1;
	if (x->run_id != NULL)
	{
		int			c = strcmp(x->run_id, y->run_id);

		if (c != 0)
			return c;
	}
	return x->position - y->position;
}

/*
 * The items' ids in their canonical form "tenant/opaque" (a UUID, a "~2F"
 * projection), NULL where one names no interrupt of the caller's tenant:
 * what read_runs looks up, so that every item of a known interrupt is
 * resolved in the order of its run, however it was named.  A malformed id
 * is refused by its own item.
 */
static ArrayType *
canonical_ids(BulkItem *items, int n, const char *tenant)
{
	Datum	   *elems = palloc(sizeof(Datum) * (n + 1));
	bool	   *nulls = palloc(sizeof(bool) * (n + 1));
	int			dims[1] = {n};
	int			lbs[1] = {1};
	int			i;

	for (i = 0; i < n; i++)
	{
		BulkItem   *it = &items[i];

		it->canonical = it->interrupt_id ? ow_canonical_interrupt_id(it->interrupt_id, tenant) : NULL;
		nulls[i] = it->canonical == NULL;
		elems[i] = it->canonical ? CStringGetTextDatum(it->canonical) : (Datum) 0;
	}
	return construct_md_array(elems, nulls, 1, dims, lbs, TEXTOID, -1, false, TYPALIGN_INT);
}

/* The run of each item that names an interrupt of the caller's tenant. */
static void
read_runs(const char *tenant, ArrayType *ids, BulkItem *items, int n)
{
	static OwQuery q = {"SELECT u.i, x.run_id, x.node_id"
		"  FROM pg_catalog.unnest($2) WITH ORDINALITY AS u(id, i)"
		"  JOIN openwop.interrupts x ON x.tenant OPERATOR(pg_catalog.=) $1"
		"                           AND x.interrupt_id OPERATOR(pg_catalog.=) u.id",
	2, {TEXTOID, TEXTARRAYOID}, SPI_OK_SELECT};
	Datum		args[2];
	uint64		rows;
	uint64		r;

	args[0] = CStringGetTextDatum(tenant);
	args[1] = PointerGetDatum(ids);
	rows = ow_exec(&q, args, NULL, false, 0);
	for (r = 0; r < rows; r++)
	{
		int64		i = ow_col_int64(r, 1) - 1;

		if (i >= 0 && i < n)
		{
			items[i].run_id = ow_col_text(r, 2);
			items[i].node_id = ow_col_text(r, 3);
		}
	}
}

static void emit(FunctionCallInfo fcinfo, Jsonb *answer);

/* The items as the rows of the SQL function, in the order given. */
static void
emit_items(FunctionCallInfo fcinfo, BulkItem *items, int n)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			i;

	for (i = 0; i < n; i++)
	{
		Datum		values[3];
		bool		nulls[3] = {false};

		nulls[0] = items[i].interrupt_id == NULL;
		values[0] = nulls[0] ? (Datum) 0 : CStringGetTextDatum(items[i].interrupt_id);
		values[1] = Int32GetDatum(items[i].status);
		values[2] = JsonbPGetDatum(items[i].result);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

/* The answer: {items: [{interruptId, status, result}]}, in the order given. */
static Jsonb *
answer_of(BulkItem *items, int n)
{
	OwJson		j;
	int			i;

	owj_begin(&j);
	owj_begin_array(&j, "items");
	for (i = 0; i < n; i++)
	{
		owj_begin_object(&j, NULL);
		owj_jsonb(&j, "result", items[i].result);
		owj_int(&j, "status", items[i].status);
		if (items[i].interrupt_id)
			owj_str(&j, "interruptId", items[i].interrupt_id);
		else
			owj_null(&j, "interruptId");
		owj_end_object(&j);
	}
	owj_end_array(&j);
	return owj_end(&j);
}

/*
 * Resolve the interrupts ids (n of them, NULL for a null element) with
 * value under idem_key (or NULL): the answer, built
 * in the caller's context, or the stored one an earlier call under the key
 * gave (marked "idempotentReplay": true).
 */
static Jsonb *
resolve_all(char **ids, int n, Jsonb *value, const char *idem_key,
			FunctionCallInfo srf)
{
	OwCall		call;
	BulkItem   *items;
	BulkItem  **order;
	Jsonb	   *answer;
	int			i;

	if (n > ow_bulk_resolve_max)
	{
		OwDetails	d;

		ow_details_init(&d);
		ow_details_str(&d, "field", "interruptIds");
		ow_details_int(&d, "count", n);
		ow_details_int(&d, "limit", ow_bulk_resolve_max);
		ow_details_str(&d, "setting", "openwop.bulk_resolve_max");
		ow_raise(OW_VALIDATION_ERROR, &d,
				 "Resolve the interrupts in calls of at most openwop.bulk_resolve_max each.",
				 "interrupt_ids names %d interrupts, more than the %d one call may resolve",
				 n, ow_bulk_resolve_max);
	}
	if (idem_key)
		ow_check_idempotency_key(idem_key);
	ow_caller(&call.caller);
	ow_check_scope(&call.caller);

	ow_call_enter(&call);
	if (idem_key)
	{
		OwJson		j;
		Jsonb	   *stored;

		owj_begin(&j);
		owj_begin_array(&j, "interruptIds");
		for (i = 0; i < n; i++)
		{
			if (ids[i])
				owj_str(&j, NULL, ids[i]);
			else
				owj_null(&j, NULL);
		}
		owj_end_array(&j);
		owj_jsonb(&j, "resumeValue", value);
		stored = ow_idempotency_claim(call.caller.subject.tenant, BULK_ENDPOINT, idem_key, owj_end(&j),
									  &call.caller.subject, call.callerctx);
		if (stored)
		{
			ow_call_end(&call);
			if (srf)
				emit(srf, stored);
			ow_call_finish(&call);
			return stored;
		}
	}

	/* the items outlive SPI: their rows are emitted after the loop */
	items = MemoryContextAllocZero(call.callerctx, sizeof(BulkItem) * (n + 1));
	order = palloc(sizeof(BulkItem *) * (n + 1));
	for (i = 0; i < n; i++)
	{
		items[i].caller = &call.caller;
		items[i].interrupt_id = ids[i];
		items[i].value = value;
		items[i].resultctx = call.callerctx;
		items[i].position = i;
		order[i] = &items[i];
	}
	read_runs(call.caller.subject.tenant, canonical_ids(items, n, call.caller.subject.tenant), items, n);
	qsort(order, n, sizeof(BulkItem *), item_order);
	for (i = 0; i < n; i++)
	{
		BulkItem   *it = order[i];
		ErrorData  *edata = ow_try_subtransaction(resolve_item, it);

		if (edata == NULL)
			it->status = 200;
		else
		{
			MemoryContext old = MemoryContextSwitchTo(call.callerctx);

			it->result = ow_refusal_envelope(edata, &it->status);
			MemoryContextSwitchTo(old);
		}
	}

	/* the rows; the answer as one object when stored under the key or asked for (HTTP) */
	if (srf)
		emit_items(srf, items, n);
	answer = NULL;
	if (idem_key || srf == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(call.callerctx);

		answer = answer_of(items, n);
		MemoryContextSwitchTo(old);
	}
	if (idem_key)
		ow_idempotency_complete(call.caller.subject.tenant, BULK_ENDPOINT, idem_key, answer);
	ow_call_end(&call);
	ow_call_finish(&call);
	return answer;
}

/* The items of a stored answer as the rows of the SQL function. */
static void
emit(FunctionCallInfo fcinfo, Jsonb *answer)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	JsonbValue *list = owj_get(answer, "items");
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;

	if (list == NULL || !owj_is_array(list))
		elog(ERROR, "the answer of a bulk resolve has no items");
	it = JsonbIteratorInit(list->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		JsonbValue *id;
		JsonbValue *status;
		JsonbValue *result;
		Datum		values[3];
		bool		nulls[3] = {false};

		if (tok != WJB_ELEM || v.type != jbvBinary)
			continue;
		id = owj_get_container(v.val.binary.data, "interruptId");
		status = owj_get_container(v.val.binary.data, "status");
		result = owj_get_container(v.val.binary.data, "result");
		if (id == NULL || status == NULL || status->type != jbvNumeric || result == NULL)
			elog(ERROR, "an item of a bulk resolve's answer is malformed");
		nulls[0] = id->type != jbvString;
		values[0] = nulls[0] ? (Datum) 0 : CStringGetTextDatum(owj_string(id));
		values[1] = DirectFunctionCall1(numeric_int4, NumericGetDatum(status->val.numeric));
		values[2] = JsonbPGetDatum(owj_to_jsonb(result));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

/* The resume value (argument 1) and the idempotency key (argument 2) of either form. */
static Jsonb *
value_and_key(FunctionCallInfo fcinfo, char **idem_key)
{
	if (PG_ARGISNULL(1))
		ow_validation_error("resumeValue", "resume_value is required");
	ow_check_json_arg(fcinfo, 1, "resumeValue", true);
	*idem_key = PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2));
	return PG_GETARG_JSONB_P(1);
}

/*
 * openwop.resolve_interrupts(interrupt_ids text[], resume_value jsonb,
 *	idempotency_key text) → TABLE(interrupt_id text, status integer, result jsonb)
 */
Datum
ow_resolve_interrupts(PG_FUNCTION_ARGS)
{
	ArrayType  *ids;
	Datum	   *elems;
	bool	   *elem_nulls;
	char	  **strs;
	int			n;
	int			i;
	Jsonb	   *value;
	char	   *idem_key;

	ow_refuse_read_only("resolve_interrupts()");
	if (PG_ARGISNULL(0))
		ow_validation_error("interruptIds", "interrupt_ids must not be null");
	value = value_and_key(fcinfo, &idem_key);
	ids = PG_GETARG_ARRAYTYPE_P(0);
	if (ARR_NDIM(ids) > 1)
		ow_validation_error("interruptIds", "interrupt_ids must be a one-dimensional array");
	deconstruct_array(ids, TEXTOID, -1, false, TYPALIGN_INT, &elems, &elem_nulls, &n);
	strs = palloc(sizeof(char *) * (n + 1));
	for (i = 0; i < n; i++)
		strs[i] = elem_nulls[i] ? NULL : TextDatumGetCString(elems[i]);
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	(void) resolve_all(strs, n, value, idem_key, fcinfo);
	return (Datum) 0;
}

/*
 * The same for the PostgREST surface (postgrest.c): (interruptIds jsonb,
 * resumeValue jsonb, Idempotency-Key text) → {items: [...]}, a replay
 * marked "idempotentReplay": true.
 */
Datum
ow_resolve_interrupts_json(PG_FUNCTION_ARGS)
{
	Jsonb	   *list;
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	char	  **strs;
	int			n = 0;
	Jsonb	   *value;
	char	   *idem_key;

	ow_refuse_read_only("resolve_interrupts()");
	if (PG_ARGISNULL(0))
		ow_validation_error("interruptIds", "interruptIds is required");
	list = PG_GETARG_JSONB_P(0);
	if (!JB_ROOT_IS_ARRAY(list) || JB_ROOT_IS_SCALAR(list))
		ow_validation_error("interruptIds", "interruptIds must be an array of interrupt ids");
	value = value_and_key(fcinfo, &idem_key);
	strs = palloc(sizeof(char *) * (JB_ROOT_COUNT(list) + 1));
	it = JsonbIteratorInit(&list->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok != WJB_ELEM)
			continue;
		if (v.type == jbvNull)
			strs[n] = NULL;
		else if (v.type == jbvString)
			strs[n] = pnstrdup(v.val.string.val, v.val.string.len);
		else
			ow_validation_error("interruptIds", "interruptIds must be an array of interrupt ids, not of %s",
								owj_type_name(&v));
		n++;
	}
	PG_RETURN_JSONB_P(resolve_all(strs, n, value, idem_key, NULL));
}
