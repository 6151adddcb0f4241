# Shared by test/run and demo/run: make sure the build and test tools are
# installed, then build and install the extension.  Sourced, not executed.

# The PostgreSQL major to build and test against (15, 16, 17 or 18): PGVER
# from the environment, else the newest server installed, else the one this
# Debian release ships (the major its "postgresql" package depends on).
detect_pgver() {
	local v
	v=$(dpkg-query -W -f='${db:Status-Status} ${Package}\n' 'postgresql-[0-9]*' 2>/dev/null |
		sed -n 's/^installed postgresql-\([0-9][0-9]*\)$/\1/p' | sort -n | tail -n 1)
	if [ -z "$v" ] && [ "$(id -u)" -eq 0 ] && ! apt-cache show postgresql >/dev/null 2>&1; then
		apt_update
	fi
	[ -n "$v" ] || v=$(apt-cache depends postgresql 2>/dev/null |
		sed -n 's/^ *Depends: postgresql-\([0-9][0-9]*\)$/\1/p' | head -n 1)
	echo "${v:-15}"
}

# apt-get update; a suite whose Release file has expired (sid's mirrors,
# snapshots) is still taken: the packages are checked by their signatures.
apt_update() {
	DEBIAN_FRONTEND=noninteractive apt-get -o Acquire::Check-Valid-Until=false update -qq
}

PGVER=${PGVER:-$(detect_pgver)}
export PGVER    # the suites and checks test/run starts use the same major
case "$PGVER" in
15 | 16 | 17 | 18) ;;
*) echo "PostgreSQL $PGVER is not supported: openwop_interrupt builds against 15, 16, 17 and 18 (PGVER=...)" >&2
	exit 1 ;;
esac

# "== [m:ss] what": a phase of test/run or demo/run, with the time since it began
phase() { printf '== [%d:%02d] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$1"; }

# Is Debian package $1 installed?  Package state, not whether some command
# exists: postgresql-common's pg_buildext, say, is no sign that
# postgresql-server-dev-all (which the package build needs) is there.
package_installed() {
	[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" = installed ]
}

# Install the Debian packages we need, but only those that are missing.
ensure_packages() {
	local want=() need=(make gcc postgresql-common postgresql-$PGVER postgresql-client-$PGVER
		postgresql-server-dev-$PGVER
		libpcre2-dev                    # JSON Schema "pattern" is PCRE2
		libssl-dev                      # the event chain's SHA-256 is libcrypto's
		postgresql-$PGVER-plproxy)      # the router (router/, docs/scale-out.md): its check and benchmark
	if [ "${1:-}" = test ]; then
		need+=(postgresql-$PGVER-pgtap libtap-parser-sourcehandler-pgtap-perl json-schema-test-suite
			jq                          # the PostgREST replay reads responses with jq
			clang libclang-rt-dev            # the token fuzz harness: libFuzzer
			openssl                     # the router's certificate check makes its keys
			build-essential debhelper postgresql-server-dev-all lintian dpkg-dev git)  # the Debian package
	fi
	for p in "${need[@]}"; do
		package_installed "$p" || want+=("$p")
	done
	if [ ${#want[@]} -gt 0 ]; then
		phase "installing: ${want[*]}"
		if [ "$(id -u)" -ne 0 ]; then
			echo "missing packages (${want[*]}); run this command as root to install them" >&2
			exit 1
		fi
		export DEBIAN_FRONTEND=noninteractive
		local log
		log=$(mktemp /tmp/openwop-apt.XXXXXX)
		echo "   (apt's output: $log)"
		if ! { apt_update && apt-get install -y -q --no-install-recommends "${want[@]}"; } >"$log" 2>&1; then
			tail -n 30 "$log" >&2
			echo "installing packages failed (log: $log)" >&2
			exit 1
		fi
	fi
	export PATH="/usr/lib/postgresql/$PGVER/bin:$PATH"
	export PG_CONFIG="/usr/lib/postgresql/$PGVER/bin/pg_config"
}

# A key-encryption passphrase for a throwaway cluster (signing secrets are
# stored encrypted only), in a file of the server's OS user outside any
# data directory: new_kek_file DIR prints the file's path.
new_kek_file() {
	local f=$1/openwop_kek
	head -c 24 /dev/urandom | base64 >"$f"
	chmod 600 "$f"
	[ "$(id -u)" -ne 0 ] || chown postgres "$f"
	echo "$f"
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
