-- name: diff_danger
-- version: 1
-- returns: one row per (danger kind, short kernel name) matched by the danger rules in either trace (first matching rule wins per demangled variant): kind, name, calls_a, calls_b, a_ns, b_ns, presence ('A only', 'B only', 'both'), kind_presence (the same for the kind as a whole), reason. Sorted with kinds present in only one trace first.
-- tables: side_kernels(side, short_name, demangled_name, calls, total_ns) (per-trace rows of queries/diff_side_kernels.sql), danger_rules(rule_order, kind, field, pattern, reason) (from queries/rules/danger_rules.toml or --danger-rules)
-- params: none
-- dialect: duckdb
WITH m AS (
    SELECT p.side, p.short_name, p.demangled_name, p.calls, p.total_ns, min(r.rule_order) AS rule_order
    FROM side_kernels AS p
    JOIN danger_rules AS r
        ON (CASE r.field WHEN 'demangled' THEN lower(p.demangled_name) ELSE lower(p.short_name) END) LIKE r.pattern
    GROUP BY p.side, p.short_name, p.demangled_name, p.calls, p.total_ns
),
k AS (
    SELECT r.kind, m.short_name AS name,
           COALESCE(sum(m.calls) FILTER (WHERE m.side = 'a'), 0) AS calls_a,
           COALESCE(sum(m.calls) FILTER (WHERE m.side = 'b'), 0) AS calls_b,
           COALESCE(sum(m.total_ns) FILTER (WHERE m.side = 'a'), 0) AS a_ns,
           COALESCE(sum(m.total_ns) FILTER (WHERE m.side = 'b'), 0) AS b_ns,
           any_value(r.reason) AS reason
    FROM m JOIN danger_rules AS r ON r.rule_order = m.rule_order
    GROUP BY r.kind, m.short_name
),
kinds AS (
    SELECT kind, sum(calls_a) AS ka, sum(calls_b) AS kb FROM k GROUP BY kind
)
SELECT
    k.kind, k.name, k.calls_a, k.calls_b, k.a_ns, k.b_ns,
    CASE WHEN k.calls_a = 0 THEN 'B only' WHEN k.calls_b = 0 THEN 'A only' ELSE 'both' END AS presence,
    CASE WHEN kinds.ka = 0 THEN 'B only' WHEN kinds.kb = 0 THEN 'A only' ELSE 'both' END AS kind_presence,
    k.reason
FROM k JOIN kinds ON kinds.kind = k.kind
ORDER BY (kinds.ka = 0 OR kinds.kb = 0) DESC, k.kind, greatest(k.a_ns, k.b_ns) DESC, k.name
