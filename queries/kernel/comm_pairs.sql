-- name: kernel_comm_pairs
-- version: 2
-- returns: one row per distinct (shortName, demangledName) id pair of the kernel table (-1 for a NULL id): is_comm (whether a lineup rule puts it in the category $comm_category) and, for those, kind (the collective kind of the first kind rule whose LIKE pattern matches the lower-cased short name; 'unknown' when none does; NULL for the other pairs). nsysq marks each kernel row of queries/gpu_ops.sql (or of the decoded columns) with its pair's row: the classification runs per name pair, never per launch.
-- tables: nsysq_kernel_category (temp table built by nsysq from queries/kernel/category.sql)
-- params: comm_category (the lineup category of communication kernels); kind_names (list: the collective kind of each rule); kind_patterns (list: the LIKE pattern of each rule, on the lower-cased short name, first match wins)
-- dialect: duckdb
WITH kind_rules AS (
    SELECT i AS rule_order, $kind_names[i] AS kind, $kind_patterns[i] AS pattern
    FROM range(1, len($kind_patterns) + 1) AS r(i)
)
SELECT COALESCE(c.shortName, -1) AS sid, COALESCE(c.demangledName, -1) AS did,
       bool_or(c.category = $comm_category) AS is_comm,
       CASE WHEN bool_or(c.category = $comm_category)
            THEN COALESCE(arg_min(r.kind, r.rule_order), 'unknown') END AS kind
FROM nsysq_kernel_category AS c
LEFT JOIN kind_rules AS r
    ON c.category = $comm_category AND lower(c.short_name) LIKE r.pattern
GROUP BY c.shortName, c.demangledName
ORDER BY sid, did
