-- name: kernel_category
-- version: 2
-- returns: one row per distinct (shortName, demangledName) id pair: its short_name and demangled_name (resolved, or "<unresolved id N>" / "<null name id>" as in census) and the category of the first lineup rule that matches (rule_order, category; "Other" when none does). nsysq stores it as the temp table nsysq_kernel_category for lineup and diff.
-- tables: nsysq_kernel_pairs (temp table of the distinct (shortName, demangledName) pairs of CUPTI_ACTIVITY_KIND_KERNEL), StringIds(id, value), nsysq_lineup_rules(rule_order, category, field, pattern) (built by nsysq from queries/rules/lineup_rules.toml or --rules)
-- params: none
-- dialect: duckdb
WITH pairs AS (
    SELECT shortName, demangledName FROM nsysq_kernel_pairs
),
names AS (
    SELECT
        p.shortName,
        p.demangledName,
        nsysq_name_label(p.shortName, s.value) AS short_name,
        nsysq_name_label(p.demangledName, d.value) AS demangled_name,
        lower(COALESCE(s.value, '')) AS short_l,
        lower(COALESCE(d.value, '')) AS demangled_l
    FROM pairs AS p
    LEFT JOIN StringIds AS s ON s.id = p.shortName
    LEFT JOIN StringIds AS d ON d.id = p.demangledName
),
matched AS (
    SELECT n.shortName, n.demangledName, n.short_name, n.demangled_name,
           min(r.rule_order) AS rule_order
    FROM names AS n
    LEFT JOIN nsysq_lineup_rules AS r
        ON (CASE r.field WHEN 'demangled' THEN n.demangled_l ELSE n.short_l END) LIKE r.pattern
    GROUP BY n.shortName, n.demangledName, n.short_name, n.demangled_name
)
SELECT
    m.shortName,
    m.demangledName,
    m.short_name,
    m.demangled_name,
    m.rule_order,
    COALESCE(r.category, 'Other') AS category
FROM matched AS m
LEFT JOIN nsysq_lineup_rules AS r ON r.rule_order = m.rule_order
