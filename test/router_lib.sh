# Shared by test/checks/router.sh and test/checks/router_attacks.sh: a
# router database and four shard databases in two throwaway clusters, set up
# as docs/scale-out.md tells their DBAs to.  Sourced after test/lib.sh, with
# work (the throwaway directory), A and B (the two clusters' ports) set.

shard_port=($A $A $B $B)
shard_db=(shard0 shard1 shard2 shard3)

# psql as USER on PORT in DB: on PORT DB USER [psql args]
on() { local port=$1 db=$2 user=$3; shift 3; psql -X -A -t -q -v ON_ERROR_STOP=1 -h "$work" -p "$port" -U "$user" -d "$db" "$@"; }
# through the router, as USER in TENANT: rt USER TENANT [psql args]
rt() { local user=$1 tenant=$2; shift 2; PGOPTIONS="-c openwop.tenant=$tenant -c client_min_messages=warning" on $A router "$user" "$@"; }
# on shard I directly, as USER in TENANT: sh I USER TENANT [psql args]
sh() { local i=$1 user=$2 tenant=$3; shift 3; PGOPTIONS="-c openwop.tenant=$tenant" on "${shard_port[$i]}" "${shard_db[$i]}" "$user" "$@"; }

# router_clusters_start MAX_CONNECTIONS: clusters A (the router's, shards 0
# and 1) and B (shards 2 and 3), the library preloaded, forwarders the
# members of openwop_forwarder; in each, the roles the setup itself needs:
# the router's login openwop_router (a forwarder bound to *, a token
# issuer for minting through the router), openwop_approver and
# openwop_token_issuer
router_clusters_start() {
	local c opts="-k $work -c listen_addresses='' -c shared_preload_libraries=openwop_interrupt -c fsync=off"
	opts="$opts -c openwop.forwarding_role=openwop_forwarder -c openwop.jwt_session_role=authenticator -c max_connections=$1"
	opts="$opts -c openwop.key_encryption_key_file=$(new_kek_file "$work")"
	for c in a b; do
		as_pg "$PGBIN/initdb -D $work/$c -A trust --encoding=UTF8 --locale=C.UTF-8" >/dev/null
	done
	as_pg "$PGBIN/pg_ctl -D $work/a -l $work/a.log -o \"-p $A $opts\" -w start" >/dev/null
	as_pg "$PGBIN/pg_ctl -D $work/b -l $work/b.log -o \"-p $B $opts\" -w start" >/dev/null
	for c in $A $B; do
		on $c postgres postgres >/dev/null <<'SQL'
CREATE ROLE openwop_forwarder NOLOGIN;
CREATE ROLE openwop_router LOGIN IN ROLE openwop_forwarder;
ALTER ROLE openwop_router SET openwop.bound_tenant = '*';
CREATE ROLE openwop_approver NOLOGIN;
CREATE ROLE openwop_token_issuer NOLOGIN;
GRANT openwop_token_issuer TO openwop_router;
SQL
	done
}

# router_new_shard PORT DB < SQL: a shard database whose extension the
# router's login (openwop_router) may serve, then SQL (the callers' grants)
router_new_shard() {
	on "$1" postgres postgres -c "CREATE DATABASE $2" >/dev/null
	{ cat "$(dirname "${BASH_SOURCE[0]}")/router_shard_grants.sql"
	  cat; } | on "$1" "$2" postgres >/dev/null
}

# router_new_router < SQL: database router on A over the four shards
# (PL/Proxy cluster openwop, partitions p0..p3; every role mapped to the
# router's login, postgres to the shards' postgres), then SQL (the callers' grants)
router_new_router() {
	on $A postgres postgres -c "CREATE DATABASE router" >/dev/null
	{ cat <<SQL
CREATE EXTENSION plproxy;
CREATE EXTENSION openwop_router;
CREATE SERVER openwop FOREIGN DATA WRAPPER plproxy OPTIONS (
    connection_lifetime '1800',
    p0 'host=$work port=$A dbname=shard0',
    p1 'host=$work port=$A dbname=shard1',
    p2 'host=$work port=$B dbname=shard2',
    p3 'host=$work port=$B dbname=shard3');
CREATE USER MAPPING FOR PUBLIC SERVER openwop OPTIONS (user 'openwop_router');
-- administration goes to the shards as their superuser
CREATE USER MAPPING FOR postgres SERVER openwop OPTIONS (user 'postgres');
SQL
	  cat; } | on $A router postgres >/dev/null
}
