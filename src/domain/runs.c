/*-------------------------------------------------------------------------
 *
 * runs.c
 *	  The engine-side run lifecycle: create_run (its options, the
 *	  definition and the configurable checked), complete_run, fail_run,
 *	  cancel_run, and the end of a run (ow_end_run: open executions and
 *	  pending interrupts cancelled, then the one terminal event).
 *
 * Each function validates its arguments before touching any table (a
 * refusal changes nothing), then takes the run row lock, checks state,
 * appends its events and saves the run, all in the caller's transaction.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "ipc/ipc.h"
#include "base/base.h"
#include "store/store.h"
#include "auth/auth.h"
#include "domain/internal.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/numeric.h"

PG_FUNCTION_INFO_V1(ow_create_run);
PG_FUNCTION_INFO_V1(ow_complete_run);
PG_FUNCTION_INFO_V1(ow_fail_run);
PG_FUNCTION_INFO_V1(ow_cancel_run);

/*
 * The members of options are named bare in a refusal ("runId", not
 * "options.runId"), unlike the "<prefix>.<key>" fields of members.c.
 */
static void
refuse_unknown_options(Jsonb *options, const char *const *allowed)
{
	const char *unknown = owj_unknown_key(&options->root, allowed);

	if (unknown)
		ow_validation_error(unknown, "options has unknown member \"%s\"", unknown);
}

static char *
option_string(Jsonb *options, const char *key)
{
	JsonbValue *v = owj_get(options, key);

	if (v != NULL && v->type != jbvString)
		ow_validation_error(key, "%s must be a string, not %s", key, owj_type_name(v));
	return owj_string(v);
}

/*
 * definition {nodes: [{id, typeId?}], edges: [{from, to, triggerRule?}]}:
 * unique, well-formed node ids, edges between known nodes, known rules.
 */
static void
validate_definition(JsonbValue *defv)
{
	static const char *const def_keys[] = {"nodes", "edges", NULL};
	static const char *const node_keys[] = {"id", "typeId", NULL};
	static const char *const edge_keys[] = {"from", "to", "triggerRule", NULL};
	static const char *const rules[] = {"all_success", "any_success", "all_complete",
	"none_failed", "any_failed", NULL};
	JsonbContainer *def;
	JsonbValue *nodes;
	JsonbValue *edges;
	int			nnodes;
	char	  **ids;
	int			i;

	if (!owj_is_object(defv))
		ow_validation_error("definition", "definition must be a JSON object {nodes, edges}");
	def = defv->val.binary.data;
	ow_member_closed(def, def_keys, "definition");

	nodes = owj_get_container(def, "nodes");
	if (!owj_is_array(nodes))
		ow_validation_error("definition.nodes", "definition.nodes must be an array");
	nnodes = JsonContainerSize(nodes->val.binary.data);
	ids = palloc0(sizeof(char *) * (nnodes + 1));
	for (i = 0; i < nnodes; i++)
	{
		JsonbValue *n = getIthJsonbValueFromContainer(nodes->val.binary.data, i);
		char	   *field = psprintf("definition.nodes[%d]", i);
		char	   *type_id;
		int			k;

		if (!owj_is_object(n))
			ow_validation_error(field, "%s must be an object {id, typeId?}", field);
		ow_member_closed(n->val.binary.data, node_keys, field);
		ids[i] = ow_member_str(n->val.binary.data, field, "id", true, 0, 0);
		if (!ow_valid_author_id(ids[i]))
			ow_validation_error(ow_field_name(field, "id"), "\"%s\" is not a valid node id", ids[i]);
		for (k = 0; k < i; k++)
			if (strcmp(ids[k], ids[i]) == 0)
				ow_validation_error(ow_field_name(field, "id"), "node id \"%s\" appears twice", ids[i]);
		type_id = ow_member_str(n->val.binary.data, field, "typeId", false, 0, 0);
		if (type_id && !ow_valid_type_id(type_id))
			ow_validation_error(ow_field_name(field, "typeId"), "\"%s\" is not a valid node type id", type_id);
	}

	edges = owj_get_container(def, "edges");
	if (edges == NULL)
		return;
	if (!owj_is_array(edges))
		ow_validation_error("definition.edges", "definition.edges must be an array");
	for (i = 0; i < (int) JsonContainerSize(edges->val.binary.data); i++)
	{
		JsonbValue *e = getIthJsonbValueFromContainer(edges->val.binary.data, i);
		char	   *field = psprintf("definition.edges[%d]", i);
		const char *ends[2] = {"from", "to"};
		char	   *rule;
		int			side;

		if (!owj_is_object(e))
			ow_validation_error(field, "%s must be an object {from, to, triggerRule?}", field);
		ow_member_closed(e->val.binary.data, edge_keys, field);
		for (side = 0; side < 2; side++)
		{
			char	   *id = ow_member_str(e->val.binary.data, field, ends[side], true, 0, 0);
			bool		known = false;
			int			k;

			for (k = 0; k < nnodes; k++)
				known |= strcmp(ids[k], id) == 0;
			if (!known)
				ow_validation_error(ow_field_name(field, ends[side]),
									"edge endpoint \"%s\" is not a node of the definition", id);
		}
		rule = ow_member_str(e->val.binary.data, field, "triggerRule", false, 0, 0);
		if (rule)
		{
			const char *const *r;
			bool		known = false;

			for (r = rules; *r; r++)
				known |= strcmp(*r, rule) == 0;
			if (!known)
				ow_validation_error(ow_field_name(field, "triggerRule"),
									"triggerRule \"%s\" is not one of all_success, any_success, all_complete, none_failed, any_failed",
									rule);
		}
	}
}

/*
 * configurable (createRun): OpenWOP's closed, versioned object,
 * schemas/v2/configurable.schema.json @96c270a4 with BudgetPolicy inlined,
 * in the subset ow_schema_validate() evaluates.  Two readings differ from
 * the file: run.escalationThreshold is a number in [0, 1], the range of a
 * low-confidence threshold (the file types it an integer >= 0, which cannot
 * express the 0.7 default), and the extensions key grammar, a
 * patternProperties upstream, is checked in C (the subset has no
 * patternProperties).
 */
#define CONFIGURABLE_INT(min) "{\"type\": \"integer\", \"minimum\": " #min "}"
#define CONFIGURABLE_STRINGS "{\"type\": \"array\", \"items\": {\"type\": \"string\"}, \"uniqueItems\": true}"
#define CONFIGURABLE_SCHEMA \
	"{\"type\": \"object\", \"additionalProperties\": false, \"required\": [\"version\"]," \
	" \"properties\": {" \
	"  \"version\": {\"const\": 1}," \
	"  \"run\": {\"type\": \"object\", \"additionalProperties\": false, \"properties\": {" \
	"    \"recursionLimit\": " CONFIGURABLE_INT(1) "," \
	"    \"runTimeoutMs\": " CONFIGURABLE_INT(1) "," \
	"    \"maxLoopIterations\": " CONFIGURABLE_INT(1) "," \
	"    \"escalationThreshold\": {\"type\": \"number\", \"minimum\": 0, \"maximum\": 1}}}," \
	"  \"ai\": {\"type\": \"object\", \"additionalProperties\": false, \"properties\": {" \
	"    \"provider\": {\"type\": \"string\"}," \
	"    \"model\": {\"type\": \"string\"}," \
	"    \"temperature\": {\"type\": \"number\", \"minimum\": 0, \"maximum\": 2}," \
	"    \"maxTokens\": " CONFIGURABLE_INT(1) "," \
	"    \"credentialRef\": {\"type\": \"string\"}," \
	"    \"promptOverrides\": {\"type\": \"object\", \"additionalProperties\": {\"type\": \"string\"}}," \
	"    \"mockProvider\": {\"type\": \"object\"}," \
	"    \"reasoningVerbosity\": {\"type\": \"string\", \"enum\": [\"none\", \"summary\", \"full\"]}," \
	"    \"maxRefusals\": " CONFIGURABLE_INT(0) "}}," \
	"  \"distillation\": {\"type\": \"object\", \"additionalProperties\": false, \"properties\": {" \
	"    \"tokenBudget\": " CONFIGURABLE_INT(1) "}}," \
	"  \"budget\": {\"type\": \"object\", \"additionalProperties\": false, \"properties\": {" \
	"    \"maxTokens\": " CONFIGURABLE_INT(1) "," \
	"    \"maxCostUsd\": {\"type\": \"number\", \"minimum\": 0}," \
	"    \"maxToolCalls\": " CONFIGURABLE_INT(1) "," \
	"    \"maxRetries\": " CONFIGURABLE_INT(0) "," \
	"    \"modelAllow\": " CONFIGURABLE_STRINGS "," \
	"    \"modelDeny\": " CONFIGURABLE_STRINGS "," \
	"    \"thresholdPercent\": {\"type\": \"number\", \"minimum\": 0, \"maximum\": 100}," \
	"    \"onExhaustion\": {\"type\": \"string\", \"enum\": [\"fail\", \"interrupt\"]}}}," \
	"  \"extensions\": {\"type\": \"object\", \"additionalProperties\": {\"type\": \"object\"}}}}"

/* A refused configurable: details.field, and details.errors when the schema failed. */
#define configurable_error(field, errors, ...) \
	ow_validation_errors((field), (errors), \
						 "configurable is the closed OpenWOP object {version: 1, run?, ai?, distillation?, budget?, extensions?}.", \
						 __VA_ARGS__)

/* The schema above, parsed once per backend. */
static Jsonb *
configurable_schema(void)
{
	static Jsonb *schema = NULL;

	if (schema == NULL)
	{
		Jsonb	   *parsed = DatumGetJsonbP(DirectFunctionCall1(jsonb_in,
																CStringGetDatum(CONFIGURABLE_SCHEMA)));
		char	   *problem = ow_schema_check(parsed);

		if (problem)
			elog(ERROR, "the configurable schema is outside the validator's subset: %s", problem);
		schema = MemoryContextAlloc(TopMemoryContext, VARSIZE(parsed));
		memcpy(schema, parsed, VARSIZE(parsed));
	}
	return schema;
}

/*
 * The field a JSON pointer of the validator names inside configurable cv:
 * "/budget/modelAllow/0" is configurable.budget.modelAllow[0].  The value
 * is walked so that an array index and an object key "0" read differently,
 * and the schema alongside it: *rule is the text of the subschema the
 * member failed (NULL for a member no schema admits), to tell the caller
 * what is expected.
 */
static char *
configurable_field(JsonbValue *cv, const char *pointer, char **rule)
{
	StringInfoData f;
	JsonbValue	root;
	JsonbValue *at = cv;
	JsonbValue *sch = &root;
	const char *p = pointer;

	root.type = jbvBinary;
	root.val.binary.data = &configurable_schema()->root;
	root.val.binary.len = VARSIZE(configurable_schema()) - VARHDRSZ;
	initStringInfo(&f);
	appendStringInfoString(&f, "configurable");
	while (*p == '/')
	{
		StringInfoData seg;
		int			len = strcspn(++p, "/");

		/* the validator wrote the pointer: a stray "~" cannot occur, it is kept as is */
		initStringInfo(&seg);
		if (!owj_pointer_token(p, len, &seg))
		{
			resetStringInfo(&seg);
			appendBinaryStringInfo(&seg, p, len);
		}
		p += len;
		if (owj_is_array(at))
		{
			appendStringInfo(&f, "[%s]", seg.data);
			at = getIthJsonbValueFromContainer(at->val.binary.data, atoi(seg.data));
			sch = sch ? owj_get_container(sch->val.binary.data, "items") : NULL;
		}
		else
		{
			JsonbValue *props = sch ? owj_get_container(sch->val.binary.data, "properties") : NULL;
			JsonbValue *named = props ? owj_get_container(props->val.binary.data, seg.data) : NULL;

			appendStringInfo(&f, ".%s", seg.data);
			at = owj_is_object(at) ? owj_get_container(at->val.binary.data, seg.data) : NULL;
			sch = named ? named : sch ? owj_get_container(sch->val.binary.data, "additionalProperties") : NULL;
		}
		if (!owj_is_object(sch))
			sch = NULL;
	}
	*rule = sch && sch != &root ? JsonbToCString(NULL, sch->val.binary.data, sch->val.binary.len) : NULL;
	return f.data;
}

/* An extensions key: ^[a-z][a-z0-9]*(-[a-z0-9]+)*$ (an organisation). */
static bool
valid_extension_key(const char *s, int len)
{
	int			i;

	if (len == 0 || s[0] < 'a' || s[0] > 'z')
		return false;
	for (i = 1; i < len; i++)
	{
		if (s[i] == '-')
		{
			if (i + 1 == len || s[i + 1] == '-')
				return false;
		}
		else if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9')))
			return false;
	}
	return true;
}

/*
 * configurable (create_run, and a branch's overlay): version 1, then the
 * schema (the first error's path is the field, all errors in
 * details.errors), then the extensions keys.
 */
void
ow_check_configurable(JsonbValue *cv)
{
	JsonbValue *version;
	JsonbValue *ext;
	char	   *errors;

	if (!owj_is_object(cv))
		configurable_error("configurable", NULL, "configurable must be a JSON object");
	/* checked first: an unversioned object is read under no version at all */
	version = owj_get_container(cv->val.binary.data, "version");
	if (version == NULL)
		configurable_error("configurable.version", NULL, "configurable.version is required and must be 1");
	if (version->type != jbvNumeric ||
		DatumGetInt32(DirectFunctionCall2(numeric_cmp, NumericGetDatum(version->val.numeric),
										  NumericGetDatum(int64_to_numeric(1)))) != 0)
		configurable_error("configurable.version", NULL, "configurable.version must be 1");

	if (!ow_schema_validate(configurable_schema(), owj_to_jsonb(cv), &errors))
	{
		Jsonb	   *list = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(errors)));
		JsonbContainer *first = getIthJsonbValueFromContainer(&list->root, 0)->val.binary.data;
		char	   *rule;
		char	   *field = configurable_field(cv, owj_string(owj_get_container(first, "path")), &rule);
		char	   *message = owj_string(owj_get_container(first, "message"));

		if (rule)
			configurable_error(field, errors, "%s is refused: %s; it must match %s", field, message, rule);
		configurable_error(field, errors, "%s is refused: %s", field, message);
	}

	if ((ext = owj_get_container(cv->val.binary.data, "extensions")) != NULL)
	{
		JsonbIterator *it = JsonbIteratorInit(ext->val.binary.data);
		JsonbValue	k;
		JsonbIteratorToken tok;

		while ((tok = JsonbIteratorNext(&it, &k, true)) != WJB_DONE)
		{
			char	   *key;

			if (tok != WJB_KEY || valid_extension_key(k.val.string.val, k.val.string.len))
				continue;
			key = pnstrdup(k.val.string.val, k.val.string.len);
			configurable_error(psprintf("configurable.extensions.%s", key), NULL,
							   "configurable.extensions key \"%s\" is not an organisation name matching ^[a-z][a-z0-9]*(-[a-z0-9]+)*$",
							   key);
		}
	}
}

/* create_run of a run id already taken: 409, with the existing run's status. */
static void
run_exists(OwRun *run, const char *tenant, const char *run_id)
{
	OwDetails	d;

	/* lock the existing run, to report its status */
	ow_lock_run_id(run, tenant, run_id);
	ow_details_init(&d);
	ow_details_str(&d, "runId", run_id);
	ow_details_str(&d, "runStatus", run->status);
	ow_raise(OW_RUN_STATE_CONFLICT, &d,
			 "Omit options.runId to have the host mint a fresh run id.",
			 "run \"%s\" already exists", run_id);
}

/*
 * The run row and run.started, in one operation: the row is written once,
 * with the sequence after the event.  False when the run id is taken.
 * values: tenant, run id, workflow id, owner, event prefix, then the
 * optional configurable, definition, inputs, metadata and requester (nulls).
 */
static bool
insert_run(OwRun *run, Datum *values, bool *nulls, Jsonb *started)
{
	static OwWrite insert = {.table = OW_RUNS,.kind = OW_WRITE_INSERT_NEW,.ncols = 20,
		.cols = {RUN_TENANT, RUN_RUN_ID, RUN_WORKFLOW_ID, RUN_OWNER, RUN_EVENT_PREFIX,
			RUN_CONFIGURABLE, RUN_DEFINITION, RUN_INPUTS, RUN_METADATA, RUN_REQUESTED_BY,
			RUN_STATUS, RUN_NEXT_SEQUENCE, RUN_CREATED_AT, RUN_UPDATED_AT, RUN_EVENT_HASH,
	RUN_CURRENT_NODE_ID, RUN_OUTPUTS, RUN_ERROR, RUN_FORK_OF, RUN_ENDED_AT}};
	static const char *const type = "run.started";
	Datum		now = TimestampTzGetDatum(run->created_at);
	TimestampTz at = GetCurrentTimestamp();
	OwDirect	d;
	bool		created;

	if (nulls[5])
	{
		values[5] = DirectFunctionCall1(jsonb_in, CStringGetDatum("{}"));
		nulls[5] = false;
	}
	values[10] = CStringGetTextDatum("running");
	values[11] = Int64GetDatum(1);	/* run.started is 0 */
	values[12] = now;
	values[13] = now;
	/* the row is written once: with the hash of run.started, appended next */
	ow_first_event_hash(run, type, started, at);
	values[14] = ow_event_hash_datum(run->head);
	memset(nulls + 10, false, 5 * sizeof(bool));
	memset(nulls + 15, true, 5 * sizeof(bool));
	ow_begin(&d, 0, OW_TABLE_BIT(OW_RUNS) | OW_TABLE_BIT(OW_EVENTS), 0, 0);
	created = ow_write(&d, &insert, NULL, values, nulls, NULL);
	if (created)
		(void) ow_append_first(&d, run, type, started, at);
	ow_end(&d);
	return created;
}

/*
 * openwop.create_run(workflow_id text, options jsonb) → jsonb
 */
Datum
ow_create_run(PG_FUNCTION_ARGS)
{
	static const char *const option_keys[] = {"tenant", "runId", "configurable", "callbackUrl",
	"definition", "metadata", "inputs", NULL};
	char	   *workflow_id = ow_text_arg(fcinfo, 0);
	Jsonb	   *options = ow_object_arg(fcinfo, 1, "options");
	char	   *tenant;
	char	   *run_id;
	char	   *s;
	JsonbValue *configurable;
	JsonbValue *definition;
	JsonbValue *metadata;
	JsonbValue *inputs;
	JsonbValue *optional[4];
	char	   *requested_by;
	Datum		args[20];
	bool		nulls[20] = {false};
	int			i;
	OwCall		call;
	OwRun		locked;
	OwRun	   *run = &locked;
	OwJson		j;
	int64		seq;
	Jsonb	   *started;

	ow_refuse_read_only("create_run()");
	/* who is calling, then everything else, before touching a table */
	ow_caller(&call.caller);
	tenant = call.caller.subject.tenant;
	if (workflow_id == NULL)
		ow_validation_error("workflowId", "workflow_id must not be null");
	if (!ow_valid_author_id(workflow_id))
		ow_validation_error("workflowId",
							"\"%s\" is not a valid workflow id (1 to 128 characters of A-Z a-z 0-9 . _ ~ : -)",
							ow_echo(workflow_id));
	refuse_unknown_options(options, option_keys);
	if (owj_get(options, "callbackUrl") != NULL)
		ow_validation_error("callbackUrl",
							"callbackUrl is refused: this host does not advertise interrupt.callbackDelivery");
	s = option_string(options, "tenant");
	if (s && strcmp(s, tenant) != 0)
	{
		OwDetails	d;

		ow_details_init(&d);
		ow_details_str(&d, "tenant", s);
		ow_details_str(&d, "callerTenant", tenant);
		ow_raise(OW_ID_TENANT_MISMATCH, &d, NULL,
				 "options.tenant \"%s\" is not the caller's tenant \"%s\"", s, tenant);
	}
	s = option_string(options, "runId");
	run_id = s ? ow_normalize_run_id(s, tenant)
		: psprintf("%s/%s", tenant, ow_mint_opaque(16));

	configurable = owj_get(options, "configurable");
	if (configurable)
		ow_check_configurable(configurable);
	definition = owj_get(options, "definition");
	if (definition)
		validate_definition(definition);
	metadata = owj_get(options, "metadata");
	if (metadata && !owj_is_object(metadata))
		ow_validation_error("metadata", "metadata must be a JSON object");
	inputs = owj_get(options, "inputs");
	if (inputs && !owj_is_object(inputs))
		ow_validation_error("inputs", "inputs must be a JSON object");
	/* the person on whose behalf the engine starts the run: a subject, as approversList names one */
	requested_by = PG_NARGS() > 2 && !PG_ARGISNULL(2) ? text_to_cstring(PG_GETARG_TEXT_PP(2)) : NULL;
	if (requested_by && !ow_valid_subject_ref(requested_by))
		ow_validation_error("requestedBy",
							"requested_by must be a subject id, or \"<issuer>/<subject id>\", without white space");
	optional[0] = configurable;
	optional[1] = definition;
	optional[2] = inputs;
	optional[3] = metadata;

	ow_call_enter(&call);
	run->event_prefix = ow_mint_opaque(12);
	args[0] = CStringGetTextDatum(tenant);
	args[1] = CStringGetTextDatum(run_id);
	args[2] = CStringGetTextDatum(workflow_id);
	args[3] = JsonbPGetDatum(ow_subject_jsonb(&call.caller.subject));
	args[4] = CStringGetTextDatum(run->event_prefix);
	for (i = 0; i < 4; i++)
	{
		if (optional[i])
			args[5 + i] = JsonbPGetDatum(owj_to_jsonb(optional[i]));
		else
			nulls[5 + i] = true;
	}
	args[9] = requested_by ? CStringGetTextDatum(requested_by) : (Datum) 0;
	nulls[9] = requested_by == NULL;
	run->tenant = tenant;
	run->run_id = run_id;
	run->root_run_id = run_id;
	run->key_root = run_id;
	run->fork_of = NULL;
	run->requested_by = requested_by;
	run->workflow_id = workflow_id;
	run->status = "running";
	run->current_node_id = NULL;
	run->next_sequence = 0;
	run->first_sequence = 0;
	run->appended = 0;
	run->hashes = NULL;
	run->has_definition = definition != NULL;
	run->error = NULL;
	run->outputs = NULL;
	run->created_at = GetCurrentTransactionStartTimestamp();	/* what now() gives the row */
	ItemPointerSetInvalid(&run->tid);

	/* run.started echoes the owner block of the snapshot */
	owj_begin(&j);
	owj_str(&j, "workflowId", workflow_id);
	if (inputs)
		owj_value(&j, "inputs", inputs);
	owj_begin_object(&j, "owner");
	owj_str(&j, "tenant", tenant);
	owj_subject(&j, "subject", &call.caller.subject);
	owj_end_object(&j);
	if (metadata)
		owj_value(&j, "metadata", metadata);
	started = owj_end(&j);

	if (!insert_run(run, args, nulls, started))
		run_exists(run, tenant, run_id);
	seq = 0;
	ow_notify_later(run_id, 0, 0);

	ow_call_end(&call);
	owj_begin(&j);
	owj_str(&j, "runId", run_id);
	owj_str(&j, "status", "running");
	owj_str(&j, "workflowId", workflow_id);
	owj_int(&j, "sequence", seq);
	return ow_reply(&call, &j);
}

/* ----------
 * Terminal transitions
 * ----------
 */

/* An execution read: is it open (running, interrupted or pending)?  Into arg. */
static void
open_exec_read(const OwRow *row, void *arg)
{
	char	   *status = TextDatumGetCString(row->values[0]);

	if (strcmp(status, "running") == 0 || strcmp(status, "interrupted") == 0 ||
		strcmp(status, "pending") == 0)
		*(bool *) arg = true;
}

static void
any_read(const OwRow *row, void *arg)
{
}

/*
 * True when the locked run has no pending interrupt and no open execution,
 * read directly, so the statements that would cancel them are skipped;
 * false when it has, or when the tables are not plain (a DBA's statement
 * trigger or rule acts on a statement that changes no row: they run).
 */
static bool
nothing_open(OwRun *run)
{
	static OwRead pending = {.table = OW_OPEN_INTERRUPTS,.index = OW_OPEN_PENDING,.nkeys = 2,
	.ncols = 1,.cols = {OPEN_STATUS}};
	static OwRead execs = {.table = OW_NODE_EXECUTIONS,.index = OW_NODE_EXECUTIONS_PKEY,.nkeys = 2,
	.ncols = 1,.cols = {EXEC_STATUS}};
	OwDirect	d;
	Datum		keys[2];
	bool		open = false;

	/* in place of cancel_open, ow_close_run_interrupts and cancel_execs */
	if (!ow_direct_begin_instead(&d, OW_TABLE_BIT(OW_OPEN_INTERRUPTS) | OW_TABLE_BIT(OW_NODE_EXECUTIONS),
								 OW_TABLE_BIT(OW_INTERRUPTS) | OW_TABLE_BIT(OW_NODE_EXECUTIONS),
								 OW_TABLE_BIT(OW_OPEN_INTERRUPTS)))
		return false;
	keys[0] = CStringGetTextDatum(run->tenant);
	keys[1] = CStringGetTextDatum(run->run_id);
	/* the index holds the pending ones only */
	open = ow_read(&d, &pending, keys, 0, OW_NO_LOCK, 1, NULL, any_read, NULL) > 0;
	if (!open)
		(void) ow_read(&d, &execs, keys, 0, OW_NO_LOCK, 0, NULL, open_exec_read, &open);
	ow_end(&d);
	return !open;
}

/*
 * Cancel every open execution of the run (node.cancelled, in node id order
 * so the log is deterministic) and invalidate its pending interrupts, so no
 * resolve or token can act on them.  Runs before the terminal event, which
 * must be the run's last.
 */
static void
cancel_open_executions(OwRun *run, const char *reason)
{
	/* the run's pending interrupts, found among the open ones */
	static OwQuery cancel_open = {
		"UPDATE openwop.interrupts i"
		"   SET status = 'cancelled', resolved_at = pg_catalog.now()"
		"  FROM openwop.open_interrupts o"
		" WHERE o.tenant OPERATOR(pg_catalog.=) $1"
		"   AND o.run_id OPERATOR(pg_catalog.=) $2"
		"   AND o.status OPERATOR(pg_catalog.=) 'pending'"
		"   AND i.tenant OPERATOR(pg_catalog.=) o.tenant"
		"   AND i.interrupt_id OPERATOR(pg_catalog.=) o.interrupt_id"
		"   AND i.status OPERATOR(pg_catalog.=) 'pending'",
		2, {TEXTOID, TEXTOID}, SPI_OK_UPDATE
	};
	static OwQuery cancel_execs = {
		"WITH c AS ("
		"  UPDATE openwop.node_executions"
		"     SET status = 'cancelled', ended_at = pg_catalog.now()"
		"   WHERE tenant OPERATOR(pg_catalog.=) $1"
		"     AND run_id OPERATOR(pg_catalog.=) $2"
		"     AND status OPERATOR(pg_catalog.=) ANY"
		"         ('{running,interrupted,pending}'::pg_catalog.text[])"
		"  RETURNING node_id)"
		" SELECT node_id FROM c ORDER BY node_id COLLATE pg_catalog.\"C\"",
		2, {TEXTOID, TEXTOID}, SPI_OK_SELECT
	};
	uint64		n;
	uint64		i;
	char	  **nodes;

	/* the usual end: nothing left open, nothing to cancel */
	if (nothing_open(run))
		return;
	ow_run_exec(&cancel_open, run, NULL, false, 0);
	ow_close_run_interrupts(run);
	n = ow_run_exec(&cancel_execs, run, NULL, false, 0);

	/* copy out: ow_append runs SPI again and replaces SPI_tuptable */
	nodes = palloc(sizeof(char *) * (n + 1));
	for (i = 0; i < n; i++)
		nodes[i] = ow_col_text(i, 1);
	for (i = 0; i < n; i++)
	{
		OwJson		j;

		owj_begin(&j);
		owj_str(&j, "nodeId", nodes[i]);
		owj_str(&j, "reason", reason);
		ow_append(run, "node.cancelled", nodes[i], owj_end(&j));
	}
}

/* The snapshot's closed error {code, message, details?} of an event error. */
static Jsonb *
snapshot_error(Jsonb *error)
{
	OwJson		j;
	JsonbValue *v;

	owj_begin(&j);
	owj_value(&j, "code", owj_get(error, "code"));
	owj_value(&j, "message", owj_get(error, "message"));
	if ((v = owj_get(error, "details")) != NULL)
		owj_value(&j, "details", v);
	return owj_end(&j);
}

/*
 * End the open execution of node_id as failed with error (node.failed),
 * when it has one.  Used by fail_run for its failedNodeId, so the log
 * reads node.failed then run.failed rather than node.cancelled.
 */
static void
fail_open_execution(OwRun *run, const char *node_id, Jsonb *error)
{
	OwExec		ex;

	ow_latest_exec(run, node_id, &ex);
	if (ow_exec_is_open(&ex))
		ow_fail_execution(run, node_id, &ex, error);
}

/*
 * A terminal transition of a locked, live run: cancel open executions and
 * pending interrupts, then append the one terminal event.  value is the
 * outputs (complete) or the error (fail).  The caller saves the run.
 * Exactly one terminal event per run: the run row lock orders racing
 * callers, and whoever comes second sees the terminal status.
 */
int64
ow_end_run(OwRun *run, OwTerminal how, Jsonb *value, const char *failed_node,
		   const char *reason, const char *principal)
{
	OwJson		j;
	int64		seq;

	if (how == OW_FAIL && failed_node)
		fail_open_execution(run, failed_node, value);
	cancel_open_executions(run, how == OW_COMPLETE ? "run-completed" :
						   how == OW_FAIL ? "run-failed" : "run-cancelled");

	owj_begin(&j);
	switch (how)
	{
		case OW_COMPLETE:
			owj_jsonb(&j, "outputs", value);
			run->status = "completed";
			run->outputs = value;
			break;
		case OW_FAIL:
			owj_jsonb(&j, "error", value);
			if (failed_node)
				owj_str(&j, "failedNodeId", failed_node);
			run->status = "failed";
			run->error = snapshot_error(value);
			break;
		case OW_CANCEL:
			if (reason)
				owj_str(&j, "reason", reason);
			if (principal)
				owj_str(&j, "cancelledBy", principal);
			run->status = "cancelled";
			break;
	}
	owj_int(&j, "durationMs", ow_duration_ms(run));
	seq = ow_append(run, how == OW_COMPLETE ? "run.completed" :
					how == OW_FAIL ? "run.failed" : "run.cancelled",
					NULL, owj_end(&j));
	run->current_node_id = NULL;
	return seq;
}

/* complete_run, fail_run and cancel_run */
static Datum
end_run(FunctionCallInfo fcinfo, OwTerminal how)
{
	const char *run_input = ow_required_run_arg(fcinfo);
	Jsonb	   *value = NULL;
	char	   *failed_node = NULL;
	char	   *reason = NULL;
	OwCall		call;
	OwRun		locked;
	OwRun	   *run = &locked;
	OwJson		j;
	int64		seq;

	ow_refuse_read_only(how == OW_COMPLETE ? "complete_run()" : how == OW_FAIL ? "fail_run()" : "cancel_run()");
	switch (how)
	{
		case OW_COMPLETE:
			value = ow_object_arg(fcinfo, 1, "outputs");
			break;
		case OW_FAIL:
			value = ow_error_arg(fcinfo, 1);
			failed_node = ow_text_arg(fcinfo, 2);
			if (failed_node && !ow_valid_author_id(failed_node))
				ow_validation_error("failedNodeId", "\"%s\" is not a valid node id", ow_echo(failed_node));
			break;
		case OW_CANCEL:
			ow_check_arg_size(fcinfo, 1, "reason", false);
			reason = ow_text_arg(fcinfo, 1);
			break;
	}

	ow_call_begin(&call);
	ow_lock_run(run, call.caller.subject.tenant, run_input);
	ow_refuse_if_terminal(run);
	/* cancelledBy is a string: the issuer-qualified ref tells a login from a JWT subject */
	seq = ow_end_run(run, how, value, failed_node, reason, ow_subject_ref(&call.caller.subject));
	ow_save_run(run);

	ow_call_end(&call);
	owj_begin(&j);
	owj_str(&j, "runId", run->run_id);
	owj_str(&j, "status", run->status);
	owj_int(&j, "sequence", seq);
	return ow_reply(&call, &j);
}

Datum
ow_complete_run(PG_FUNCTION_ARGS)
{
	return end_run(fcinfo, OW_COMPLETE);
}

Datum
ow_fail_run(PG_FUNCTION_ARGS)
{
	return end_run(fcinfo, OW_FAIL);
}

Datum
ow_cancel_run(PG_FUNCTION_ARGS)
{
	return end_run(fcinfo, OW_CANCEL);
}
