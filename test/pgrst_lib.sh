# PostgREST v12.2.12 in front of a database, replayed: sourced by
# test/checks/postgrest_replay.sh and test/checks/postgrest_http.sh.
#
# PostgREST cannot be installed here, so a request is given as curl sends
# it (the method, the URL's path and raw query string, the headers, the
# body bytes, a signed JWT) and is taken through what PostgREST v12.2.12
# (tag v12.2.12, commit cd3cf9ed978c8892e3ac460cb4d0b8c621d4c98f) does with
# it, read from its source; every path below is in that tree, line numbers
# of that commit.  PostgREST either answers itself, before any SQL, or
# sends the statements it would send, in a session of a real login, and
# the answer is computed from what the database said.  Modelled, in
# PostgREST's order (src/PostgREST/App.hs, postgrest 97-125 and
# postgrestResponse 135-151):
#
#  1. the JWT (src/PostgREST/Auth.hs, middleware 103-130, parseToken 58-76,
#     parseClaims 78-97): "Authorization: Bearer <token>" (wai-extra
#     extractBearerAuth; no header, another scheme or an empty token is no
#     JWT: the claims {} and db-anon-role).  jose 0.11 (the jose of
#     Stackage lts-22.21, PostgREST's stack.yaml) verifies the HS256
#     signature and decodes the payload as its ClaimsSet
#     (src/Crypto/JWT.hs of jose 0.11, FromJSON ClaimsSet): "iss" and
#     "sub" must be StringOrURI (a string, and a string with a ':' must
#     parse as an RFC 3986 URI: network-uri parseURI), "aud" a StringOrURI
#     or an array of them, "exp"/"nbf"/"iat" numbers, "jti" a string; a
#     null one is as absent.  Then validateClaimsSet: exp, iat (not in the
#     future), nbf, with PostgREST's allowed skew of 30 s, the audience
#     (jwt-aud; any when unset, but an empty "aud" array matches none).
#     Any failure is 401 PGRST301 with the jose error shown as its message
#     ("JWT expired" for exp) and WWW-Authenticate: Bearer
#     error="invalid_token" (src/PostgREST/Error.hs 530, 537, 549-550,
#     558-560), and no SQL at all.  What PostgREST sets as
#     request.jwt.claims is jose's re-encoding (ToJSON ClaimsSet: a null
#     registered claim left out, a URI shown by network-uri, a password in
#     it as "...", an audience of one as a string) with "role" set, written
#     by aeson with its keys sorted (KeyMap is a Data.Map: aeson 2.1.2.1,
#     flag ordered-keymap).  The role is the "role" claim (a non-string
#     one JSON-encoded), else db-anon-role (no db-anon-role: 401 PGRST302).
#  2. the path (Wai pathInfo: http-types decodePathSegments, %XX decoded,
#     '+' kept, bad UTF-8 as U+FFFD) and the resource
#     (src/PostgREST/ApiRequest.hs, getResource 165-173): "/" is the
#     function of db-root-spec, "/<name>" a relation, "/rpc/<name>" a
#     function, anything else 404 with the body {}; the method
#     (getAction 175-198): a function takes GET and POST (other methods:
#     405 PGRST101), a relation GET here (405 PGRST117 for an unknown
#     method).
#  3. the query string (src/PostgREST/ApiRequest/QueryParams.hs, parse
#     114-181): http-types parseQueryReplacePlus True (Network/HTTP/Types/URI.hs
#     of http-types 0.12: pairs separated by '&' AND ';', a pair without
#     '=' has no value, key and value url-decoded: '+' is a space, %XX of
#     two hex digits (either case) is the byte, a '%' not followed by two
#     hex digits stays as it is), then T.decodeUtf8 of each key and value
#     (line 150): bytes that are not UTF-8 throw in pure code, which Warp
#     answers with its defaultOnExceptionResponse, 500 "Something went
#     wrong" (text/plain).  Then: select, columns, on_conflict are reserved
#     (line 164), order, limit, offset, and, or by the last dotted word of
#     the key (line 165); every other parameter with a value is a filter:
#     "<op>.<value>" (pOpExpr 634-675: not., in.(...), is.null, isdistinct.,
#     neq, eq, gt, gte, lt, lte, like, ilike, match, imatch, ...; the value
#     is the rest of the string, pSingleVal 677).  On a GET of a function
#     (isRpcRead) a value that is no operator expression is an argument
#     (pRequestFilter 228-237: NoOpExpr), unless it began with "not.",
#     "in." or "is." (consumed input: the parse fails, 400 PGRST100).
#     order= is pOrder (759-784), or=(...)/and=(...) pLogicTree (813-836):
#     inside the parentheses a value runs to the next ',' or ')'
#     (pLogicSingleVal 828-836), so a timestamp ('-', ':', '.', '+') needs
#     no double quotes there; a value with ',' or ')' must be "quoted".
#     limit/offset are read as Integer (readMaybe, 177-181): anything else
#     is no limit; a negative limit is 416 PGRST103 (getRanges 220-237).
#     A parse error is 400 PGRST100 (its message is parsec's: not
#     reproduced here).
#  4. the body of a POST to a function (getPayload 239-288), by the
#     Content-Type (src/PostgREST/MediaType.hs, decodeMediaType 131-171;
#     no Content-Type is application/json, line 162): application/json
#     (any parameters, any case; also application/vnd.pgrst.array+json
#     without nulls=stripped) is decoded by aeson 2.1.2.1 (an empty body is
#     taken as {} but passed as it is, ""; not JSON, a lone surrogate
#     escape, bad UTF-8: 400 PGRST102 "Empty or invalid json"; an array of
#     objects with other keys: 400 PGRST102 "All object keys must match"; a
#     scalar becomes "[]"); application/x-www-form-urlencoded is read as a
#     query string (its keys are the argument names); text/csv by cassava
#     (the header's names are the argument names; a JSON body is no CSV:
#     400 PGRST102); text/plain, text/xml, application/octet-stream pass
#     the body raw; any other type is 400 PGRST102 "Content-Type not
#     acceptable: <type>" (toMime 65-82).
#  5. the function (src/PostgREST/Plan.hs, callReadPlan 169-192, findProc
#     211-262) among the functions of the schema cache, read from pg_proc
#     as src/PostgREST/SchemaCache.hs, funcsSqlQuery 377-466 reads them
#     (argument names, types, which have defaults, volatility, return type;
#     only functions whose unnamed arguments are none, or one of bytea,
#     json, jsonb, text, xml): the argument names (a GET's query
#     arguments, a POST's body keys) must be exactly the required
#     parameters plus any of the optional ones; else, for a POST only, a
#     function with one parameter of the Content-Type's own type (json or
#     jsonb for application/json, text for text/plain, xml for text/xml,
#     bytea for octet-stream); none: 404 PGRST202 (Error.hs 224-246), two:
#     300 PGRST203 (248-252).  Its transaction is READ ONLY for a GET and
#     for a STABLE or IMMUTABLE function (txMode 182-186), so a GET of a
#     VOLATILE function that writes fails 25006, 405.
#  6. the statements (src/PostgREST/Query.hs, runQuery 77-88): hasql's
#     BEGIN ISOLATION LEVEL READ COMMITTED (or the role's or function's
#     level) READ ONLY|READ WRITE (hasql-transaction 1.0.1.4, commit
#     57a6ff13, Private/SQL.hs and Sessions.hs), one "select
#     set_config(...)" (setPgLocals 284-307:
#     search_path, the role's settings, role, request.jwt.claims,
#     request.method, request.path (the raw path), request.headers (every
#     header but Cookie, names in lower case), request.cookies, the
#     function's hoisted settings), then the read
#     (src/PostgREST/Query/Statements.hs prepareRead 96-110 around
#     src/PostgREST/Query/QueryBuilder.hs readPlanToQuery 44-62) or the call
#     (prepareCall 119-137 around callPlanToQuery 193-216), every value a
#     parameter (src/PostgREST/Query/SqlFragment.hs unknownLiteral 517-521:
#     type unknown, PostgreSQL infers it from the column; a function's
#     single unnamed parameter $1::<its type>, singleParameter 138-143;
#     named ones json_to_record of a json parameter, fromJsonBodyF
#     299-335), then COMMIT, or ABORT after an error.  hasql sends each with
#     the extended protocol; PREPARE and EXECUTE plan and bind the same way.
#  7. the answer (src/PostgREST/Response.hs, actionResponse 67-225,
#     overrideStatusHeaders 258-287; src/PostgREST/RangeQuery.hs
#     rangeStatusHeader 96-109, contentRangeH 111-121): 200, or
#     response.status; Content-Range <offset>-<offset+rows-1>/* (*/* for
#     none); Content-Type application/json; charset=utf-8; the headers of
#     response.headers over PostgREST's.  A database error is Error.hs
#     pgErrorStatus (466-517) with the body {code, details, hint, message}
#     (454-458), a 401 with WWW-Authenticate: Bearer (418-421).
#
# Not modelled (a request needing them stops the check with "not
# modelled"): select=, embedding and JSON paths, Prefer, Range, Accept
# other than */* or application/json, HEAD, OPTIONS, mutations of
# relations, profiles, cookies, functions returning composites or taking
# VARIADIC, bytea bodies.  Modelled but not reproduced to the letter:
# parsec's messages of PGRST100, the fuzzy hint of PGRST202 (noRpcHint is a
# Data.FuzzySet search), cassava's messages, the Content-Location header.
#
# Use: set PGRST_DB, PGRST_AUTHENTICATOR (db-uri's login), PGRST_ANON
# (db-anon-role), PGRST_SCHEMA (db-schemas), PGRST_ROOT_SPEC (db-root-spec,
# or empty), PGRST_JWT_SECRET (jwt-secret), PGRST_TMP (a directory), then
# pgrst_init (and pgrst_reload_schema_cache after changing functions).
# pgrst_request METHOD URL [options] prints the answer as one JSON line
# {status, headers (names in lower case), body (parsed), raw (the body's
# text), tx (COMMIT, ABORT, or null: PostgREST answered without SQL),
# statements (how many were sent)}.  Options: -H 'Name: value' (a header;
# 'Name:' sends none), -d BODY (the body; as curl -d, Content-Type
# application/x-www-form-urlencoded unless a -H gives one), --jwt CLAIMS
# (a JSON text, signed HS256 with PGRST_JWT_SECRET, sent as Authorization:
# Bearer), --login LOGIN (the session's login; default the authenticator),
# --name PREFIX (of the prepared statements' names), --open (no COMMIT).
# pgrst_script METHOD URL [options] writes the plan to $pgrst_plan_file and
# the psql script to $pgrst_script_file instead, for a caller that runs it
# in a session of its own; pgrst_answer PLAN-FILE OUTPUT [STDERR-FILE]
# turns the script's output into the answer.

: "${PGRST_JWT_SECRET:=openwop-replay-jwt-secret-0123456789abcdef}"
: "${PGRST_SCHEMA:=openwop_api}"
: "${PGRST_ROOT_SPEC:=}"

pgrst_psql() { psql -X -A -t -q -v ON_ERROR_STOP=1 "$@"; }

# The role settings PostgREST reads at startup (src/PostgREST/Config/Database.hs,
# queryRoleSettings 134-183): those of the roles the authenticator is a
# member of that it may set, their values in lower case (v12 lower()s
# them); default_transaction_isolation is the role's isolation level
# instead.
pgrst_load_role_settings() {
	pgrst_psql -U "$PGRST_AUTHENTICATOR" -d "$PGRST_DB" <<-'SQL'
	SELECT json_build_object(
	    'role_settings', coalesce((SELECT json_object_agg(rolname, s) FROM (
	        SELECT r.rolname, json_agg(json_build_array(split_part(c, '=', 1), lower(substr(c, strpos(c, '=') + 1)))) AS s
	          FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.roleid, unnest(r.rolconfig) c
	          JOIN pg_settings ps ON ps.name = split_part(c, '=', 1)
	         WHERE m.member = current_user::regrole::oid
	           AND (ps.context = 'user' OR has_parameter_privilege(current_user::regrole::oid, ps.name, 'set'))
	           AND split_part(c, '=', 1) <> 'default_transaction_isolation'
	         GROUP BY r.rolname) x), '{}'),
	    'role_iso', coalesce((SELECT json_object_agg(r.rolname, upper(substr(c, strpos(c, '=') + 1)))
	          FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.roleid, unnest(r.rolconfig) c
	         WHERE m.member = current_user::regrole::oid AND c LIKE 'default_transaction_isolation=%'), '{}'))
	SQL
}

# The functions of the schema cache (src/PostgREST/SchemaCache.hs,
# allFunctions 367-370 and funcsSqlQuery 377-466, decodeFuncs 286-329),
# written here in our words: every ordinary function of db-schemas, not
# only those the roles may execute; its input arguments in order (an
# unnamed one named ""), each required unless it has a default (the last
# pronargdefaults), its type as regtype's text (and character/bit as
# their varying types for json_to_record); callable only with no unnamed
# argument or one unnamed of bytea, json, jsonb, text or xml; the
# volatility; set-returning, composite; the transaction isolation and the
# hoisted settings (statement_timeout, plan_filter.statement_cost_limit,
# default_transaction_isolation: db-hoisted-tx-settings) of proconfig.
pgrst_load_functions() {
	pgrst_psql -U "$PGRST_AUTHENTICATOR" -d "$PGRST_DB" -v schema="$PGRST_SCHEMA" <<-'SQL'
	WITH args AS (
	    SELECT p.oid,
	           json_agg(json_build_object('name', coalesce(a.name, ''), 'type', a.type::regtype::text,
	                   'type_max', CASE a.type WHEN 'bit'::regtype THEN 'bit varying' WHEN 'bit[]'::regtype THEN 'bit varying[]'
	                                           WHEN 'character'::regtype THEN 'character varying'
	                                           WHEN 'character[]'::regtype THEN 'character varying[]'
	                                           ELSE a.type::regtype::text END,
	                   'required', a.idx <= p.pronargs - p.pronargdefaults,
	                   'variadic', coalesce(a.mode = 'v', false)) ORDER BY a.idx) AS params,
	           count(*) FILTER (WHERE a.name IS NULL) AS unnamed,
	           (array_agg(a.type) FILTER (WHERE a.name IS NULL))[1] AS unnamed_type
	      FROM pg_proc p, unnest(p.proargnames, p.proargtypes::oid[], p.proargmodes) WITH ORDINALITY a(name, type, mode, idx)
	     WHERE a.type IS NOT NULL
	     GROUP BY p.oid)
	SELECT coalesce(json_agg(json_build_object(
	           'schema', n.nspname, 'name', p.proname, 'description', d.description, 'params', coalesce(a.params, '[]'),
	           'volatility', p.provolatile, 'retset', p.proretset,
	           'composite', t.typtype = 'c' OR coalesce(p.proargmodes::text[] && '{t,b,o}', false),
	           'has_variadic', p.provariadic <> 0,
	           'iso', (SELECT upper(split_part(c, '=', 2)) FROM unnest(p.proconfig) c WHERE c LIKE 'default_transaction_isolation=%'),
	           'settings', coalesce((SELECT json_agg(json_build_array(split_part(c, '=', 1), substr(c, strpos(c, '=') + 1)))
	                                   FROM unnest(p.proconfig) c
	                                  WHERE split_part(c, '=', 1) IN ('statement_timeout', 'plan_filter.statement_cost_limit', 'default_transaction_isolation')), '[]'))
	           ORDER BY p.proname, p.oid), '[]')
	  FROM pg_proc p
	  JOIN pg_namespace n ON n.oid = p.pronamespace
	  LEFT JOIN args a ON a.oid = p.oid
	  LEFT JOIN pg_description d ON d.objoid = p.oid AND d.classoid = 'pg_proc'::regclass
	  JOIN pg_type t ON t.oid = p.prorettype
	 WHERE n.nspname = :'schema' AND p.prokind = 'f' AND p.prorettype <> 'trigger'::regtype
	   AND (a.unnamed IS NULL OR a.unnamed = 0
	        OR a.unnamed = 1 AND a.unnamed_type IN ('bytea'::regtype, 'json'::regtype, 'jsonb'::regtype, 'text'::regtype, 'xml'::regtype))
	SQL
}

# PostgREST's schema cache reload (NOTIFY pgrst, 'reload schema'): again.
pgrst_reload_schema_cache() {
	local settings functions
	settings=$(pgrst_load_role_settings)
	functions=$(pgrst_load_functions)
	jq -c -n --argjson s "$settings" --argjson f "$functions" '$s + {routines: $f}' >"$PGRST_TMP/pgrst_cache.json"
}

pgrst_init() {
	: "${PGRST_DB:?}" "${PGRST_AUTHENTICATOR:?}" "${PGRST_ANON:?}" "${PGRST_TMP:?}"
	command -v jq >/dev/null 2>&1 || { echo "jq is missing: test/run installs it" >&2; return 1; }
	pgrst_jq_source >"$PGRST_TMP/pgrst.jq"
	jq -c -n --arg schema "$PGRST_SCHEMA" --arg anon "$PGRST_ANON" --arg root "$PGRST_ROOT_SPEC" \
		'{schema: $schema, extra_search_path: ["public"], anon_role: $anon,
		  root_spec: (if $root == "" then null else $root end), jwt_aud: null}' >"$PGRST_TMP/pgrst_conf.json"
	pgrst_reload_schema_cache
}

pgrst_b64url() { openssl base64 -A | tr '+/' '-_' | tr -d '='; }
pgrst_b64url_decode() {    # STRING -> the bytes on stdout
	local s=${1//-/+}
	s=${s//_//}
	case $((${#s} % 4)) in 2) s+="==" ;; 3) s+="=" ;; esac
	printf '%s' "$s" | openssl base64 -d -A
}
pgrst_hs256() { printf '%s' "$1" | openssl dgst -sha256 -hmac "$PGRST_JWT_SECRET" -binary | pgrst_b64url; }

# pgrst_jwt CLAIMS: a JWT of these claims (the text as given), HS256 with
# PGRST_JWT_SECRET
pgrst_jwt() {
	local h p
	h=$(printf '%s' '{"alg":"HS256","typ":"JWT"}' | pgrst_b64url)
	p=$(printf '%s' "$1" | pgrst_b64url)
	printf '%s.%s.%s' "$h" "$p" "$(pgrst_hs256 "$h.$p")"
}

# the token of an Authorization header (wai-extra extractBearerAuth: the
# scheme "bearer" in any case, then the rest without leading spaces; any
# other header or none: no token), as files for the planner: the JWT's
# header and payload decoded, the signature checked (HS256 with
# PGRST_JWT_SECRET); sets jwt_opts, the options of the planner's jq
pgrst_jwt_args() {
	local auth=$1 scheme token rest h p s sig_ok=false utf8=false parts
	scheme=${auth%%[[:space:]]*}
	rest=${auth#"$scheme"}
	rest=${rest#"${rest%%[![:space:]]*}"}
	token=
	[ "${scheme,,}" = bearer ] && token=$rest
	: >"$PGRST_TMP/pgrst_jwt_header"
	: >"$PGRST_TMP/pgrst_jwt_payload"
	if [ -n "$token" ]; then
		s=${token//[^.]/}
		parts=$((${#s} + 1))
		IFS=. read -r h p s <<<"$token"
		[ "$(pgrst_hs256 "$h.$p")" = "$s" ] && sig_ok=true
		pgrst_b64url_decode "$h" >"$PGRST_TMP/pgrst_jwt_header" 2>/dev/null || true
		pgrst_b64url_decode "$p" >"$PGRST_TMP/pgrst_jwt_payload" 2>/dev/null || true
		iconv -f UTF-8 -t UTF-8 <"$PGRST_TMP/pgrst_jwt_payload" >/dev/null 2>&1 && utf8=true
	fi
	jwt_opts=(--arg token "$token" --argjson parts "${parts:-0}" --argjson sig_ok $sig_ok --argjson payload_utf8 $utf8
		--rawfile jwt_header "$PGRST_TMP/pgrst_jwt_header" --rawfile jwt_payload "$PGRST_TMP/pgrst_jwt_payload")
}

# pgrst_script METHOD URL [options]: what PostgREST does with the request
# before the database, as {early: answer} or {plan: ...}, in the file
# $pgrst_plan_file, and the psql script of its statements in
# $pgrst_script_file (empty when PostgREST answers without SQL).  Sets
# pgrst_login.
pgrst_script() {
	local method=$1 url=$2 body= has_body=false ct_given=false h name value utf8=true open=false now
	local headers=(host "api.example.org" user-agent "curl/8.5.0" accept "*/*")    # curl's own
	local name_prefix=r auth=
	shift 2
	pgrst_login=$PGRST_AUTHENTICATOR
	while [ $# -gt 0 ]; do
		case $1 in
		-H) h=$2; name=${h%%:*}; value=${h#*:}; value=${value#"${value%%[![:space:]]*}"}
			[ "${name,,}" = content-type ] && ct_given=true
			# as curl: "Name:" with nothing after it sends no such header
			if [ "$h" = "$name:" ]; then headers+=("${name,,}" $'\x1e'); else headers+=("${name,,}" "$value"); fi
			shift 2 ;;
		-d) body=$2; has_body=true; shift 2 ;;
		--jwt) headers+=(authorization "Bearer $(pgrst_jwt "$2")"); shift 2 ;;
		--login) pgrst_login=$2; shift 2 ;;
		--name) name_prefix=$2; shift 2 ;;
		--open) open=true; shift ;;
		*) echo "pgrst_script: unknown option $1" >&2; return 2 ;;
		esac
	done
	if $has_body; then
		headers+=(content-length "$(printf '%s' "$body" | wc -c)")
		$ct_given || headers+=(content-type "application/x-www-form-urlencoded")
		printf '%s' "$body" | iconv -f UTF-8 -t UTF-8 >/dev/null 2>&1 || utf8=false
	fi
	for ((h = 0; h < ${#headers[@]}; h += 2)); do
		[ "${headers[h]}" = authorization ] && auth=${headers[h + 1]}
	done
	pgrst_jwt_args "$auth"
	printf -v now '%(%s)T' -1
	pgrst_plan_file=$PGRST_TMP/pgrst_plan.$name_prefix.json
	pgrst_script_file=$PGRST_TMP/pgrst_script.$name_prefix.sql
	jq -r -n -L "$PGRST_TMP" --arg method "$method" --arg url "$url" \
		--arg body "$body" --argjson has_body $has_body --argjson utf8 $utf8 "${jwt_opts[@]}" \
		--slurpfile cache "$PGRST_TMP/pgrst_cache.json" --slurpfile conf "$PGRST_TMP/pgrst_conf.json" --argjson now "$now" \
		--arg name "$name_prefix" --argjson open $open '
		include "pgrst";
		# the headers as given, in order (a later one of a name wins; "\u001e": none)
		(reduce ($ARGS.positional | [range(0; length; 2) as $i | [.[$i], .[$i + 1]]])[] as $h
		   ({}; if $h[1] == "\u001e" then del(.[$h[0]]) else .[$h[0]] = $h[1] end)) as $headers
		| try handle({method: $method, url: $url, headers: $headers, body: (if $has_body then $body else null end), body_utf8: $utf8};
		             {token: $token, parts: $parts, sig_ok: $sig_ok, header_text: $jwt_header, payload_text: $jwt_payload, payload_utf8: $payload_utf8};
		             $cache[0]; $conf[0]; $now)
		  catch (if type == "object" and has("not_modelled") then {not_modelled: .not_modelled} else error(.) end)
		| tojson, (if has("plan") then psql_script($name; $open) else empty end)' \
		--args "${headers[@]}" >"$pgrst_script_file" || return 1
	head -n 1 "$pgrst_script_file" >"$pgrst_plan_file"
	sed -i 1d "$pgrst_script_file"
	if jq -e 'has("not_modelled")' "$pgrst_plan_file" >/dev/null; then
		echo "not modelled by the replay: $(jq -r .not_modelled "$pgrst_plan_file") ($method $url)" >&2
		return 3
	fi
}

# pgrst_answer PLAN-FILE OUTPUT [STDERR-FILE]: the answer of a script's output
pgrst_answer() {
	local err=
	[ -n "${3:-}" ] && err=$(cat "$3")
	jq -c -L "$PGRST_TMP" --arg out "$2" --arg err "$err" '
		include "pgrst";
		if has("early") then .early + {raw: (.early.raw // (.early.body | tojson)), tx: null, statements: 0}
		else respond($out; $err) end' "$1"
}

# pgrst_request METHOD URL [options]: one request, its answer
pgrst_request() {
	local out
	pgrst_script "$@" || return
	if [ ! -s "$pgrst_script_file" ]; then
		pgrst_answer "$pgrst_plan_file" ""
		return
	fi
	out=$(psql -X -A -t -q -F $'\x1f' -v SHOW_CONTEXT=never -U "$pgrst_login" -d "$PGRST_DB" \
		<"$pgrst_script_file" 2>"$PGRST_TMP/pgrst_stderr")
	pgrst_answer "$pgrst_plan_file" "$out" "$PGRST_TMP/pgrst_stderr"
}

# pgrst_urlencode STRING: percent-encoded for a query string value (all but
# unreserved characters)
pgrst_urlencode() { jq -rn --arg s "$1" '$s | @uri'; }

pgrst_jq_source() {
	cat <<'PGRST_JQ'
# ---- not modelled, and PostgREST's own answers -----------------------------
def not_modelled($what): error({not_modelled: $what});
# try f catch handler, the outputs of f collected first: jq 1.6's try also
# catches errors raised after it in the pipeline
def attempt(f; handler): [try f catch handler] | .[0];
# A body of PostgREST's own: toJsonPgrstError (Error.hs 99-105), keys as
# aeson's KeyMap (a Data.Map) writes them: sorted.
def pgrst_body($code; $message; $details; $hint):
  {code: $code, details: $details, hint: $hint, message: $message};
def early($status; $body): {early: {status: $status, headers: {"content-type": "application/json; charset=utf-8"}, body: $body}};
def early_pgrst($status; $code; $message; $details; $hint): early($status; pgrst_body($code; $message; $details; $hint));

# ---- bytes, UTF-8 --------------------------------------------------------------
def utf8_encode_cp:
  if . < 128 then [.]
  elif . < 2048 then [192 + ((. / 64) | floor), 128 + (. % 64)]
  elif . < 65536 then [224 + ((. / 4096) | floor), 128 + (((. / 64) | floor) % 64), 128 + (. % 64)]
  else [240 + ((. / 262144) | floor), 128 + (((. / 4096) | floor) % 64), 128 + (((. / 64) | floor) % 64), 128 + (. % 64)] end;
def string_bytes: explode | map(utf8_encode_cp) | add // [];
def hexval:
  if . >= 48 and . <= 57 then . - 48 elif . >= 65 and . <= 70 then . - 55
  elif . >= 97 and . <= 102 then . - 87 else null end;
# http-types urlDecode: '+' to ' ' when $plus, %XX of two hex digits to the
# byte, any other '%' kept as it is.
def url_decode($plus):
  . as $b | ($b | length) as $n
  | {i: 0, out: []}
  | until(.i >= $n;
      $b[.i] as $c
      | if $c == 43 and $plus then .out += [32] | .i += 1
        elif $c == 37 and .i + 2 < $n and ($b[.i + 1] | hexval) != null and ($b[.i + 2] | hexval) != null
        then .out += [($b[.i + 1] | hexval) * 16 + ($b[.i + 2] | hexval)] | .i += 3
        else .out += [$c] | .i += 1 end)
  | .out;
# UTF-8 to a string: $lenient replaces a bad byte by U+FFFD
# (decodeUtf8With lenientDecode), else null for any bad sequence
# (Data.Text.Encoding.decodeUtf8 throws).
def utf8_decode($lenient):
  . as $b | ($b | length) as $n
  | {i: 0, cps: [], ok: true}
  | until(.i >= $n or (.ok | not);
      $b[.i] as $c
      | if $c < 128 then .cps += [$c] | .i += 1
        else
          (if $c >= 194 and $c <= 223 then 1 elif $c >= 224 and $c <= 239 then 2
           elif $c >= 240 and $c <= 244 then 3 else null end) as $k
          | (if $k == null or .i + $k >= $n then null
             else $b[(.i + 1):(.i + 1 + $k)] as $cont
               | if ($cont | all(. >= 128 and . <= 191)) | not then null
                 else (reduce $cont[] as $x (($c - (if $k == 1 then 192 elif $k == 2 then 224 else 240 end)); . * 64 + ($x - 128)))
                   | if ($k == 2 and . < 2048) or ($k == 3 and (. < 65536 or . > 1114111)) or (. >= 55296 and . <= 57343)
                     then null else . end end end) as $cp
          | if $cp != null then .cps += [$cp] | .i += 1 + $k
            elif $lenient then .cps += [65533] | .i += 1
            else .ok = false end end)
  | if .ok then (.cps | implode) else null end;

# ---- JSON as aeson 2.1.2.1 reads it -------------------------------------------
# jq's parser plus what aeson refuses and jq takes: a lone surrogate escape
# (UnescapePure.hs state_udone/state_sudone), NaN/nan, numbers with leading
# zeros, raw control characters in strings; invalid UTF-8 is checked by the
# caller (iconv) before.
def json_string_re: "\"(?:[^\"\\\\\\x00-\\x1f]|\\\\(?:[\"\\\\/bfnrt]|u[0-9a-fA-F]{4}))*\"";
def escapes_paired:
  [match("\\\\(u[0-9a-fA-F]{4}|.)"; "g") | {o: .offset, cp: (if .captures[0].string | startswith("u") then (.captures[0].string[1:] | ascii_downcase | explode | map(hexval) | reduce .[] as $d (0; . * 16 + $d)) else null end)}]
  | . as $e
  | [range(0; length) as $k | $e[$k] as $x
     | if $x.cp != null and $x.cp >= 55296 and $x.cp <= 56319
       then ($e[$k + 1] // null) as $y | ($y != null and $y.o == $x.o + 6 and $y.cp != null and $y.cp >= 56320 and $y.cp <= 57343)
       elif $x.cp != null and $x.cp >= 56320 and $x.cp <= 57343
       then ($k > 0 and (($e[$k - 1]) as $w | $w.cp != null and $w.cp >= 55296 and $w.cp <= 56319 and $x.o == $w.o + 6))
       else true end]
  | all;
def aeson_decode:   # a string -> {ok: true, value} or {ok: false}
  . as $t
  | ([match(json_string_re; "g") | .string]) as $strings
  | (gsub(json_string_re; "\"\"") | gsub("[\\[\\]{}:,\" \\t\\n\\r]+"; " ") | [splits(" +")] | map(select(. != ""))) as $tokens
  | if ($strings | all(escapes_paired)) and ($tokens | all(test("^(true|false|null|-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?)$")))
    then attempt({ok: true, value: ($t | fromjson)}; {ok: false})
    else {ok: false} end;

# ---- the query string: QueryParams.hs parse (114-181) ----------------------------
# http-types parseQueryReplacePlus True: '&' and ';' separate, a pair without
# '=' has no value, key and value url-decoded with '+' as ' '; then
# T.decodeUtf8 of each (QueryParams.hs 150): invalid UTF-8 throws.
def split_bytes($seps):
  . as $b
  | if length == 0 then []
    else reduce $b[] as $c ([[]]; if ($seps | index([$c])) != null then . + [[]] else .[-1] += [$c] end)
      | if ($b[-1] as $l | $seps | index([$l])) != null then .[:-1] else . end end;
def parse_query_string:   # raw query string (without '?') -> [{k, v}] or null (bad UTF-8)
  string_bytes | (if .[0] == 63 then .[1:] else . end)
  | split_bytes([38, 59])
  | map((index([61])) as $e
        | if $e == null then {k: (url_decode(true) | utf8_decode(false)), v: null, novalue: true}
          else {k: (.[:$e] | url_decode(true) | utf8_decode(false)), v: (.[($e + 1):] | url_decode(true) | utf8_decode(false)), novalue: false} end)
  | if any(.[]; .k == null or (.novalue | not) and .v == null) then null else map(del(.novalue)) end;

# ---- the grammar of QueryParams.hs, a cursor {s, i} over a string --------------
def rest: .s[.i:];
def cap($re):   # capture, each named group present ("" when empty: jq 1.6 drops empty matches' groups)
  ([$re | scan("\\(\\?<([A-Za-z_][A-Za-z0-9_]*)>") | .[0]]) as $names
  | [capture($re)] | if length == 0 then null else .[0] as $c | reduce $names[] as $n ({}; .[$n] = ($c[$n] // "")) end;
def qperr($what): error({qperr: $what});
# pQuotedValue (686-689)
def p_quoted:
  (rest | cap("^\"(?<b>(?:[^\\\\\"]|\\\\.)*)\"")) as $m
  | if $m == null then qperr("quoted value") else .v = ($m.b | gsub("\\\\(?<c>.)"; .c)) | .i += ($m.b | length) + 2 end;
# pIdentifier (848-852): letters, ASCII digits, '_', ' ', '$', stripped;
# sepByDash (356-363): joined by '-' not followed by '>'
def p_ident:
  (rest | cap("^(?<v>[\\p{L}0-9_ $]+)")) as $m
  | if $m == null then qperr("field name") else .v = ($m.v | sub("^ +"; "") | sub(" +$"; "")) | .i += ($m.v | length) end;
def p_fieldname:   # pFieldName (350-354)
  if (rest | startswith("\"")) then p_quoted
  else p_ident
    | until((rest | test("^-(?!>)")) | not; .v as $a | .i += 1 | p_ident | .v = $a + "-" + .v) end;
def p_ws: (rest | cap("^(?<w>[ \\t]*)").w) as $w | .i += ($w | length);
def p_field:   # pField (437-438): a field, no JSON path (not modelled)
  p_ws | p_fieldname | if (rest | startswith("->")) then not_modelled("a JSON path") else . end | p_ws;
def p_tree_path:   # pTreePath (276-280)
  p_fieldname | .path = [.v]
  | until((rest | startswith(".")) | not; .path as $p | .i += 1 | p_fieldname | .path = $p + [.v])
  | if (rest | startswith("->")) then not_modelled("a JSON path") else . end;
def lit($l): if (rest | startswith($l)) then .i += ($l | length) else qperr($l) end;
# values: pSingleVal (677), pLogicSingleVal (828-836), pListVal/pListElement (680-684)
def p_single_val: .v = rest | .i = (.s | length);
def p_logic_val:
  if (rest | test("^\"(?:[^\\\\\"]|\\\\.)*\"(?:$|[,)])")) then p_quoted
  elif (rest | test("^\\{[^{}]*\\}")) then (rest | cap("^(?<a>\\{[^{}]*\\})").a) as $a | .v = $a | .i += ($a | length)
  else (rest | cap("^(?<a>[^,)]*)").a) as $a | .v = $a | .i += ($a | length) end;
def p_list_val:
  p_ws | lit("(") | p_ws | .l = []
  | def elems: (if (rest | test("^\"(?:[^\\\\\"]|\\\\.)*\"(?:$|[,)])")) then p_quoted
                else (rest | cap("^(?<a>[^,)]*)").a) as $a | .v = $a | .i += ($a | length) end)
               | .l += [.v] | if (rest | startswith(",")) then .i += 1 | elems else . end;
    elems | p_ws | lit(")") | p_ws | .v = .l;
# pOpExpr (634-675): "not." then in, is, isdistinct, fts, simple operators,
# quantified operators; in./is./not. consume their input (no fallback).
def p_op_expr($logic):
  (if (rest | startswith("not.")) then .i += 4 | .not = true | .consumed = true else .not = false | .consumed = false end)
  | if (rest | startswith("in.")) then .i += 3 | p_list_val | .op = {in: .v}
    elif (rest | startswith("is.")) then .i += 3
      | (rest | ascii_downcase | cap("^(?<t>null|unknown|true|false)")) as $t
      | if $t == null then qperr("null or trilean value (unknown, true, false)") else .i += ($t.t | length) | .op = {is: $t.t} end
    elif (rest | startswith("isdistinct.")) then .i += 11 | (if $logic then p_logic_val else p_single_val end) | .op = {isdistinct: .v}
    elif (rest | test("^(fts|plfts|phfts|wfts)[.(]")) then not_modelled("full-text search filters")
    elif (rest | test("^(neq|cs|cd|ov|sl|sr|nxr|nxl|adj)\\.")) then
      (rest | cap("^(?<o>neq|cs|cd|ov|sl|sr|nxr|nxl|adj)\\.").o) as $o | .i += ($o | length) + 1
      | (if $logic then p_logic_val else p_single_val end) | .op = {simple: $o, val: .v}
    elif (rest | test("^(eq|gte|gt|lte|lt|like|ilike|match|imatch)\\(")) then not_modelled("any/all quantifiers")
    elif (rest | test("^(eq|gte|gt|lte|lt|like|ilike|match|imatch)\\.")) then
      (rest | cap("^(?<o>eq|gte|gt|lte|lt|like|ilike|match|imatch)\\.").o) as $o | .i += ($o | length) + 1
      | (if $logic then p_logic_val else p_single_val end) | .op = {quant: $o, val: .v}
    else qperr("operator (eq, gt, ...)") end;
# pLogicTree (813-826)
def p_logic_tree:
  attempt(p_field | .fld = .v | lit(".") | p_op_expr(true) | {s, i, v: {stmt: {field: .fld, not: .not, op: .op}}};
          if type == "object" and has("not_modelled") then error(.) else null end) as $stmt
  | if $stmt != null then $stmt
    else (if (rest | startswith("not.")) then .i += 4 | .neg = true else .neg = false end)
      | (if (rest | startswith("and")) then .i += 3 | .lop = "AND" elif (rest | startswith("or")) then .i += 2 | .lop = "OR"
         else qperr("logic operator (and, or)") end)
      | .neg as $neg | .lop as $lop
      | p_ws | lit("(") | p_ws | .kids = []
      | def kids: p_logic_tree as $k | .i = $k.i | .kids += [$k.v] | p_ws
          | if (rest | startswith(",")) then .i += 1 | p_ws | kids else . end;
        kids | p_ws | lit(")") | p_ws
      | .v = {expr: {not: $neg, op: $lop, kids: .kids}} end;
# pOrder (759-784)
def p_order:
  def term: p_ws
    | (if (rest | test("^[^,(]*\\(")) then not_modelled("ordering by an embedded resource") else . end)
    | p_field | .t = {field: .v, dir: null, nulls: null}
    | (if (rest | startswith(".asc")) then .i += 4 | .t.dir = "ASC" elif (rest | startswith(".desc")) then .i += 5 | .t.dir = "DESC" else . end)
    | (if (rest | startswith(".nullsfirst")) then .i += 11 | .t.nulls = "NULLS FIRST" elif (rest | startswith(".nullslast")) then .i += 10 | .t.nulls = "NULLS LAST" else . end)
    | p_ws | if (rest == "" or (rest | startswith(","))) then . else qperr("\",\" or end of input") end;
  .terms = [] | def terms: term | .terms += [.t] | if (rest | startswith(",")) then .i += 1 | terms else . end;
  terms | .v = .terms;
def run_parser(p; $s): {s: $s, i: 0} | p | .v;
def qp_error($what; $value):
  early_pgrst(400; "PGRST100"; "\"failed to parse \($what) (\($value))\" (line 1, column 1)"; "(not modelled: parsec's message)"; null);

# ---- SQL fragments: SqlFragment.hs ---------------------------------------------
def ident: "\"" + gsub("\""; "\"\"") + "\"";                       # pgFmtIdent (159-163)
def qi($schema; $name): (if $schema == "" then "" else ($schema | ident) + "." end) + ($name | ident);   # fromQi (241-245)
# unknownLiteral (517-521): each value a parameter of type unknown; params
# are numbered in the order they appear in the statement (hasql's Snippet).
def param($type; $value): .params += [{type: $type, value: $value}] | .sql += "$\(.params | length)";
def emit($s): .sql += $s;
def pg_array_literal:   # pgBuildArrayLiteral (151-156)
  "{" + (map("\"" + (gsub("\\\\"; "\\\\") | gsub("\""; "\\\"")) + "\"") | join(",")) + "}";
def fmt_column($q; $c): if $c == "*" then .sql += $q + ".*" else .sql += $q + "." + ($c | ident) end;   # pgFmtColumn (247-249)
# pgFmtFilter (369-407): NOT, a space, the column, the operator, the value
def fmt_filter($q; $f):
  emit(if $f.not then "NOT" else "" end) | emit(" ") | fmt_column($q; $f.field)
  | if $f.op | has("quant") then
      ({eq: "=", gte: ">=", gt: ">", lte: "<=", lt: "<", like: "like", ilike: "ilike", match: "~", imatch: "~*"}[$f.op.quant]) as $o
      | emit(" " + $o + " ")
      | param("unknown"; (if $f.op.quant == "like" or $f.op.quant == "ilike" then ($f.op.val | gsub("\\*"; "%")) else $f.op.val end))
    elif $f.op | has("simple") then
      emit(" " + ({neq: "<>", cs: "@>", cd: "<@", ov: "&&", sl: "<<", sr: ">>", nxr: "&<", nxl: "&>", adj: "-|-"}[$f.op.simple]) + " ")
      | param("unknown"; $f.op.val)
    elif $f.op | has("is") then emit(" IS " + ($f.op.is | ascii_upcase))
    elif $f.op | has("isdistinct") then emit(" IS DISTINCT FROM ") | param("unknown"; $f.op.isdistinct)
    elif $f.op | has("in") then
      if $f.op.in == [""] then emit(" = ANY('{}') ") else emit(" = ANY (") | param("unknown"; ($f.op.in | pg_array_literal)) | emit(") ") end
    else not_modelled("operator \($f.op)") end;
def fmt_logic($q; $t):   # pgFmtLogicTree (413-420)
  if $t | has("stmt") then fmt_filter($q; $t.stmt)
  else emit((if $t.expr.not then "NOT" else "" end) + " (")
    | reduce range(0; $t.expr.kids | length) as $k (.; (if $k > 0 then emit(" " + $t.expr.op + " ") else . end) | fmt_logic($q; $t.expr.kids[$k]))
    | emit(")") end;
# readPlanToQuery (QueryBuilder.hs 44-55): SELECT, FROM, joins, WHERE,
# GROUP BY, ORDER BY, LIMIT, each joined by one space
def read_query($from; $q; $rp):
  emit("SELECT ") | fmt_column($q; "*") | emit(" " + $from + " ") | emit(" ")
  | (if ($rp.where | length) == 0 then . else emit("WHERE ")
       | reduce range(0; $rp.where | length) as $k (.; (if $k > 0 then emit(" AND ") else . end) | fmt_logic($q; $rp.where[$k])) end)
  | emit(" ") | emit(" ")
  | (if ($rp.order | length) == 0 then . else emit("ORDER BY ")
       | reduce range(0; $rp.order | length) as $k (.; (if $k > 0 then emit(", ") else . end)
           | $rp.order[$k] as $t | fmt_column($q; $t.field) | emit(" " + ([$t.dir // "", $t.nulls // ""] | join(" ")))) end)
  | emit(" ")
  # limitOffsetF (SqlFragment.hs 482-487)
  | if $rp.limit == null and $rp.offset == 0 then .
    else emit("LIMIT ") | (if $rp.limit == null then emit("ALL") else param("unknown"; ($rp.limit | tostring)) end)
      | emit(" OFFSET ") | param("unknown"; ($rp.offset | tostring)) end;

# ---- Content-Type: MediaType.hs decodeMediaType (131-171), tokenizeMediaType (187-214) ----
def media_type:   # a Content-Type header value (absent: application/json) -> {mt, mime}
  . as $h
  | ($h | cap("^(?<main>[A-Za-z0-9.*]+)/(?<sub>[A-Za-z0-9.*+\\-]+)(?<params>.*)$")) as $m
  | if $m == null then {mt: "other", mime: $h}
    else ([$m.params | cap("^(?<p>(?:\\s*;\\s*[A-Za-z0-9\\-]+\\s*=\\s*(?:\"[^\"]*\"|[A-Za-z0-9|\\-]+))*)").p
           | scan("\\s*;\\s*([A-Za-z0-9\\-]+)\\s*=\\s*(\"[^\"]*\"|[A-Za-z0-9|\\-]+)") | {key: (.[0] | ascii_downcase), value: (.[1] | ltrimstr("\"") | rtrimstr("\""))}] | from_entries) as $p
      | [($m.main | ascii_downcase), ($m.sub | ascii_downcase)] as $t
      | if $t == ["application", "json"] then {mt: "json", mime: "application/json"}
        elif $t == ["application", "geo+json"] then {mt: "geojson", mime: "application/geo+json"}
        elif $t == ["text", "csv"] then {mt: "csv", mime: "text/csv"}
        elif $t == ["text", "plain"] then {mt: "text", mime: "text/plain"}
        elif $t == ["text", "xml"] then {mt: "xml", mime: "text/xml"}
        elif $t == ["application", "openapi+json"] then {mt: "openapi", mime: "application/openapi+json"}
        elif $t == ["application", "x-www-form-urlencoded"] then {mt: "urlencoded", mime: "application/x-www-form-urlencoded"}
        elif $t == ["application", "octet-stream"] then {mt: "octet", mime: "application/octet-stream"}
        elif ($t[0] == "application" and ($t[1] | test("^vnd\\.pgrst\\.plan(\\+text|\\+json)?$"))) then
          ((($p.for // "application/json") | media_type.mime) as $for | (($p.options // "") | split("|")) as $o
           | {mt: "plan", mime: ("application/vnd.pgrst.plan+" + (if $t[1] | endswith("+json") then "json" else "text" end) + "; for=\"" + $for + "\""
               + ([["analyze", "verbose", "settings", "buffers", "wal"][] | select(. as $x | $o | index([$x]))] | if length > 0 then "; options=" + join("|") else "" end))})
        elif ($t[0] == "application" and ($t[1] == "vnd.pgrst.object+json" or $t[1] == "vnd.pgrst.object")) then
          {mt: "object", mime: ("application/vnd.pgrst.object+json" + (if $p.nulls == "stripped" then ";nulls=stripped" else "" end))}
        elif ($t[0] == "application" and ($t[1] == "vnd.pgrst.array+json" or $t[1] == "vnd.pgrst.array")) then
          (if $p.nulls == "stripped" then {mt: "arraystrip", mime: "application/vnd.pgrst.array+json;nulls=stripped"} else {mt: "json", mime: "application/json"} end)
        elif $t == ["*", "*"] then {mt: "any", mime: "*/*"}
        else {mt: "other", mime: $h} end end;

# ---- the schema cache: Plan.hs findProc (211-262) -----------------------------
# the overloads of a name in the order of SchemaCache/Routine.hs, Ord
# Routine (91-95): fewer parameters first, then description, parameters
def routine_order: sort_by([(.params | length), .description, (.params | map([.name, .type, .type_max, .required, .variadic]))]);
def find_proc($all; $keys; $ct; $post):
  ($all | routine_order) as $procs
  | ($keys | unique) as $k
  | def matches: .params as $ps
      | if ($ps | length) == 0 then ($k | length) == 0 and (($post and (["octet", "text", "xml"] | index([$ct])) != null) | not)
        else ([$ps[] | select(.required) | .name] | unique) as $req | ([$ps[] | select(.required | not) | .name] | unique) as $opt
          | if ($opt | length) == 0 then $k == $req
            elif ($req | length) == 0 then ($k - $opt) == []
            else ($k - $opt) == $req end end;
    def single_unnamed: (.params | length) == 1 and $post
      and ([$ct, .params[0].type] as $x | $x == ["json", "json"] or $x == ["json", "jsonb"] or $x == ["text", "text"] or $x == ["xml", "xml"] or $x == ["octet", "bytea"]);
    [$procs[] | select(matches)] as $named | [$procs[] | select((matches | not) and single_unnamed)] as $fallback
  | if ($named | length) == 1 then {proc: $named[0]}
    elif ($named | length) > 1 then {ambiguous: $named}
    elif ($fallback | length) == 1 then {proc: $fallback[0]}
    elif ($fallback | length) > 1 then {ambiguous: $fallback}
    else {none: true} end;
# Error.hs NoRpc (224-246): PGRST202, 404
def no_rpc($schema; $name; $keys; $ct; $post; $found):
  ($schema + "." + $name) as $func | ($keys | unique) as $k | ($k | join(", ")) as $prms
  | ($post and (["text", "xml", "octet"] | index([$ct])) != null) as $only_single
  | (if ($k | length) == 0 then " without parameters" else null end) as $without
  | early_pgrst(404; "PGRST202";
      "Could not find the function " + $func + (if $only_single then "" else ($without // ("(" + $prms + ")")) end) + " in the schema cache";
      "Searched for the function " + $func
        + (if $post and $ct == "text" then " with a single unnamed text parameter"
           elif $post and $ct == "xml" then " with a single unnamed xml parameter"
           elif $post and $ct == "octet" then " with a single unnamed bytea parameter"
           else ($without // (" with parameter" + (if ($k | length) > 1 then "s " else " " end) + $prms))
             + (if $post and $ct == "json" then " or with a single unnamed json/jsonb parameter" else "" end) end)
        + ", but no matches were found in the schema cache.";
      # noRpcHint (340-352) is a fuzzy search (Data.FuzzySet): not modelled
      (if $only_single then null else "(not modelled: a fuzzy hint or null)" end))
  | .early.unmodelled = (if $only_single then [] else ["hint"] end);
def ambiguous_rpc($procs):   # Error.hs AmbiguousRpc (248-252): PGRST203, 300
  early_pgrst(300; "PGRST203";
    "Could not choose the best candidate function between: " + ([$procs[] | .schema + "." + .name + "(" + ([.params[] | .name + " => " + .type] | join(", ")) + ")"] | join(", "));
    null; "Try renaming the parameters or the function itself in the database so function overloading can be resolved");

# ---- the JWT: Auth.hs parseToken (58-76), parseClaims (78-97); jose 0.11 ------
def aeson_type: if type == "string" then "String" elif type == "number" then "Number" elif type == "boolean" then "Boolean"
  elif type == "null" then "Null" elif type == "array" then "Array" else "Object" end;
# network-uri parseURI: an RFC 3986 absolute URI
def uri_re:
  "A-Za-z0-9\\-._~!$&'()*+,;=" as $us | "%[0-9A-Fa-f]{2}" as $pct
  | "(?:[\($us):@]|\($pct))" as $pchar
  | "^[A-Za-z][A-Za-z0-9+.\\-]*:"
    + "(?://(?:(?:[\($us):]|\($pct))*@)?(?:\\[[0-9A-Fa-f:.vV]+\\]|(?:[\($us)]|\($pct))*)(?::[0-9]*)?(?:/\($pchar)*)*"
    + "|/(?:\($pchar)+(?:/\($pchar)*)*)?|\($pchar)+(?:/\($pchar)*)*|)"
    + "(?:\\?(?:\($pchar)|[/?])*)?(?:#(?:\($pchar)|[/?])*)?$";
# show of a URI (uriToString defaultUserInfoMap): a password shows as "..."
def uri_show: if test("^[A-Za-z][A-Za-z0-9+.\\-]*://[^/?#@]*:[^/?#@]+@") then sub("^(?<a>[A-Za-z][A-Za-z0-9+.\\-]*://[^/?#@:]*):[^/?#@]+@"; "\(.a):...@") else . end;
def claim_error($m): error({jwt: ("JWTClaimsSetDecodeError " + ($m | tojson))});
# FromJSON StringOrURI: a string; one with ':' must be a URI
def string_or_uri($path):
  if type != "string" then claim_error("Error in \($path): parsing StringOrURI failed, expected String, but encountered \(aeson_type)")
  elif test(":") then (if test(uri_re) then uri_show else claim_error("Error in \($path): failed to parse StringOrURI") end)
  else . end;
def numeric_date($path):
  if type == "number" then . else claim_error("Error in \($path): parsing NumericDate failed, expected Number, but encountered \(aeson_type)") end;
# FromJSON ClaimsSet, then validateClaimsSet (exp, iat, nbf, iss, aud), with
# PostgREST's settings: allowedSkew 30 s, the audience of jwt-aud (any
# when unset), no issuer check; ToJSON ClaimsSet: a null registered claim is
# absent, an audience of one is a string.
def jose_claims($now; $aud):
  if type != "object" then claim_error("Error in $: parsing JWT Claims Set failed, expected Object, but encountered \(aeson_type)") else . end
  | (if .iss != null then .iss |= string_or_uri("$.iss") else del(.iss) end)
  | (if .sub != null then .sub |= string_or_uri("$.sub") else del(.sub) end)
  | (if .aud == null then del(.aud)
     elif (.aud | type) == "array" then .aud |= [to_entries[] | .key as $k | .value | string_or_uri("$.aud[\($k)]")]
     else .aud |= [string_or_uri("$.aud")] end)
  | (if .exp != null then .exp |= numeric_date("$.exp") else del(.exp) end)
  | (if .nbf != null then .nbf |= numeric_date("$.nbf") else del(.nbf) end)
  | (if .iat != null then .iat |= numeric_date("$.iat") else del(.iat) end)
  | (if .jti != null then (if (.jti | type) == "string" then . else claim_error("Error in $.jti: parsing Text failed, expected String, but encountered \(.jti | aeson_type)") end) else del(.jti) end)
  | if .exp != null and ($now < .exp + 30 | not) then error({jwt: "JWT expired"})
    elif .iat != null and .iat > $now + 30 then error({jwt: "JWTIssuedAtFuture"})
    elif .nbf != null and ($now >= .nbf - 30 | not) then error({jwt: "JWTNotYetValid"})
    elif .aud != null and ([.aud[] | $aud == null or . == $aud] | any | not) then error({jwt: "JWTNotInAudience"})
    else . end
  | (if .aud != null and (.aud | length) == 1 then .aud |= .[0] else . end);
def haskell_show: "\"" + (gsub("\\\\"; "\\\\") | gsub("\""; "\\\"")) + "\"";
def jwt_invalid($m):   # Error.hs JwtTokenInvalid: 401 PGRST301 (530, 549-550, 558-560)
  early_pgrst(401; "PGRST301"; $m; null; null)
  | .early.headers["www-authenticate"] = ("Bearer error=\"invalid_token\", error_description=" + ($m | haskell_show));
# -> {claims (as PostgREST sets them), role, authed} or an early answer
def authenticate($jwt; $conf; $now):
  (if $jwt.token == "" then {ok: {}}
   elif $jwt.parts != 3 then {err: "JWSError (CompactDecodeError Invalid number of parts: Expected 3 parts; got \($jwt.parts))"}
   elif (attempt($jwt.header_text | fromjson | .alg; null)) != "HS256" then not_modelled("a JWT not signed HS256")
   elif ($jwt.sig_ok | not) then {err: "JWSError JWSInvalidSignature"}
   elif ($jwt.payload_utf8 | not) then {err: ("JWTClaimsSetDecodeError " + ("Error in $: Failed reading: Cannot decode input: Data.Text.Internal.Encoding.decodeUtf8: Invalid UTF-8 stream" | tojson))}
   else ($jwt.payload_text | aeson_decode) as $d
     | if ($d.ok | not) then {err: ("JWTClaimsSetDecodeError " + ("Error in $: (not modelled: aeson's message)" | tojson))}
       else attempt({ok: ($d.value | jose_claims($now; $conf.jwt_aud))}; if type == "object" and has("jwt") then {err: .jwt} else error(.) end) end end)
  | if has("err") then jwt_invalid(.err)
    else .ok as $c
      | ($c.role) as $r
      | (if $r == null then $conf.anon_role elif ($r | type) == "string" then $r else ($r | tojson) end) as $role
      | if $role == null then early_pgrst(401; "PGRST302"; "Anonymous access is disabled"; null; null) | .early.headers["www-authenticate"] = "Bearer"
        else {claims: ($c + {role: $role} | to_entries | sort_by(.key) | from_entries), role: $role, authed: ($role != $conf.anon_role)} end end;

# ---- one request -------------------------------------------------------------
# ApiRequest.hs userApiRequest (131-155) and Plan.hs, in PostgREST's order:
# getResource, getAction, QueryParams.parse, getRanges, getPayload, then the
# plan (findProc, readPlan) and the statements (Query.hs, Statements.hs).
# Each stage adds to the request's state, or answers: {early: answer}.
def sql_lit: "'" + gsub("'"; "''") + "'";
def stage(f): if has("early") then . else f end;
def h_auth:
  . as $s | authenticate($s.jwt; $s.conf; $s.now) as $a
  | if $a | has("early") then $a else $s + {auth: $a} end;
# the path: Wai pathInfo (decodePathSegments: %XX, no '+', lenient UTF-8);
# getResource (ApiRequest.hs 165-173), getAction (175-198)
def h_route:
  . as $s | ($s.req.url | split("?")) as $u | $s.req.method as $m
  | ($u[0] | ltrimstr("/") | if . == "" then [] else split("/") | map(string_bytes | url_decode(false) | utf8_decode(true)) end) as $segs
  | (if $segs == [] then (if $s.conf.root_spec != null then {routine: $s.conf.root_spec} else not_modelled("the OpenAPI document of the schema (no db-root-spec)") end)
     elif ($segs | length) == 1 then {relation: $segs[0]}
     elif ($segs | length) == 2 and $segs[0] == "rpc" then {routine: $segs[1]}
     else null end) as $res
  | if $res == null then early(404; {})
    elif ($s.req.headers | has("accept-profile") or has("content-profile")) then not_modelled("schema profiles")
    elif $res | has("routine") then
      (if $m == "GET" then $s + {action: {act: "call", inv: "read"}} elif $m == "POST" then $s + {action: {act: "call", inv: "post"}}
       elif $m == "HEAD" or $m == "OPTIONS" then not_modelled($m) else early_pgrst(405; "PGRST101"; "Cannot use the \($m) method on RPC"; null; null) end)
    elif $m == "GET" then $s + {action: {act: "read"}}
    elif (["HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] | index([$m])) != null then not_modelled("\($m) of a relation")
    else early_pgrst(405; "PGRST117"; "Unsupported HTTP method: \($m)"; null; null) end
  | if has("early") then . else . + {res: $res, rawpath: $u[0], rawquery: ($u[1:] | join("?"))} end;
def last_word: split(".") | .[-1];
def qp_attempt(f; $what; $value): attempt(f; if type == "object" and has("qperr") then error({qp: [$what, $value]}) else error(.) end);
# a filter's value (pRequestFilter, QueryParams.hs 228-237): an operator
# expression, or on a GET of a function (isRpcRead) an argument
# (NoOpExpr) unless "not.", "in." or "is." consumed input first
def q_filter($rpc_read):
  .k as $k | .v as $v
  | qp_attempt(run_parser(p_tree_path | .v = .path; $k); "tree path"; $k) as $path
  | (if ($path | length) > 1 then not_modelled("filters on embedded resources") else $path[-1] end) as $field
  | attempt({s: $v, i: 0} | p_op_expr(false) | {field: $field, not, op};
      if type == "object" and has("qperr") then
        (if $rpc_read and ($v | test("^(not\\.|in\\.|is\\.)") | not) then {field: $field, noop: $v} else error({qp: ["filter", $v]}) end)
      else error(.) end);
# QueryParams.parse (114-181); an undecodable value throws in pure code:
# Warp's defaultOnExceptionResponse, 500 "Something went wrong"
def h_query:
  . as $s | ($s.rawquery | parse_query_string) as $qs
  | ($s.action.act == "call" and $s.action.inv == "read") as $rpc_read
  | if $qs == null then {early: {status: 500, headers: {"content-type": "text/plain; charset=utf-8"}, body: null, raw: "Something went wrong"}}
    else [$qs[] | select(.v != null)] as $nonempty
    | ([$qs[] | select(.k == "select")] | .[0].v // "*") as $select
    | if $select != "*" then not_modelled("select=\($select)")
      elif any($qs[]; .k == "columns" or .k == "on_conflict") then not_modelled("columns= and on_conflict=")
      elif any($nonempty[]; (.k | last_word | . == "order" or . == "limit" or . == "offset" or . == "and" or . == "or") and (.k | contains(".")))
      then not_modelled("parameters of embedded resources")
      else attempt({ok: {
          order: ([$nonempty[] | select(.k == "order") | .v as $v | qp_attempt(run_parser(p_order; $v); "order"; $v)] | .[-1] // []),
          logic: [$nonempty[] | select(.k == "or" or .k == "and" or .k == "not.or" or .k == "not.and") | .v as $v
                  | (.k | if startswith("not.") then "not." + (split(".")[1]) else . end) as $op
                  | qp_attempt(run_parser(p_logic_tree; $op + $v); "logic tree"; $v)],
          filters: [$nonempty[] | select(.k as $k | ($k | last_word) as $w
                      | (["order", "limit", "offset", "and", "or"] | index([$w])) == null and (["select", "columns", "on_conflict"] | index([$k])) == null)
                    | q_filter($rpc_read)],
          # ranges (164-181): limit and offset read as Integer (readMaybe);
          # anything else is no limit
          limit: ([$nonempty[] | select(.k == "limit") | .v | select(test("^\\s*-?[0-9]+\\s*$")) | tonumber] | .[-1]),
          offset: ([$nonempty[] | select(.k == "offset") | .v | select(test("^\\s*-?[0-9]+\\s*$")) | tonumber] | .[-1] // 0)}};
        if type == "object" and has("qp") then {err: qp_error(.qp[0]; .qp[1])} else error(.) end) as $parsed
      | if $parsed | has("err") then $parsed.err
        elif $s.req.headers | has("range") then not_modelled("the Range header")
        elif $s.req.headers | has("prefer") then not_modelled("the Prefer header")
        elif ($s.req.headers.accept // "*/*") as $a | (["*/*", "application/json"] | index([$a])) == null then not_modelled("Accept: \($s.req.headers.accept)")
        elif $s.req.headers | has("cookie") then not_modelled("cookies")
        # getRanges (220-237): a negative limit is 416 PGRST103
        elif $parsed.ok.limit != null and $parsed.ok.limit < 0 then
          early_pgrst(416; "PGRST103"; "Requested range not satisfiable"; "Limit should be greater than or equal to zero."; null)
        else $parsed.ok as $p
          | $s + {p: $p, rp: {where: ($p.logic + [$p.filters[] | select(has("noop") | not) | {stmt: .}]), order: $p.order, limit: $p.limit, offset: $p.offset}} end end end;
# getPayload (239-288), for a POST of a function only
def json_payload($body; $utf8):
  if $body == "" then {raw: "", keys: []}
  elif ($utf8 | not) then {err: "Empty or invalid json"}
  else ($body | aeson_decode) as $d
    | if ($d.ok | not) then {err: "Empty or invalid json"}
      # payloadAttributes (315-337)
      else ($d.value) as $j
        | if ($j | type) == "object" then {raw: $body, keys: ($j | keys)}
          elif ($j | type) == "array" then
            (if ($j | length) == 0 then {raw: "[]", keys: []}
             elif ($j[0] | type) == "object" and ($j | all(type == "object" and keys == ($j[0] | keys))) then {raw: $body, keys: ($j[0] | keys)}
             else {err: "All object keys must match"} end)
          else {raw: "[]", keys: []} end end end;
def form_payload($body):   # parseSimpleQuery, then T.decodeUtf8 (ApiRequest.hs 288)
  ($body | string_bytes | split_bytes([38, 59])
   | map((index([61])) as $e | if $e == null then [(url_decode(true) | utf8_decode(false)), ""]
         else [(.[:$e] | url_decode(true) | utf8_decode(false)), (.[($e + 1):] | url_decode(true) | utf8_decode(false))] end)) as $pairs
  | if any($pairs[][]; . == null) then {warp500: true} else {form: $pairs, keys: ([$pairs[][0]] | unique)} end;
def csv_payload($body):
  # cassava decodeByName, simple fields only (a field with a '"' that does
  # not start it is a parse error); csvToJson (ApiRequest.hs 304-313): an
  # array of objects of strings ("NULL" is null), written by aeson (keys
  # sorted)
  ($body | split("\n") | map(sub("\r$"; "")) | if .[-1] == "" then .[:-1] else . end | map(split(","))) as $rows
  | if any($rows[][]; test("^[^\"]+\"")) then {err: "parse error (not modelled: cassava's message)", unmodelled: ["message"]}
    elif any($rows[][]; startswith("\"")) then not_modelled("quoted CSV fields")
    elif any($rows[]; length != ($rows[0] | length)) then not_modelled("CSV records of other lengths")
    else {raw: ([$rows[1:][] | [$rows[0], .] | transpose | map({key: .[0], value: (if .[1] == "NULL" then null else .[1] end)}) | from_entries | to_entries | sort_by(.key) | from_entries] | tojson),
          keys: ($rows[0] | unique)} end;
def h_payload:
  . as $s | ($s.req.headers["content-type"] // "application/json" | media_type) as $ct
  | (if $s.action.act == "call" and $s.action.inv == "post" then
       ($s.req.body // "") as $body
       | if $ct.mt == "json" then json_payload($body; $s.req.body_utf8)
         elif $ct.mt == "urlencoded" then form_payload($body)
         elif $ct.mt == "csv" then csv_payload($body)
         elif (["text", "xml", "octet"] | index([$ct.mt])) != null then {rawpay: $body, keys: []}
         else {err: ("Content-Type not acceptable: " + $ct.mime)} end
     else {keys: []} end) as $payload
  | if $payload.warp500 then {early: {status: 500, headers: {"content-type": "text/plain; charset=utf-8"}, body: null, raw: "Something went wrong"}}
    elif $payload | has("err") then early_pgrst(400; "PGRST102"; $payload.err; null; null) | .early.unmodelled = ($payload.unmodelled // [])
    else $s + {ct: $ct, payload: $payload} end;
# the set_config select: Query.hs setPgLocals (284-307)
def h_locals($fsettings):
  . as $s
  | {sql: "select set_config('search_path', ", params: []} | param("unknown"; ([$s.conf.schema] + $s.conf.extra_search_path | map(ident) | join(", "))) | emit(", true)")
  | reduce ($s.cache.role_settings[$s.auth.role] // [])[] as $x (.; emit(", set_config(") | param("unknown"; $x[0]) | emit(", ") | param("unknown"; $x[1]) | emit(", true)"))
  | emit(", set_config('role', ") | param("unknown"; $s.auth.role) | emit(", true)")
  | emit(", set_config('request.jwt.claims', ") | param("unknown"; ($s.auth.claims | tojson)) | emit(", true)")
  | emit(", set_config('request.method', ") | param("unknown"; $s.req.method) | emit(", true)")
  | emit(", set_config('request.path', ") | param("unknown"; $s.rawpath) | emit(", true)")
  | emit(", set_config('request.headers', ") | param("unknown"; ($s.req.headers | with_entries(select(.key != "cookie")) | tojson)) | emit(", true)")
  | emit(", set_config('request.cookies', ") | param("unknown"; "{}") | emit(", true)")
  | reduce $fsettings[] as $x (.; emit(", set_config(") | param("unknown"; $x[0]) | emit(", ") | param("unknown"; $x[1]) | emit(", true)"));
# a read of a relation: Plan.hs wrappedReadPlan (154-159, READ ONLY),
# Statements.hs prepareRead (96-110)
def h_read:
  . as $s | qi($s.conf.schema; $s.res.relation) as $q
  | {plan: {kind: "read", mode: "READ ONLY", iso: ($s.cache.role_iso[$s.auth.role] // "READ COMMITTED"), role: $s.auth.role, authed: $s.auth.authed,
            offset: $s.rp.offset, single: false, locals: h_locals([]),
            main: ({sql: "WITH pgrst_source AS ( ", params: []} | read_query("FROM " + $q; $q; $s.rp)
                   | emit(" )  SELECT null::bigint AS total_result_set, pg_catalog.count(_postgrest_t) AS page_total, coalesce(json_agg(_postgrest_t), '[]') AS body, nullif(current_setting('response.headers', true), '') AS response_headers, nullif(current_setting('response.status', true), '') AS response_status, '' AS response_inserted FROM ( SELECT * FROM pgrst_source ) _postgrest_t"))}};
# QueryBuilder.hs callPlanToQuery (193-211): one unnamed parameter
# positionally ($1::<its type>), none, or named ones from json_to_record
# (fromJsonBodyF, SqlFragment.hs 299-335, without defaults)
def call_query($f; $cp; $args):
  qi($f.schema; $f.name) as $fq
  | {sql: "SELECT pgrst_call.pgrst_scalar ", params: []}
  | if $cp | has("one") then
      if $cp.one.type == "bytea" then not_modelled("a bytea body")
      else emit("FROM (SELECT " + $fq + "(") | param("unknown"; $args) | emit("::" + $cp.one.type + ") pgrst_scalar) pgrst_call") end
    elif ($cp.named | length) == 0 then emit("FROM (SELECT " + $fq + "() pgrst_scalar) pgrst_call")
    else ($args | test("^[ \\t\\n\\r]*\\{")) as $object
      | emit("FROM (SELECT ") | param("json"; $args) | emit(" AS json_data) pgrst_payload, ")
      | emit("LATERAL (SELECT " + ([$cp.named[] | .name | ident] | join(", ")) + " FROM "
             + (if $object then "json_to_record" else "json_to_recordset" end) + "(pgrst_payload.json_data) AS _("
             + ([$cp.named[] | (.name | ident) + " " + .type_max] | join(", ")) + ") LIMIT 1) pgrst_body ")
      | emit(", LATERAL (SELECT " + $fq + "(" + ([$cp.named[] | (.name | ident) + " := pgrst_body." + (.name | ident)] | join(", ")) + ") pgrst_scalar) pgrst_call") end;
# a call: Plan.hs callReadPlan (169-192)
def h_call:
  . as $s | ($s.action.inv == "post") as $post
  | (if $post then $s.payload.keys else [$s.p.filters[] | select(has("noop")) | .field] end) as $keys
  | find_proc([$s.cache.routines[] | select(.schema == $s.conf.schema and .name == $s.res.routine)]; $keys; $s.ct.mt; $post) as $found
  | if $found | has("none") then no_rpc($s.conf.schema; $s.res.routine; $keys; $s.ct.mt; $post; null)
    elif $found | has("ambiguous") then ambiguous_rpc($found.ambiguous)
    elif $found.proc.composite or $found.proc.has_variadic then not_modelled("functions returning composites or taking VARIADIC")
    else $found.proc as $f
      # the arguments (178-181): a GET's query parameters (jsonRpcParams,
      # CallPlan.hs 34-40: a JSON object of strings, the last of a name),
      # a form's pairs the same way, else the raw body
      | (if $post | not then ([$s.p.filters[] | select(has("noop")) | {key: .field, value: .noop}] | from_entries | tojson)
         elif $s.payload | has("form") then ([$s.payload.form[] | {key: .[0], value: .[1]}] | from_entries | tojson)
         elif $s.payload | has("raw") then $s.payload.raw
         else $s.payload.rawpay end) as $args
      # callPlan (958-976): one unnamed parameter positionally, else the
      # named ones the request names
      | (if ($f.params | length) == 1 and $f.params[0].name == "" then {one: $f.params[0]}
         else {named: [$f.params[] | select(.name as $n | $keys | index([$n]))]} end) as $cp
      | qi(""; $f.name) as $alias
      | {plan: {kind: "call",
                # txMode (182-186): a GET, a STABLE or IMMUTABLE function read only
                mode: (if ($post | not) or $f.volatility != "v" then "READ ONLY" else "READ WRITE" end),
                iso: ($f.iso // $s.cache.role_iso[$s.auth.role] // "READ COMMITTED"),
                role: $s.auth.role, authed: $s.auth.authed, offset: $s.rp.offset, single: ($f.retset | not),
                locals: ($s | h_locals($f.settings)),
                # Statements.hs prepareCall (119-137); the read plan of the
                # call's result is "pgrst_source" named after the function
                # (Plan.hs addRels, 486-493)
                main: (call_query($f; $cp; $args)
                       | .sql = "WITH pgrst_source AS (" + .sql + ") SELECT null::bigint AS total_result_set, "
                         + (if $f.retset then "pg_catalog.count(_postgrest_t)" else "1" end) + " AS page_total, "
                         + (if $f.retset then "coalesce(json_agg(_postgrest_t.pgrst_scalar), '[]')" else "coalesce(json_agg(_postgrest_t.pgrst_scalar)->0, 'null')" end)
                         + " AS body, nullif(current_setting('response.headers', true), '') AS response_headers, nullif(current_setting('response.status', true), '') AS response_status, '' AS response_inserted FROM ("
                       | read_query("FROM \"pgrst_source\" AS " + $alias; $alias; $s.rp) | emit(") _postgrest_t"))}} end;
def handle($req; $jwt; $cache; $conf; $now):
  {req: $req, jwt: $jwt, cache: $cache, conf: $conf, now: $now}
  | h_auth | stage(h_route) | stage(h_query) | stage(h_payload)
  | stage(if .action.act == "read" then h_read else h_call end)
  | if has("early") then {early} else {plan} end;

# ---- the psql script of a plan -------------------------------------------------
def psql_script($name; $open):
  def err_block: "\\echo PGRST-ERROR :LAST_ERROR_SQLSTATE\n\\echo :LAST_ERROR_MESSAGE\n\\echo PGRST-END\nABORT;\n";
  def stmt_name: $name + (if .kind == "read" then "pgrst_read" else "pgrst_call" end);
  def args($ps): if ($ps | length) == 0 then "" else "(" + ([$ps[] | .value | if test("\u0000") then not_modelled("a NUL in a parameter") else sql_lit end] | join(", ")) + ")" end;
  .plan as $p
  | "BEGIN ISOLATION LEVEL \($p.iso) \($p.mode);\n"
    + "\\o /dev/null\nPREPARE \($name)pgrst_locals AS \($p.locals.sql);\n\\o\n\\if :ERROR\n" + err_block + "\\else\n"
    + "\\o /dev/null\nEXECUTE \($name)pgrst_locals\(args($p.locals.params));\n\\o\n\\if :ERROR\n" + err_block + "\\else\n"
    + "PREPARE \($p | stmt_name)" + (if ($p.main.params | length) == 0 then "" else "(" + ([$p.main.params[].type] | join(", ")) + ")" end)
    + " AS \($p.main.sql);\n\\if :ERROR\n" + err_block + "\\else\n"
    + "EXECUTE \($p | stmt_name)\(args($p.main.params));\n\\if :ERROR\n" + err_block + "\\else\n"
    + (if $open then "\\echo PGRST-OPEN\n" else "COMMIT;\n\\echo PGRST-COMMIT\n" end)
    + "\\endif\n\\endif\n\\endif\n\\endif\n";

# ---- the answer: Response.hs, Error.hs ------------------------------------------
def pg_error_status($c; $authed; $m):   # Error.hs pgErrorStatus (466-517)
  if ($c | startswith("08")) then 503 elif ($c | startswith("09")) then 500
  elif ($c | startswith("0L")) or ($c | startswith("0P")) then 403
  elif $c == "23503" or $c == "23505" then 409 elif $c == "25006" then 405
  elif $c == "21000" then (if $m | endswith("requires a WHERE clause") then 400 else 500 end)
  elif ($c | startswith("25")) then 500 elif ($c | startswith("28")) then 403
  elif ($c | test("^(2D|38|39|3B|40)")) then 500 elif $c == "53400" then 500
  elif ($c | startswith("53")) then 503 elif ($c | test("^(54|55)")) then 500
  elif $c == "57P01" then 503 elif ($c | test("^(57|58|F0|HV)")) then 500
  elif $c == "P0001" then 400 elif ($c | test("^(P0|XX)")) then 500
  elif $c == "42883" then (if $m | startswith("function xmlagg(") then 406 else 404 end)
  elif $c == "42P01" then 404 elif $c == "42P17" then 500
  elif $c == "42501" then (if $authed then 403 else 401 end)
  elif ($c | startswith("PT")) then ($c[2:] | tonumber? // 500)
  elif $c == "PGRST" then not_modelled("RAISE SQLSTATE 'PGRST'")
  else 400 end;
def detail_of($tag; $lines):
  ([$lines | to_entries[] | select(.value | startswith($tag)) | .key] | .[0]) as $k
  | if $k == null then null
    else ([$lines[($k + 1):][] ] | [foreach .[] as $l ({go: true}; .go = (.go and ($l | test("^(DETAIL|HINT|CONTEXT|QUERY|STATEMENT|LOCATION):  |^LINE [0-9]+: |^psql:") | not)); select(.go) | $l)]) as $more
      | ([$lines[$k] | ltrimstr($tag)] + $more | join("\n")) end;
def respond($out; $err):
  .plan as $p
  | ($out | split("\n")) as $lines
  | ([$lines | to_entries[] | select(.value | startswith("PGRST-ERROR ")) | .key] | .[0]) as $e
  | if $e != null then
      ($lines[$e] | ltrimstr("PGRST-ERROR ")) as $state
      | ([$lines[($e + 1):][]] | .[: (index(["PGRST-END"]) // length)] | join("\n")) as $msg
      | ($err | split("\n") | [.[] | sub("^psql:[^:]*:[0-9]+: "; "")]) as $el
      | pg_error_status($state; $p.authed; $msg) as $st
      | pgrst_body($state; $msg; detail_of("DETAIL:  "; $el); detail_of("HINT:  "; $el)) as $b
      | {status: $st, headers: ({"content-type": "application/json; charset=utf-8"} + (if $st == 401 then {"www-authenticate": "Bearer"} else {} end)),
         body: $b, raw: ($b | tojson), tx: "ABORT"}
    else
      ($out | index("\nPGRST-COMMIT") // index("\nPGRST-OPEN") // (if startswith("PGRST-") then 0 else null end)) as $stop
      | if $stop == null then error("no answer in: \($out) \($err)") else . end
      | ($out[:$stop] | split("\u001f")) as $row
      | ($row[1] | tonumber) as $page_total | $row[2] as $raw | $row[3] as $gh | $row[4] as $gs
      # overrideStatusHeaders (Response.hs 258-287): response.status and
      # response.headers over PostgREST's own
      | ($gh | if . == "" then [] else attempt(fromjson; null) end) as $guc
      | if $guc != null and (($guc | type) != "array" or any($guc[]; type != "object" or length != 1 or (to_entries[0].value | type) != "string"))
        then early_pgrst(500; "PGRST111"; "response.headers guc must be a JSON array composed of objects with a single key and a string value"; null; null) | .early + {tx: "COMMIT"}
        elif $gs != "" and ($gs | test("^[0-9]+$") | not) then early_pgrst(500; "PGRST112"; "response.status guc must be a valid status code"; null; null) | .early + {tx: "COMMIT"}
        else
          # RangeQuery.hs rangeStatusHeader, contentRangeH (96-121)
          ($p.offset) as $lo | ($lo + $page_total - 1) as $up
          | {status: (if $gs == "" then 200 else ($gs | tonumber) end),
             headers: ({"content-range": (if $lo <= $up then "\($lo)-\($up)/*" else "*/*" end), "content-type": "application/json; charset=utf-8"}
                       + ([$guc[]? | to_entries[0] | {key: (.key | ascii_downcase), value}] | from_entries)),
             body: ($raw | attempt(fromjson; null)), raw: $raw, tx: (if ($out | index("\nPGRST-OPEN")) then "OPEN" else "COMMIT" end)} end end
  | . + {statements: 4};
PGRST_JQ
}
