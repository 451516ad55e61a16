-- name: gap_call_classes
-- version: 1
-- returns: one row per API-call name id among $name_ids that an API-call rule classifies: name_id and cause ('launch_bound' or 'host_wait', from the first rule whose LIKE pattern matches the lower-cased name; queries/rules/gap_cause_rules.toml). `nsysq gaps` reads the idle time's causes from the classified calls of the threads feeding each device (docs/gaps.md).
-- tables: StringIds(id, value)
-- params: name_ids (list: the distinct nameIds of the API calls); call_causes (list: the cause of each API-call rule, 'host_wait' or 'launch_bound'); call_patterns (list: the LIKE pattern of each rule, on the lower-cased call name, first match wins)
-- dialect: duckdb
WITH rules AS (
    SELECT i AS rule_order, $call_causes[i] AS cause, $call_patterns[i] AS pattern
    FROM range(1, len($call_patterns) + 1) AS r(i)
),
names AS (
    SELECT DISTINCT unnest($name_ids) AS name_id
)
SELECT n.name_id, arg_min(r.cause, r.rule_order) AS cause
FROM names AS n
JOIN StringIds AS sid ON sid.id = n.name_id
JOIN rules AS r ON lower(sid.value) LIKE r.pattern
GROUP BY n.name_id
ORDER BY n.name_id
