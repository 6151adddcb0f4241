# Shared by test/run and demo/run: make sure the build and test tools are
# installed, then build and install the extension.  Sourced, not executed.

PGVER=15

# Install the Debian packages we need, but only those that are missing.
ensure_packages() {
	local want=()
	command -v make >/dev/null 2>&1 && command -v gcc >/dev/null 2>&1 || want+=(make gcc)
	command -v pg_virtualenv >/dev/null 2>&1 || want+=(postgresql-common)
	[ -x /usr/lib/postgresql/$PGVER/bin/postgres ] || want+=(postgresql-$PGVER)
	[ -x /usr/lib/postgresql/$PGVER/bin/pg_dump ] || want+=(postgresql-client-$PGVER)
	[ -f /usr/lib/postgresql/$PGVER/lib/pgxs/src/makefiles/pgxs.mk ] && [ -f /usr/include/postgresql/$PGVER/server/postgres.h ] || want+=(postgresql-server-dev-$PGVER)
	# JSON Schema "pattern" is PCRE2 (the runtime library is always on Debian)
	[ -f /usr/include/pcre2.h ] || want+=(libpcre2-dev)
	# the router (router/, docs/scale-out.md): its check and its benchmark
	[ -f /usr/share/postgresql/$PGVER/extension/plproxy.control ] || want+=(postgresql-$PGVER-plproxy)
	if [ "${1:-}" = test ]; then
		[ -f /usr/share/postgresql/$PGVER/extension/pgtap.control ] || want+=(postgresql-$PGVER-pgtap)
		command -v pg_prove >/dev/null 2>&1 || want+=(libtap-parser-sourcehandler-pgtap-perl)
		[ -d /usr/share/json-schema-test-suite/tests ] || want+=(json-schema-test-suite)
		# the PostgREST replay reads responses with jq
		command -v jq >/dev/null 2>&1 || want+=(jq)
		# the token fuzz harness: clang with libFuzzer, and libcrypto to link libpgcommon
		command -v clang-14 >/dev/null 2>&1 || want+=(clang-14)
		ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 || want+=(libclang-rt-14-dev)
		[ -e /usr/lib/x86_64-linux-gnu/libcrypto.so ] || want+=(libssl-dev)
		# the Debian package: built with pg_buildext (dh --with pgxs), checked by lintian
		command -v dh >/dev/null 2>&1 || want+=(debhelper)
		command -v pg_buildext >/dev/null 2>&1 || want+=(postgresql-server-dev-all)
		command -v lintian >/dev/null 2>&1 || want+=(lintian)
		command -v dpkg-buildpackage >/dev/null 2>&1 || want+=(dpkg-dev)
	fi
	if [ ${#want[@]} -gt 0 ]; then
		echo "== installing: ${want[*]}"
		if [ "$(id -u)" -ne 0 ]; then
			echo "missing packages (${want[*]}); run this command as root to install them" >&2
			exit 1
		fi
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		apt-get install -y -qq --no-install-recommends "${want[@]}" >/dev/null
	fi
	export PATH="/usr/lib/postgresql/$PGVER/bin:$PATH"
	export PG_CONFIG="/usr/lib/postgresql/$PGVER/bin/pg_config"
}

# Build (warnings are errors) and install.  Leaves the build log in $1.
# build_and_install LOG [incremental]: a clean build unless asked for an incremental one
build_and_install() {
	local log=$1
	[ "${2:-}" = incremental ] || make -s clean >/dev/null 2>&1 || true
	if ! make PG_CONFIG="$PG_CONFIG" >"$log" 2>&1; then
		cat "$log" >&2
		echo "build failed" >&2
		return 1
	fi
	# installs openwop_router too (its files are in the Makefile's DATA)
	make -s PG_CONFIG="$PG_CONFIG" install >/dev/null
}

# Checks: make the test login a SQL approver (a member of the role named by
# openwop.approver_role), once per cluster.  Roles are cluster-wide, so this
# is idempotent.
make_login_approver() {
	psql -X -q -v ON_ERROR_STOP=1 -d "$1" >/dev/null <<'SQL'
DO $$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'openwop_approver') THEN CREATE ROLE openwop_approver; END IF;
  IF NOT EXISTS (SELECT FROM pg_auth_members WHERE roleid = 'openwop_approver'::regrole AND member = current_user::regrole) THEN
    EXECUTE format('GRANT openwop_approver TO %I', current_user);
  END IF;
END $$;
SQL
}

# Checks: wait until the first line of the caller's q SQL prints EXPECTED,
# for at most SECONDS: wait_for SECONDS SQL EXPECTED.
wait_for() {    # wait_for SECONDS SQL EXPECTED
	local deadline=$((SECONDS + $1)) got=""
	while [ $SECONDS -lt $deadline ]; do
		got=$(q "$2" 2>/dev/null || true)
		[ "$got" = "$3" ] && return 0
		sleep 0.2
	done
	echo "waited $1 s for [$2] = [$3], last saw [$got]" >&2
	return 1
}

# Checks: wait until a database worker serves database DB (openwop.workers),
# for at most SECONDS; prints its pid: wait_served DB [SECONDS]
wait_served() {
	local deadline=$((SECONDS + ${2:-20})) pid=""
	while [ $SECONDS -lt $deadline ]; do
		pid=$(psql -X -A -t -q -d "$1" -c "SELECT pid FROM openwop.workers WHERE database = '$1' AND serving" 2>/dev/null || true)
		[ -n "$pid" ] && { echo "$pid"; return 0; }
		sleep 0.2
	done
	echo "waited ${2:-20} s for a worker serving database $1" >&2
	return 1
}

# Checks: the server log of the cluster (pg_virtualenv's, or OW_SERVER_LOG)
server_log_file() {
	if [ -n "${OW_SERVER_LOG:-}" ]; then
		echo "$OW_SERVER_LOG"
	elif [ -n "${PG_CLUSTER_CONF_ROOT:-}" ]; then
		echo "$(dirname "$PG_CLUSTER_CONF_ROOT")/log/postgresql-$PGVERSION-regress.log"
	fi
}

# Checks: as login ROLE, rename databases DB... to DB_x in one transaction and
# leave it open (each stays locked against new connections), in the
# background, its output in FILE; returns once the renames are done (the
# caller kills the session): hold_renamed ROLE FILE DB...
hold_renamed() {
	local role=$1 file=$2 deadline
	shift 2
	{
		echo "BEGIN;"
		for d in "$@"; do echo "ALTER DATABASE $d RENAME TO ${d}_x;"; done
		echo "SELECT 'renamed';"
		echo "SELECT pg_sleep(600);"
	} | psql -X -q -A -t -d postgres -U "$role" >"$file" 2>&1 &
	deadline=$((SECONDS + 60))
	until grep -q '^renamed$' "$file" 2>/dev/null; do
		[ $SECONDS -lt $deadline ] || { echo "the renames of $role did not finish" >&2; cat "$file" >&2; return 1; }
		sleep 0.2
	done
}

# Checks with throwaway clusters of their own (a standby, a subscriber): the
# clusters' data directories and unix sockets go under one private
# directory, THROWAWAY, so no port is shared with anything; they run as the
# postgres user (as_pg).  throwaway_end stops whatever still runs under it
# (a server already killed is fine) and removes it.  OW_PGBIN runs them
# from another installation of PostgreSQL 15 (a private copy).
PGBIN=${OW_PGBIN:-/usr/lib/postgresql/$PGVER/bin}
as_pg() { su postgres -c "$*"; }
throwaway_begin() {
	THROWAWAY=$(mktemp -d)
	chown postgres "$THROWAWAY"
}
throwaway_end() {
	local d
	for d in "$THROWAWAY"/*/; do
		[ -f "$d/postmaster.pid" ] && as_pg "$PGBIN/pg_ctl -D $d -m immediate stop" >/dev/null 2>&1 || true
	done
	rm -rf "$THROWAWAY"
}
# until_true SECONDS WHAT CMD...: wait until CMD prints t, for at most SECONDS
until_true() {
	local deadline=$((SECONDS + $1)) what=$2
	shift 2
	until [ "$("$@" 2>/dev/null || true)" = t ]; do
		[ $SECONDS -lt $deadline ] || { echo "waited for: $what" >&2; return 1; }
		sleep 0.2
	done
}
