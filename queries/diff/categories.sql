-- name: diff_categories
-- version: 1
-- returns: one row per lineup category in either trace: category, status ('both', 'new', 'removed'), calls_a, calls_b, a_ns, b_ns, avg_a_ns, avg_b_ns, ratio (b_ns / a_ns), calls_ratio, per_call_ratio, kernels_a, kernels_b (distinct short names), top_kernel (the short name with most time in B, else A). Rows add up to each trace's lineup.
-- tables: side_kernels(side, short_name, category, calls, total_ns) (per-trace rows of queries/diff_side_kernels.sql)
-- params: none
-- dialect: duckdb
WITH per AS (
    SELECT side, category, sum(calls) AS calls, sum(total_ns) AS total_ns,
           count(DISTINCT short_name) AS kernels
    FROM side_kernels
    GROUP BY side, category
),
by_name AS (
    SELECT side, category, short_name, sum(total_ns) AS ns FROM side_kernels GROUP BY ALL
),
top AS (
    SELECT category, arg_max(short_name, (CASE side WHEN 'b' THEN 1 ELSE 0 END, ns)) AS top_kernel
    FROM by_name GROUP BY category
),
j AS (
    SELECT
        COALESCE(b.category, a.category) AS category,
        CASE WHEN a.category IS NULL THEN 'new' WHEN b.category IS NULL THEN 'removed' ELSE 'both' END AS status,
        COALESCE(a.calls, 0) AS calls_a,
        COALESCE(b.calls, 0) AS calls_b,
        COALESCE(a.total_ns, 0) AS a_ns,
        COALESCE(b.total_ns, 0) AS b_ns,
        a.total_ns / a.calls AS avg_a_ns,
        b.total_ns / b.calls AS avg_b_ns,
        COALESCE(a.kernels, 0) AS kernels_a,
        COALESCE(b.kernels, 0) AS kernels_b
    FROM (SELECT * FROM per WHERE side = 'a') AS a
    FULL OUTER JOIN (SELECT * FROM per WHERE side = 'b') AS b ON a.category = b.category
)
SELECT
    j.category, status, calls_a, calls_b, a_ns, b_ns, avg_a_ns, avg_b_ns,
    CASE WHEN a_ns > 0 AND status = 'both' THEN b_ns / a_ns END AS ratio,
    CASE WHEN calls_a > 0 AND status = 'both' THEN calls_b / calls_a END AS calls_ratio,
    CASE WHEN avg_a_ns > 0 AND status = 'both' THEN avg_b_ns / avg_a_ns END AS per_call_ratio,
    kernels_a, kernels_b, t.top_kernel
FROM j LEFT JOIN top AS t ON t.category = j.category
ORDER BY greatest(a_ns, b_ns) DESC, j.category
