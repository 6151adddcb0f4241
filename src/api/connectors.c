/*-------------------------------------------------------------------------
 *
 * connectors.c
 *	  Connector events a host records: connector_auth_expired() appends
 *	  connector.auth-expired {provider, credentialRef, reason?} for a node's
 *	  open execution.  The OAuth facet of the OpenWOP spec says a terminal
 *	  refresh failure is announced so before the node suspends on a
 *	  credential interrupt (reason "expired"), or, on a host without
 *	  credential interrupts, before the node fails with
 *	  connector_auth_expired.  The host's OAuth code knows of the failure;
 *	  this records it, tenant-checked and validated like every event.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "base/base.h"
#include "store/store.h"
#include "auth/auth.h"
#include "domain/domain.h"
#include "api/api.h"

#include "mb/pg_wchar.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(ow_connector_auth_expired);

/*
 * openwop.connector_auth_expired(run_id, node_id, provider, credential_ref,
 * reason) → jsonb {runId, nodeId, sequence, runStatus}
 */
Datum
ow_connector_auth_expired(PG_FUNCTION_ARGS)
{
	char	   *run_input;
	char	   *node_id;
	char	   *provider;
	char	   *reason = NULL;
	OwCall		call;
	OwRun		run;
	OwExec		ex;
	OwJson		j;
	Jsonb	   *payload;
	int64		seq;
	Jsonb	   *result;

	ow_refuse_read_only("connector_auth_expired()");
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2) || PG_ARGISNULL(3))
		ow_validation_error(PG_ARGISNULL(0) ? "runId" : PG_ARGISNULL(1) ? "nodeId" :
							PG_ARGISNULL(2) ? "provider" : "credentialRef",
							"run_id, node_id, provider and credential_ref must not be null");
	ow_check_arg_size(fcinfo, 2, "provider", false);
	ow_check_json_arg(fcinfo, 3, "credentialRef", false);
	ow_check_arg_size(fcinfo, 4, "reason", false);
	run_input = text_to_cstring(PG_GETARG_TEXT_PP(0));
	node_id = text_to_cstring(PG_GETARG_TEXT_PP(1));
	provider = text_to_cstring(PG_GETARG_TEXT_PP(2));
	if (!PG_ARGISNULL(4))
		reason = text_to_cstring(PG_GETARG_TEXT_PP(4));
	if (!ow_valid_author_id(node_id))
		ow_validation_error("nodeId", "\"%s\" is not a valid node id", ow_echo(node_id));
	/* the credential interrupt's data.provider: a non-empty string, one of oauth.providers[].id */
	if (provider[0] == '\0' || pg_mbstrlen(provider) > 256)
		ow_validation_error("provider", "provider must be 1 to 256 characters");
	if (reason != NULL && (reason[0] == '\0' || pg_mbstrlen(reason) > 256))
		ow_validation_error("reason", "reason, when given, must be 1 to 256 characters");

	/* {credentialRef: <the argument>}, checked as a credential interrupt checks its own */
	owj_begin(&j);
	owj_jsonb(&j, "credentialRef", PG_GETARG_JSONB_P(3));
	payload = owj_end(&j);
	ow_check_credential_ref(&payload->root, NULL, "credentialRef", true);

	ow_call_begin(&call);
	ow_lock_open_execution(&run, call.caller.subject.tenant, run_input, node_id, &ex);

	owj_begin(&j);
	owj_str(&j, "provider", provider);
	owj_jsonb(&j, "credentialRef", PG_GETARG_JSONB_P(3));
	if (reason)
		owj_str(&j, "reason", reason);
	payload = owj_end(&j);
	seq = ow_append(&run, "connector.auth-expired", node_id, payload);
	ow_save_run(&run);

	ow_call_end(&call);
	owj_begin(&j);
	owj_str(&j, "runId", run.run_id);
	owj_str(&j, "nodeId", node_id);
	owj_int(&j, "sequence", seq);
	owj_str(&j, "runStatus", run.status);
	result = owj_end(&j);
	ow_call_finish(&call);
	PG_RETURN_JSONB_P(result);
}
