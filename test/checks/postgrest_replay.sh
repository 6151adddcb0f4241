#!/usr/bin/env bash
# The PostgREST surface (schema openwop_api, docs/postgrest.md), tested the
# way PostgREST v12 calls it.  PostgREST itself is not installed here, so
# every request is given as curl sends it (method, URL, headers, body, a
# signed JWT) and replayed by test/pgrst_lib.sh statement for statement as
# PostgREST v12.2.12 (commit cd3cf9ed978c8892e3ac460cb4d0b8c621d4c98f) sends
# it, in a session of a real authenticator login, and the HTTP response is
# computed from what the database answered the way PostgREST computes it.
# What is modelled, each behaviour cited to PostgREST's source: the header
# of test/pgrst_lib.sh (the JWT as jose reads it, the URL as http-types
# decodes it, the Content-Type, the function the schema cache picks, the
# transaction and its set_config select, the statement, the answer).
# test/checks/postgrest_http.sh checks that layer itself.  Needs the
# cluster test/run starts (it connects as the logins it creates).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
db=openwop_pgrst
auth=owpr_authenticator         # PostgREST's db-uri login
anon=owpr_anon                  # db-anon-role
web=owpr_web                    # the role the JWTs name
mallory=owpr_mallory            # a login that is not the authenticator
tmp=$(mktemp -d)
passed=0
failed=0
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d $db -c "SET openwop.tenant = 'acme'" -c "$1" | tail -n 1; }
drop_all() {
	psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true
	for r in $auth $anon $web $mallory; do
		psql -X -q -d postgres -c "DROP ROLE IF EXISTS $r" >/dev/null 2>&1 || true
	done
}
cleanup() {
	[ -n "${held:-}" ] && kill "$held" 2>/dev/null || true
	rm -rf "$tmp"
	drop_all
}
trap cleanup EXIT
drop_all

# ---------- the deployment (docs/postgrest.md, "Roles and grants") ----------
psql -X -q -v ON_ERROR_STOP=1 -d postgres >/dev/null <<SQL
CREATE DATABASE $db;
CREATE ROLE $auth LOGIN NOINHERIT PASSWORD '${PGPASSWORD:-unused}';   -- pg_virtualenv logs in by password
CREATE ROLE $anon NOLOGIN;
CREATE ROLE $web NOLOGIN;
GRANT $anon, $web TO $auth;
ALTER ROLE $auth SET openwop.bound_tenant = '*';
-- a role setting, which PostgREST applies at each request of the role
ALTER ROLE $web SET lock_timeout = '1s';
CREATE ROLE $mallory LOGIN PASSWORD '${PGPASSWORD:-unused}';
ALTER ROLE $mallory SET openwop.bound_tenant = 'acme';
SQL
make_login_approver $db
psql -X -q -v ON_ERROR_STOP=1 -d $db >/dev/null <<SQL
CREATE EXTENSION openwop_interrupt;
ALTER DATABASE $db SET openwop.jwt_session_role = '$auth';
GRANT USAGE ON SCHEMA openwop_api TO $anon, $web;
-- wider than docs/postgrest.md for the anonymous role (the run surface too), so
-- that the function's own refusal of an anonymous caller is checked
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA openwop_api TO $anon, $web;
GRANT SELECT ON openwop_api.pending_interrupts TO $web;
GRANT EXECUTE ON FUNCTION openwop.inbox_waiting(text), openwop.inbox_tenant(), openwop.inbox_voter(),
    openwop.may_decide(text, text, text, jsonb, jsonb) TO $web;
-- mallory may call the surface and holds approvals:respond as a SQL login
GRANT USAGE ON SCHEMA openwop_api TO $mallory;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA openwop_api TO $mallory;
GRANT openwop_approver TO $mallory;
SELECT openwop.add_signing_key('k1');
SQL

# ---------- PostgREST in front (postgrest.conf: db-uri, db-schemas, db-anon-role, jwt-secret) ----------
export PGRST_DB=$db PGRST_AUTHENTICATOR=$auth PGRST_ANON=$anon PGRST_SCHEMA=openwop_api PGRST_ROOT_SPEC= PGRST_TMP=$tmp
. "$(dirname "$0")/../pgrst_lib.sh"
pgrst_init
# the role settings PostgREST read at startup (Config/Database.hs, queryRoleSettings)
jq -e --arg web $web '.role_settings == {($web): [["lock_timeout", "1s"]]}' "$tmp/pgrst_cache.json" >/dev/null

# request METHOD FUNCTION CLAIMS HEADERS ARGS [LOGIN]: one request to
# /rpc/FUNCTION as curl sends it: CLAIMS (a JSON object, or empty for no
# JWT) signed into Authorization: Bearer, the extra HEADERS (a JSON
# object), ARGS the POST body (Content-Type: application/json) or the GET
# query parameters (a JSON object, percent-encoded into the URL); in a
# session of LOGIN (default: the authenticator).  Prints the answer
# (test/pgrst_lib.sh, pgrst_request).
request_args() {    # the options of pgrst_request/pgrst_script for request's arguments
	local method=$1 fn=$2 claims=$3 extra=$4 args=$5 login=${6:-$auth} h query
	req_url=/rpc/$fn
	req_opts=(--login "$login")
	[ -n "$claims" ] && req_opts+=(--jwt "$claims")
	while IFS= read -r h; do
		[ -n "$h" ] && req_opts+=(-H "$h")
	done < <(jq -r 'to_entries[] | "\(.key): \(.value)"' <<<"$extra")
	if [ "$method" = GET ]; then
		query=$(jq -r 'to_entries | map("\(.key | @uri)=\(.value | tostring | @uri)") | join("&")' <<<"$args")
		[ -n "$query" ] && req_url+="?$query"
	else
		req_opts+=(-H 'Content-Type: application/json' -d "$args")
	fi
}
request() {
	request_args "$@"
	pgrst_request "$1" "$req_url" "${req_opts[@]}"
}

# check NAME RESPONSE JQ-CONDITION
check() {
	if jq -e "$3" >/dev/null <<<"$2"; then
		passed=$((passed + 1))
		echo "ok $((passed + failed)) - $1"
	else
		failed=$((failed + 1))
		echo "not ok $((passed + failed)) - $1"
		echo "#   response: $2"
		echo "#   expected: $3"
	fi
}

# the refusal envelope: exactly {error, message, details}, with this status and code
envelope() {    # STATUS CODE
	echo ".status == $1 and .tx == \"COMMIT\" and (.body | keys) == [\"details\", \"error\", \"message\"]
	      and .body.error == \"$2\" and (.body.details | type) == \"object\" and (.body.message | type) == \"string\""
}

# ---------- the runs ----------
alice='{"sub": "alice", "iss": "https://idp.example.org", "tenant": "acme", "scope": "approvals:respond", "role": "'$web'"}'
noscope='{"sub": "bob", "iss": "https://idp.example.org", "tenant": "acme", "role": "'$web'"}'
globex='{"sub": "gina", "iss": "https://idp.example.org", "tenant": "globex", "scope": "approvals:respond", "role": "'$web'"}'
cfo_claims='{"sub": "cfo@example.org", "iss": "https://idp.example.org", "tenant": "acme", "scope": "approvals:respond"'
gate() {    # RUN [DATA]: a run waiting on approval gate "gate" (DATA added to its data); prints the interrupt id
	local data=${2:-}
	[ -n "$data" ] || data='{}'
	q "SELECT openwop.create_run('pgrst', '{\"runId\": \"$1\"}')" >/dev/null
	q "SELECT openwop.start_node('$1', 'gate')" >/dev/null
	q "SELECT openwop.interrupt('$1', 'gate', jsonb_build_object('kind', 'approval', 'data',
	     '{\"artifactId\": \"a\", \"artifactType\": \"doc\", \"title\": \"Expense\", \"actions\": [\"accept\", \"reject\"]}'::jsonb
	     || '$data'::jsonb)) #>> '{metadata,interrupt,id}'"
}
events() { q "SELECT count(*) FROM openwop.events WHERE run_id = '$1'"; }
body() {    # RUN [NODE [RESUME-VALUE]]: the body {runId, nodeId, resumeValue}
	local value=${3:-}
	[ -n "$value" ] || value='{"action": "accept"}'
	jq -c -n --arg run "$1" --arg node "${2:-gate}" --argjson value "$value" '{runId: $run, nodeId: $node, resumeValue: $value}'
}

# ---------- the inbox: GET /pending_interrupts ----------
# A GET of the view, read by PostgREST's read plan (test/pgrst_lib.sh:
# READ ONLY, the set_config select, Statements.hs prepareRead around
# QueryBuilder.hs readPlanToQuery: order=requested_at is ORDER BY, limit=N
# is LIMIT $n OFFSET $m, requested_at=gt.X is "requested_at" > $n, each an
# unknown-typed parameter), answered 200 with Content-Range.  A
# permission error is Error.hs pgErrorStatus: 42501 is 401 without a JWT,
# 403 with one.
inbox_cols='["interrupt_id", "run_id", "node_id", "kind", "title", "request", "resume_schema", "requested_at",
             "expires_at", "required_approvals", "accepts", "rejects", "voters", "my_vote", "my_vote_at", "policy", "due_at", "overdue"]'

# read_inbox CLAIMS LIMIT [AFTER]: GET
# /pending_interrupts?order=requested_at&limit=LIMIT[&requested_at=gt.AFTER],
# AFTER percent-encoded as curl sends it (a '+' as %2B: a raw '+' is a
# space, test/checks/postgrest_http.sh)
read_inbox() {
	local claims=$1 limit=$2 after=${3:-} url opts=()
	url="/pending_interrupts?order=requested_at&limit=$limit"
	[ -n "$after" ] && url+="&requested_at=gt.$(pgrst_urlencode "$after")"
	[ -n "$claims" ] && opts=(--jwt "$claims")
	pgrst_request GET "$url" "${opts[@]}"
}

echo "# GET /pending_interrupts"
# four acme gates, oldest first; the second is the CFO's alone
ib1=$(gate acme/pgrst-inbox-000000000001)
ibcfo=$(gate acme/pgrst-inbox-000000000002 '{"approversList": ["cfo@example.org"]}')
ib2=$(gate acme/pgrst-inbox-000000000003)
ib3=$(gate acme/pgrst-inbox-000000000004)
page=$(read_inbox "$alice" 50)
check "inbox: an approver of acme reads 200 with exactly the acme gates it may decide, oldest first, the documented columns" "$page" \
	".status == 200 and .tx == \"COMMIT\" and .headers[\"content-range\"] == \"0-2/*\"
	 and .headers[\"content-type\"] == \"application/json; charset=utf-8\"
	 and (.body | map(.interrupt_id)) == [\"$ib1\", \"$ib2\", \"$ib3\"]
	 and (.body | map(.requested_at)) == (.body | map(.requested_at) | sort)
	 and all(.body[]; keys == ($inbox_cols | sort) and .kind == \"approval\" and .title == \"Expense\"
	                  and .required_approvals == 1 and .voters == 0 and .my_vote == null)"
p1=$(read_inbox "$alice" 2)
p2=$(read_inbox "$alice" 2 "$(jq -r '.body[-1].requested_at' <<<"$p1")")
p3=$(read_inbox "$alice" 2 "$(jq -r '.body[-1].requested_at' <<<"$p2")")
check "inbox: the next page (requested_at=gt.<last>) continues where the first ended, no overlap, nothing after the last" \
	"$(jq -c -n --argjson all "$page" --argjson a "$p1" --argjson b "$p2" --argjson c "$p3" '{all: $all, a: $a, b: $b, c: $c}')" \
	'.a.status == 200 and .a.headers["content-range"] == "0-1/*" and .b.status == 200 and .b.headers["content-range"] == "0-0/*"
	 and (.a.body | length) == 2 and (.a.body + .b.body) == .all.body
	 and .c.status == 200 and .c.body == [] and .c.headers["content-range"] == "*/*"'
r=$(read_inbox "$globex" 50)
check "inbox: an approver of another tenant reads [] (no acme row)" "$r" \
	'.status == 200 and .tx == "COMMIT" and .body == [] and .headers["content-range"] == "*/*"'
r=$(read_inbox "$noscope" 50)
check "inbox: a JWT without approvals:respond reads []" "$r" '.status == 200 and .tx == "COMMIT" and .body == []'
r=$(read_inbox "" 50)
check "inbox: the anonymous role (no SELECT grant, docs/postgrest.md) is PostgREST's 401 for 42501, with WWW-Authenticate" "$r" \
	'.status == 401 and .tx == "ABORT" and .body.code == "42501" and .headers["www-authenticate"] == "Bearer"'
r=$(read_inbox "$cfo_claims, \"role\": \"$web\"}" 50)
check "inbox: a gate restricted by approversList is absent for alice, present for its principal, without approversList" \
	"$(jq -c -n --argjson all "$page" --argjson cfo "$r" '{all: $all, cfo: $cfo}')" \
	"(.all.body | map(.interrupt_id) | index(\"$ibcfo\")) == null
	 and .cfo.status == 200 and (.cfo.body | map(.interrupt_id)) == [\"$ib1\", \"$ibcfo\", \"$ib2\", \"$ib3\"]
	 and (.cfo.body[1].request | has(\"approversList\") | not) and .cfo.body[1].request.title == \"Expense\""

# ---------- resolveInterruptByRun ----------
echo "# POST /rpc/resolveInterruptByRun"
gate acme/pgrst-run-000000000001 >/dev/null
r=$(request POST resolveInterruptByRun "$alice" '{}' "$(body acme/pgrst-run-000000000001)")
check "resolveInterruptByRun: 200 with the resolution, committed" "$r" \
	'.status == 200 and .tx == "COMMIT" and .body.status == "resolved" and .body.decision == "granted"
	 and .body.resolvedBy == {"issuer": "https://idp.example.org", "subjectId": "alice", "tenant": "acme", "lane": "oauth2", "kind": "user"}
	 and .headers["content-type"] == "application/json; charset=utf-8" and .headers["content-range"] == "0-0/*"
	 and (.headers | has("openwop-idempotent-replay") | not)'
[ "$(events acme/pgrst-run-000000000001)" = 6 ]

r=$(request POST resolveInterruptByRun "$alice" '{}' "$(body acme/pgrst-run-000000000001)")
check "interrupt_already_resolved: 409 with the spec's envelope and details" "$r" \
	"$(envelope 409 interrupt_already_resolved) and .body.details == {\"runId\": \"acme/pgrst-run-000000000001\", \"nodeId\": \"gate\", \"runStatus\": \"running\"}"

# Idempotency-Key: the response is stored; a retry is its replay, marked by a header
gate acme/pgrst-run-000000000002 >/dev/null
key=pgrst-key-0000000000000001
first=$(request POST resolveInterruptByRun "$alice" "{\"idempotency-key\": \"$key\"}" "$(body acme/pgrst-run-000000000002)")
again=$(request POST resolveInterruptByRun "$alice" "{\"idempotency-key\": \"$key\"}" "$(body acme/pgrst-run-000000000002)")
check "Idempotency-Key: the first request is answered without the replay header" "$first" \
	'.status == 200 and .body.status == "resolved" and (.headers | has("openwop-idempotent-replay") | not)'
check "OpenWOP-Idempotent-Replay: true on a replay, with the stored body unchanged" "$(jq -c -n --argjson a "$first" --argjson b "$again" '{a: $a, b: $b}')" \
	'.b.status == 200 and .b.headers["openwop-idempotent-replay"] == "true" and .b.body == .a.body and (.b.body | has("idempotentReplay") | not)'
[ "$(events acme/pgrst-run-000000000002)" = 6 ]
r=$(request POST resolveInterruptByRun "$alice" "{\"idempotency-key\": \"$key\"}" "$(body acme/pgrst-run-000000000002 gate '{"action": "reject"}')")
check "idempotency_key_mismatch: 409 for another body under the key" "$r" "$(envelope 409 idempotency_key_mismatch)"
r=$(request POST resolveInterruptByRun "$alice" '{"idempotency-key": "too-short"}' "$(body acme/pgrst-run-000000000002)")
check "idempotency_key_invalid: 400, details.field Idempotency-Key" "$r" \
	"$(envelope 400 idempotency_key_invalid) and .body.details == {\"field\": \"Idempotency-Key\"}"

# the closed body {runId, nodeId, resumeValue}
gate acme/pgrst-run-000000000003 '{"approversList": ["cfo@example.org"]}' >/dev/null
r=$(request POST resolveInterruptByRun "$alice" '{}' "$(jq -c '. + {"comment": "x"}' <<<"$(body acme/pgrst-run-000000000003)")")
check "validation_error: an unknown body member is 400, not PostgREST's PGRST202" "$r" \
	"$(envelope 400 validation_error) and .body.details == {\"field\": \"comment\"}"
r=$(request POST resolveInterruptByRun "$alice" '{}' '[{"runId": "acme/pgrst-run-000000000003"}]')
check "validation_error: a body that is not an object is 400" "$r" \
	"$(envelope 400 validation_error) and .body.details == {\"field\": \"body\"}"
r=$(request POST resolveInterruptByRun "$alice" '{}' '{"runId": "acme/pgrst-run-000000000003", "nodeId": "gate"}')
check "validation_error: a body without resumeValue is 400, details.field resumeValue" "$r" \
	"$(envelope 400 validation_error) and .body.details == {\"field\": \"resumeValue\"}"
r=$(request POST resolveInterruptByRun "$alice" '{}' '{"runId": "acme/pgrst-run-000000000003", "nodeId": 7, "resumeValue": {}}')
check "validation_error: a member of the wrong type is 400" "$r" \
	"$(envelope 400 validation_error) and .body.details == {\"field\": \"nodeId\"}"
gate acme/pgrst-run-000000000008 >/dev/null
r=$(request POST resolveInterruptByRun "$alice" '{}' "$(body acme/pgrst-run-000000000008 gate '{"action": "approve"}')")
check "validation_error: an action outside actions is 400, details.field resumeValue.action" "$r" \
	"$(envelope 400 validation_error) and .body.details.field == \"resumeValue.action\""

# who is calling
r=$(request POST resolveInterruptByRun "$alice" '{}' "$(body acme/pgrst-run-000000000003)")
check "forbidden: an approver outside approversList is 403, details.principal" "$r" \
	"$(envelope 403 forbidden) and .body.details == {\"principal\": \"alice\"}"
r=$(request POST resolveInterruptByRun "$noscope" '{}' "$(body acme/pgrst-run-000000000003)")
check "forbidden: a JWT without approvals:respond is 403, details.requiredScope" "$r" \
	"$(envelope 403 forbidden) and .body.details == {\"requiredScope\": \"approvals:respond\"}"
r=$(request POST resolveInterruptByRun "" '{}' "$(body acme/pgrst-run-000000000003)")
check "anonymous_request_on_run_surface: no JWT (db-anon-role) is 403 forbidden, details.requiredScope" "$r" \
	"$(envelope 403 forbidden) and .body.details == {\"requiredScope\": \"approvals:respond\"}"
r=$(request POST resolveInterruptByRun "$globex" '{}' "$(body acme/pgrst-run-000000000003)")
check "id_tenant_mismatch: a caller of tenant globex answering acme's run is 403" "$r" \
	"$(envelope 403 id_tenant_mismatch) and .body.details.runId == \"acme/pgrst-run-000000000003\""
r=$(request POST resolveInterruptByRun '{"sub": "two words", "tenant": "acme", "scope": "approvals:respond", "role": "'$web'"}' '{}' "$(body acme/pgrst-run-000000000003)")
check "identity_unresolvable: a sub outside the subjectId grammar is 401, with WWW-Authenticate" "$r" \
	"$(envelope 401 identity_unresolvable) and .headers[\"www-authenticate\"] == \"Bearer\""
r=$(request POST resolveInterruptByRun "$cfo_claims, \"role\": \"$mallory\"}" '{}' "$(body acme/pgrst-run-000000000003)" $mallory)
check "forged_claims_from_another_login: a login that is not the authenticator setting the CFO's claims is itself: 403, details.principal is the login" "$r" \
	"$(envelope 403 forbidden) and .body.details == {\"principal\": \"$mallory\"}"
r=$(PGOPTIONS="-c openwop.tenant=acme" request POST resolveInterruptByRun "$cfo_claims, \"role\": \"postgres\"}" '{}' "$(body acme/pgrst-run-000000000003)" postgres)
check "forged_claims_in_superuser_session: a superuser's claims do not count either: 403, details.principal postgres" "$r" \
	"$(envelope 403 forbidden) and .body.details == {\"principal\": \"postgres\"}"
[ "$(events acme/pgrst-run-000000000003)" = 4 ]
[ "$(q "SELECT status FROM openwop.interrupts WHERE run_id = 'acme/pgrst-run-000000000003'")" = pending ]
r=$(request POST resolveInterruptByRun "$cfo_claims, \"role\": \"$web\"}" '{}' "$(body acme/pgrst-run-000000000003)")
check "the CFO's own JWT, through the authenticator, resolves the gate" "$r" \
	'.status == 200 and .body.resolvedBy.subjectId == "cfo@example.org"'

r=$(request POST resolveInterruptByRun "$alice" '{}' "$(body acme/pgrst-run-999999999999)")
check "not_found: an unknown run is 404" "$r" "$(envelope 404 not_found) and .body.details == {\"runId\": \"acme/pgrst-run-999999999999\"}"
r=$(request POST resolveInterruptByRun "$alice" '{}' "$(body acme/pgrst-run-000000000003 nowhere)")
check "not_found: a node that never raised an interrupt is 404" "$r" "$(envelope 404 not_found)"

# a refusal after the key was claimed leaves nothing: no record, no event; the retry is refused again
gate acme/pgrst-run-000000000004 '{"approversList": ["cfo@example.org"]}' >/dev/null
key=pgrst-key-0000000000000004
r=$(request POST resolveInterruptByRun "$alice" "{\"idempotency-key\": \"$key\"}" "$(body acme/pgrst-run-000000000004)")
again=$(request POST resolveInterruptByRun "$alice" "{\"idempotency-key\": \"$key\"}" "$(body acme/pgrst-run-000000000004)")
check "a refusal is not stored under its key: the retry is refused the same, not replayed" "$(jq -c -n --argjson a "$r" --argjson b "$again" '{a: $a, b: $b}')" \
	'.a.status == 403 and .b.status == 403 and .a.body == .b.body and (.b.headers | has("openwop-idempotent-replay") | not)'
[ "$(q "SELECT count(*) FROM openwop.idempotency_keys WHERE key = '$key'")" = 0 ]
[ "$(events acme/pgrst-run-000000000004)" = 4 ]

# ---------- two sessions ----------
# hold LOGIN WAIT-FOR SQL [psql args]: a session of LOGIN that runs SQL
# and keeps its transaction open; returns once it is idle in its
# transaction after a statement matching WAIT-FOR.
hold() {
	local login=$1 pattern=$2 sql=$3 deadline=$((SECONDS + 30))
	shift 3
	mkfifo "$tmp/held"
	PGAPPNAME=owpr_held psql -X -A -t -q -U "$login" -d $db "$@" <"$tmp/held" >"$tmp/held.out" 2>&1 &
	held=$!
	exec 7>"$tmp/held"
	printf '%s\n' "$sql" >&7
	until [ "$(q "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'owpr_held'
	               AND state = 'idle in transaction' AND query LIKE '%$pattern%'")" = 1 ]; do
		[ $SECONDS -lt $deadline ] || { cat "$tmp/held.out" >&2; echo "the held session never got ready" >&2; exit 1; }
		sleep 0.1
	done
}
release() {
	printf 'COMMIT;\n' >&7
	exec 7>&-
	wait "$held"
	held=
	rm -f "$tmp/held"
}

gate acme/pgrst-run-000000000005 >/dev/null
key=pgrst-key-0000000000000005
# the first request with the key, as PostgREST sends it, its transaction still open
request_args POST resolveInterruptByRun "$alice" "{\"idempotency-key\": \"$key\"}" "$(body acme/pgrst-run-000000000005)"
pgrst_script POST "$req_url" "${req_opts[@]}" --name h --open
hold $auth "EXECUTE hpgrst_call" "$(cat "$pgrst_script_file")"
r=$(request POST resolveInterruptByRun "$alice" "{\"idempotency-key\": \"$key\"}" "$(body acme/pgrst-run-000000000005)")
check "idempotency_in_flight: the same key while the first request is open is 409 after lock_timeout (the role's setting)" "$r" \
	"$(envelope 409 idempotency_in_flight) and .body.details == {}"
release
r=$(request POST resolveInterruptByRun "$alice" "{\"idempotency-key\": \"$key\"}" "$(body acme/pgrst-run-000000000005)")
check "once the first committed, the same request is its replay" "$r" \
	'.status == 200 and .headers["openwop-idempotent-replay"] == "true" and .body.status == "resolved"'

gate acme/pgrst-run-000000000006 >/dev/null
hold postgres "FOR UPDATE" "BEGIN; SELECT 1 FROM openwop.runs WHERE run_id = 'acme/pgrst-run-000000000006' FOR UPDATE;"
r=$(request POST resolveInterruptByRun "$alice" '{}' "$(body acme/pgrst-run-000000000006)")
check "an error that is no refusal (lock_timeout, 55P03) is re-thrown untouched: PostgREST answers it, 500" "$r" \
	'.status == 500 and .tx == "ABORT" and .body.code == "55P03" and .body.message == "canceling statement due to lock timeout"'
release
[ "$(events acme/pgrst-run-000000000006)" = 4 ]

# one pooled connection serves request after request: nothing of one is left for the next
gate acme/pgrst-run-000000000007 >/dev/null
sql=
for v in a:"$noscope" b: c:"$alice"; do
	request_args POST resolveInterruptByRun "${v#*:}" '{}' "$(body acme/pgrst-run-000000000007)"
	pgrst_script POST "$req_url" "${req_opts[@]}" --name "${v%%:*}"
	sql+=$(cat "$pgrst_script_file")$'\n'
done
r=$(psql -X -A -t -q -F $'\x1f' -U $auth -d $db <<<"$sql" 2>/dev/null | grep -v '^PGRST-' | cut -d $'\x1f' -f3 | jq -s -c .)
check "one pooled connection: bob, then an anonymous request, then alice: each is only itself" "$r" \
	'length == 3 and .[0].error == "forbidden" and .[0].details == {"requiredScope": "approvals:respond"}
	 and .[1].error == "forbidden" and .[1].details == {"requiredScope": "approvals:respond"}
	 and .[2].status == "resolved" and .[2].resolvedBy.subjectId == "alice"'

# the events a resolve appended are announced at PostgREST's COMMIT; a refusal announces nothing
gate acme/pgrst-run-000000000009 '{"approversList": ["cfo@example.org"]}' >/dev/null
mkfifo "$tmp/listen"
psql -X -A -t -q -d $db <"$tmp/listen" >"$tmp/listen.out" 2>&1 &
listener=$!
exec 8>"$tmp/listen"
printf "SET openwop.tenant = 'acme';\nSELECT openwop.listen();\n" >&8
sleep 0.5
r=$(request POST resolveInterruptByRun "$alice" '{}' "$(body acme/pgrst-run-000000000009)")
r2=$(request POST resolveInterruptByRun "$cfo_claims, \"role\": \"$web\"}" '{}' "$(body acme/pgrst-run-000000000009)")
sleep 1.5
printf 'SELECT 1;\n' >&8
exec 8>&-
wait "$listener"
check "one notification, for the resolve that was answered 200, none for the refusal" \
	"$(jq -c -n --argjson a "$r" --argjson b "$r2" --arg n "$(grep -c 'Asynchronous notification' "$tmp/listen.out")" \
	   --arg p "$(grep -o '{.*}' "$tmp/listen.out" | head -n 1)" '{a: $a, b: $b, n: $n, p: $p}')" \
	'.a.status == 403 and .b.status == 200 and .n == "1" and (.p | fromjson | .runId) == "acme/pgrst-run-000000000009"'

# ---------- the token surfaces ----------
echo "# GET /rpc/inspectInterruptByToken, POST /rpc/resolveInterruptByToken"
id=$(gate acme/pgrst-run-000000000010)
tok=$(q "SELECT openwop.mint_interrupt_token('$id')")
inspect_tok=$(q "SELECT openwop.mint_interrupt_token('$id', 'inspect')")
r=$(request GET inspectInterruptByToken "" '{}' "{\"token\": \"$tok\"}")
check "inspectInterruptByToken: an anonymous GET (READ ONLY) is 200 with the InterruptPayload" "$r" \
	'.status == 200 and .tx == "COMMIT" and .body.kind == "approval" and .body.data.title == "Expense" and (.body | has("key"))'
r=$(request GET inspectInterruptByToken "" '{}' '{"token": "ow2.hs256.nokid.b3BlbndvcC1jb25mb3JtYW5jZQ.0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}')
check "interrupt_token_invalid: an unheld kid is 401, never 404" "$r" \
	"$(envelope 401 interrupt_token_invalid) and .headers[\"www-authenticate\"] == \"Bearer\""
r=$(request GET inspectInterruptByToken "" '{}' '{}')
check "interrupt_token_invalid: a GET without token is 401" "$r" "$(envelope 401 interrupt_token_invalid)"
r=$(request POST resolveInterruptByToken "" '{}' "{\"token\": \"$inspect_tok\", \"resumeValue\": {\"action\": \"accept\"}}")
check "forbidden: an inspect token used to resolve is 403, details.intent" "$r" \
	"$(envelope 403 forbidden) and .body.details == {\"intent\": \"inspect\"}"
r=$(request POST resolveInterruptByToken "" '{}' "{\"token\": \"$tok\", \"resumeValue\": {\"action\": \"accept\"}, \"extra\": 1}")
check "validation_error: the token body is closed too" "$r" "$(envelope 400 validation_error) and .body.details == {\"field\": \"extra\"}"
r=$(request POST resolveInterruptByToken "" '{"idempotency-key": "!"}' "{\"token\": \"$tok\", \"resumeValue\": {\"action\": \"accept\"}}")
check "idempotency_key_invalid on the token surface" "$r" "$(envelope 400 idempotency_key_invalid)"
key=pgrst-key-0000000000000010
first=$(request POST resolveInterruptByToken "" "{\"idempotency-key\": \"$key\"}" "{\"token\": \"$tok\", \"resumeValue\": {\"action\": \"accept\"}}")
again=$(request POST resolveInterruptByToken "" "{\"idempotency-key\": \"$key\"}" "{\"token\": \"$tok\", \"resumeValue\": {\"action\": \"accept\"}}")
check "resolveInterruptByToken: 200, the token holder's Subject recorded" "$first" \
	'.status == 200 and .body.status == "resolved" and .body.resolvedBy.subjectId == "token-holder" and (.headers | has("openwop-idempotent-replay") | not)'
check "resolveInterruptByToken: a replay carries OpenWOP-Idempotent-Replay: true and the same body" "$(jq -c -n --argjson a "$first" --argjson b "$again" '{a: $a, b: $b}')" \
	'.b.status == 200 and .b.headers["openwop-idempotent-replay"] == "true" and .b.body == .a.body'
r=$(request POST resolveInterruptByToken "" "{\"idempotency-key\": \"$key\"}" "{\"token\": \"$tok\", \"resumeValue\": {\"action\": \"reject\"}}")
check "idempotency_key_mismatch on the token surface" "$r" "$(envelope 409 idempotency_key_mismatch)"
r=$(request POST resolveInterruptByToken "" '{}' "{\"token\": \"$tok\", \"resumeValue\": {\"action\": \"accept\"}}")
check "interrupt_already_resolved: a token after its interrupt was resolved is 409" "$r" "$(envelope 409 interrupt_already_resolved)"
r=$(request GET inspectInterruptByToken "" '{}' "{\"token\": \"$tok\"}")
check "interrupt_already_resolved: inspecting it is 409 too" "$r" "$(envelope 409 interrupt_already_resolved)"

id=$(gate acme/pgrst-run-000000000011)
short=$(q "SELECT openwop.mint_interrupt_token('$id', 'resolve', interval '1 millisecond')")
sleep 0.1
r=$(request GET inspectInterruptByToken "" '{}' "{\"token\": \"$short\"}")
check "interrupt_expired: a token past expiresAt is 410, details.expiresAt" "$r" \
	"$(envelope 410 interrupt_expired) and (.body.details | keys) == [\"expiresAt\", \"interruptId\"]"
r=$(request POST resolveInterruptByToken "" '{}' "{\"token\": \"$short\", \"resumeValue\": {\"action\": \"accept\"}}")
check "interrupt_expired: resolving with it is 410" "$r" "$(envelope 410 interrupt_expired)"
# a token this host signed for an interrupt it does not hold
q "SELECT openwop.add_signing_key('kx', 'pgrst-secret-do-not-use'::bytea)" >/dev/null
psql -X -q -d $db -c "CREATE EXTENSION IF NOT EXISTS pgcrypto" >/dev/null
ghost=$(q "SELECT 'ow2.hs256.kx.' || p || '.' || encode(hmac('hs256.kx.' || p, 'pgrst-secret-do-not-use', 'sha256'), 'hex')
             FROM (SELECT rtrim(translate(encode(convert_to('{\"i\":\"acme/no-such-interrupt-0001\",\"r\":\"acme/pgrst-run-000000000011\",\"n\":\"gate\",\"e\":\"2099-01-01T00:00:00.000Z\",\"t\":\"resolve\"}', 'UTF8'), 'base64'), E'+/\n', '-_'), '=') AS p) x")
r=$(request GET inspectInterruptByToken "" '{}' "{\"token\": \"$ghost\"}")
check "not_found: a valid token for an unknown interrupt is 404" "$r" \
	"$(envelope 404 not_found) and .body.details == {\"interruptId\": \"acme/no-such-interrupt-0001\"}"
r=$(request POST resolveInterruptByToken "" '{}' "{\"token\": \"$ghost\", \"resumeValue\": {\"action\": \"accept\"}}")
check "not_found on the token resolve" "$r" "$(envelope 404 not_found)"

# ---------- no state the surface does not reach ----------
r=$(request POST resolveInterruptByRun "$alice" '{}' "$(body acme/pgrst-run-000000000002)")
check "run_terminal never comes from a resolve: an ended run's interrupt is interrupt_already_resolved" "$r" \
	"$(envelope 409 interrupt_already_resolved)"
q "SELECT openwop.cancel_run('acme/pgrst-run-000000000011')" >/dev/null
r=$(request POST resolveInterruptByRun "$alice" '{}' "$(body acme/pgrst-run-000000000011)")
check "a resolve after cancel_run is 409 interrupt_already_resolved (both surfaces), never run_terminal" "$r" \
	"$(envelope 409 interrupt_already_resolved) and .body.details.runStatus == \"cancelled\""

# ---------- the host's own operations (issue 35) ----------
echo "# POST /rpc/withdrawVote, /rpc/resolveInterrupts; If-Match"
gate acme/pgrst-run-000000000020 '{"requiredApprovals": 2}' >/dev/null
r=$(request POST resolveInterruptByRun "$alice" '{}' "$(body acme/pgrst-run-000000000020)")
r=$(request POST withdrawVote "$alice" '{}' '{"runId": "acme/pgrst-run-000000000020", "nodeId": "gate"}')
check "withdrawVote: 200, the vote taken back, committed" "$r" \
	'.status == 200 and .tx == "COMMIT" and .body.status == "pending" and .body.action == "withdraw" and .body.tally.accepts == 0'
r=$(request POST withdrawVote "$alice" '{}' '{"runId": "acme/pgrst-run-000000000020", "nodeId": "gate"}')
check "withdrawVote again: 404 not_found, the envelope" "$r" "$(envelope 404 not_found)"
one=$(gate acme/pgrst-run-000000000021)
two=$(gate acme/pgrst-run-000000000022 '{"approversList": ["cfo@example.org"]}')
bulk="{\"interruptIds\": [\"$one\", \"$two\"], \"resumeValue\": {\"action\": \"accept\"}}"
first=$(request POST resolveInterrupts "$alice" '{"idempotency-key": "pgrst-bulk-000000000000001"}' "$bulk")
check "resolveInterrupts: 200, each item the status and body of the single call" "$first" \
	".status == 200 and .tx == \"COMMIT\" and .body.items[0].interruptId == \"$one\" and .body.items[0].status == 200
	 and .body.items[0].result.decision == \"granted\" and .body.items[1].status == 403 and .body.items[1].result.error == \"forbidden\""
again=$(request POST resolveInterrupts "$alice" '{"idempotency-key": "pgrst-bulk-000000000000001"}' "$bulk")
check "resolveInterrupts: a retry under the key is the replay, every item as it was" "$(jq -c -n --argjson a "$first" --argjson b "$again" '{a: $a, b: $b}')" \
	'.b.status == 200 and .b.headers["openwop-idempotent-replay"] == "true" and .b.body == .a.body'
r=$(request POST resolveInterrupts "$noscope" '{}' "$bulk")
check "resolveInterrupts without approvals:respond: 403, refused whole" "$r" "$(envelope 403 forbidden)"
gate acme/pgrst-run-000000000023 >/dev/null
q "SELECT openwop.artifact_changed('acme/pgrst-run-000000000023', 'gate', 'sha256:v2', 'edited')" >/dev/null
r=$(request POST resolveInterruptByRun "$alice" '{"if-match": "\"sha256:v1\""}' "$(body acme/pgrst-run-000000000023)")
check "If-Match naming an older version of the artifact: 412 precondition_failed, nothing recorded" "$r" \
	"$(envelope 412 precondition_failed) and .body.details.artifactDigest == \"sha256:v2\""
[ "$(events acme/pgrst-run-000000000023)" = 4 ]
r=$(request POST resolveInterruptByRun "$alice" '{"if-match": "\"sha256:v2\""}' "$(body acme/pgrst-run-000000000023)")
check "If-Match naming the version the gate shows: 200, the receipt names it" "$r" \
	'.status == 200 and .body.decision == "granted" and .body.receipt.artifactDigest == "sha256:v2"'

echo "1..$((passed + failed))"
echo "# $passed passed, $failed failed"
[ "$failed" -eq 0 ]
