#!/usr/bin/env bash
# Patterns in a SQL_ASCII database, where a string is bytes that may not be
# UTF-8: a string that is not UTF-8 fails its pattern (fail closed, a
# validation error), never a raw 22021 encoding error; a UTF-8 one matches
# as anywhere else.  Needs the cluster test/run starts.
set -euo pipefail
db=openwop_sql_ascii
trap 'dropdb --if-exists $db >/dev/null 2>&1' EXIT
dropdb --if-exists $db >/dev/null 2>&1
createdb -E SQL_ASCII -T template0 --locale=C $db
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d $db -c "$1" | tail -n 1; }
q "CREATE EXTENSION openwop_interrupt" >/dev/null
[ "$(q "SELECT openwop.json_schema_errors('{\"pattern\": \"^a\"}', ('\"' || chr(255) || '\"')::jsonb) #>> '{0,keyword}'")" = pattern ]
# é in UTF-8 (two bytes) is one code point for the pattern
[ "$(q "SELECT openwop.json_schema_errors('{\"pattern\": \"^.\$\"}', ('\"' || convert_from('\\xc3a9'::bytea, 'SQL_ASCII') || '\"')::jsonb)")" = '[]' ]
[ "$(q "SELECT openwop.json_schema_errors('{\"pattern\": \"^a+\$\"}', '\"aaa\"')")" = '[]' ]
echo "SQL_ASCII: a string that is not UTF-8 fails its pattern; UTF-8 strings match by code point"
