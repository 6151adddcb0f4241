#!/usr/bin/env bash
# The HTTP layer in front of openwop_api: requests given as curl sends them
# (URL, headers, body bytes, a signed JWT) and taken through what
# PostgREST v12.2.12 does before, around and after the SQL, as
# test/pgrst_lib.sh models it (each behaviour cited there to PostgREST's
# source).  The deployment is docs/postgrest.md's, plus what the inbox
# and the FlowDrop page need.  Needs the cluster test/run starts.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
db=openwop_pgrst_http
auth=owph_authenticator          # db-uri's login
anon=owph_anon                   # db-anon-role
web=owph_web                     # the role the approvers' JWTs name
tmp=$(mktemp -d)
passed=0
failed=0
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d $db -c "SET openwop.tenant = 'acme'" -c "$1" | tail -n 1; }
drop_all() {
	psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true
	for r in $auth $anon $web; do
		psql -X -q -d postgres -c "DROP ROLE IF EXISTS $r" >/dev/null 2>&1 || true
	done
}
cleanup() {
	rm -rf "$tmp"
	drop_all
}
trap cleanup EXIT
drop_all

# ---------- the deployment (docs/postgrest.md, "Roles and grants") ----------
psql -X -q -v ON_ERROR_STOP=1 -d postgres >/dev/null <<SQL
CREATE DATABASE $db;
CREATE ROLE $auth LOGIN NOINHERIT PASSWORD '${PGPASSWORD:-unused}';
CREATE ROLE $anon NOLOGIN;
CREATE ROLE $web NOLOGIN;
GRANT $anon, $web TO $auth;
ALTER ROLE $auth SET openwop.bound_tenant = '*';
ALTER ROLE $web SET lock_timeout = '5s';
SQL
make_login_approver $db
psql -X -q -v ON_ERROR_STOP=1 -d $db >/dev/null <<SQL
CREATE EXTENSION openwop_interrupt;
ALTER DATABASE $db SET openwop.jwt_session_role = '$auth';
GRANT USAGE ON SCHEMA openwop_api TO $anon, $web;
GRANT EXECUTE ON FUNCTION openwop_api."inspectInterruptByToken"(text), openwop_api."resolveInterruptByToken"(json),
                          openwop_api.openapi() TO $anon, $web;
GRANT EXECUTE ON FUNCTION openwop_api."resolveInterruptByRun"(json), openwop_api."withdrawVote"(json),
                          openwop_api."resolveInterrupts"(json), openwop_api."flowdropInterrupts"(text, integer) TO $web;
GRANT SELECT ON openwop_api.pending_interrupts TO $web;
GRANT EXECUTE ON FUNCTION openwop.inbox_waiting(text), openwop.inbox_tenant(), openwop.inbox_voter(),
                          openwop.may_decide(text, text, text, jsonb, jsonb) TO $web;
SELECT openwop.add_signing_key('k1');
SQL

# ---------- PostgREST in front (postgrest.conf) ----------
export PGRST_DB=$db PGRST_AUTHENTICATOR=$auth PGRST_ANON=$anon PGRST_SCHEMA=openwop_api
export PGRST_ROOT_SPEC=openapi PGRST_TMP=$tmp     # db-root-spec = "openapi"
. "$(dirname "$0")/../pgrst_lib.sh"
pgrst_init
req() { pgrst_request "$@"; }
json='Content-Type: application/json'

# check NAME RESPONSE JQ-CONDITION
check() {
	if jq -e "$3" >/dev/null <<<"$2"; then
		passed=$((passed + 1))
		echo "ok $((passed + failed)) - $1"
	else
		failed=$((failed + 1))
		echo "not ok $((passed + failed)) - $1"
		echo "#   response: $(cut -c1-2000 <<<"$2")"
		echo "#   expected: $3"
	fi
}
# the refusal envelope of the openwop functions, with this status and code
envelope() {    # STATUS CODE
	echo ".status == $1 and .tx == \"COMMIT\" and (.body | keys) == [\"details\", \"error\", \"message\"]
	      and .body.error == \"$2\" and (.body.details | type) == \"object\""
}
# PostgREST's own answer, before any SQL: STATUS CODE
pgrst_own() {
	echo ".status == $1 and .tx == null and .statements == 0 and .body.code == \"$2\"
	      and (.body | keys) == [\"code\", \"details\", \"hint\", \"message\"]"
}
both() { jq -c -n --argjson a "$1" --argjson b "$2" '{a: $a, b: $b}'; }

alice='{"sub": "alice", "iss": "https://idp.example.org", "tenant": "acme", "scope": "approvals:respond", "role": "'$web'"}'
noscope='{"sub": "bob", "iss": "https://idp.example.org", "tenant": "acme", "role": "'$web'"}'
gina='{"sub": "gina", "iss": "https://idp.example.org", "tenant": "globex", "scope": "approvals:respond", "role": "'$web'"}'
approval='{"kind": "approval", "data": {"artifactId": "a", "artifactType": "doc", "title": "Expense", "actions": ["accept", "reject"]}}'
gate() {    # RUN: a run waiting on approval gate "gate" (in the run id's tenant); prints the interrupt id
	psql -X -A -t -q -v ON_ERROR_STOP=1 -d $db -c "SET openwop.tenant = '${1%%/*}'" \
		-c "SELECT openwop.create_run('pgrst', '{\"runId\": \"$1\"}')" -c "SELECT openwop.start_node('$1', 'gate')" \
		-c "SELECT openwop.interrupt('$1', 'gate', '$approval') #>> '{metadata,interrupt,id}'" | tail -n 1
}
# globex: two gates, the FlowDrop pages of the routing checks below
gate globex/pgrst-http-globex-00000001 >/dev/null
gate globex/pgrst-http-globex-00000002 >/dev/null

# ---------- inbox_page_tie_safe_over_http ----------
echo "# inbox_page_tie_safe_over_http: GET /pending_interrupts, paged"
src=acme/pgrst-http-fork-source-0001
gate $src >/dev/null
# twelve gates raised in one transaction: one requested_at
{
	echo "SET openwop.tenant = 'acme';"
	echo "BEGIN;"
	for i in $(seq -w 1 12); do
		echo "SELECT openwop.create_run('pgrst', '{\"runId\": \"acme/pgrst-http-tie-0000$i\"}');"
		echo "SELECT openwop.start_node('acme/pgrst-http-tie-0000$i', 'gate');"
		echo "SELECT openwop.interrupt('acme/pgrst-http-tie-0000$i', 'gate', '$approval');"
	done
	echo "COMMIT;"
} | psql -X -q -v ON_ERROR_STOP=1 -d $db >/dev/null
# a branch of the source past its gate (README, fork_run): the fork's
# inherited pending gate keeps the source's requested_at, raised earlier
# in another transaction
sleep 0.05
q "SELECT openwop.start_node('$src', 'other')" >/dev/null
fork=$(q "SELECT openwop.fork_run('$src', '{\"mode\": \"branch\", \"fromSeq\": 4}') ->> 'runId'")
all=$(req GET "/pending_interrupts?order=requested_at,interrupt_id&limit=100" --jwt "$alice")
check "inbox_page_tie_safe_over_http: fourteen gates in two instants: the source and its fork share one requested_at, the twelve another" "$all" \
	".status == 200 and (.body | length) == 14 and (.body | map(.requested_at) | unique | length) == 2
	 and ([.body[] | select(.run_id == \"$src\" or .run_id == \"$fork\") | .requested_at] | unique | length) == 1
	 and ([.body[] | select(.run_id | startswith(\"acme/pgrst-http-tie-\")) | .requested_at] | unique | length) == 1"
# the documented paging, as curl sends it: order=requested_at,interrupt_id,
# then requested_at=gte.<last>&or=(requested_at.gt.<last>,interrupt_id.gt.<last id>),
# the timestamp's '+' as %2B (a raw '+' is a space), unquoted inside or=()
seen='[]' url="/pending_interrupts?order=requested_at,interrupt_id&limit=3" pages=0 statuses='[]'
while :; do
	page=$(req GET "$url" --jwt "$alice")
	statuses=$(jq -c --argjson p "$page" '. + [$p.status]' <<<"$statuses")
	[ "$(jq -r '.status' <<<"$page")" = 200 ] || break
	[ "$(jq '.body | length' <<<"$page")" -gt 0 ] || break
	seen=$(jq -c --argjson p "$page" '. + [$p.body[].interrupt_id]' <<<"$seen")
	pages=$((pages + 1))
	[ $pages -lt 10 ] || break
	last=$(jq -r '.body[-1].requested_at' <<<"$page")
	lastid=$(jq -r '.body[-1].interrupt_id' <<<"$page")
	url="/pending_interrupts?order=requested_at,interrupt_id&limit=3&requested_at=gte.${last//+/%2B}&or=(requested_at.gt.${last//+/%2B},interrupt_id.gt.$lastid)"
done
check "inbox_page_tie_safe_over_http: pages of three (requested_at=gte. and or=(requested_at.gt.,interrupt_id.gt.)) show every gate exactly once, in order" \
	"$(jq -c -n --argjson all "$all" --argjson seen "$seen" --argjson st "$statuses" --arg pages $pages '{all: $all, seen: $seen, statuses: $st, pages: $pages}')" \
	'.pages == "5" and (.statuses | all(. == 200)) and .seen == (.all.body | map(.interrupt_id))'
# the old paging, requested_at=gt.<last>, skips what shares the last instant
seen='[]' url="/pending_interrupts?order=requested_at&limit=3" pages=0
while :; do
	page=$(req GET "$url" --jwt "$alice")
	[ "$(jq '.body | length' <<<"$page")" -gt 0 ] || break
	seen=$(jq -c --argjson p "$page" '. + [$p.body[].interrupt_id]' <<<"$seen")
	pages=$((pages + 1))
	[ $pages -lt 10 ] || break
	last=$(jq -r '.body[-1].requested_at' <<<"$page")
	url="/pending_interrupts?order=requested_at&limit=3&requested_at=gt.${last//+/%2B}"
done
check "inbox_page_tie_safe_over_http: the old requested_at=gt.<last> paging loses gates that share an instant (fewer than fourteen seen)" \
	"$(jq -c -n --argjson seen "$seen" '{seen: $seen}')" '(.seen | length) < 14 and (.seen | unique | length) == (.seen | length)'

# ---------- URL decoding ----------
echo "# url_decoded_as_postgrest_decodes: the query string as http-types and PostgREST read it"
first=$(req GET "/pending_interrupts?order=requested_at,interrupt_id&limit=1" --jwt "$alice")
t=$(jq -r '.body[0].requested_at' <<<"$first")
r=$(req GET "/pending_interrupts?order=requested_at&limit=3&requested_at=gt.$t" --jwt "$alice")
check "url_decoded_as_postgrest_decodes: the old next-page filter with a raw '+' (gt.<t>+00:00): '+' is a space, 22007, PostgREST's 400" "$r" \
	".status == 400 and .tx == \"ABORT\" and .body == {code: \"22007\", details: null, hint: null,
	   message: \"invalid input syntax for type timestamp with time zone: \\\"$(sed 's/+/ /' <<<"$t")\\\"\"}"
r=$(req GET "/pending_interrupts?order=requested_at&limit=3&requested_at=gt.${t//+/%2B}" --jwt "$alice")
check "url_decoded_as_postgrest_decodes: the same with %2B: 200" "$r" '.status == 200 and (.body | length) == 3'
r=$(req GET "/pending_interrupts?order=requested_at,interrupt_id;limit=2" --jwt "$alice")
check "url_decoded_as_postgrest_decodes: ';' separates parameters like '&'" "$r" '.status == 200 and (.body | length) == 2'
r=$(req GET "/rpc/openapi?a+b=1&%7a%5A=2" --jwt "$alice")
check "url_decoded_as_postgrest_decodes: keys decoded ('+' a space, %7a%5A is zZ): PGRST202 names them as arguments" "$r" \
	"$(pgrst_own 404 PGRST202) and .body.message == \"Could not find the function openwop_api.openapi(a b, zZ) in the schema cache\""
r=$(req GET "/pending_interrupts?requested_at=gt.%zz%2%4" --jwt "$alice")
check "url_decoded_as_postgrest_decodes: an invalid escape (%zz, %2 and %4 at the end) stays as it is: PostgreSQL is given %zz%2%4" "$r" \
	'.status == 400 and .body.code == "22007" and .body.message == "invalid input syntax for type timestamp with time zone: \"%zz%2%4\""'
r=$(req GET "/rpc/openapi?%zz=1" --jwt "$alice")
check "url_decoded_as_postgrest_decodes: a key that is no field name (%zz) is 400 PGRST100, before any SQL" "$r" "$(pgrst_own 400 PGRST100)"
r=$(req GET "/rpc/openapi?x=%FF" --jwt "$alice")
check "url_decoded_as_postgrest_decodes: %FF is no UTF-8: T.decodeUtf8 throws, Warp's 500 'Something went wrong' (text/plain)" "$r" \
	'.status == 500 and .raw == "Something went wrong" and .headers["content-type"] == "text/plain; charset=utf-8" and .tx == null'
r=$(req GET "/rpc/openapi?flag" --jwt "$alice")
check "url_decoded_as_postgrest_decodes: a key without '=' is no argument (GET /rpc/openapi?flag is GET /rpc/openapi)" "$r" \
	'.status == 200 and .body.openapi == "3.0.3"'

# ---------- flowdrop_entries_over_http ----------
echo "# flowdrop_entries_over_http: GET /rpc/flowdropInterrupts"
int22='["id","type","status","message","nodeId","workflowId","pipelineId","sessionId","schema","options","context","defaultValue","responseData","createdAt","expiresAt","scheduledAt","resolvedAt","resolvedBy","direction","jobId","targetPipelineId","initiatorUid","reason","linkedInterruptId"]'
# the top-level keys of each entry in the order of the body's text (jq's
# streaming parser: every key as it comes, duplicates too)
raw_keys() { jq -c -n --stream 'reduce (inputs | select(length == 2 or (.[0] | length) == 2) | .[0] | select(length >= 2) | [.[0], .[1]]) as $p ([]; if .[$p[0]] == null then .[$p[0]] = [$p[1]] elif .[$p[0]][-1] == $p[1] then . else .[$p[0]] += [$p[1]] end)'; }
# the page reads the inbox with the inbox's grants (README, Upgrading):
# nothing of schema openwop
r=$(req GET "/rpc/flowdropInterrupts?max=1" --jwt "$alice")
check "flowdrop_entries_over_http: the inbox's grants are enough for GET /rpc/flowdropInterrupts" "$r" '.status == 200'
entries='[]' url="/rpc/flowdropInterrupts?max=2" pages=0 orders='[]' statuses='[]'
while :; do
	page=$(req GET "$url" --jwt "$alice")
	statuses=$(jq -c --argjson p "$page" '. + [$p.status]' <<<"$statuses")
	[ "$(jq -r '.status' <<<"$page")" = 200 ] || break
	[ "$(jq '.body | length' <<<"$page")" -gt 0 ] || break
	entries=$(jq -c --argjson p "$page" '. + $p.body' <<<"$entries")
	orders=$(jq -c --argjson o "$(jq -r .raw <<<"$page" | raw_keys)" '. + $o' <<<"$orders")
	pages=$((pages + 1))
	[ $pages -lt 20 ] || break
	url="/rpc/flowdropInterrupts?max=2&after=$(jq -r '.body[-1].id' <<<"$page")"
done
check "flowdrop_entries_over_http: pages of two (max=2, then after=<the last entry's id>) give every gate once, in the inbox's order" \
	"$(jq -c -n --argjson all "$all" --argjson e "$entries" --argjson st "$statuses" --arg pages $pages '{all: $all, e: $e, statuses: $st, pages: $pages}')" \
	'.pages == "7" and (.statuses | all(. == 200)) and (.e | map(.pipelineId)) == (.all.body | map(.run_id))
	 and (.e | map(.nodeId) | unique) == ["gate"] and (.e | map(.id) | unique | length) == 14'
check "flowdrop_entries_over_http: each entry's 24 keys in INT-22's order, read from the body's text; id a UUID" \
	"$(jq -c -n --argjson o "$orders" --argjson e "$entries" --argjson k "$int22" '{o: $o, e: $e, k: $k}')" \
	'.k as $k | (.o | length) == 14 and ($k | length) == 24 and (.o | all(. == $k)) and (.e | all(.id | test("^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")))'
r=$(req GET "/rpc/flowdropInterrupts?max=2" --jwt "$noscope")
check "flowdrop_entries_over_http: an approver's JWT without approvals:respond is 403, the envelope" "$r" \
	"$(envelope 403 forbidden) and .body.details == {\"requiredScope\": \"approvals:respond\"}"
r=$(req GET "/rpc/flowdropInterrupts?max=2")
check "flowdrop_entries_over_http: an anonymous request (db-anon-role, no EXECUTE) is PostgREST's 401 for 42501, WWW-Authenticate: Bearer" "$r" \
	'.status == 401 and .tx == "ABORT" and .body.code == "42501" and .body.message == "permission denied for function flowdropInterrupts"
	 and .headers["www-authenticate"] == "Bearer"'
r=$(req GET "/rpc/flowdropInterrupts?max=2&after=$(jq -r '.[-1].id' <<<"$entries")" --jwt "$alice")
check "flowdrop_entries_over_http: after the last entry, []" "$r" '.status == 200 and .body == [] and .raw == "[]"'
sizes='{}'
for n in $(seq 1 14); do
	sizes=$(jq -c --arg n $n --argjson s "$(req GET "/rpc/flowdropInterrupts?max=$n" --jwt "$alice" | jq '.status')" '.[$n] = $s' <<<"$sizes")
done
check "flowdrop_entries_over_http: every page size from 1 to the whole inbox (14) is answered 200" "$sizes" 'all(.[]; . == 200)'
r=$(req GET "/rpc/flowdropInterrupts?max=0" --jwt "$alice")
check "flowdrop_entries_over_http: max=0 is the function's 400 validation_error" "$r" "$(envelope 400 validation_error) and .body.details.field == \"max\""

# ---------- body_nul_is_validation_error_lone_surrogate_is_pgrst102 ----------
echo "# the body's bytes as PostgREST passes them: \\u0000 and lone surrogates"
declare -A fn_jwt=([resolveInterruptByRun]="$alice" [resolveInterruptByToken]="" [withdrawVote]="$alice" [resolveInterrupts]="$alice")
declare -A fn_member=([resolveInterruptByRun]=runId [resolveInterruptByToken]=token [withdrawVote]=runId [resolveInterrupts]=interruptIds)
for fn in resolveInterruptByRun resolveInterruptByToken withdrawVote resolveInterrupts; do
	auth_args=()
	[ -n "${fn_jwt[$fn]}" ] && auth_args=(--jwt "${fn_jwt[$fn]}")
	m=${fn_member[$fn]}
	r=$(req POST /rpc/$fn -H "$json" -d "{\"$m\": \"a\\u0000b\"}" "${auth_args[@]}")
	check "body_nul_is_validation_error: POST /rpc/$fn with \\u0000 in a string reaches the function (aeson and json take it): 400 validation_error, details.field body" "$r" \
		"$(envelope 400 validation_error) and .body.details == {\"field\": \"body\"}"
	r=$(req POST /rpc/$fn -H "$json" -d '{"'$m'": "a\ud800b"}' "${auth_args[@]}")
	check "lone_surrogate_is_pgrst102: POST /rpc/$fn with a lone high surrogate (\\ud800): aeson refuses the body, 400 PGRST102, no SQL" "$r" \
		"$(pgrst_own 400 PGRST102) and .body.message == \"Empty or invalid json\""
	r=$(req POST /rpc/$fn -H "$json" -d '{"'$m'": "\udc00"}' "${auth_args[@]}")
	check "lone_surrogate_is_pgrst102: POST /rpc/$fn with a lone low surrogate (\\udc00): 400 PGRST102, no SQL" "$r" "$(pgrst_own 400 PGRST102)"
done
r=$(req POST /rpc/resolveInterruptByRun -H "$json" -d '{"runId": "\ud83d\ude00", "nodeId": "gate", "resumeValue": {}}' --jwt "$alice")
check "lone_surrogate_is_pgrst102: a surrogate pair (\\ud83d\\ude00) is a character: the function answers (validation_error on runId)" "$r" \
	"$(envelope 400 validation_error) and .body.details.field == \"runId\""
r=$(req POST /rpc/resolveInterruptByRun -H "$json" -d "$(printf '{"runId": "\xff"}')" --jwt "$alice")
check "lone_surrogate_is_pgrst102: bytes that are no UTF-8 in the body: 400 PGRST102, no SQL" "$r" "$(pgrst_own 400 PGRST102)"
r=$(req POST /rpc/resolveInterruptByRun -H "$json" -d '' --jwt "$alice")
check "an empty body to a function of one json parameter is passed as it is: ''::json fails, 22P02, PostgREST's 400 (not {})" "$r" \
	'.status == 400 and .tx == "ABORT" and .body == {code: "22P02", details: "The input string ended unexpectedly.", hint: null, message: "invalid input syntax for type json"}'
r=$(req POST /rpc/resolveInterruptByRun -H "$json" -d '"just a string"' --jwt "$alice")
check "a JSON scalar body becomes [] (payloadAttributes): the function says the body is no object" "$r" \
	"$(envelope 400 validation_error) and .body.details == {\"field\": \"body\"}"

# ---------- content_type_routing ----------
echo "# content_type_routing: POST /rpc/<function> by Content-Type"
unknown='{"owphUnknownMember": 1}'
reached="$(envelope 400 validation_error) and .body.details == {\"field\": \"owphUnknownMember\"}"
# ct_row CONTENT-TYPE WHAT EXPECTED: POST /rpc/resolveInterruptByRun (one
# unnamed json parameter) with the body {"owphUnknownMember": 1} and this
# Content-Type ("(none)": curl -H 'Content-Type:', no header at all)
ct_row() {
	local h="Content-Type: $1"
	[ "$1" = "(none)" ] && h="Content-Type:"
	check "content_type_routing: Content-Type $1: $2" "$(req POST /rpc/resolveInterruptByRun -H "$h" -d "$unknown" --jwt "$alice")" "$3"
}
ct_row "(none)" "no Content-Type is application/json: the function" "$reached"
ct_row "application/json" "the function (the raw body as \$1::json)" "$reached"
ct_row "application/json; charset=utf-8" "the function (parameters are ignored)" "$reached"
ct_row "APPLICATION/JSON;CHARSET=UTF-8" "the function (type and subtype in any case)" "$reached"
ct_row "application/vnd.pgrst.array+json" "the function (read as application/json)" "$reached"
ct_row "text/plain" "404 PGRST202: no function of one text parameter" \
	"$(pgrst_own 404 PGRST202) and .body.hint == null and .body.message == \"Could not find the function openwop_api.resolveInterruptByRun in the schema cache\"
	 and .body.details == \"Searched for the function openwop_api.resolveInterruptByRun with a single unnamed text parameter, but no matches were found in the schema cache.\""
ct_row "text/xml" "404 PGRST202: no function of one xml parameter" \
	"$(pgrst_own 404 PGRST202) and (.body.details | contains(\"a single unnamed xml parameter\"))"
ct_row "application/octet-stream" "404 PGRST202: no function of one bytea parameter" \
	"$(pgrst_own 404 PGRST202) and (.body.details | contains(\"a single unnamed bytea parameter\"))"
ct_row "application/x-www-form-urlencoded" "404 PGRST202: the form's keys are argument names (curl -d's own Content-Type)" \
	"$(pgrst_own 404 PGRST202) and .body.message == \"Could not find the function openwop_api.resolveInterruptByRun({\\\"owphUnknownMember\\\": 1}) in the schema cache\""
ct_row "text/csv" "400 PGRST102: a JSON body is no CSV" "$(pgrst_own 400 PGRST102)"
for other in "application/xml" "application/geo+json" "application/vnd.pgrst.object+json" "multipart/form-data; boundary=x" "*/*" "json"; do
	ct_row "$other" "400 PGRST102 Content-Type not acceptable, before any function is looked up" \
		"$(pgrst_own 400 PGRST102) and .body.message == \"Content-Type not acceptable: $other\""
done
r=$(req POST /rpc/resolveInterruptByRun -H 'Content-Type: application/x-www-form-urlencoded' -d '=x' --jwt "$alice")
check "content_type_routing: a form whose one key is empty (=x) names the unnamed parameter: the function gets {\"\": \"x\"}" "$r" \
	"$(envelope 400 validation_error) and .body.details == {\"field\": \"\"}"
r=$(req POST /rpc/flowdropInterrupts -H "$json" -d '{"max": 1}' --jwt "$gina")
check "content_type_routing: named parameters by application/json: POST /rpc/flowdropInterrupts {max: 1}" "$r" '.status == 200 and (.body | length) == 1'
r=$(req POST /rpc/flowdropInterrupts -d 'max=1' --jwt "$gina")
check "content_type_routing: named parameters by application/x-www-form-urlencoded (max=1)" "$r" '.status == 200 and (.body | length) == 1'
r=$(req POST /rpc/flowdropInterrupts -H 'Content-Type: text/csv' -d $'max\n1' --jwt "$gina")
check "content_type_routing: named parameters by text/csv (the header's names)" "$r" '.status == 200 and (.body | length) == 1'
r=$(req POST /rpc/flowdropInterrupts -H 'Content-Type: text/plain' -d 'max=1' --jwt "$gina")
check "content_type_routing: text/plain to a function whose parameters all have defaults calls it with none (max 50: both globex gates)" "$r" \
	'.status == 200 and (.body | length) == 2'
r=$(req POST /rpc/openapi -H 'Content-Type: text/plain' -d 'x' --jwt "$alice")
check "content_type_routing: text/plain to a function of no parameters is 404 PGRST202" "$r" "$(pgrst_own 404 PGRST202)"
r=$(req POST /rpc/flowdropInterrupts -H 'Content-Type: application/xml' -d '<max>2</max>' --jwt "$gina")
check "content_type_routing: application/xml to a named-parameter function is 400 PGRST102 too" "$r" "$(pgrst_own 400 PGRST102)"
r=$(req POST /rpc/nosuchfunction -H 'Content-Type: application/xml' -d '<x/>' --jwt "$alice")
check "content_type_routing: the Content-Type is refused before the function is looked up (PGRST102 for a function that does not exist)" "$r" "$(pgrst_own 400 PGRST102)"

# ---------- function_choice_by_argument_names ----------
echo "# function_choice_by_argument_names: the schema cache's functions, Plan.hs findProc"
tok_id=$(gate acme/pgrst-http-token-000000001)
tok=$(q "SELECT openwop.mint_interrupt_token('$tok_id', 'inspect')")
r=$(req GET "/rpc/inspectInterruptByToken?token=$tok")
check "function_choice_by_argument_names: GET /rpc/inspectInterruptByToken?token=… calls it (token is its argument)" "$r" \
	'.status == 200 and .body.kind == "approval"'
r=$(req GET "/rpc/inspectInterruptByToken?token=$tok&extra=1")
check "function_choice_by_argument_names: GET /rpc/inspectInterruptByToken?token=…&extra=1 is 404 PGRST202 (no function takes extra)" "$r" \
	"$(pgrst_own 404 PGRST202) and .body.message == \"Could not find the function openwop_api.inspectInterruptByToken(extra, token) in the schema cache\"
	 and .body.details == \"Searched for the function openwop_api.inspectInterruptByToken with parameters extra, token, but no matches were found in the schema cache.\""
r=$(req GET "/rpc/inspectInterruptByToken?token=$tok&limit=1&offset=0&select=*")
check "function_choice_by_argument_names: select, limit and offset are no arguments (reserved): 200" "$r" '.status == 200 and .body.kind == "approval"'
r=$(req GET "/rpc/inspectInterruptByToken")
check "function_choice_by_argument_names: GET without token: token has a default, the function answers (401 interrupt_token_invalid)" "$r" \
	"$(envelope 401 interrupt_token_invalid)"
r=$(req GET "/rpc/flowdropInterrupts?max=1" --jwt "$gina")
check "function_choice_by_argument_names: GET /rpc/flowdropInterrupts?max=1: max is an argument, after keeps its default" "$r" \
	'.status == 200 and (.body | length) == 1'
r=$(req GET "/rpc/flowdropInterrupts?max=eq.2" --jwt "$gina")
# the filter "max" names no column of the scalar result: PostgreSQL 15 to 17
# say so (42703); 18 reads it as the aggregate max() (42803); 400 either way
check "function_choice_by_argument_names: max=eq.2 is a filter on the result, no argument: the call has none, the filter names no column (42703, or 42803 on PostgreSQL 18: 400)" "$r" \
	'.status == 400 and .tx == "ABORT" and (.body.code == "42703" or .body.code == "42803")'
r=$(req GET "/rpc/flowdropInterrupts?max=not.2" --jwt "$gina")
check "function_choice_by_argument_names: max=not.2 begins an operator expression and fails it: 400 PGRST100" "$r" "$(pgrst_own 400 PGRST100)"
r=$(req GET "/rpc/flowdropInterrupts?max=2&max=1" --jwt "$gina")
check "function_choice_by_argument_names: a repeated argument: the last one counts (max=1)" "$r" '.status == 200 and (.body | length) == 1'
r=$(req POST /rpc/flowdropInterrupts -H "$json" -d '{"max": 1}' --jwt "$gina")
check "function_choice_by_argument_names: POST /rpc/flowdropInterrupts {\"max\": 1}: the body's keys are the arguments" "$r" \
	'.status == 200 and (.body | length) == 1'
r=$(req POST /rpc/flowdropInterrupts -H "$json" -d '{"max": 2, "extra": 1}' --jwt "$gina")
check "function_choice_by_argument_names: POST /rpc/flowdropInterrupts with a key it does not take is 404 PGRST202 (not a validation_error)" "$r" \
	"$(pgrst_own 404 PGRST202) and .body.message == \"Could not find the function openwop_api.flowdropInterrupts(extra, max) in the schema cache\""
r=$(req POST /rpc/flowdropInterrupts -H "$json" -d '' --jwt "$gina")
check "function_choice_by_argument_names: POST /rpc/flowdropInterrupts with an empty body calls it with no arguments (both globex gates)" "$r" \
	'.status == 200 and (.body | length) == 2'
r=$(req GET /rpc/resolveInterruptByRun --jwt "$alice")
check "function_choice_by_argument_names: GET /rpc/resolveInterruptByRun: one unnamed json parameter is POST only, 404 PGRST202" "$r" \
	"$(pgrst_own 404 PGRST202) and .body.message == \"Could not find the function openwop_api.resolveInterruptByRun without parameters in the schema cache\""
r=$(req GET "/rpc/resolveInterruptByRun?runId=acme/x&nodeId=gate" --jwt "$alice")
check "function_choice_by_argument_names: nor do a GET's query parameters reach it" "$r" "$(pgrst_own 404 PGRST202)"
r=$(req PUT /rpc/flowdropInterrupts --jwt "$alice")
check "function_choice_by_argument_names: PUT on /rpc is 405 PGRST101" "$r" "$(pgrst_own 405 PGRST101) and .body.message == \"Cannot use the PUT method on RPC\""
r=$(req GET /rpc/flowdropInterrupts/x --jwt "$alice")
check "function_choice_by_argument_names: a path of three segments is PostgREST's 404 with the body {}" "$r" '.status == 404 and .raw == "{}" and .tx == null'
# functions added for the checks below, seen after a schema cache reload
psql -X -q -v ON_ERROR_STOP=1 -d $db >/dev/null <<SQL
CREATE TABLE public.owph_probe_log (n integer);
GRANT INSERT, SELECT ON public.owph_probe_log TO $web;
CREATE FUNCTION openwop_api.owph_probe_write(n integer) RETURNS integer LANGUAGE sql VOLATILE
    AS 'INSERT INTO public.owph_probe_log VALUES (n) RETURNING n';
CREATE FUNCTION openwop_api.owph_probe_twin(json) RETURNS text LANGUAGE sql AS 'SELECT ''json''';
CREATE FUNCTION openwop_api.owph_probe_twin(jsonb) RETURNS text LANGUAGE sql AS 'SELECT ''jsonb''';
CREATE FUNCTION openwop_api.owph_probe_claims() RETURNS json LANGUAGE sql STABLE
    AS 'SELECT json_build_object(''claims'', current_setting(''request.jwt.claims''), ''role'', current_user, ''path'', current_setting(''request.path''), ''headers'', current_setting(''request.headers'')::json)';
GRANT EXECUTE ON FUNCTION openwop_api.owph_probe_write(integer), openwop_api.owph_probe_twin(json),
    openwop_api.owph_probe_twin(jsonb), openwop_api.owph_probe_claims() TO $anon, $web;
SQL
pgrst_reload_schema_cache
r=$(req GET "/rpc/owph_probe_write?n=1" --jwt "$alice")
check "function_choice_by_argument_names: a GET of a VOLATILE function that writes runs READ ONLY: 25006, PostgREST's 405" "$r" \
	'.status == 405 and .tx == "ABORT" and .body.code == "25006"'
r=$(req POST /rpc/owph_probe_write -H "$json" -d '{"n": 1}' --jwt "$alice")
check "function_choice_by_argument_names: the same POST runs READ WRITE: 200" "$r" '.status == 200 and .body == 1'
r=$(req POST /rpc/owph_probe_twin -H "$json" -d '{}' --jwt "$alice")
check "function_choice_by_argument_names: f(json) and f(jsonb) both take a JSON body: 300 PGRST203" "$r" \
	"$(pgrst_own 300 PGRST203) and .body.message == \"Could not choose the best candidate function between: openwop_api.owph_probe_twin( => json), openwop_api.owph_probe_twin( => jsonb)\""

# ---------- jwt_claims_normalised ----------
echo "# jwt_claims_normalised: the JWT as jose 0.11 reads it (Auth.hs parseToken, parseClaims)"
r=$(req GET /rpc/owph_probe_claims --jwt '{"sub": 7, "tenant": "acme", "role": "'$web'"}')
check "jwt_claims_normalised: a numeric sub is no StringOrURI: 401 PGRST301 before any statement" "$r" \
	"$(pgrst_own 401 PGRST301) and .body.message == \"JWTClaimsSetDecodeError \\\"Error in \$.sub: parsing StringOrURI failed, expected String, but encountered Number\\\"\"
	 and (.headers[\"www-authenticate\"] | startswith(\"Bearer error=\\\"invalid_token\\\", error_description=\"))"
r=$(req GET /rpc/owph_probe_claims --jwt '{"sub": "a:b c", "tenant": "acme", "role": "'$web'"}')
check "jwt_claims_normalised: sub \"a:b c\" has a ':' and is no URI (a space): 401 PGRST301, no statement" "$r" \
	"$(pgrst_own 401 PGRST301) and .body.message == \"JWTClaimsSetDecodeError \\\"Error in \$.sub: failed to parse StringOrURI\\\"\""
r=$(req GET /rpc/owph_probe_claims --jwt '{"iss": 1, "role": "'$web'"}')
check "jwt_claims_normalised: a numeric iss: 401 PGRST301" "$r" "$(pgrst_own 401 PGRST301)"
r=$(req GET /rpc/owph_probe_claims --jwt '{"sub": "alice", "exp": 1000000000, "role": "'$web'"}')
check "jwt_claims_normalised: exp in the past: 401 PGRST301 \"JWT expired\"" "$r" "$(pgrst_own 401 PGRST301) and .body.message == \"JWT expired\""
r=$(req GET /rpc/owph_probe_claims --jwt '{"sub": "alice", "aud": [], "role": "'$web'"}')
check "jwt_claims_normalised: an empty aud array matches no audience: 401 PGRST301" "$r" "$(pgrst_own 401 PGRST301) and .body.message == \"JWTNotInAudience\""
r=$(req GET /rpc/owph_probe_claims -H "Authorization: Bearer $(pgrst_jwt '{"sub": "alice", "role": "'$web'"}')x")
check "jwt_claims_normalised: a bad signature: 401 PGRST301" "$r" "$(pgrst_own 401 PGRST301)"
r=$(req GET /rpc/owph_probe_claims --jwt '{"sub": "urn:example:alice", "iss": "https://svc:s3cret@idp.example.org/x", "aud": ["approvals"], "jti": null, "nbf": null, "tenant": "acme", "role": "'$web'", "scope": "approvals:respond"}')
check "jwt_claims_normalised: request.jwt.claims is jose's re-encoding, keys sorted: a URI's password as ..., a one-element aud a string, null registered claims gone" "$r" \
	'.status == 200 and .body.role == "'$web'"
	 and .body.claims == "{\"aud\":\"approvals\",\"iss\":\"https://svc:...@idp.example.org/x\",\"role\":\"'$web'\",\"scope\":\"approvals:respond\",\"sub\":\"urn:example:alice\",\"tenant\":\"acme\"}"'
r=$(req GET /rpc/owph_probe_claims)
check "jwt_claims_normalised: no JWT: the claims {} with db-anon-role's role, request.path the raw path" "$r" \
	'.status == 200 and .body.claims == "{\"role\":\"'$anon'\"}" and .body.role == "'$anon'" and .body.path == "/rpc/owph_probe_claims"
	 and .body.headers == {"host": "api.example.org", "user-agent": "curl/8.5.0", "accept": "*/*"}'
r=$(req GET /rpc/owph_probe_claims -H "Authorization: Basic $(printf 'a:b' | openssl base64 -A)")
check "jwt_claims_normalised: an Authorization that is not Bearer is no JWT: anonymous" "$r" '.status == 200 and .body.role == "'$anon'"'
r=$(req GET /rpc/owph_probe_claims --jwt '{"sub": "a b", "tenant": "acme", "role": "'$web'"}')
check "jwt_claims_normalised: a sub without ':' is any string (\"a b\" passes PostgREST; the openwop functions judge it)" "$r" \
	'.status == 200 and (.body.claims | fromjson | .sub) == "a b"'
psql -X -q -v ON_ERROR_STOP=1 -d $db >/dev/null <<SQL
DROP FUNCTION openwop_api.owph_probe_write(integer), openwop_api.owph_probe_twin(json), openwop_api.owph_probe_twin(jsonb),
    openwop_api.owph_probe_claims();
DROP TABLE public.owph_probe_log;
SQL
pgrst_reload_schema_cache

# ---------- openapi_root_spec_truthful ----------
echo "# openapi_root_spec_truthful: GET / (db-root-spec = \"openapi\") against the schema's catalog"
doc=$(req GET /)
check "openapi_root_spec_truthful: GET / is GET /rpc/openapi (db-root-spec, ApiRequest.hs getResource): 200, an OpenAPI 3.0 document, for anyone" "$doc" \
	'.status == 200 and .tx == "COMMIT" and (.body.openapi | startswith("3.0.")) and (.body.paths | type) == "object"'
catalog=$(psql -X -A -t -q -v ON_ERROR_STOP=1 -d $db <<'SQL'
SELECT json_build_object(
  'functions', (SELECT json_agg(json_build_object(
        'name', p.proname, 'volatility', p.provolatile,
        'args', coalesce((SELECT json_agg(a ORDER BY o) FROM unnest(p.proargnames) WITH ORDINALITY x(a, o) WHERE a <> ''), '[]'),
        'single_json', p.pronargs = 1 AND coalesce(p.proargnames[1], '') = '' AND p.proargtypes[0] IN ('json'::regtype, 'jsonb'::regtype)))
      FROM pg_proc p WHERE p.pronamespace = 'openwop_api'::regnamespace AND p.prokind = 'f'),
  'relations', (SELECT json_agg(json_build_object('name', c.relname,
        'columns', (SELECT json_agg(a.attname ORDER BY a.attnum) FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped)))
      FROM pg_class c WHERE c.relnamespace = 'openwop_api'::regnamespace AND c.relkind IN ('r', 'v', 'm', 'f', 'p')))
SQL
)
# what each single-json function takes, from its own refusal of an unknown member
takes='{}'
for fn in $(jq -r '.functions[] | select(.single_json) | .name' <<<"$catalog"); do
	r=$(req POST /rpc/$fn -H "$json" -d '{"owphUnknownMember": 1}' --jwt "$alice")
	members=$(jq -c '.body.message | capture("it takes \\{(?<m>[^}]*)\\}").m | split(", ")' <<<"$r")
	takes=$(jq -c --arg f "$fn" --argjson m "$members" '.[$f] = $m' <<<"$takes")
done
facts=$(jq -c -n --argjson doc "$(jq -c .body <<<"$doc")" --argjson cat "$catalog" --argjson takes "$takes" --arg root "$PGRST_ROOT_SPEC" '
	$doc as $d
	| def deref: if has("$ref") then (."$ref" | ltrimstr("#/") | split("/")) as $p | $d | getpath($p) else . end;
	  def query_params($op): [($op.parameters // [])[] | deref | select(.in == "query") | .name] | sort;
	  def body_props($op): ($op.requestBody.content["application/json"].schema // {}) | deref | (.properties // {}) | keys;
	  ($cat.functions | map({key: .name, value: .}) | from_entries) as $fn
	| ($cat.relations | map({key: .name, value: .}) | from_entries) as $rel
	| {
	  missing_rpc: [$cat.functions[] | .name as $n | select($d.paths | has("/rpc/" + $n) | not) | $n],
	  volatile_wrong: [$cat.functions[] | select(.volatility == "v") | select($d.paths["/rpc/" + .name] as $p | $p != null and ($p.get != null or $p.post == null)) | .name],
	  stable_wrong: [$cat.functions[] | select(.volatility != "v") | select($d.paths["/rpc/" + .name] as $p | $p != null and ($p.get == null or $p.post == null)) | .name],
	  get_params_wrong: [$d.paths | to_entries[] | select(.value.get != null)
	      | (if .key == "/" then $root elif (.key | startswith("/rpc/")) then (.key | ltrimstr("/rpc/")) else null end) as $f
	      | select($f != null and $fn[$f] != null)
	      | select(query_params(.value.get) != ($fn[$f].args | sort)) | {path: .key, doc: query_params(.value.get), args: $fn[$f].args}],
	  post_body_wrong: [$d.paths | to_entries[] | select(.value.post != null and (.key | startswith("/rpc/")))
	      | (.key | ltrimstr("/rpc/")) as $f | select($fn[$f] != null)
	      | (if $fn[$f].single_json then ($takes[$f] // [] | sort) else ($fn[$f].args | sort) end) as $want
	      | select(body_props(.value.post) != $want) | {path: .key, doc: body_props(.value.post), takes: $want}],
	  missing_view: [$cat.relations[] | select(($d.paths["/" + .name].get // null) == null) | .name],
	  view_filters_wrong: [$d.paths | to_entries[] | select(.key | startswith("/rpc/") or . == "/" | not)
	      | (.key | ltrimstr("/")) as $v | select($rel[$v] != null)
	      | [query_params(.value.get)[] | select(. as $q | ["order", "limit", "offset", "select", "or", "and"] | index([$q]) | not)]
	      | map(select(. as $c | $rel[$v].columns | index([$c]) | not)) | select(length > 0) | {view: $v, not_columns: .}],
	  inbox_row_wrong: (if $d.components.schemas.InboxRow == null or $rel.pending_interrupts == null then null
	      else ($d.components.schemas.InboxRow.properties | keys) as $p | ($rel.pending_interrupts.columns | sort) as $c
	      | if $p == $c then null else {doc: $p, view: $c} end end),
	  dangling: [$d.paths | keys[] | select(
	      if . == "/" then ($root == "" or $fn[$root] == null)
	      elif startswith("/rpc/") then $fn[ltrimstr("/rpc/")] == null
	      else $rel[ltrimstr("/")] == null end)]
	}')
check "openapi_root_spec_truthful: every function of openwop_api has /rpc/<name>" "$facts" '.missing_rpc == []'
check "openapi_root_spec_truthful: VOLATILE functions have post and no get; STABLE and IMMUTABLE have get and post" "$facts" \
	'.volatile_wrong == [] and .stable_wrong == []'
check "openapi_root_spec_truthful: every GET operation's query parameters are exactly its function's argument names" "$facts" '.get_params_wrong == []'
check "openapi_root_spec_truthful: every POST's requestBody members are the function's argument names, or, for one json parameter, the members it takes (its validation_error's \"it takes {…}\")" \
	"$(jq -c --argjson t "$takes" '. + {takes: $t}' <<<"$facts")" \
	'.post_body_wrong == [] and .takes.resolveInterruptByRun == ["runId", "nodeId", "resumeValue"]
	 and .takes.resolveInterruptByToken == ["token", "resumeValue"] and .takes.withdrawVote == ["runId", "nodeId"]
	 and .takes.resolveInterrupts == ["interruptIds", "resumeValue"]'
check "openapi_root_spec_truthful: every view has a GET path; its filter parameters and InboxRow are the view's columns" "$facts" \
	'.missing_view == [] and .view_filters_wrong == [] and .inbox_row_wrong == null'
check "openapi_root_spec_truthful: no path names anything that does not exist (\"/\" is the db-root-spec function)" "$facts" '.dangling == []'
# what the document says of PostgREST's own answers
r=$(jq -c --argjson f "$catalog" '
	.body as $d | [$f.functions[] | select(.single_json | not) | .name as $n
	 | select(($d.paths["/rpc/" + $n].post.requestBody.description // "") | test("any other is 400 validation_error")) | $n]' <<<"$doc")
check "openapi_root_spec_truthful: a named-parameter POST body's unknown member is PostgREST's 404 PGRST202, not said to be validation_error" "$r" '. == []'
r=$(jq -c --argjson f "$catalog" '
	.body as $d | [$f.functions[] | .name as $fn | ($d.paths["/rpc/" + $fn].get.parameters // [])[]
	 | select(.in == "query" and .required == true) | "\($fn).\(.name)"]' <<<"$doc")
check "openapi_root_spec_truthful: no GET parameter is marked required when its argument has a default" "$r" '. == []'
check "openapi_root_spec_truthful: \"/\" lists POST too (db-root-spec is a function: POST / calls it)" "$doc" '.body.paths["/"].post != null'

echo "1..$((passed + failed))"
echo "# $passed passed, $failed failed"
[ "$failed" -eq 0 ]
