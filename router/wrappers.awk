# wrappers.awk — makes an openwop_router script from its template (sql/*.sql.in).
#
# The template is the script itself, except that each function routed by
# tenant is one line:
#
#   @routed NAME(ARGS) RETURNS TYPE VOLATILITY ON caller|tenant|token
#
# ARGS are openwop.NAME's parameters as a shard declares them (name type
# [DEFAULT value], comma-separated); VOLATILITY is openwop.NAME's (STABLE,
# STRICT and the like); ON says which tenant's shard the call goes to: the
# caller's (route), the one its argument "tenant" names (route with it), or
# the one of the interrupt its argument "token" names (route_token).  The
# line becomes the pair every routed function is (consecutive lines, pairs
# apart by a blank line):
#
#   - openwop_router.NAME(caller jsonb, ARGS), a PL/Proxy function that runs
#     openwop_forward.NAME on that shard;
#   - openwop.NAME(ARGS), PL/pgSQL, which passes it this session's caller
#     and raises a shard's error as the shard raised it; a VOLATILE one
#     changes its shard, so it first refuses a read-only transaction.
#
# A line "@routed_signatures" becomes both functions' signatures, for each
# @routed line above it, one a line and each followed by a comma (inside a
# REVOKE).  Every other line is copied as it is.
#
# Runs with any POSIX awk (mawk, gawk): awk -f wrappers.awk X.sql.in >X.sql

function fail(msg) {
	printf "%s:%d: %s\n", FILENAME, FNR, msg > "/dev/stderr"
	exit 1
}

# Split "a text, b jsonb DEFAULT '{}'" into names[], types[] and decls[]
# (a parameter without its default); returns how many.
function parse_args(s, names, types, decls,    parts, n, i, p, sp, d) {
	if (s == "")
		return 0
	n = split(s, parts, /, /)
	for (i = 1; i <= n; i++) {
		p = parts[i]
		d = index(p, " DEFAULT ")
		if (d > 0)
			p = substr(p, 1, d - 1)
		sp = index(p, " ")
		if (sp == 0)
			fail("a parameter without a type: " parts[i])
		names[i] = substr(p, 1, sp - 1)
		types[i] = substr(p, sp + 1)
		decls[i] = p
	}
	return n
}

function routed(line,    rest, lp, rp, name, args, tail, words, nw, on, ret, vol, n,
				names, types, decls, i, ptypes, rargs, call, route, where, fetch) {
	rest = substr(line, length("@routed ") + 1)
	lp = index(rest, "(")
	rp = index(rest, ") RETURNS ")
	if (lp == 0 || rp == 0)
		fail("expected: @routed NAME(ARGS) RETURNS TYPE VOLATILITY ON caller|tenant|token")
	name = substr(rest, 1, lp - 1)
	args = substr(rest, lp + 1, rp - lp - 1)
	tail = substr(rest, rp + length(") RETURNS "))
	nw = split(tail, words, / /)
	if (nw < 4 || words[nw - 1] != "ON")
		fail("expected: ... RETURNS TYPE VOLATILITY ON caller|tenant|token")
	on = words[nw]
	# the type is one word, or SETOF and one word
	ret = words[1]
	i = 2
	if (ret == "SETOF") {
		ret = ret " " words[2]
		i = 3
	}
	vol = words[i]
	for (i++; i < nw - 1; i++)
		vol = vol " " words[i]

	n = parse_args(args, names, types, decls)
	ptypes = ""
	rargs = "caller jsonb"
	call = "openwop_router.caller()"
	for (i = 1; i <= n; i++) {
		ptypes = ptypes (i > 1 ? ", " : "") types[i]
		rargs = rargs ", " decls[i]
		call = call ", " names[i]
	}
	if (on == "caller") {
		route = "route(caller)"
		where = "the caller''s tenant"
	} else if (on == "tenant") {
		route = "route(caller, tenant)"
		where = "tenant"
	} else if (on == "token") {
		route = "route_token(caller, token)"
		where = "the tenant of the token''s interrupt id"
	} else
		fail("ON must be caller, tenant or token, not " on)
	fetch = (ret ~ /^SETOF /) ? "RETURN QUERY SELECT * FROM " : "RETURN "

	print "CREATE FUNCTION openwop_router." name "(" rargs ")"
	print "    RETURNS " ret " LANGUAGE plproxy VOLATILE AS $$"
	print "    CLUSTER 'openwop';"
	print "    RUN ON openwop_router." route ";"
	print "    TARGET openwop_forward." name ";"
	print "$$;"
	print "COMMENT ON FUNCTION openwop_router." name "(jsonb" (n > 0 ? ", " ptypes : "") ") IS"
	print "  'openwop_forward." name " on the shard of " where "; caller must be openwop_router.caller().';"
	print ""
	print "CREATE FUNCTION openwop." name "(" args ")"
	print "    RETURNS " ret " LANGUAGE plpgsql " vol " AS $$"
	print "DECLARE"
	print "    e_state text; e_message text; e_detail text; e_hint text;"
	print "BEGIN"
	if (vol ~ /^VOLATILE/)
		print "    PERFORM openwop_router.require_writable('" name "()');"
	print "    " fetch "openwop_router." name "(" call ");"
	print "EXCEPTION WHEN OTHERS THEN"
	print "    GET STACKED DIAGNOSTICS e_state = RETURNED_SQLSTATE, e_message = MESSAGE_TEXT,"
	print "                            e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;"
	print "    PERFORM openwop_router.reraise(e_state, e_message, e_detail, e_hint);"
	print "END"
	print "$$;"
	print "COMMENT ON FUNCTION openwop." name "(" ptypes ") IS"
	print "  'Router: openwop." name " on the shard of " where " (openwop_router." name "), as the caller.';"

	signatures = signatures "    openwop_router." name "(jsonb" (n > 0 ? ", " ptypes : "") "),\n" \
		"    openwop." name "(" ptypes "),\n"
}

/^@routed / {
	if (after_routed)
		print ""
	routed($0)
	after_routed = 1
	next
}

{
	after_routed = 0
}

/^@routed_signatures$/ {
	printf "%s", signatures
	next
}

/^@/ {
	fail("unknown directive: " $0)
}

{
	print
}
