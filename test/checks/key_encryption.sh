#!/usr/bin/env bash
# The key-encryption key never leaves its file (docs/security.md).  Signing
# secrets are stored encrypted (pgcrypto) under a passphrase read from
# openwop.key_encryption_key_file, a file only the server's OS user can
# read, outside the data directory.  The setting is changed and the server
# reloaded: the log names the file and never the passphrase; non-superusers
# cannot SHOW the setting or see it in pg_settings; no pg_stat_activity row
# and no error message holds a passphrase; a file others can read, or
# another user's file, is refused; a file inside the data directory (which
# a base backup carries) is read with a warning.
# And no plan holds a secret: debug_print_plan, which any session may turn
# on, prints the plans of adding and decrypting a key and of a resolve with
# an Idempotency-Key without the secret, the passphrase or the key.
# Needs the cluster test/run starts.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
db=openwop_kek
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d $db -c "$1" | tail -n 1; }
try() { psql -X -A -t -q -d $db -c "$1" 2>&1 || true; }
datadir=$(psql -X -A -t -q -d postgres -c "SHOW data_directory")
log=${OPENWOP_SERVER_LOG:-$(pg_lsclusters -h | awk -v port="$PGPORT" '$3 == port { print $7 }')}
[ -f "$log" ] || { echo "cannot find the server log (got '$log')" >&2; exit 1; }
kekdir=$(mktemp -d)   # outside the data directory, as the README recommends
chmod 711 "$kekdir"
cleanup() {
	psql -X -q -d postgres -c "ALTER SYSTEM RESET openwop.key_encryption_key_file" -c "SELECT pg_reload_conf()" >/dev/null 2>&1 || true
	psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db" -c "DROP ROLE IF EXISTS kek_app" >/dev/null 2>&1 || true
	rm -f "$datadir"/openwop_kek_*
	rm -rf "$kekdir"
}
trap cleanup EXIT
cleanup
kekdir=$(mktemp -d)
chmod 711 "$kekdir"

owner=$(stat -c %U "$datadir")
kek_a="kek-a-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
kek_b="kek-b-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
put() {	# put FILE MODE USER CONTENT
	printf '%s\n' "$4" >"$kekdir/$1"
	chown "$3" "$kekdir/$1"
	chmod "$2" "$kekdir/$1"
}
put openwop_kek_a 0600 "$owner" "$kek_a"
put openwop_kek_b 0600 "$owner" "$kek_b"
put openwop_kek_open 0644 "$owner" "$kek_a"
put openwop_kek_root 0600 root "$kek_a"
log_start=$(stat -c %s "$log")

psql -X -q -d postgres -c "CREATE DATABASE $db" -c "CREATE ROLE kek_app" >/dev/null
make_login_approver $db
psql -X -q -v ON_ERROR_STOP=1 -d $db >/dev/null <<'SQL'
CREATE EXTENSION pgcrypto;
CREATE EXTENSION openwop_interrupt;
GRANT USAGE ON SCHEMA openwop TO kek_app;
SET openwop.tenant = 'acme';
SELECT openwop.create_run('kek', '{"runId": "acme/kek-run-000000001"}');
SELECT openwop.start_node('acme/kek-run-000000001', 'gate');
SELECT openwop.interrupt('acme/kek-run-000000001', 'gate', '{"kind": "approval", "data": {"artifactId": "a",
  "artifactType": "doc", "title": "T", "actions": ["accept", "reject"]}}');
SQL

# 1. set in postgresql.auto.conf and reloaded; new secrets are stored encrypted and verify
psql -X -q -d postgres -c "ALTER SYSTEM SET openwop.key_encryption_key_file = '$kekdir/openwop_kek_a'" -c "SELECT pg_reload_conf()" >/dev/null
sleep 1
q "SELECT openwop.add_signing_key('k-kek-a', 'a-signing-secret-0123456789'::bytea)" >/dev/null
[ "$(q "SELECT encrypted AND position('a-signing-secret'::bytea IN secret) = 0 FROM openwop.signing_keys WHERE kid = 'k-kek-a'")" = t ]
token=$(q "SET openwop.tenant = 'acme'; SELECT openwop.mint_interrupt_token(interrupt_id, 'inspect') FROM openwop.interrupts")
[ "$(q "SELECT openwop.inspect_interrupt('$token') ->> 'kind'")" = approval ]
echo "encrypted under the passphrase in openwop_kek_a; a token it signed verifies"

# 2. changed and reloaded: the log says which file, never what is in it
psql -X -q -d postgres -c "ALTER SYSTEM SET openwop.key_encryption_key_file = '$kekdir/openwop_kek_b'" -c "SELECT pg_reload_conf()" >/dev/null
sleep 1
# a new backend under the other passphrase: a clear error that names the key, not the passphrase
out=$(try "SELECT openwop.inspect_interrupt('$token')")
grep -q 'signing key "k-kek-a" cannot be decrypted with the key-encryption passphrase' <<<"$out"
# files others can read, or that are not the server's, are refused without being read
for f in openwop_kek_open openwop_kek_root; do
	psql -X -q -d postgres -c "ALTER SYSTEM SET openwop.key_encryption_key_file = '$kekdir/$f'" -c "SELECT pg_reload_conf()" >/dev/null
	sleep 1
	# the caller is told the key cannot be decrypted; why (the file) goes to the server log only
	out=$(try "SELECT openwop.inspect_interrupt('$token')")
	grep -q 'signing key "k-kek-a" cannot be decrypted' <<<"$out"
	! grep -q 'must be a file owned' <<<"$out"
	grep -q "key-encryption key file \"$kekdir/$f\" must be a file owned by the database server's user and readable by it alone" "$log"
done
psql -X -q -d postgres -c "ALTER SYSTEM SET openwop.key_encryption_key_file = '$kekdir/openwop_kek_a'" -c "SELECT pg_reload_conf()" >/dev/null
sleep 1
[ "$(q "SELECT openwop.inspect_interrupt('$token') ->> 'kind'")" = approval ]
echo "reloads: another passphrase, an open file and another user's file are refused; back to openwop_kek_a it verifies"

# the same passphrase in a file in the data directory: read, with a warning (a base backup carries it)
cp -p "$kekdir/openwop_kek_a" "$datadir/openwop_kek_in_datadir"
psql -X -q -d postgres -c "ALTER SYSTEM SET openwop.key_encryption_key_file = 'openwop_kek_in_datadir'" -c "SELECT pg_reload_conf()" >/dev/null
sleep 1
out=$(psql -X -A -t -q -d $db -c "SELECT openwop.inspect_interrupt('$token') ->> 'kind'" 2>&1)
grep -q '^approval$' <<<"$out"
grep -q 'WARNING:  key-encryption key file "openwop_kek_in_datadir" is inside the data directory' <<<"$out"
grep -q 'A base backup carries it next to the secrets it encrypts' <<<"$out"
psql -X -q -d postgres -c "ALTER SYSTEM SET openwop.key_encryption_key_file = '$kekdir/openwop_kek_a'" -c "SELECT pg_reload_conf()" >/dev/null
sleep 1
echo "kek_file_in_data_directory_warned: a passphrase file in the data directory is read with a warning that a base backup carries it"

# 3. who can see what
[ "$(try "SET ROLE kek_app; SHOW openwop.key_encryption_key_file" | grep -c 'permission denied\|must be superuser')" -ge 1 ]
[ "$(q "SET ROLE kek_app; SELECT count(*) FROM pg_settings WHERE name LIKE 'openwop.key_encryption%'")" = 0 ]
[ "$(q "SELECT count(*) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND (query LIKE '%$kek_a%' OR query LIKE '%$kek_b%')")" = 0 ]
echo "non-superusers cannot read the setting; no pg_stat_activity row holds a passphrase"

# 4. no plan holds a secret.  Plans print a bytea or text constant as its bytes,
# signed: look for the first 12 bytes of the secret, and of the idempotency key.
# debug_print_plan wraps a plan at 80 columns, so whitespace is folded before
# looking; and the key reaches the calls through a setting, so the top-level
# statements' own plans (which hold their literals) cannot hide or fake a hit.
signed() { q "SELECT string_agg((CASE WHEN b > 127 THEN b - 256 ELSE b END)::text, ' ' ORDER BY i)
                FROM (SELECT i, get_byte($1, i) AS b FROM generate_series(0, 11) i) s"; }
idem=plan-idem-key-0000000000000001
plans=$(psql -X -q -d $db 2>&1 <<SQL
SET debug_print_plan = on;
SET debug_pretty_print = off;
SET client_min_messages = log;
SELECT openwop.add_signing_key('k-kek-plan');
SELECT openwop.inspect_interrupt('$token');
SET openwop.tenant = 'acme';
SET plan.idem = '$idem';
SELECT openwop.resolve_interrupt('acme/kek-run-000000001', 'gate', '{"action": "accept"}', current_setting('plan.idem'));
SELECT openwop.resolve_interrupt('acme/kek-run-000000001', 'gate', '{"action": "accept"}', current_setting('plan.idem'));
SQL
)
plans=$(tr -s ' \n\t' '   ' <<<"$plans")
grep -q 'LOG: plan:' <<<"$plans"
grep -q '"idempotentReplay": true' <<<"$plans"
plan_secret=$(signed "(SELECT pgp_sym_decrypt_bytea(secret, '$kek_a') FROM openwop.signing_keys WHERE kid = 'k-kek-plan')")
first_secret=$(signed "(SELECT pgp_sym_decrypt_bytea(secret, '$kek_a') FROM openwop.signing_keys WHERE kid = 'k-kek-a')")
idem_bytes=$(signed "convert_to('$idem', 'UTF8')")
for needle in "$plan_secret" "$first_secret" "$idem_bytes" "$kek_a" "$kek_b" pgp_sym_; do
	if grep -q -F -e "$needle" <<<"$plans"; then
		echo "a plan shows a secret: [$needle]" >&2
		exit 1
	fi
done
echo "debug_print_plan: plans of a new key, a decryption and an idempotent resolve hold no secret, passphrase or key"

# 5. the server log over the whole check: the reloads are there, the passphrases are not
tail -c +$((log_start + 1)) "$log" >"$datadir/openwop_kek_log_excerpt"
grep -q "parameter \"openwop.key_encryption_key_file\" changed to \"$kekdir/openwop_kek_b\"" "$datadir/openwop_kek_log_excerpt"
if grep -q -e "$kek_a" -e "$kek_b" "$datadir/openwop_kek_log_excerpt"; then
	echo "a passphrase reached the server log" >&2
	exit 1
fi
echo "the server log shows the reloads and no passphrase"
