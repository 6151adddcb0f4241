/*-------------------------------------------------------------------------
 *
 * interrupts.c
 *	  openwop.interrupt(): payload validation for the nine kinds, the
 *	  deterministic re-entry key, suspension, and the envelopes returned
 *	  to the engine (FlowDrop INT-1 / INT-2, OpenWOP replay).
 *
 * The key is derived from the root of the run's replay chain, the node,
 * the node's visit index and the ordinal of the call within the execution,
 * so a replay of one execution re-derives it and a later visit cannot.
 * UNIQUE (tenant, root_run_id, key) makes "requested at most once per run"
 * a constraint.
 *
 *-------------------------------------------------------------------------
 */
#include "openwop.h"

#include "access/detoast.h"

#include "catalog/pg_type.h"
#include "common/cryptohash.h"
#include "common/sha2.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/numeric.h"

PG_FUNCTION_INFO_V1(ow_interrupt);

/* The resumeSchema every credential interrupt carries (digest §2.1). */
#define CREDENTIAL_RESUME_SCHEMA \
	"{\"type\": \"object\", \"additionalProperties\": false, \"required\": [\"outcome\"], " \
	"\"properties\": {\"outcome\": {\"enum\": [\"authorized\", \"declined\"]}}}"

static const char *const kinds[] = {"approval", "clarification", "external-event", "custom",
	"conversation.start", "conversation.exchange", "conversation.close",
"low-confidence", "credential", NULL};

/* ----------
 * Field checks.  Each refuses with validation_error naming the field.
 * ----------
 */

static JsonbValue *
member(JsonbContainer *obj, const char *key)
{
	return owj_get_container(obj, key);
}

static char *
fieldname(const char *prefix, const char *key)
{
	return psprintf("%s.%s", prefix, key);
}

static void
closed(JsonbContainer *obj, const char *const *allowed, const char *prefix)
{
	const char *unknown = owj_unknown_key(obj, allowed);

	if (unknown)
		ow_validation_error(fieldname(prefix, unknown), "%s has unknown member \"%s\"", prefix, unknown);
}

/* A string member; minlen/maxlen in characters (maxlen 0: unbounded). */
static char *
str_member(JsonbContainer *obj, const char *prefix, const char *key, bool required,
		   int minlen, int maxlen)
{
	JsonbValue *v = member(obj, key);
	char	   *f = fieldname(prefix, key);
	int			len;

	if (v == NULL)
	{
		if (required)
			ow_validation_error(f, "%s is required", f);
		return NULL;
	}
	if (v->type != jbvString)
		ow_validation_error(f, "%s must be a string, not %s", f, owj_type_name(v));
	len = pg_mbstrlen_with_len(v->val.string.val, v->val.string.len);
	if (len < minlen || (maxlen > 0 && len > maxlen))
	{
		if (maxlen > 0)
			ow_validation_error(f, "%s must be %d to %d characters long", f, minlen, maxlen);
		ow_validation_error(f, "%s must not be empty", f);
	}
	return owj_string(v);
}

static void
enum_member(JsonbContainer *obj, const char *prefix, const char *key, bool required,
			const char *const *values)
{
	char	   *s = str_member(obj, prefix, key, required, 0, 0);
	const char *const *v;

	if (s == NULL)
		return;
	for (v = values; *v; v++)
		if (strcmp(*v, s) == 0)
			return;
	ow_validation_error(fieldname(prefix, key), "%s \"%s\" is not an allowed value", fieldname(prefix, key), s);
}

/* An array of strings; items at least item_min long; optionally unique / non-empty. */
static JsonbValue *
str_array_member(JsonbContainer *obj, const char *prefix, const char *key, bool required,
				 int item_min, bool unique, bool nonempty)
{
	JsonbValue *v = member(obj, key);
	char	   *f = fieldname(prefix, key);
	int			n;
	int			i;

	if (v == NULL)
	{
		if (required)
			ow_validation_error(f, "%s is required", f);
		return NULL;
	}
	if (!owj_is_array(v))
		ow_validation_error(f, "%s must be an array of strings", f);
	n = JsonContainerSize(v->val.binary.data);
	if (nonempty && n == 0)
		ow_validation_error(f, "%s must not be empty", f);
	for (i = 0; i < n; i++)
	{
		JsonbValue *e = getIthJsonbValueFromContainer(v->val.binary.data, i);
		int			k;

		if (e->type != jbvString || e->val.string.len < item_min)
			ow_validation_error(f, "%s[%d] must be a%s string", f, i, item_min > 0 ? " non-empty" : "");
		for (k = 0; unique && k < i; k++)
		{
			JsonbValue *o = getIthJsonbValueFromContainer(v->val.binary.data, k);

			if (o->val.string.len == e->val.string.len &&
				memcmp(o->val.string.val, e->val.string.val, e->val.string.len) == 0)
				ow_validation_error(f, "%s has \"%.*s\" twice", f, e->val.string.len, e->val.string.val);
		}
	}
	return v;
}

static JsonbValue *
object_member(JsonbContainer *obj, const char *prefix, const char *key, bool required)
{
	JsonbValue *v = member(obj, key);

	if (v == NULL)
	{
		if (required)
			ow_validation_error(fieldname(prefix, key), "%s is required", fieldname(prefix, key));
		return NULL;
	}
	if (!owj_is_object(v))
		ow_validation_error(fieldname(prefix, key), "%s must be an object", fieldname(prefix, key));
	return v;
}

static int
numeric_cmp_int(Numeric n, int64 i)
{
	return DatumGetInt32(DirectFunctionCall2(numeric_cmp, NumericGetDatum(n),
											 NumericGetDatum(int64_to_numeric(i))));
}

static bool
numeric_integral(Numeric n)
{
	Numeric		f = DatumGetNumeric(DirectFunctionCall1(numeric_floor, NumericGetDatum(n)));

	return DatumGetInt32(DirectFunctionCall2(numeric_cmp, NumericGetDatum(f), NumericGetDatum(n))) == 0;
}

/* An integer member >= min; returns it (clamped to int64) or -1 when absent. */
static int64
int_member(JsonbContainer *obj, const char *prefix, const char *key, int64 min)
{
	JsonbValue *v = member(obj, key);
	char	   *f = fieldname(prefix, key);

	if (v == NULL)
		return -1;
	if (v->type != jbvNumeric || !numeric_integral(v->val.numeric) ||
		numeric_cmp_int(v->val.numeric, min) < 0)
		ow_validation_error(f, "%s must be an integer of at least " INT64_FORMAT, f, min);
	if (numeric_cmp_int(v->val.numeric, PG_INT64_MAX / 2) > 0)
		return PG_INT64_MAX / 2;
	return DatumGetInt64(DirectFunctionCall1(numeric_int8, NumericGetDatum(v->val.numeric)));
}

static void
unit_number_member(JsonbContainer *obj, const char *prefix, const char *key)
{
	JsonbValue *v = member(obj, key);
	char	   *f = fieldname(prefix, key);

	if (v == NULL)
		ow_validation_error(f, "%s is required", f);
	if (v->type != jbvNumeric || numeric_cmp_int(v->val.numeric, 0) < 0 ||
		numeric_cmp_int(v->val.numeric, 1) > 0)
		ow_validation_error(f, "%s must be a number between 0 and 1", f);
}

static void
bool_member(JsonbContainer *obj, const char *prefix, const char *key)
{
	JsonbValue *v = member(obj, key);

	if (v != NULL && v->type != jbvBool)
		ow_validation_error(fieldname(prefix, key), "%s must be a boolean", fieldname(prefix, key));
}

/* A schema the host will validate against: refuse what the subset cannot check. */
static void
schema_member(JsonbContainer *obj, const char *prefix, const char *key)
{
	JsonbValue *v = member(obj, key);
	char	   *problem;

	if (v == NULL)
		return;
	if (!owj_is_object(v))
		ow_validation_error(fieldname(prefix, key), "%s must be a JSON Schema object", fieldname(prefix, key));
	problem = ow_schema_check(owj_to_jsonb(v));
	if (problem)
		ow_validation_error(fieldname(prefix, key), "%s cannot be enforced: %s", fieldname(prefix, key), problem);
}

/* ----------
 * Per-kind data (digest §2.2); every object is closed.
 * ----------
 */

static void
check_approval(JsonbContainer *d)
{
	static const char *const keys[] = {"artifactId", "artifactType", "title", "actions",
		"description", "artifactData", "onTimeout", "requiredApprovals", "approversList",
		"rejectionPolicy", "overrideBypassesQuorum", "approverGroupRefs", "approverRoleRefs",
	"audience", NULL};
	static const char *const actions[] = {"accept", "reject", "refine", "edit-accept", "ask", NULL};
	static const char *const on_timeout[] = {"reject", "approve", "escalate", NULL};
	static const char *const policies[] = {"single-veto", "majority", NULL};
	static const char *const audience_keys[] = {"subjects", "groups", "roles", NULL};
	JsonbValue *acts;
	JsonbValue *aud;
	int			i;

	if (member(d, "message"))
		ow_validation_error("data.message",
							"data.message is not an approval member; put the text in data.description");
	closed(d, keys, "data");
	str_member(d, "data", "artifactId", true, 1, 0);
	str_member(d, "data", "artifactType", true, 1, 0);
	str_member(d, "data", "title", true, 1, 0);
	acts = str_array_member(d, "data", "actions", true, 1, true, true);
	for (i = 0; i < (int) JsonContainerSize(acts->val.binary.data); i++)
	{
		JsonbValue *a = getIthJsonbValueFromContainer(acts->val.binary.data, i);
		const char *const *v;
		bool		known = false;

		for (v = actions; *v; v++)
			known |= (size_t) a->val.string.len == strlen(*v) &&
				memcmp(a->val.string.val, *v, a->val.string.len) == 0;
		if (!known)
			ow_validation_error("data.actions", "data.actions[%d] \"%.*s\" is not one of accept, reject, refine, edit-accept, ask",
								i, a->val.string.len, a->val.string.val);
	}
	str_member(d, "data", "description", false, 0, 0);
	enum_member(d, "data", "onTimeout", false, on_timeout);
	if (int_member(d, "data", "requiredApprovals", 1) > 10000)
		ow_validation_error("data.requiredApprovals", "data.requiredApprovals must be at most 10000");
	str_array_member(d, "data", "approversList", false, 1, false, false);
	enum_member(d, "data", "rejectionPolicy", false, policies);
	bool_member(d, "data", "overrideBypassesQuorum");
	str_array_member(d, "data", "approverGroupRefs", false, 1, false, false);
	str_array_member(d, "data", "approverRoleRefs", false, 1, false, false);
	if ((aud = object_member(d, "data", "audience", false)) != NULL)
	{
		closed(aud->val.binary.data, audience_keys, "data.audience");
		str_array_member(aud->val.binary.data, "data.audience", "subjects", false, 0, false, false);
		str_array_member(aud->val.binary.data, "data.audience", "groups", false, 0, false, false);
		str_array_member(aud->val.binary.data, "data.audience", "roles", false, 0, false, false);
	}
}

static void
check_clarification(JsonbContainer *d)
{
	static const char *const keys[] = {"questions", "contextType", NULL};
	static const char *const qkeys[] = {"id", "question", "schema", NULL};
	JsonbValue *qs;
	int			n;
	int			i;

	closed(d, keys, "data");
	str_member(d, "data", "contextType", false, 0, 0);
	qs = member(d, "questions");
	if (qs == NULL)
		ow_validation_error("data.questions", "data.questions is required");
	if (!owj_is_array(qs) || (n = JsonContainerSize(qs->val.binary.data)) == 0)
		ow_validation_error("data.questions", "data.questions must be a non-empty array");
	for (i = 0; i < n; i++)
	{
		JsonbValue *q = getIthJsonbValueFromContainer(qs->val.binary.data, i);
		char	   *p = psprintf("data.questions[%d]", i);

		if (!owj_is_object(q))
			ow_validation_error(p, "%s must be an object {id, question, schema?}", p);
		closed(q->val.binary.data, qkeys, p);
		str_member(q->val.binary.data, p, "id", true, 1, 0);
		str_member(q->val.binary.data, p, "question", true, 1, 0);
		schema_member(q->val.binary.data, p, "schema");
	}
}

static void
check_external_event(JsonbContainer *d)
{
	static const char *const keys[] = {"eventType", "correlation", NULL};

	closed(d, keys, "data");
	str_member(d, "data", "eventType", true, 0, 0);
	object_member(d, "data", "correlation", true);
}

static void
check_custom(JsonbContainer *d)
{
	static const char *const keys[] = {"customKind", "payload", NULL};

	closed(d, keys, "data");
	str_member(d, "data", "customKind", true, 1, 0);
}

static void
check_conversation(JsonbContainer *d, const char *kind)
{
	static const char *const start_keys[] = {"conversationId", "title", "initialPrompt", NULL};
	static const char *const exchange_keys[] = {"conversationId", "prompt", "outcomeSchema", "turnIndex", NULL};
	static const char *const close_keys[] = {"conversationId", "reason", NULL};

	if (strcmp(kind, "conversation.start") == 0)
	{
		closed(d, start_keys, "data");
		str_member(d, "data", "title", false, 0, 0);
		str_member(d, "data", "initialPrompt", false, 0, 0);
	}
	else if (strcmp(kind, "conversation.exchange") == 0)
	{
		closed(d, exchange_keys, "data");
		str_member(d, "data", "prompt", true, 1, 0);
		schema_member(d, "data", "outcomeSchema");
		int_member(d, "data", "turnIndex", 0);
	}
	else
	{
		closed(d, close_keys, "data");
		str_member(d, "data", "reason", false, 0, 0);
	}
	str_member(d, "data", "conversationId", true, 1, 256);
}

static void
check_low_confidence(JsonbContainer *d)
{
	static const char *const keys[] = {"agentId", "threshold", "observed", "decision", NULL};
	char	   *agent;

	closed(d, keys, "data");
	agent = str_member(d, "data", "agentId", true, 1, 128);
	if (!ow_valid_author_id(agent))
		ow_validation_error("data.agentId", "data.agentId \"%s\" is not a valid agent id", agent);
	unit_number_member(d, "data", "threshold");
	unit_number_member(d, "data", "observed");
}

static void
check_credential(JsonbContainer *d)
{
	static const char *const keys[] = {"provider", "scopes", "reason", "connectUrl", "credentialRef", NULL};
	static const char *const reasons[] = {"missing", "expired", "insufficient_scope", NULL};
	static const char *const ref_keys[] = {"ref", "scope", NULL};
	char	   *url;
	JsonbValue *ref;

	closed(d, keys, "data");
	str_member(d, "data", "provider", true, 1, 0);
	str_array_member(d, "data", "scopes", true, 1, true, false);
	enum_member(d, "data", "reason", true, reasons);
	url = str_member(d, "data", "connectUrl", true, 1, 0);
	if (strncmp(url, "https://", 8) != 0 || url[8] == '\0' || strpbrk(url, " \t\r\n") != NULL)
		ow_validation_error("data.connectUrl", "data.connectUrl must be an https:// URI");
	/* it must not carry anything that resolves the interrupt, e.g. a token */
	if (strstr(url, "ow2.") != NULL)
		ow_validation_error("data.connectUrl", "data.connectUrl must not carry an interrupt token");
	if ((ref = object_member(d, "data", "credentialRef", false)) != NULL)
	{
		closed(ref->val.binary.data, ref_keys, "data.credentialRef");
		str_member(ref->val.binary.data, "data.credentialRef", "ref", true, 1, 0);
		str_member(ref->val.binary.data, "data.credentialRef", "scope", false, 0, 0);
	}
}

/*
 * Validate request {kind, data, resumeSchema?, timeoutMs?} and return the
 * InterruptPayload to record: the same members plus the derived key, with
 * credential's pinned resumeSchema filled in.  *timeout_ms is -1 if absent.
 */
static Jsonb *
check_request(Jsonb *request, const char *key, char **kind_out, int64 *timeout_ms)
{
	static const char *const keys[] = {"kind", "data", "resumeSchema", "timeoutMs", NULL};
	JsonbContainer *r = &request->root;
	JsonbValue *data;
	JsonbValue *rs;
	char	   *kind;
	const char *const *k;
	bool		known = false;
	OwJson		j;
	Jsonb	   *pinned = NULL;

	if (!JB_ROOT_IS_OBJECT(request))
		ow_validation_error("request", "request must be an object {kind, data, resumeSchema?, timeoutMs?}");
	if (owj_get(request, "key"))
		ow_validation_error("request.key", "request.key is derived by the host and must not be supplied");
	closed(r, keys, "request");
	kind = str_member(r, "request", "kind", true, 1, 0);
	for (k = kinds; *k; k++)
		known |= strcmp(*k, kind) == 0;
	if (!known)
		ow_validation_error("request.kind", "request.kind \"%s\" is not one of the nine interrupt kinds", kind);
	data = object_member(r, "request", "data", true);
	*timeout_ms = int_member(r, "request", "timeoutMs", 0);

	if (strcmp(kind, "approval") == 0)
		check_approval(data->val.binary.data);
	else if (strcmp(kind, "clarification") == 0)
		check_clarification(data->val.binary.data);
	else if (strcmp(kind, "external-event") == 0)
		check_external_event(data->val.binary.data);
	else if (strcmp(kind, "custom") == 0)
		check_custom(data->val.binary.data);
	else if (strncmp(kind, "conversation.", 13) == 0)
		check_conversation(data->val.binary.data, kind);
	else if (strcmp(kind, "low-confidence") == 0)
		check_low_confidence(data->val.binary.data);
	else
		check_credential(data->val.binary.data);

	rs = member(r, "resumeSchema");
	if (strcmp(kind, "credential") == 0)
	{
		pinned = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(CREDENTIAL_RESUME_SCHEMA)));
		if (rs && (!owj_is_object(rs) ||
				   compareJsonbContainers(&owj_to_jsonb(rs)->root, &pinned->root) != 0))
			ow_validation_error("request.resumeSchema",
								"a credential interrupt's resumeSchema is fixed to {outcome: authorized | declined}; omit it");
	}
	else if (rs)
	{
		if (!owj_is_object(rs))
			ow_validation_error("request.resumeSchema", "request.resumeSchema must be a JSON Schema object");
		schema_member(r, "request", "resumeSchema");
	}

	if (strncmp(kind, "conversation.", 13) == 0)
	{
		OwDetails	d;

		ow_details_init(&d);
		ow_details_str(&d, "requiredCapability", "conversationPrimitive");
		ow_raise(OW_SQLSTATE_422, "capability_required", &d,
				 "This host does not advertise conversationPrimitive.",
				 "%s interrupts need the conversationPrimitive capability", kind);
	}

	/* the InterruptPayload, verbatim plus the key */
	owj_begin(&j);
	owj_str(&j, "kind", kind);
	owj_str(&j, "key", key);
	owj_value(&j, "data", data);
	if (pinned)
		owj_jsonb(&j, "resumeSchema", pinned);
	else if (rs)
		owj_value(&j, "resumeSchema", rs);
	if (*timeout_ms >= 0)
		owj_value(&j, "timeoutMs", member(r, "timeoutMs"));
	*kind_out = kind;
	return owj_end(&j);
}

/* The snapshot status a pending interrupt of kind puts its run in. */
const char *
ow_waiting_status(const char *kind)
{
	if (strcmp(kind, "external-event") == 0)
		return "waiting-external";
	if (strcmp(kind, "clarification") == 0 || strcmp(kind, "credential") == 0 ||
		strncmp(kind, "conversation.", 13) == 0)
		return "waiting-input";
	return "waiting-approval";	/* approval, low-confidence, custom */
}

/*
 * The re-entry key: "k1." + base64url(SHA-256(root run, node, visit,
 * ordinal)).  Opaque, fixed length (well under the 256 limit), and a pure
 * function of its inputs, so any process re-derives it.
 */
static char *
derive_key(const char *root_run_id, const char *node_id, int32 visit, int32 ordinal)
{
	pg_cryptohash_ctx *ctx = pg_cryptohash_create(PG_SHA256);
	uint8		digest[PG_SHA256_DIGEST_LENGTH];
	char	   *material = psprintf("%s\n%s\n%d\n%d", root_run_id, node_id, visit, ordinal);

	if (ctx == NULL || pg_cryptohash_init(ctx) < 0 ||
		pg_cryptohash_update(ctx, (uint8 *) material, strlen(material)) < 0 ||
		pg_cryptohash_final(ctx, digest, sizeof(digest)) < 0)
		elog(ERROR, "could not compute SHA-256: %s", pg_cryptohash_error(ctx));
	pg_cryptohash_free(ctx);
	return psprintf("k1.%s", ow_base64url((const char *) digest, sizeof(digest)));
}

/* ----------
 * Envelopes
 * ----------
 */

/*
 * results: the completed prefix of the interrupt requested at sequence
 * requested_seq (FlowDrop INT-1), read from the log: for every node with a
 * node.completed event before the request, the outputs of its latest one.
 * A node completed after the request (a parallel branch) is not part of
 * the prefix, however often the pending envelope is returned again.
 */
static void
add_completed_prefix(OwJson *j, OwRun *run, int64 requested_seq)
{
	static SPIPlanPtr plan = NULL;
	Datum		args[3];
	uint64		i;
	Size		total = 0;

	if (plan == NULL)
	{
		Oid			types[3] = {TEXTOID, TEXTOID, INT8OID};

		plan = ow_prepare("SELECT DISTINCT ON (node_id) node_id, payload"
						  "  FROM openwop.events"
						  " WHERE tenant OPERATOR(pg_catalog.=) $1"
						  "   AND run_id OPERATOR(pg_catalog.=) $2"
						  "   AND sequence OPERATOR(pg_catalog.<) $3"
						  "   AND type OPERATOR(pg_catalog.=) 'node.completed'"
						  " ORDER BY node_id, sequence DESC", 3, types);
	}
	args[0] = CStringGetTextDatum(run->tenant);
	args[1] = CStringGetTextDatum(run->run_id);
	args[2] = Int64GetDatum(requested_seq);
	if (SPI_execute_plan(plan, args, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the completed nodes of run \"%s\"", run->run_id);

	/* measured before anything is read: the envelope must stay a jsonb value */
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Datum		ev = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull);

		total += isnull ? 0 : toast_raw_datum_size(ev);
	}
	if (total > OW_ENVELOPE_MAX)
	{
		OwDetails	d;

		ow_details_init(&d);
		ow_details_str(&d, "runId", run->run_id);
		ow_details_int(&d, "size", (int64) total);
		ow_details_int(&d, "limit", (int64) OW_ENVELOPE_MAX);
		ow_raise(OW_SQLSTATE_409, "run_state_conflict", &d,
				 "An interrupt's envelope carries the outputs of every completed node: keep large data out of node outputs.",
				 "the completed nodes of run \"%s\" hold %zu bytes of outputs, more than an envelope may carry",
				 run->run_id, total);
	}

	owj_begin_object(j, "results");
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Datum		ev = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull);
		char	   *node = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		JsonbValue *out;

		/* an event without a node or outputs (restored, not ours) names no result */
		if (isnull || node == NULL || (out = owj_get(DatumGetJsonbP(ev), "outputs")) == NULL)
			continue;
		owj_value(j, node, out);
	}
	owj_end_object(j);
}

/* The INT-1 envelope of a stored, pending interrupt (built from the row: INT-2). */
static Jsonb *
pending_envelope(OwRun *run, const char *interrupt_id, const char *node_id,
				 const char *status, const char *key, const char *kind,
				 int64 requested_seq, MemoryContext resultctx)
{
	OwJson		j;
	MemoryContext old = MemoryContextSwitchTo(resultctx);
	Jsonb	   *env;

	owj_begin(&j);
	owj_str(&j, "status", "interrupted");
	owj_str(&j, "runId", run->run_id);
	MemoryContextSwitchTo(old);
	add_completed_prefix(&j, run, requested_seq);	/* runs SPI: in the SPI context */
	old = MemoryContextSwitchTo(resultctx);
	owj_begin_object(&j, "metadata");
	owj_begin_object(&j, "interrupt");
	owj_str(&j, "id", interrupt_id);
	owj_str(&j, "nodeId", node_id);
	owj_str(&j, "status", status);
	owj_end_object(&j);
	owj_end_object(&j);
	owj_str(&j, "key", key);
	owj_str(&j, "kind", kind);
	env = owj_end(&j);
	MemoryContextSwitchTo(old);
	return env;
}

/*
 * The recorded resolution, read back from the interrupt.resolved event in
 * the log (the log, not a cache, is what replay consults).
 */
static Jsonb *
resolved_envelope(OwRun *run, const char *interrupt_id, int64 resolved_seq, MemoryContext resultctx)
{
	static SPIPlanPtr plan = NULL;
	static const char *const copied[] = {"resumeValue", "decision", "action", "reason", "resolvedBy", NULL};
	Datum		args[3];
	bool		isnull;
	Jsonb	   *ev;
	OwJson		j;
	MemoryContext old;
	const char *const *k;
	Jsonb	   *env;

	if (plan == NULL)
	{
		Oid			types[3] = {TEXTOID, TEXTOID, INT8OID};

		plan = ow_prepare("SELECT payload FROM openwop.events"
						  " WHERE tenant OPERATOR(pg_catalog.=) $1"
						  "   AND run_id OPERATOR(pg_catalog.=) $2"
						  "   AND sequence OPERATOR(pg_catalog.=) $3"
						  "   AND type OPERATOR(pg_catalog.=) 'interrupt.resolved'", 3, types);
	}
	args[0] = CStringGetTextDatum(run->tenant);
	args[1] = CStringGetTextDatum(run->run_id);
	args[2] = Int64GetDatum(resolved_seq);
	if (SPI_execute_plan(plan, args, NULL, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "interrupt \"%s\" has no interrupt.resolved event at sequence " INT64_FORMAT,
			 interrupt_id, resolved_seq);
	ev = ow_event_payload("interrupt.resolved",
						  DatumGetJsonbP(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)),
						  run->tenant);

	old = MemoryContextSwitchTo(resultctx);
	owj_begin(&j);
	owj_str(&j, "status", "resolved");
	owj_str(&j, "interruptId", interrupt_id);
	for (k = copied; *k; k++)
	{
		JsonbValue *v = owj_get(ev, *k);

		if (v)
			owj_value(&j, *k, v);
	}
	env = owj_end(&j);
	MemoryContextSwitchTo(old);
	return env;
}

/*
 * Suspend the open execution ex of node_id on a new interrupt (the run is
 * locked): validate the request, store the interrupt first, append
 * interrupt.requested and node.suspended, mark the job interrupted, move
 * the run to waiting-*, save it.  Returns the INT-1 envelope built from the
 * stored row, in resultctx.  Shared by interrupt() and the low-confidence
 * escalation trigger.
 */
Jsonb *
ow_suspend(OwRun *run, const char *node_id, OwExec *ex, int32 ordinal, Jsonb *request,
		   MemoryContext resultctx)
{
	static SPIPlanPtr insert_plan = NULL;
	static SPIPlanPtr job_plan = NULL;
	char	   *key = derive_key(run->root_run_id, node_id, ex->visit, ordinal);
	char	   *kind;
	int64		timeout_ms;
	Jsonb	   *payload;
	Jsonb	   *result;
	Datum		args[12];
	char		nulls[12];
	char	   *interrupt_id;
	int64		req_seq;
	OwJson		j;

	/* a new interrupt: validate fully before writing anything */
	payload = check_request(request, key, &kind, &timeout_ms);
	if (strcmp(ex->status, "interrupted") == 0)
		ow_node_conflict(run, node_id,
						 "Resolve the node's pending interrupt before raising another.",
						 "node \"%s\" is already suspended on another interrupt", node_id);

	interrupt_id = psprintf("%s/%s", run->tenant, ow_mint_opaque(16));

	owj_begin(&j);
	owj_str(&j, "nodeId", node_id);
	owj_str(&j, "interruptId", interrupt_id);
	owj_str(&j, "kind", kind);
	if (strcmp(kind, "low-confidence") == 0)
		owj_str(&j, "reason", "low-confidence");
	owj_str(&j, "key", key);
	req_seq = ow_append_pair(run, node_id, "interrupt.requested", payload, "node.suspended", owj_end(&j));

	if (insert_plan == NULL)
	{
		Oid			types[12] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, INT4OID,
		INT4OID, TEXTOID, TEXTOID, JSONBOID, INT8OID, TIMESTAMPTZOID};

		insert_plan = ow_prepare("INSERT INTO openwop.interrupts"
								 " (tenant, interrupt_id, run_id, root_run_id, node_id, visit, ordinal,"
								 "  key, kind, payload, requested_sequence, expires_at)"
								 " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"
								 " RETURNING interrupt_id, node_id, status", 12, types);
	}
	memset(nulls, ' ', sizeof(nulls));
	args[0] = CStringGetTextDatum(run->tenant);
	args[1] = CStringGetTextDatum(interrupt_id);
	args[2] = CStringGetTextDatum(run->run_id);
	args[3] = CStringGetTextDatum(run->root_run_id);
	args[4] = CStringGetTextDatum(node_id);
	args[5] = Int32GetDatum(ex->visit);
	args[6] = Int32GetDatum(ordinal);
	args[7] = CStringGetTextDatum(key);
	args[8] = CStringGetTextDatum(kind);
	args[9] = JsonbPGetDatum(payload);
	args[10] = Int64GetDatum(req_seq);
	/* absent or 0: never expires (FlowDrop INT-23); nor does a deadline past year 100000 */
	if (timeout_ms <= 0 || timeout_ms > INT64CONST(100000) * 365 * 24 * 3600 * 1000)
		nulls[11] = 'n';
	else
		args[11] = TimestampTzGetDatum(TimestampTzPlusMilliseconds(GetCurrentTransactionStartTimestamp(),
																	timeout_ms));
	if (SPI_execute_plan(insert_plan, args, nulls, false, 0) != SPI_OK_INSERT_RETURNING ||
		SPI_processed != 1)
		elog(ERROR, "could not record interrupt \"%s\"", interrupt_id);

	{
		/* the answer is built from the stored row (INT-2) */
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		char	   *stored_id = SPI_getvalue(tup, desc, 1);
		char	   *stored_node = SPI_getvalue(tup, desc, 2);
		char	   *stored_status = SPI_getvalue(tup, desc, 3);

		if (job_plan == NULL)
		{
			Oid			types[5] = {TEXTOID, TEXTOID, TEXTOID, INT4OID, TEXTOID};

			job_plan = ow_prepare("UPDATE openwop.node_executions"
								  "   SET status = 'interrupted', interrupt_id = $5"
								  " WHERE tenant OPERATOR(pg_catalog.=) $1"
								  "   AND run_id OPERATOR(pg_catalog.=) $2"
								  "   AND node_id OPERATOR(pg_catalog.=) $3"
								  "   AND visit OPERATOR(pg_catalog.=) $4", 5, types);
		}
		args[0] = CStringGetTextDatum(run->tenant);
		args[1] = CStringGetTextDatum(run->run_id);
		args[2] = CStringGetTextDatum(node_id);
		args[3] = Int32GetDatum(ex->visit);
		args[4] = CStringGetTextDatum(stored_id);
		if (SPI_execute_plan(job_plan, args, NULL, false, 0) != SPI_OK_UPDATE || SPI_processed != 1)
			elog(ERROR, "could not suspend execution of node \"%s\"", node_id);

		run->status = (char *) ow_waiting_status(kind);
		run->current_node_id = (char *) node_id;
		ow_save_run(run);
		if (timeout_ms > 0)
			ow_deadline_raised();	/* the timeout worker wakes at commit */
		result = pending_envelope(run, stored_id, stored_node, stored_status, key, kind,
								  req_seq, resultctx);
	}
	return result;
}

/* ----------
 * openwop.interrupt(run_id, node_id, request, ordinal) → jsonb
 * ----------
 */
Datum
ow_interrupt(PG_FUNCTION_ARGS)
{
	static SPIPlanPtr find_plan = NULL;
	MemoryContext callerctx = CurrentMemoryContext;
	const char *run_input;
	char	   *node_id;
	Jsonb	   *request;
	int32		ordinal;
	char	   *tenant;
	OwPriv		priv;
	OwRun		run;
	OwExec		ex;
	char	   *key;
	Jsonb	   *result;
	Datum		args[3];

	if (PG_ARGISNULL(0))
		ow_validation_error("runId", "run_id must not be null");
	if (PG_ARGISNULL(1))
		ow_validation_error("nodeId", "node_id must not be null");
	if (PG_ARGISNULL(2))
		ow_validation_error("request", "request must not be null");
	ow_check_json_arg(fcinfo, 2, "request", false);
	run_input = text_to_cstring(PG_GETARG_TEXT_PP(0));
	node_id = text_to_cstring(PG_GETARG_TEXT_PP(1));
	request = PG_GETARG_JSONB_P(2);
	ordinal = PG_ARGISNULL(3) ? 0 : PG_GETARG_INT32(3);
	if (!ow_valid_author_id(node_id))
		ow_validation_error("nodeId", "\"%s\" is not a valid node id", ow_echo(node_id));
	if (ordinal < 0)
		ow_validation_error("ordinal", "ordinal must be 0 or greater, not %d", ordinal);
	tenant = ow_caller_tenant();

	SPI_connect();
	ow_become_owner(&priv);
	ow_lock_run(&run, tenant, run_input);
	ow_latest_exec(&run, node_id, &ex);
	if (!ex.found)
	{
		if (ow_run_is_terminal(run.status))
			ow_run_terminal(run.run_id, run.status);
		ow_node_not_found(&run, node_id, "has not been started");
	}

	/*
	 * The key of the node's latest execution.  A resolved key is replayed
	 * even when the host has since closed the execution or ended the run (a
	 * rejected gate): replay derives, never re-decides.
	 */
	key = derive_key(run.root_run_id, node_id, ex.visit, ordinal);

	/* the same key again: a replay or a repeated call; append nothing */
	if (find_plan == NULL)
	{
		Oid			types[3] = {TEXTOID, TEXTOID, TEXTOID};

		find_plan = ow_prepare("SELECT interrupt_id, status, kind, resolved_sequence, requested_sequence"
							   "  FROM openwop.interrupts"
							   " WHERE tenant OPERATOR(pg_catalog.=) $1"
							   "   AND root_run_id OPERATOR(pg_catalog.=) $2"
							   "   AND key OPERATOR(pg_catalog.=) $3", 3, types);
	}
	args[0] = CStringGetTextDatum(run.tenant);
	args[1] = CStringGetTextDatum(run.root_run_id);
	args[2] = CStringGetTextDatum(key);
	if (SPI_execute_plan(find_plan, args, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not look up interrupt key");
	if (SPI_processed == 1)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		char	   *id = SPI_getvalue(tup, desc, 1);
		char	   *status = SPI_getvalue(tup, desc, 2);
		char	   *stored_kind = SPI_getvalue(tup, desc, 3);
		bool		isnull;
		Datum		seq = SPI_getbinval(tup, desc, 4, &isnull);

		char	   *asked_kind = JB_ROOT_IS_OBJECT(request) ? owj_string(owj_get(request, "kind")) : NULL;

		if (asked_kind && strcmp(asked_kind, stored_kind) != 0)
		{
			OwDetails	d;

			ow_details_init(&d);
			ow_details_str(&d, "key", key);
			ow_details_str(&d, "kind", stored_kind);
			ow_raise(OW_SQLSTATE_409, "run_state_conflict", &d,
					 "A replay must raise the same interrupt as the execution it replays.",
					 "key \"%s\" was requested as a %s interrupt, not %s", key, stored_kind, asked_kind);
		}
		if (strcmp(status, "resolved") == 0)
			result = resolved_envelope(&run, id, DatumGetInt64(seq), callerctx);
		else if (strcmp(status, "pending") == 0)
			result = pending_envelope(&run, id, node_id, status, key, stored_kind,
									  DatumGetInt64(SPI_getbinval(tup, desc, 5, &isnull)), callerctx);
		else if (strcmp(status, "expired") == 0 && !ow_run_is_terminal(run.status))
		{
			/* a late answer expired it; the next sweep ends the run (INT-18) */
			OwJson		j;
			MemoryContext old = MemoryContextSwitchTo(callerctx);

			owj_begin(&j);
			owj_str(&j, "status", "expired");
			owj_str(&j, "runId", run.run_id);
			owj_str(&j, "interruptId", id);
			owj_str(&j, "kind", stored_kind);
			result = owj_end(&j);
			MemoryContextSwitchTo(old);
		}
		else
			ow_run_terminal(run.run_id, run.status);	/* cancelled or expired with its run */
		ow_restore_user(&priv);
		SPI_finish();
		PG_RETURN_JSONB_P(result);
	}

	if (ow_run_is_terminal(run.status))
		ow_run_terminal(run.run_id, run.status);
	if (!ow_exec_is_open(&ex))
		ow_node_not_open(&run, node_id, &ex);

	result = ow_suspend(&run, node_id, &ex, ordinal, request, callerctx);

	ow_restore_user(&priv);
	SPI_finish();
	PG_RETURN_JSONB_P(result);
}
