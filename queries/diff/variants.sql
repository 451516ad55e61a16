-- name: diff_variants
-- version: 1
-- returns: kernels found in only one trace, grouped: one row per (category, family) where the family has kernels only in A and kernels only in B (a tile / template / counter swap), and one row per category for the rest. Columns: category, family (NULL for a category-level group), new_kernels, new_calls, new_ns (only in B), removed_kernels, removed_calls, removed_ns (only in A), new_names, removed_names (comma-separated, by time).
-- tables: kernel_rows(name, category, family, status, calls_a, calls_b, a_ns, b_ns) (rows of queries/diff/kernels.sql)
-- params: none
-- dialect: duckdb
WITH one AS (
    SELECT * FROM kernel_rows WHERE status IN ('new', 'removed')
),
fam AS (
    SELECT category, family FROM one GROUP BY category, family HAVING count(DISTINCT status) = 2
),
g AS (
    SELECT one.*, fam.family AS group_family
    FROM one LEFT JOIN fam ON fam.category = one.category AND fam.family = one.family
)
SELECT
    category,
    group_family AS family,
    count(*) FILTER (WHERE status = 'new') AS new_kernels,
    COALESCE(sum(calls_b) FILTER (WHERE status = 'new'), 0) AS new_calls,
    COALESCE(sum(b_ns) FILTER (WHERE status = 'new'), 0) AS new_ns,
    count(*) FILTER (WHERE status = 'removed') AS removed_kernels,
    COALESCE(sum(calls_a) FILTER (WHERE status = 'removed'), 0) AS removed_calls,
    COALESCE(sum(a_ns) FILTER (WHERE status = 'removed'), 0) AS removed_ns,
    string_agg(name, ', ' ORDER BY b_ns DESC, name) FILTER (WHERE status = 'new') AS new_names,
    string_agg(name, ', ' ORDER BY a_ns DESC, name) FILTER (WHERE status = 'removed') AS removed_names
FROM g
GROUP BY category, group_family
ORDER BY new_ns + removed_ns DESC, category, family NULLS LAST
