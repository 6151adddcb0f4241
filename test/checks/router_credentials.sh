#!/usr/bin/env bash
# The router's forwarding credential is no secret anyone can read
# (docs/scale-out.md, "In the router database"; docs/security.md,
# "Forwarded callers").  A router database and two shard databases in three
# throwaway clusters of their own, set up as docs/scale-out.md tells their
# DBAs to: the login is pinned in every partition string as the literal
# user=openwop_router (PL/Proxy then ignores every user mapping's options),
# the user mapping FOR PUBLIC has no options, and each shard lets the
# router's OS user in as openwop_router without a password: shard 0 on the
# same host by peer over its unix socket (pg_ident map postgres ->
# openwop_router, requirepeer=postgres), shard 1 as on another host, over
# TCP (127.0.0.1) with TLS and a client certificate (hostssl ... cert, CN
# openwop_router, sslmode=verify-full).  Administration goes through a
# second router database, router_admin, that only the DBA may connect to,
# whose partitions pin user=shard_dba, reached the same two ways.  Each
# point is a named case ("ok - NAME: ..."):
# - router_forwards_without_a_password: a non-superuser router role calls
#   routed functions; each shard sees openwop_router, authenticated by peer
#   or certificate (its log), never by a password;
# - no_password_in_any_catalog: a role with pg_read_all_data and BYPASSRLS
#   on the router reads every user mapping and server option of both router
#   databases and finds no password (a decoy password it does find); the
#   shard logins have none either;
# - own_mapping_cannot_change_the_login: a router role's own user mapping
#   (user postgres, then shard_dba) changes nothing: the shard still sees
#   openwop_router (and, the control, without the pin it would have seen
#   postgres: the shard's "local all postgres peer" line stays in place);
# - dblink_cannot_borrow_the_router_identity: dblink in the router database
#   connects a non-superuser neither as openwop_router nor as shard_dba, by
#   peer or by the certificate files (a superuser can: the refusal is
#   dblink's, not a broken connection string);
# - admin_router_database_is_the_dbas: a non-superuser cannot connect to
#   router_admin; the router's superuser adds a signing key there on every
#   shard, stored encrypted; the same call in the router database is
#   refused by the shards (openwop_router is not the extension's owner);
# - pg_read_all_data_finds_no_key_secret_on_a_shard: a role with
#   pg_read_all_data and BYPASSRLS on a shard reads every signing key and
#   finds each encrypted, none holding the secret the DBA passed (nor the
#   shards' or the router's server log).
# shard_dba is a superuser of the shards: the owner of the openwop tables
# is the superuser who ran CREATE EXTENSION (the extension is
# superuser-only), and membership in that role (GRANT postgres TO
# shard_dba, which PostgreSQL 15 allows) would be superuser too, by SET ROLE.
# Needs root (the clusters run as postgres), openssl, and PostgreSQL 15's
# binaries with openwop_interrupt, openwop_router, plproxy and dblink
# (postgresql-15's contrib; its case is skipped without it) installed.
# ROUTER_CREDENTIALS_PORTS="R S0 S1" chooses the ports (S1 listens on
# 127.0.0.1 too).
set -euo pipefail
# libpq's environment (pg_virtualenv's PGHOST, PGPASSWORD, ...) reaches
# neither the clusters nor the check's own connections
for v in $(compgen -e); do
	case $v in PG[A-Z]*) unset "$v" ;; esac
done
. "$(dirname "$0")/../lib.sh"
trap 'echo "router_credentials.sh: failed at line $LINENO" >&2' ERR
[ "$(id -u)" -eq 0 ] || { echo "router_credentials.sh: run it as root (the clusters run as postgres)" >&2; exit 1; }
command -v openssl >/dev/null ||
	{ echo "router_credentials.sh: openssl is missing (Debian package openssl, which test/lib.sh's ensure_packages test installs)" >&2; exit 1; }
sharedir=$("$PGBIN/pg_config" --sharedir 2>/dev/null || echo /usr/share/postgresql/$PGVER)
for e in openwop_interrupt openwop_router plproxy; do
	[ -f "$sharedir/extension/$e.control" ] || { echo "router_credentials.sh: extension $e is not installed" >&2; exit 1; }
done
read -r R S0 S1 <<<"${ROUTER_CREDENTIALS_PORTS:-5861 5862 5863}"
if ss -Hltn "sport = :$S1" 2>/dev/null | grep -q .; then
	echo "router_credentials.sh: TCP port $S1 is in use (ROUTER_CREDENTIALS_PORTS chooses others)" >&2
	exit 1
fi
throwaway_begin
work=$THROWAWAY
trap throwaway_end EXIT
tls=$work/tls

# psql as the OS user postgres (peer on the shards), as ROLE on PORT in DB:
# q PORT DB ROLE [psql args]
q() {
	local port=$1 db=$2 role=$3
	shift 3
	runuser -u postgres -- "$PGBIN/psql" -X -A -t -q -v ON_ERROR_STOP=1 -h "$work" -p "$port" -U "$role" -d "$db" "$@"
}
# through the router, as ROLE in TENANT: rt ROLE TENANT [psql args]
rt() {
	local role=$1 tenant=$2
	shift 2
	PGOPTIONS="-c openwop.tenant=$tenant -c client_min_messages=warning" q $R router "$role" "$@"
}
# the first ERROR line (with its SQLSTATE) of what CMD prints, or nothing
refusal() { { "$@" -v VERBOSITY=verbose 2>&1 || true; } | sed -n 's/^ERROR:  //p' | head -n 1; }
# the size of a log, and what it got since: logged_since FILE SIZE
log_size() { stat -c %s "$1"; }
logged_since() { tail -c +$(($2 + 1)) "$1"; }
# the logins a shard's log shows connecting since SIZE, and how: one line
# each, sorted and unique: "user=<role> method=<method>"
logins_since() {
	logged_since "$1" "$2" | awk '
		/connection authenticated: / { match($0, /method=[a-z0-9-]+/); m = substr($0, RSTART, RLENGTH) }
		/connection authorized: / { match($0, /user=[^ ]+/); print substr($0, RSTART, RLENGTH) " " m; m = "method=none" }' |
		sort -u | tr '\n' ' ' | sed 's/ $//'
}

passed=0
failed=0
problems=""
# expect WHAT GOT WANT: one condition of the current case
expect() {
	[ "$2" = "$3" ] || problems="$problems#   $1: got [$2], want [$3]"$'\n'
}
# verdict NAME TEXT: the case's line, from the conditions since the last one
verdict() {
	if [ -z "$problems" ]; then
		passed=$((passed + 1))
		echo "ok - $1: $2"
	else
		failed=$((failed + 1))
		echo "not ok - $1: $2"
		printf '%s' "$problems"
	fi
	problems=""
}

# ---- certificates: a CA, shard 1's server certificate (127.0.0.1), the
# router's client certificates (CN openwop_router, CN shard_dba); files of
# the OS user postgres, keys 0600, outside any data directory
install -d -o postgres -g postgres -m 0700 "$tls" "$work/home"
(
	cd "$tls"
	ec="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
	openssl req -x509 -new $ec -sha256 -days 2 -subj "/CN=openwop check CA" -keyout ca.key -out ca.crt \
		-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
	sign() {    # sign NAME CN EXTENSIONS
		openssl req -new $ec -subj "/CN=$2" -keyout "$1.key" -out "$1.csr" 2>/dev/null
		openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -sha256 \
			-extfile <(printf '%s\n' "$3") -out "$1.crt" 2>/dev/null
	}
	sign shard1 localhost "subjectAltName=DNS:localhost,IP:127.0.0.1"
	sign router openwop_router "extendedKeyUsage=clientAuth"
	sign dba shard_dba "extendedKeyUsage=clientAuth"
	openssl verify -CAfile ca.crt shard1.crt router.crt dba.crt >/dev/null
	rm -f ./*.csr ca.srl ca.key
	chown postgres:postgres ./*
	chmod 0600 ./*.key
)

# ---- three clusters, as the postgres OS user, with an empty HOME and no
# libpq environment: libpq on the router finds nothing but what the
# partition strings name
as_pg "$PGBIN/initdb -D $work/template -U postgres -A trust --encoding=UTF8 --locale=C.UTF-8" >/dev/null
kek=$(new_kek_file "$work")
for c in r s0 s1; do
	cp -a "$work/template" "$work/$c"
	cat >>"$work/$c/postgresql.conf" <<CONF
unix_socket_directories = '$work'
listen_addresses = ''
fsync = off
max_connections = 40
log_connections = on
shared_preload_libraries = 'openwop_interrupt'
openwop.key_encryption_key_file = '$kek'
openwop.forwarding_role = 'openwop_forwarder'
CONF
done
rm -rf "$work/template"
# the router's cluster: the check's sessions log in as anyone (trust)
# shard 0, beside the router: postgres by peer (the Debian default), the
# router's login and the DBA's only as the router's OS user, by peer
cat >"$work/s0/pg_hba.conf" <<HBA
local   all  postgres                       peer
local   all  openwop_router                 peer map=openwop_router
local   all  shard_dba                      peer map=openwop_admin
HBA
cat >"$work/s0/pg_ident.conf" <<IDENT
openwop_router  postgres  openwop_router
openwop_admin   postgres  shard_dba
IDENT
# shard 1, as on another host: the router's login and the DBA's over TLS by
# client certificate only
cat >"$work/s1/pg_hba.conf" <<HBA
local    all  postgres                       peer
hostssl  all  openwop_router  127.0.0.1/32   cert
hostssl  all  shard_dba       127.0.0.1/32   cert
HBA
cat >>"$work/s1/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
ssl = on
ssl_cert_file = '$tls/shard1.crt'
ssl_key_file = '$tls/shard1.key'
ssl_ca_file = '$tls/ca.crt'
CONF
declare -A port_of=([r]=$R [s0]=$S0 [s1]=$S1)
for c in r s0 s1; do
	runuser -u postgres -- env -i HOME="$work/home" PATH=/usr/bin:/bin LANG=C.UTF-8 \
		"$PGBIN/pg_ctl" -D "$work/$c" -l "$work/$c.log" -o "-p ${port_of[$c]}" -w start >/dev/null
done
log0=$work/s0.log
log1=$work/s1.log

# ---- the shards: roles, and the database as docs/scale-out.md says
for port in $S0 $S1; do
	q $port postgres postgres >/dev/null <<'SQL'
CREATE ROLE openwop_forwarder NOLOGIN;
CREATE ROLE openwop_router LOGIN IN ROLE openwop_forwarder;   -- no password
ALTER ROLE openwop_router SET openwop.bound_tenant = '*';
CREATE ROLE shard_dba LOGIN SUPERUSER;                        -- no password
CREATE ROLE auditor NOLOGIN BYPASSRLS IN ROLE pg_read_all_data;
SQL
done
for i in 0 1; do
	port=$S0
	[ $i = 1 ] && port=$S1
	q $port postgres postgres -c "CREATE DATABASE shard$i" >/dev/null
	q $port shard$i postgres >/dev/null <"$(dirname "$0")/../router_shard_grants.sql"
done

# ---- the router: database router for everyone, router_admin for the DBA
p0="host=$work port=$S0 dbname=shard0 user=openwop_router requirepeer=postgres"
p1="host=127.0.0.1 port=$S1 dbname=shard1 user=openwop_router sslmode=verify-full sslrootcert=$tls/ca.crt sslcert=$tls/router.crt sslkey=$tls/router.key"
a0="host=$work port=$S0 dbname=shard0 user=shard_dba requirepeer=postgres"
a1="host=127.0.0.1 port=$S1 dbname=shard1 user=shard_dba sslmode=verify-full sslrootcert=$tls/ca.crt sslcert=$tls/dba.crt sslkey=$tls/dba.key"
q $R postgres postgres >/dev/null <<'SQL'
CREATE DATABASE router;
CREATE DATABASE router_admin;
REVOKE CONNECT ON DATABASE router_admin FROM PUBLIC;
CREATE ROLE engine LOGIN;                                   -- drives runs, any tenant
ALTER ROLE engine SET openwop.bound_tenant = '*';
CREATE ROLE auditor LOGIN BYPASSRLS IN ROLE pg_read_all_data;
GRANT CONNECT ON DATABASE router_admin TO auditor;         -- a reader that may even connect there
SQL
for db in router router_admin; do
	if [ $db = router ]; then s0=$p0 s1=$p1; else s0=$a0 s1=$a1; fi
	q $R $db postgres -v s0="$s0" -v s1="$s1" >/dev/null <<'SQL'
CREATE EXTENSION plproxy;
CREATE EXTENSION openwop_router;
CREATE SERVER openwop FOREIGN DATA WRAPPER plproxy OPTIONS (connection_lifetime '1800', p0 :'s0', p1 :'s1');
CREATE USER MAPPING FOR PUBLIC SERVER openwop;
SQL
done
q $R router postgres >/dev/null <<'SQL'
GRANT USAGE ON FOREIGN SERVER openwop TO engine;
GRANT USAGE ON SCHEMA openwop, openwop_router TO engine;
GRANT EXECUTE ON FUNCTION openwop.create_run(text, jsonb, text), openwop_router.create_run(jsonb, text, jsonb, text),
                          openwop.run_snapshot(text), openwop_router.run_snapshot(jsonb, text),
                          openwop.current_caller(), openwop_router.current_caller(jsonb) TO engine;
SQL
have_dblink=no
if [ -f "$sharedir/extension/dblink.control" ]; then
	have_dblink=yes
	q $R router postgres -c "CREATE EXTENSION dblink" -c "GRANT EXECUTE ON FUNCTION dblink_connect(text), dblink_connect(text, text), dblink(text, text), dblink_disconnect(text) TO engine" >/dev/null
fi
# a tenant of each partition (PL/Proxy's bitmask over two partitions)
t0=$(q $R router postgres -c "SELECT t FROM unnest('{acme,beta,gamma,delta,epsilon,zeta,eta,theta}'::text[]) t WHERE hashtext(t) & 1 = 0 LIMIT 1")
t1=$(q $R router postgres -c "SELECT t FROM unnest('{acme,beta,gamma,delta,epsilon,zeta,eta,theta}'::text[]) t WHERE hashtext(t) & 1 = 1 LIMIT 1")
[ -n "$t0" ] && [ -n "$t1" ]
echo "the router (databases router and router_admin) and two shards are up: shard 0 by peer ($t0), shard 1 by certificate over TLS ($t1)"

# ---- 1. the router forwards identity without a password
expect "engine is no superuser" "$(q $R router postgres -c "SELECT rolsuper FROM pg_roles WHERE rolname = 'engine'")" f
i=0
for t in $t0 $t1; do
	log=$work/s$i.log
	at=$(log_size "$log")
	expect "shard $i: create_run through the router" \
		"$(rt engine $t -c "SELECT openwop.create_run('credentials', '{\"runId\": \"$t/credentials-0000001\"}') ->> 'status'")" running
	expect "shard $i: run_snapshot through the router" \
		"$(rt engine $t -c "SELECT openwop.run_snapshot('$t/credentials-0000001') ->> 'status'")" running
	expect "shard $i: the caller the shard sees" \
		"$(rt engine $t -c "SELECT openwop.current_caller() #>> '{subject,subjectId}', openwop.current_caller() ->> 'forwardedBy'")" "engine|openwop_router"
	if [ $i = 0 ]; then method=peer; else method=cert; fi
	expect "shard $i: the logins the router's calls used" "$(logins_since "$log" "$at")" "user=openwop_router method=$method"
	i=$((i + 1))
done
expect "the runs are on their tenants' shards" \
	"$(q $S0 shard0 postgres -c "SELECT count(*) FROM openwop.runs WHERE tenant IN ('$t0', '$t1')") $(q $S1 shard1 postgres -c "SELECT count(*) FROM openwop.runs WHERE tenant IN ('$t0', '$t1')")" \
	"1 1"
verdict router_forwards_without_a_password \
	"a non-superuser's create_run, run_snapshot and current_caller through the router reach shard 0 as openwop_router by peer and shard 1 by certificate, forwardedBy openwop_router"

# ---- 2. no password in any catalog a reader can read
options="SELECT 'server ' || s.srvname, o FROM pg_foreign_server s, unnest(s.srvoptions) o
          UNION ALL SELECT 'mapping ' || m.umuser::regrole::text, o FROM pg_user_mapping m, unnest(m.umoptions) o
          UNION ALL SELECT 'wrapper ' || w.fdwname, o FROM pg_foreign_data_wrapper w, unnest(w.fdwoptions) o"
for db in router router_admin; do
	if [ $db = router ]; then login=openwop_router; else login=shard_dba; fi
	expect "$db: the reader reads the user mappings" \
		"$(q $R $db auditor -c "SELECT count(*), count(*) FILTER (WHERE umoptions IS NULL) FROM pg_user_mapping m JOIN pg_foreign_server s ON s.oid = m.umserver WHERE s.srvname = 'openwop'")" "1|1"
	expect "$db: option values that say password" \
		"$(q $R $db auditor -c "SELECT count(*) FROM ($options) x(what, o) WHERE o ~* 'password'")" 0
	expect "$db: partitions that pin user=$login" \
		"$(q $R $db auditor -c "SELECT count(*) FILTER (WHERE o ~ '^p[0-9]+=' AND strpos(o, ' user=$login ') > 0), count(*) FILTER (WHERE o ~ '^p[0-9]+=') FROM pg_foreign_server s, unnest(s.srvoptions) o WHERE s.srvname = 'openwop'")" "2|2"
done
# the control: a password in a mapping is what the reader would find
q $R router postgres -c "CREATE SERVER decoy FOREIGN DATA WRAPPER plproxy OPTIONS (p0 'dbname=nowhere')" \
	-c "CREATE USER MAPPING FOR postgres SERVER decoy OPTIONS (user 'x', password 'decoy-password')" >/dev/null
expect "the control: a decoy password is found" \
	"$(q $R router auditor -c "SELECT string_agg(what || ' ' || o, ',') FROM ($options) x(what, o) WHERE o ~* 'password'")" "mapping postgres password=decoy-password"
q $R router postgres -c "SET client_min_messages = warning" -c "DROP SERVER decoy CASCADE" >/dev/null
for port in $S0 $S1; do
	expect "shard logins with a password (port $port)" \
		"$(q $port postgres postgres -c "SET ROLE auditor" -c "SELECT count(*) FROM pg_authid WHERE rolpassword IS NOT NULL")" 0
done
verdict no_password_in_any_catalog \
	"pg_read_all_data on the router reads both databases' user mappings (no options) and server options (the pinned logins, paths): no password; the shard logins have none"

# ---- 3. a router role's own user mapping changes nothing
q $R router engine -c "CREATE USER MAPPING FOR CURRENT_USER SERVER openwop OPTIONS (user 'postgres')" >/dev/null
for who in postgres shard_dba; do
	q $R router engine -c "ALTER USER MAPPING FOR CURRENT_USER SERVER openwop OPTIONS (SET user '$who')" >/dev/null
	expect "engine's mapping says user $who" \
		"$(q $R router postgres -c "SELECT array_to_string(umoptions, ',') FROM pg_user_mapping WHERE umuser = 'engine'::regrole")" "user=$who"
	at0=$(log_size "$log0")
	at1=$(log_size "$log1")
	expect "with a mapping to $who: forwardedBy on shard 0" "$(rt engine $t0 -c "SELECT openwop.current_caller() ->> 'forwardedBy'")" openwop_router
	expect "with a mapping to $who: forwardedBy on shard 1" "$(rt engine $t1 -c "SELECT openwop.current_caller() ->> 'forwardedBy'")" openwop_router
	expect "with a mapping to $who: shard 0's logins" "$(logins_since "$log0" "$at0")" "user=openwop_router method=peer"
	expect "with a mapping to $who: shard 1's logins" "$(logins_since "$log1" "$at1")" "user=openwop_router method=cert"
done
# the control: without the pin, the same mapping would have made the
# router's call the shard's superuser (PL/Proxy appends the mapping's user)
q $R router engine -c "ALTER USER MAPPING FOR CURRENT_USER SERVER openwop OPTIONS (SET user 'postgres')" >/dev/null
q $R router postgres -v p="host=$work port=$S0 dbname=shard0 requirepeer=postgres" <<<"ALTER SERVER openwop OPTIONS (SET p0 :'p')" >/dev/null
at0=$(log_size "$log0")
refusal rt engine $t0 -c "SELECT openwop.current_caller()" >/dev/null
expect "the control: unpinned, shard 0 sees engine's mapping's user" "$(logins_since "$log0" "$at0")" "user=postgres method=peer"
q $R router postgres -v p="$p0" <<<"ALTER SERVER openwop OPTIONS (SET p0 :'p')" >/dev/null
q $R router engine -c "DROP USER MAPPING FOR CURRENT_USER SERVER openwop" >/dev/null
expect "pinned again: forwardedBy on shard 0" "$(rt engine $t0 -c "SELECT openwop.current_caller() ->> 'forwardedBy'")" openwop_router
verdict own_mapping_cannot_change_the_login \
	"engine's own user mapping (user postgres, user shard_dba) still reaches both shards as openwop_router (unpinned, the control reached shard 0 as postgres)"

# ---- 4. dblink in the router database lends a non-superuser nothing
if [ $have_dblink = yes ]; then
	dbl() { refusal q $R router engine -v c="$1" <<<"SELECT dblink_connect('x', :'c')"; }
	# dblink's words for it: 16 added GSSAPI delegation to what it asks for
	if [ "$PGVER" -ge 16 ]; then
		no_password="2F003: password or GSSAPI delegated credentials required"
	else
		no_password="2F003: password is required"
	fi
	peer0="host=$work port=$S0 dbname=shard0 requirepeer=postgres"
	cert1="host=127.0.0.1 port=$S1 dbname=shard1 sslmode=verify-full sslrootcert=$tls/ca.crt"
	for who in openwop_router shard_dba; do
		if [ $who = openwop_router ]; then crt=router; else crt=dba; fi
		expect "peer as $who" "$(dbl "$peer0 user=$who")" "$no_password"
		expect "peer as $who, a password offered" "$(dbl "$peer0 user=$who password=guess")" "$no_password"
		expect "certificate as $who" "$(dbl "$cert1 user=$who sslcert=$tls/$crt.crt sslkey=$tls/$crt.key")" "$no_password"
		expect "certificate as $who, a password offered" \
			"$(dbl "$cert1 user=$who sslcert=$tls/$crt.crt sslkey=$tls/$crt.key password=guess")" "$no_password"
	done
	expect "the server openwop's mapping" "$(refusal q $R router engine -c "SELECT dblink_connect('x', 'openwop')")" "$no_password"
	expect "dblink_connect_u" "$(refusal q $R router engine -v c="$peer0 user=openwop_router" <<<"SELECT dblink_connect_u('x', :'c')")" \
		"42501: permission denied for function dblink_connect_u"
	# the control: the same strings serve a superuser, so the refusals are dblink's
	expect "the control: a superuser's dblink by peer" \
		"$(q $R router postgres -v c="$peer0 user=openwop_router" <<<"SELECT * FROM dblink(:'c', 'SELECT session_user::text') AS t(u text)")" openwop_router
	expect "the control: a superuser's dblink by certificate" \
		"$(q $R router postgres -v c="$cert1 user=openwop_router sslcert=$tls/router.crt sslkey=$tls/router.key" <<<"SELECT * FROM dblink(:'c', 'SELECT session_user::text') AS t(u text)")" openwop_router
	verdict dblink_cannot_borrow_the_router_identity \
		"engine's dblink_connect as openwop_router or shard_dba, by peer or with the certificate files, with or without a password, is refused (2F003); dblink_connect_u is not its"
else
	passed=$((passed + 1))
	echo "ok - dblink_cannot_borrow_the_router_identity # SKIP dblink is not installed"
fi

# ---- 5. administration through router_admin, the DBA's only
expect "engine connects to router_admin" \
	"$({ q $R router_admin engine -c "SELECT 1" 2>&1 || true; } | grep -o 'FATAL:  permission denied for database "router_admin"')" \
	'FATAL:  permission denied for database "router_admin"'
expect "add_signing_key in database router (as openwop_router)" \
	"$(refusal q $R router postgres -c "SELECT openwop.add_signing_key('k-router')" | cut -d: -f1)" PT403
secret=$(openssl rand -hex 32)
at0=$(log_size "$log0")
at1=$(log_size "$log1")
expect "add_signing_key in router_admin" "$(q $R router_admin postgres -c "SELECT openwop.add_signing_key('k1', '\\x$secret'::bytea)")" k1
expect "shard 0's logins for it" "$(logins_since "$log0" "$at0")" "user=shard_dba method=peer"
expect "shard 1's logins for it" "$(logins_since "$log1" "$at1")" "user=shard_dba method=cert"
for i in 0 1; do
	if [ $i = 0 ]; then port=$S0; else port=$S1; fi
	expect "shard $i: key k1, encrypted" "$(q $port shard$i postgres -c "SELECT state, encrypted FROM openwop.signing_keys WHERE kid = 'k1'")" "active|t"
	expect "shard $i: key k-router" "$(q $port shard$i postgres -c "SELECT count(*) FROM openwop.signing_keys WHERE kid = 'k-router'")" 0
done
verdict admin_router_database_is_the_dbas \
	"engine may not connect to router_admin; there the DBA adds key k1 on both shards (as shard_dba, by peer and certificate), stored encrypted; in database router the shards refuse it (PT403)"

# ---- 6. a reader of everything on a shard finds no signing secret (the
# shard admits no other local login: the check's superuser session becomes
# the reader with SET ROLE, which is what the reader's privileges decide)
for i in 0 1; do
	if [ $i = 0 ]; then port=$S0; else port=$S1; fi
	all=$(q $port shard$i postgres -c "SELECT count(*) FROM openwop.signing_keys")
	seen=$(q $port shard$i postgres -v s="\\x$secret" <<'SQL'
SET ROLE auditor;
SELECT count(*) || ' ' || count(*) FILTER (WHERE encrypted) || ' ' ||
       count(*) FILTER (WHERE secret = :'s'::bytea OR position(:'s'::bytea IN secret) > 0
                           OR strpos(k::text, substr(:'s', 3)) > 0)
  FROM openwop.signing_keys k;
SQL
)
	expect "shard $i: the reader's view of the signing keys (all, encrypted, holding the secret)" "$seen" "$all $all 0"
	expect "shard $i: at least key k1" "$([ "$all" -ge 1 ] && echo yes)" yes
done
expect "the secret in a server log" "$(cat "$work/r.log" "$log0" "$log1" | grep -ci "$secret" || true)" 0
verdict pg_read_all_data_finds_no_key_secret_on_a_shard \
	"pg_read_all_data with BYPASSRLS on each shard reads every signing key: all encrypted, none holding the secret the DBA passed (nor a server log)"

expect "no shard ever asked for a password" "$(cat "$log0" "$log1" | grep -cE 'method=(password|md5|scram-sha-256)' || true)" 0
verdict no_password_authentication_at_all "neither shard's log shows a password authentication"

echo "$passed passed, $failed failed ($SECONDS s)"
[ "$failed" -eq 0 ] || exit 1
