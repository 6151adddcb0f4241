#!/usr/bin/env bash
# No role short of a superuser reads a signing secret, whatever predefined
# role it holds.  The server takes its key-encryption passphrase from a
# command (openwop.key_encryption_key_command) that asks an agent on a Unix
# socket, which holds it read from a root-only file: the recipe that keeps
# it from pg_read_server_files.  Then:
# - reporting_login_reads_no_secret: a login with pg_read_all_data,
#   BYPASSRLS, pg_monitor and pg_read_all_stats reads the keyring (ciphertext
#   only, never the secret), the settings (the command, not the passphrase)
#   and pg_stat_activity, and a token it forges with what it read is 401;
# - database_owner_reads_no_secret: the database's owner (pg_database_owner)
#   may not read the keyring, nor point the passphrase's command elsewhere;
# - file_reader_reads_no_secret: a login with pg_read_server_files reads the
#   keyring's heap file, the WAL, the configuration files, the agent's
#   socket and the passphrase file (neither opens), its own backend's
#   memory after a verification decrypted the key there, and another
#   backend's that holds it: no secret and no passphrase, and /proc/<pid>/mem
#   refused once a backend holds a secret (readable before, with
#   openwop.protect_backend_memory off: the attack is real);
# - client_backends_not_dumpable: with it on (the default) a client
#   backend's memory is refused from its start; reload_protects_open_sessions:
#   turned on by a reload, it protects a session open before;
# - server_memory_protected_when_asked: with openwop.protect_server_memory
#   on (a restart), the postmaster and the processes it forks are refused;
# - command_output_not_stolen: the same login, racing a backend that runs
#   the passphrase command, finds the command's processes but cannot read
#   what they hand over (COPY FROM /proc/<pid>/fd/1 of a pipe stole it once;
#   it is a socket now).
# Needs the cluster test/run starts, as root (the agent is root's), and gcc
# (the command's helper).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
db=ow_secrets
[ "$(id -u)" = 0 ] || { echo "run as root: the passphrase's agent is root's" >&2; exit 1; }
work=$(mktemp -d)
chmod 711 "$work"
agent=""
holder=""
cleanup() {
	[ -z "$holder" ] || kill "$holder" 2>/dev/null || true
	[ -z "$agent" ] || kill "$agent" 2>/dev/null || true
	psql -X -q -d postgres -c "ALTER SYSTEM RESET openwop.key_encryption_key_command" \
		-c "ALTER SYSTEM RESET openwop.protect_backend_memory" -c "ALTER SYSTEM RESET openwop.protect_server_memory" \
		-c "ALTER SYSTEM RESET openwop.key_encryption_key_file" -c "SELECT pg_reload_conf()" >/dev/null 2>&1 || true
	dropdb --if-exists --force $db >/dev/null 2>&1 || true
	for r in ow_reporter ow_file_reader ow_db_owner; do psql -X -q -d postgres -c "DROP ROLE IF EXISTS $r" >/dev/null 2>&1 || true; done
	rm -rf "$work"
}
trap cleanup EXIT
pass() { echo "ok - $1"; }
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d $db "$@" | tail -n 1; }
as() { local r=$1; shift; psql -X -A -t -q -v ON_ERROR_STOP=1 -d $db -U "$r" "$@" | tail -n 1; }
try_as() { local r=$1; shift; psql -X -A -t -q -d $db -U "$r" "$@" 2>&1 || true; }

# the passphrase, in a file only root can read, served by root's agent
passphrase="kek-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
secret="signing-secret-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
install -m 0700 -d "$work/root"
printf '%s\n' "$passphrase" >"$work/root/kek"
chmod 0400 "$work/root/kek"
perl -MIO::Socket::UNIX -e '
	my ($sock, $file) = @ARGV;
	open(my $f, "<", $file) or die "$file: $!";
	my $kek = <$f>;
	my $s = IO::Socket::UNIX->new(Type => SOCK_STREAM(), Local => $sock, Listen => 16) or die "$sock: $!";
	chown 0, scalar getgrnam("postgres"), $sock;
	chmod 0660, $sock;
	while (my $c = $s->accept) { print $c $kek; close $c; }' "$work/agent.sock" "$work/root/kek" &
agent=$!
# the agent's socket is for the server's OS user's group only.  The
# command's helper runs as the server's OS user: it makes itself
# non-dumpable before it holds the passphrase (README), and writes it to the
# socket its standard output is.  The command waits a second first, so that
# a racer has time to find its processes.
cat >"$work/kek-client.c" <<'CLIENT'
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
	struct sockaddr_un a;
	char		buf[2048];
	ssize_t		n;
	int			s;

	if (argc != 2 || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
		return 2;
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	strncpy(a.sun_path, argv[1], sizeof(a.sun_path) - 1);
	if ((s = socket(AF_UNIX, SOCK_STREAM, 0)) < 0 || connect(s, (struct sockaddr *) &a, sizeof(a)) != 0)
		return 1;
	while ((n = read(s, buf, sizeof(buf))) > 0)
		if (write(1, buf, n) != n)
			return 1;
	return n < 0;
}
CLIENT
gcc -O2 -o "$work/kek-client" "$work/kek-client.c"
cat >"$work/kek-command" <<COMMAND
#!/bin/sh
sleep 1
exec "$work/kek-client" "$work/agent.sock"
COMMAND
chmod 0755 "$work/kek-command" "$work/kek-client"
for i in $(seq 50); do [ -S "$work/agent.sock" ] && break; sleep 0.1; done
[ "$(runuser -u postgres -- "$work/kek-command")" = "$passphrase" ] || { echo "the agent does not answer the server's user" >&2; exit 1; }

psql -X -q -v ON_ERROR_STOP=1 -d postgres >/dev/null <<SQL
ALTER SYSTEM SET openwop.key_encryption_key_file = '';
ALTER SYSTEM SET openwop.key_encryption_key_command = '$work/kek-command';
SELECT pg_reload_conf();
CREATE ROLE ow_reporter LOGIN BYPASSRLS PASSWORD '${PGPASSWORD:-unused}';
GRANT pg_read_all_data, pg_monitor, pg_read_all_stats TO ow_reporter;
CREATE ROLE ow_db_owner LOGIN PASSWORD '${PGPASSWORD:-unused}';
CREATE ROLE ow_file_reader LOGIN PASSWORD '${PGPASSWORD:-unused}';
GRANT pg_read_server_files, pg_read_all_data TO ow_file_reader;
SQL
sleep 1
createdb -O ow_db_owner $db
make_login_approver $db
wal_from=$(q -c "SELECT pg_walfile_name(pg_current_wal_lsn())")
psql -X -q -v ON_ERROR_STOP=1 -d $db >/dev/null <<SQL
CREATE EXTENSION openwop_interrupt;
CREATE EXTENSION pgcrypto;
GRANT USAGE ON SCHEMA openwop TO ow_reporter, ow_file_reader, ow_db_owner;
-- what a DBA grants with pg_read_server_files, so that it reads files from SQL (COPY needs no grant)
GRANT EXECUTE ON FUNCTION pg_read_file(text), pg_read_binary_file(text),
                          pg_read_binary_file(text, bigint, bigint),
                          pg_read_binary_file(text, bigint, bigint, boolean) TO ow_file_reader;
GRANT EXECUTE ON FUNCTION openwop.inspect_interrupt(text), openwop.resolve_interrupt_by_token(text, jsonb, text)
  TO ow_reporter, ow_file_reader;
SELECT openwop.add_signing_key('k-unreadable', convert_to('$secret', 'UTF8'));
SET openwop.tenant = 'acme';
SELECT openwop.create_run('secrets', '{"runId": "acme/secrets-run-0000001"}');
SELECT openwop.start_node('acme/secrets-run-0000001', 'gate');
SELECT openwop.interrupt('acme/secrets-run-0000001', 'gate', '{"kind": "approval", "data": {"artifactId": "a",
  "artifactType": "doc", "title": "CFO only", "actions": ["accept", "reject"], "approversList": ["cfo"]}}');
CHECKPOINT;
SQL
interrupt=$(q -c "SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/secrets-run-0000001'")
# the WAL segments written since the key was added
wal=$(q -c "SELECT string_agg(name, ' ') FROM pg_ls_waldir() WHERE name ~ '^[0-9A-F]{24}\$' AND name >= '$wal_from'")
token=$(q -c "SET openwop.tenant = 'acme'" -c "SELECT openwop.mint_interrupt_token('$interrupt', 'inspect')")
[ "$(q -c "SELECT openwop.inspect_interrupt('$token') ->> 'kind'")" = approval ]
echo "a key added under the agent's passphrase signs and verifies"

# ---- 1. the reporting login
[ "$(as ow_reporter -c "SELECT count(*) FROM openwop.signing_keys")" = 1 ]   # it does read the table
[ "$(as ow_reporter -c "SELECT bool_and(encrypted AND position(convert_to('$secret', 'UTF8') IN secret) = 0) FROM openwop.signing_keys")" = t ]
for v in "$(as ow_reporter -c "SELECT string_agg(coalesce(setting, ''), ' ') FROM pg_settings")" \
         "$(as ow_reporter -c "SELECT string_agg(coalesce(query, ''), ' ') FROM pg_stat_activity")" \
         "$(as ow_reporter -c "SHOW openwop.key_encryption_key_command")"; do
	if grep -q -F -e "$passphrase" -e "$secret" <<<"$v"; then echo "the reporting login read a secret" >&2; exit 1; fi
done
# what 0.10.0's reporting login did: sign a resolve token for the CFO with what it read
forged=$(as ow_reporter -c "SELECT 'ow2.hs256.k-unreadable.' || p || '.' || encode(hmac(convert_to('hs256.k-unreadable.' || p, 'UTF8'), (SELECT secret FROM openwop.signing_keys), 'sha256'), 'hex')
  FROM (SELECT rtrim(translate(encode(convert_to(json_build_object('i', '$interrupt', 'r', 'acme/secrets-run-0000001', 'n', 'gate',
          'e', to_char((now() + interval '1 hour') AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), 't', 'resolve', 'p', 'cfo')::text, 'UTF8'), 'base64'), E'+/\n', '-_'), '=') AS p) x")
out=$(try_as ow_reporter -c "SET ROLE ow_reporter" -c "SELECT openwop.resolve_interrupt_by_token('$forged', '{\"action\": \"accept\"}')")
grep -q 'interrupt_token_invalid' <<<"$out" || { echo "the forged token: $out" >&2; exit 1; }
[ "$(q -c "SELECT status FROM openwop.interrupts WHERE interrupt_id = '$interrupt'")" = pending ]
pass "reporting_login_reads_no_secret: pg_read_all_data + BYPASSRLS + pg_monitor read ciphertext, the command and no passphrase; a token signed with what they read is 401"

# ---- 2. the database's owner
out=$(try_as ow_db_owner -c "SELECT count(*) FROM openwop.signing_keys")
grep -q 'permission denied for table signing_keys' <<<"$out" || { echo "the database owner read the keyring: $out" >&2; exit 1; }
for stmt in "ALTER DATABASE $db SET openwop.key_encryption_key_command = 'cat /etc/passwd'" \
            "ALTER ROLE ow_db_owner SET openwop.key_encryption_key_command = 'cat /etc/passwd'" \
            "SET openwop.key_encryption_key_command = 'cat /etc/passwd'"; do
	out=$(try_as ow_db_owner -c "$stmt")
	grep -q 'permission denied' <<<"$out" || { echo "the database owner ran [$stmt]: $out" >&2; exit 1; }
done
pass "database_owner_reads_no_secret: the database's owner may not read the keyring nor set where the passphrase comes from"

# ---- 3. the file reader
relpath=$(q -c "SELECT pg_relation_filepath('openwop.signing_keys')")
file_has() {  # file_has PATH: does the file, as the file reader reads it, hold the secret or the passphrase?
	[ "$(as ow_file_reader -c "SELECT position(convert_to('$secret', 'UTF8') IN f) > 0 OR position(convert_to('$passphrase', 'UTF8') IN f) > 0
	                            FROM pg_read_binary_file('$1') f")" = t ]
}
! file_has "$relpath" || { echo "the keyring's heap file holds a secret" >&2; exit 1; }
for w in $wal; do
	! file_has "pg_wal/$w" || { echo "WAL segment $w holds a secret" >&2; exit 1; }
done
! file_has postgresql.auto.conf
! file_has "$(q -c "SHOW config_file")"
for f in "$work/agent.sock" "$work/root/kek"; do
	out=$(try_as ow_file_reader -c "SELECT length(pg_read_binary_file('$f'))")
	grep -q -i 'could not open\|permission denied\|No such device' <<<"$out" || { echo "read $f: $out" >&2; exit 1; }
done
# the command's processes: while a new backend fetches the passphrase, the
# file reader looks for them (the newest pids, their command lines) and
# tries to read what they hand over, COPY FROM /proc/<pid>/fd/1 (a pipe there
# can be opened twice and drained first), and their environment
psql -X -q -A -t -d $db -U ow_file_reader -v ON_ERROR_STOP=1 >"$work/racer.out" 2>&1 <<SQL &
CREATE TEMP TABLE loot (x text);
CREATE TEMP TABLE tried (pid int, what text, outcome text);
DO \$\$
DECLARE t0 timestamptz := clock_timestamp(); last int; p int; cmd bytea;
BEGIN
  WHILE clock_timestamp() - t0 < interval '4 seconds' LOOP
    last := split_part(pg_read_file('/proc/loadavg'), ' ', 5)::int;
    FOR p IN last - 30 .. last + 3 LOOP
      BEGIN cmd := pg_read_binary_file('/proc/' || p || '/cmdline', 0, 400, true);
      EXCEPTION WHEN others THEN cmd := NULL; END;
      CONTINUE WHEN cmd IS NULL OR (position(convert_to('kek-command', 'UTF8') IN cmd) = 0
                                    AND position(convert_to('kek-client', 'UTF8') IN cmd) = 0);
      BEGIN
        EXECUTE format('COPY loot FROM %L', '/proc/' || p || '/fd/1');
        INSERT INTO tried VALUES (p, 'fd/1', 'read');
      EXCEPTION WHEN others THEN INSERT INTO tried VALUES (p, 'fd/1', SQLERRM); END;
      BEGIN
        INSERT INTO loot SELECT encode(pg_read_binary_file('/proc/' || p || '/environ'), 'escape');
        INSERT INTO tried VALUES (p, 'environ', 'read');
      EXCEPTION WHEN others THEN INSERT INTO tried VALUES (p, 'environ', SQLERRM); END;
    END LOOP;
  END LOOP;
END \$\$;
SELECT 'tried ' || count(*) FILTER (WHERE what = 'fd/1') || ' ' || count(*) FILTER (WHERE what = 'fd/1' AND outcome = 'read') FROM tried;
SELECT 'stolen ' || count(*) FROM loot WHERE position('$passphrase' IN x) > 0;
SQL
racer=$!
sleep 0.5
[ "$(q -c "SELECT openwop.inspect_interrupt('$token') ->> 'kind'")" = approval ]   # a new backend: it runs the command
wait $racer
grep -q '^stolen 0$' "$work/racer.out" || { echo "the passphrase was stolen from the command:" >&2; cat "$work/racer.out" >&2; exit 1; }
tried=$(sed -n 's/^tried \([0-9]*\) \([0-9]*\)$/\1 \2/p' "$work/racer.out")
[ -n "$tried" ] && [ "${tried% *}" -ge 1 ] || { echo "the racer found none of the command's processes: the check proved nothing" >&2; cat "$work/racer.out" >&2; exit 1; }
# opening it at all is the theft: the racer reads what the backend waits for
[ "${tried#* }" = 0 ] || { echo "the racer opened the command's output ($tried: tries, reads)" >&2; exit 1; }
pass "command_output_not_stolen: pg_read_server_files racing the passphrase command (its stdout opened, read: $tried) gets nothing: the command writes to a socket, not a pipe"

# its own memory: readable before it holds a secret, refused once it does
mem() {  # mem SQL-BEFORE: read 64 bytes of the session's heap after SQL-BEFORE
	try_as ow_file_reader -c "$1" -c "SELECT length(pg_read_binary_file('/proc/self/mem',
	  ('x' || lpad(split_part(l, '-', 1), 16, '0'))::bit(64)::bigint, 64))
	  FROM regexp_split_to_table(pg_read_file('/proc/self/maps'), E'\n') l WHERE l LIKE '%[heap]%'"
}
# a client backend is non-dumpable from its start (openwop.protect_backend_memory, on by default)
out=$(mem "SELECT 1")
grep -q -i 'permission denied' <<<"$out" || { echo "a new backend let its memory be read: $out" >&2; exit 1; }
pass "client_backends_not_dumpable: a client backend's memory is root's from its start (tokens, answers and claims it holds)"
# with that off, a backend's memory is readable (the attack is real) until it holds a secret
psql -X -q -d postgres -c "ALTER SYSTEM SET openwop.protect_backend_memory = off" -c "SELECT pg_reload_conf()" >/dev/null
sleep 1
[ "$(mem "SELECT 1" | tail -n 1)" = 64 ] || { echo "the check cannot read a backend's memory at all: $(mem "SELECT 1")" >&2; exit 1; }
out=$(mem "SELECT openwop.inspect_interrupt('$token') ->> 'kind'")
grep -q -i 'permission denied' <<<"$out" || { echo "a backend holding a secret let its memory be read: $out" >&2; exit 1; }
# another process's memory: 64 bytes of its heap, or the error
other_mem() {
	try_as ow_file_reader -c "SELECT length(pg_read_binary_file('/proc/$1/mem',
	  ('x' || lpad(split_part(l, '-', 1), 16, '0'))::bit(64)::bigint, 64))
	  FROM regexp_split_to_table(pg_read_file('/proc/$1/maps'), E'\n') l WHERE l LIKE '%[heap]%'"
}
# a session opened while it was off is protected once a reload turns it on
printf "SELECT 'open';\nSELECT pg_sleep(3);\nSELECT pg_sleep(6);\n" | psql -X -q -d $db -U ow_reporter >/dev/null 2>&1 &
sleeper=$!
for i in $(seq 50); do
	spid=$(q -c "SELECT pid FROM pg_stat_activity WHERE usename = 'ow_reporter' AND query LIKE 'SELECT pg_sleep(3)%'")
	[ -n "$spid" ] && break
	sleep 0.1
done
[ "$(other_mem "$spid" | tail -n 1)" = 64 ] || { echo "an open session's memory, with the setting off: $(other_mem "$spid")" >&2; exit 1; }
psql -X -q -d postgres -c "ALTER SYSTEM RESET openwop.protect_backend_memory" -c "SELECT pg_reload_conf()" >/dev/null
sleep 4   # its first statement ends, it reads the reload, the second runs
out=$(other_mem "$spid")
grep -q -i 'permission denied' <<<"$out" || { echo "a session open before the reload let its memory be read: $out" >&2; exit 1; }
wait $sleeper
pass "reload_protects_open_sessions: a session opened with openwop.protect_backend_memory off is protected once a reload turns it on"
# another backend that holds it
printf "SELECT openwop.inspect_interrupt('%s');\nSELECT pg_sleep(30);\n" "$token" | psql -X -q -d $db >/dev/null 2>&1 &
holder=$!
for i in $(seq 50); do
	pid=$(q -c "SELECT pid FROM pg_stat_activity WHERE datname = '$db' AND query LIKE 'SELECT pg_sleep(30)%'")
	[ -n "$pid" ] && break
	sleep 0.1
done
for f in mem environ; do
	out=$(try_as ow_file_reader -c "SELECT length(pg_read_binary_file('/proc/$pid/$f', 0, 1))")
	grep -q -i 'permission denied' <<<"$out" || { echo "/proc/$pid/$f of a backend holding a secret: $out" >&2; exit 1; }
done
# openwop.protect_server_memory (off by default): the postmaster and every
# process it forks, a backend while it authenticates, those that map shared memory
pm=$(q -c "SELECT split_part(pg_read_file('postmaster.pid'), E'\n', 1)")
[ "$(other_mem "$pm" | tail -n 1)" = 64 ] || { echo "the postmaster's memory, unprotected: $(other_mem "$pm")" >&2; exit 1; }
log=$(server_log_file)
log_from=$(($(wc -l <"$log") + 1))
psql -X -q -d postgres -c "ALTER SYSTEM SET openwop.protect_server_memory = on" >/dev/null
pg_ctlcluster "$PGVERSION" regress stop
pg_ctlcluster "$PGVERSION" regress start
pm=$(q -c "SELECT split_part(pg_read_file('postmaster.pid'), E'\n', 1)")
for p in $pm $(q -c "SELECT string_agg(pid::text, ' ') FROM pg_stat_activity WHERE backend_type IN ('checkpointer', 'background writer', 'autovacuum launcher')"); do
	out=$(other_mem "$p")
	grep -q -i 'permission denied' <<<"$out" || { echo "process $p's memory with openwop.protect_server_memory on: $out" >&2; exit 1; }
done
if [ -n "${PG_OOM_ADJUST_FILE:-}" ] || grep -q 'PG_OOM_ADJUST_FILE' /usr/bin/pg_ctlcluster 2>/dev/null; then
	# not "tail | grep -q": grep -q exits at the first match, and tail, with
	# more to write (over 4 kB follow), dies of SIGPIPE, which pipefail
	# makes the pipeline's status: an intermittent "not logged"
	grep -q "keep the postmaster's oom_score_adj" < <(tail -n "+$log_from" "$log") ||
		{ echo "the cost (oom_score_adj) was not logged" >&2; exit 1; }
fi
psql -X -q -d postgres -c "ALTER SYSTEM RESET openwop.protect_server_memory" >/dev/null
pg_ctlcluster "$PGVERSION" regress stop
pg_ctlcluster "$PGVERSION" regress start
pass "server_memory_protected_when_asked: with openwop.protect_server_memory on, the postmaster and its processes (those that map shared memory among them) are not readable; the oom_score_adj cost is logged"

pass "file_reader_reads_no_secret: pg_read_server_files finds no secret or passphrase in the heap file, the WAL or the configuration, cannot open the agent's socket or the passphrase file, and cannot read the memory of a backend that holds a secret (its own or another's)"
echo "secret checks passed"
