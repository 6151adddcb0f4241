-- The JSON Schema subset: each failure listed with its path and keyword,
-- unsupported keywords refused, and a hostile schema bounded.
\set VERBOSITY default
\set SHOW_CONTEXT never

SELECT jsonb_pretty(openwop.json_schema_errors(
  '{"type": "object", "required": ["amount", "currency"], "additionalProperties": false,
    "properties": {"amount": {"type": "integer", "minimum": 1, "multipleOf": 5},
                   "currency": {"enum": ["EUR", "USD"]},
                   "tags": {"type": "array", "items": {"type": "string", "minLength": 2},
                            "uniqueItems": true, "maxItems": 3}}}',
  '{"amount": 3, "tags": ["ok", "x", "ok", "y"], "memo": "hi"}'));

SELECT openwop.json_schema_errors('{"$defs": {"pos": {"exclusiveMinimum": 0}}, "items": {"$ref": "#/$defs/pos"}}', '[1, 0, -2]');
SELECT openwop.json_schema_errors('{"oneOf": [{"type": "integer"}, {"minimum": 0}]}', '5');
SELECT openwop.json_schema_errors('{"anyOf": [{"type": "string"}, {"type": "null"}]}', '1');
SELECT openwop.json_schema_errors('{"not": {"const": "x"}}', '"x"');
SELECT openwop.json_schema_errors('{"maxLength": 3}', '"ñandú"');
SELECT openwop.json_schema_errors('{"type": "integer"}', '2.0');
SELECT openwop.json_schema_errors('{"pattern": "^[A-Z]{2}-[0-9]+$"}', '"AB-12"');
SELECT openwop.json_schema_errors('true', '{"anything": 1}');
SELECT openwop.json_schema_errors('{"properties": {"a": false}}', '{"a": 1}');

-- refused: keywords outside the subset, malformed keyword values, dangling $ref
SELECT openwop.json_schema_errors('{"format": "email"}', '"a@b"');
SELECT openwop.json_schema_errors('{"properties": {"a": {"if": {}}}}', '{}');
SELECT openwop.json_schema_errors('{"items": [{"type": "string"}]}', '[]');
SELECT openwop.json_schema_errors('{"minLength": -1}', '""');
SELECT openwop.json_schema_errors('{"pattern": "(unclosed"}', '""');
SELECT openwop.json_schema_errors('{"$ref": "#/$defs/missing"}', '1');
SELECT openwop.json_schema_errors('{"$ref": "https://example.org/s.json"}', '1');
SELECT openwop.json_schema_errors('{"type": "decimal"}', '1');

-- a schema demanding exponential work is refused when it is checked (its weight)
SELECT openwop.json_schema_errors(
  '{"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"}', '1');
