#!/usr/bin/env bash
# The JSON Schema subset against the official JSON-Schema-Test-Suite (Debian
# package json-schema-test-suite, draft 7 files) for every implemented
# keyword.  A test group whose schema uses a keyword outside the subset is
# refused by openwop (as it must be) and skipped here; every other case must
# agree with the suite.
set -euo pipefail
suite=/usr/share/json-schema-test-suite/tests/draft7
db=openwop_jsts
trap 'dropdb --if-exists $db' EXIT
dropdb --if-exists $db
createdb -E UTF8 -T template0 $db
psql -X -q -v ON_ERROR_STOP=1 -v suite="$suite" -d $db <<'SQL'
CREATE EXTENSION openwop_interrupt;
CREATE FUNCTION pg_temp.supported(schema jsonb) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  PERFORM openwop.json_schema_errors(schema, 'null');
  RETURN true;
EXCEPTION WHEN SQLSTATE 'PT400' THEN
  RETURN false;
END $$;

CREATE TEMP TABLE cases AS
SELECT f.name, g.ord AS grp, g.doc ->> 'description' AS grp_desc, t.doc ->> 'description' AS test_desc,
       g.doc -> 'schema' AS schema, t.doc -> 'data' AS data, (t.doc ->> 'valid')::boolean AS valid
  FROM unnest(ARRAY['type', 'enum', 'const', 'properties', 'required', 'additionalProperties',
                    'items', 'minItems', 'maxItems', 'uniqueItems', 'minLength', 'maxLength',
                    'pattern', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum',
                    'multipleOf', 'anyOf', 'allOf', 'oneOf', 'not', 'ref', 'boolean_schema']) AS f(name),
       jsonb_array_elements(pg_read_file(:'suite' || '/' || f.name || '.json')::jsonb) WITH ORDINALITY AS g(doc, ord),
       jsonb_array_elements(g.doc -> 'tests') AS t(doc);

ALTER TABLE cases ADD COLUMN supported boolean, ADD COLUMN got boolean;
UPDATE cases SET supported = pg_temp.supported(schema);
UPDATE cases SET got = jsonb_array_length(openwop.json_schema_errors(schema, data)) = 0 WHERE supported;

\pset footer off
SELECT name AS keyword, count(*) FILTER (WHERE supported) AS cases_run,
       count(*) FILTER (WHERE NOT supported) AS skipped_unsupported_schema,
       count(*) FILTER (WHERE supported AND got IS DISTINCT FROM valid) AS disagreements
  FROM cases GROUP BY name ORDER BY name;
SELECT name, grp_desc, test_desc, schema, data, valid AS suite_says, got AS openwop_says
  FROM cases WHERE supported AND got IS DISTINCT FROM valid;

DO $$
DECLARE bad int; ran int;
BEGIN
  SELECT count(*) FILTER (WHERE supported AND got IS DISTINCT FROM valid),
         count(*) FILTER (WHERE supported) INTO bad, ran FROM cases;
  RAISE NOTICE '% cases run, % disagreements', ran, bad;
  IF bad > 0 OR ran < 240 THEN
    RAISE EXCEPTION 'JSON-Schema-Test-Suite: % disagreements in % cases', bad, ran;
  END IF;
END $$;
SQL
