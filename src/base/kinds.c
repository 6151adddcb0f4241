/*-------------------------------------------------------------------------
 *
 * kinds.c
 *	  The nine interrupt kinds ("Interrupt kinds" in the OpenWOP interrupt
 *	  spec): what an interrupt request of each kind must hold, the payload
 *	  recorded for it, and the run status while it waits.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "base/internal.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/syscache.h"

/*
 * The resumeSchema every credential interrupt carries (the credential row
 * of "Payload" in the OpenWOP interrupt spec: the resume value is
 * {outcome} and carries no credential).
 */
#define CREDENTIAL_RESUME_SCHEMA \
	"{\"type\": \"object\", \"additionalProperties\": false, \"required\": [\"outcome\"], " \
	"\"properties\": {\"outcome\": {\"enum\": [\"authorized\", \"declined\"]}}}"

/*
 * openwop.credential_interrupts: whether this host advertises
 * oauth.credentialInterrupt, and so suspends a node on a credential
 * interrupt instead of failing it.  Off for a deployment whose host has no
 * grant callback calling confirm_credential(): its engines then fail the
 * node with connector_auth_expired, as the spec says for a host without it.
 */
bool		ow_credential_interrupts = true;

static const char *const kinds[] = {"approval", "clarification", "external-event", "custom",
	"conversation.start", "conversation.exchange", "conversation.close",
"low-confidence", "credential", NULL};

/* ----------
 * Per-kind data (the kind table of "Payload"); every object is closed.
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

	if (owj_get_container(d, "message"))
		ow_validation_error("data.message",
							"data.message is not an approval member; put the text in data.description");
	ow_member_closed(d, keys, "data");
	ow_member_str(d, "data", "artifactId", true, 1, 0);
	ow_member_str(d, "data", "artifactType", true, 1, 0);
	ow_member_str(d, "data", "title", true, 1, 0);
	acts = ow_member_str_array(d, "data", "actions", true, 1, true, true);
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
	ow_member_str(d, "data", "description", false, 0, 0);
	ow_member_enum(d, "data", "onTimeout", false, on_timeout);
	if (ow_member_int(d, "data", "requiredApprovals", 1) > 10000)
		ow_validation_error("data.requiredApprovals", "data.requiredApprovals must be at most 10000");
	ow_member_str_array(d, "data", "approversList", false, 1, false, false);
	ow_member_enum(d, "data", "rejectionPolicy", false, policies);
	ow_member_bool(d, "data", "overrideBypassesQuorum");
	ow_member_str_array(d, "data", "approverGroupRefs", false, 1, false, false);
	ow_member_str_array(d, "data", "approverRoleRefs", false, 1, false, false);
	if ((aud = ow_member_object(d, "data", "audience", false)) != NULL)
	{
		ow_member_closed(aud->val.binary.data, audience_keys, "data.audience");
		ow_member_str_array(aud->val.binary.data, "data.audience", "subjects", false, 0, false, false);
		ow_member_str_array(aud->val.binary.data, "data.audience", "groups", false, 0, false, false);
		ow_member_str_array(aud->val.binary.data, "data.audience", "roles", false, 0, false, false);
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

	ow_member_closed(d, keys, "data");
	ow_member_str(d, "data", "contextType", false, 0, 0);
	qs = owj_get_container(d, "questions");
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
		ow_member_closed(q->val.binary.data, qkeys, p);
		ow_member_str(q->val.binary.data, p, "id", true, 1, 0);
		ow_member_str(q->val.binary.data, p, "question", true, 1, 0);
		ow_member_schema(q->val.binary.data, p, "schema");
	}
}

static void
check_external_event(JsonbContainer *d)
{
	static const char *const keys[] = {"eventType", "correlation", NULL};

	ow_member_closed(d, keys, "data");
	ow_member_str(d, "data", "eventType", true, 0, 0);
	ow_member_object(d, "data", "correlation", true);
}

static void
check_custom(JsonbContainer *d)
{
	static const char *const keys[] = {"customKind", "payload", NULL};

	ow_member_closed(d, keys, "data");
	ow_member_str(d, "data", "customKind", true, 1, 0);
}

static void
check_conversation(JsonbContainer *d, const char *kind)
{
	static const char *const start_keys[] = {"conversationId", "title", "initialPrompt", NULL};
	static const char *const exchange_keys[] = {"conversationId", "prompt", "outcomeSchema", "turnIndex", NULL};
	static const char *const close_keys[] = {"conversationId", "reason", NULL};

	if (strcmp(kind, "conversation.start") == 0)
	{
		ow_member_closed(d, start_keys, "data");
		ow_member_str(d, "data", "title", false, 0, 0);
		ow_member_str(d, "data", "initialPrompt", false, 0, 0);
	}
	else if (strcmp(kind, "conversation.exchange") == 0)
	{
		ow_member_closed(d, exchange_keys, "data");
		ow_member_str(d, "data", "prompt", true, 1, 0);
		ow_member_schema(d, "data", "outcomeSchema");
		if (ow_member_int(d, "data", "turnIndex", 0) > PG_INT32_MAX)
			ow_validation_error("data.turnIndex", "data.turnIndex must be at most %d", PG_INT32_MAX);
	}
	else
	{
		ow_member_closed(d, close_keys, "data");
		ow_member_str(d, "data", "reason", false, 0, 0);
	}
	ow_member_str(d, "data", "conversationId", true, 1, 256);
}

static void
check_low_confidence(JsonbContainer *d)
{
	static const char *const keys[] = {"agentId", "threshold", "observed", "decision", NULL};
	char	   *agent;

	ow_member_closed(d, keys, "data");
	agent = ow_member_str(d, "data", "agentId", true, 1, 128);
	if (!ow_valid_author_id(agent))
		ow_validation_error("data.agentId", "data.agentId \"%s\" is not a valid agent id", agent);
	ow_member_unit_number(d, "data", "threshold");
	ow_member_unit_number(d, "data", "observed");
}

/*
 * A credential reference {ref, scope?} (the spec's credential-reference
 * schema), member key of obj: of a credential interrupt's data, and of
 * connector.auth-expired.
 */
void
ow_check_credential_ref(JsonbContainer *obj, const char *prefix, const char *key, bool required)
{
	static const char *const ref_keys[] = {"ref", "scope", NULL};
	JsonbValue *ref;
	char	   *field = ow_field_name(prefix, key);

	if ((ref = ow_member_object(obj, prefix, key, required)) != NULL)
	{
		ow_member_closed(ref->val.binary.data, ref_keys, field);
		ow_member_str(ref->val.binary.data, field, "ref", true, 1, 0);
		ow_member_str(ref->val.binary.data, field, "scope", false, 0, 0);
	}
}

static void
check_credential(JsonbContainer *d)
{
	static const char *const keys[] = {"provider", "scopes", "reason", "connectUrl", "credentialRef", NULL};
	static const char *const reasons[] = {"missing", "expired", "insufficient_scope", NULL};
	char	   *url;

	ow_member_closed(d, keys, "data");
	ow_member_str(d, "data", "provider", true, 1, 0);
	ow_member_str_array(d, "data", "scopes", true, 1, true, false);
	ow_member_enum(d, "data", "reason", true, reasons);
	url = ow_member_str(d, "data", "connectUrl", true, 1, 0);
	if (strncmp(url, "https://", 8) != 0 || url[8] == '\0' || strpbrk(url, " \t\r\n") != NULL)
		ow_validation_error("data.connectUrl", "data.connectUrl must be an https:// URI");
	/* it must not carry anything that resolves the interrupt, e.g. a token */
	if (strstr(url, "ow2.") != NULL)
		ow_validation_error("data.connectUrl", "data.connectUrl must not carry an interrupt token");
	ow_check_credential_ref(d, "data", "credentialRef", false);
}

/*
 * Validate request {kind, data, resumeSchema?, timeoutMs?} and return the
 * InterruptPayload to record: the same members plus the derived key, with
 * credential's pinned resumeSchema filled in.  *timeout_ms is -1 if absent.
 */
Jsonb *
ow_check_request(Jsonb *request, const char *key, char **kind_out, int64 *timeout_ms)
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
	ow_member_closed(r, keys, "request");
	kind = ow_member_str(r, "request", "kind", true, 1, 0);
	for (k = kinds; *k; k++)
		known |= strcmp(*k, kind) == 0;
	if (!known)
		ow_validation_error("request.kind", "request.kind \"%s\" is not one of the nine interrupt kinds", kind);
	data = ow_member_object(r, "request", "data", true);
	*timeout_ms = ow_member_int(r, "request", "timeoutMs", 0);

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

	rs = owj_get_container(r, "resumeSchema");
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
		ow_member_schema(r, "request", "resumeSchema");
	}

	if (strcmp(kind, "credential") == 0 && !ow_credential_interrupts)
	{
		OwDetails	d;

		ow_details_init(&d);
		ow_details_str(&d, "requiredCapability", "oauth.credentialInterrupt");
		ow_raise(OW_CAPABILITY_REQUIRED, &d,
				 "openwop.credential_interrupts is off on this host: fail the node with connector_auth_expired instead.",
				 "credential interrupts need the oauth.credentialInterrupt capability");
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
		owj_value(&j, "timeoutMs", owj_get_container(r, "timeoutMs"));
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

void
ow_define_kind_settings(void)
{
	DefineCustomBoolVariable("openwop.credential_interrupts",
							 "Advertise oauth.credentialInterrupt and accept credential interrupts.",
							 "Turn off where no OAuth grant callback calls openwop.confirm_credential().",
							 &ow_credential_interrupts, true, PGC_SUSET, 0, NULL, NULL, NULL);
}
