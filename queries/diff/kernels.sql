-- name: diff_kernels
-- version: 1
-- returns: one row per short kernel name in either trace: name, category (the category with most time for that name, B's when in both), family (name with tile / template / counter parameters replaced by *), status ('both', 'new' = only in B, 'removed' = only in A), calls_a, calls_b, a_ns, b_ns, avg_a_ns, avg_b_ns, ratio (b_ns / a_ns), calls_ratio, per_call_ratio, variants_a, variants_b (distinct demangled names), pattern (the change in words: "same number of calls, 5.15x longer per call", "1.83x more calls, same time per call", ...).
-- tables: side_kernels(side, short_name, demangled_name, category, calls, total_ns) (per-trace rows of queries/diff_side_kernels.sql, side = 'a' or 'b')
-- params: none
-- dialect: duckdb
WITH per AS (
    SELECT
        side,
        short_name AS name,
        arg_max(category, total_ns) AS category,
        sum(calls) AS calls,
        sum(total_ns) AS total_ns,
        count(DISTINCT demangled_name) AS variants
    FROM side_kernels
    GROUP BY side, short_name
),
j AS (
    SELECT
        COALESCE(b.name, a.name) AS name,
        COALESCE(b.category, a.category) AS category,
        CASE WHEN a.name IS NULL THEN 'new' WHEN b.name IS NULL THEN 'removed' ELSE 'both' END AS status,
        COALESCE(a.calls, 0) AS calls_a,
        COALESCE(b.calls, 0) AS calls_b,
        COALESCE(a.total_ns, 0) AS a_ns,
        COALESCE(b.total_ns, 0) AS b_ns,
        a.total_ns / a.calls AS avg_a_ns,
        b.total_ns / b.calls AS avg_b_ns,
        COALESCE(a.variants, 0) AS variants_a,
        COALESCE(b.variants, 0) AS variants_b
    FROM (SELECT * FROM per WHERE side = 'a') AS a
    FULL OUTER JOIN (SELECT * FROM per WHERE side = 'b') AS b ON a.name = b.name
),
r AS (
    SELECT
        *,
        CASE WHEN a_ns > 0 AND status = 'both' THEN b_ns / a_ns END AS ratio,
        CASE WHEN calls_a > 0 AND status = 'both' THEN calls_b / calls_a END AS calls_ratio,
        CASE WHEN avg_a_ns > 0 AND status = 'both' THEN avg_b_ns / avg_a_ns END AS per_call_ratio,
        CASE
            WHEN name LIKE 'nvjet\_%' ESCAPE '\' THEN regexp_replace(name, '^(nvjet_[A-Za-z0-9]+)_.*$', '\1_*')
            WHEN name LIKE 'triton\_%' ESCAPE '\' THEN regexp_replace(name, '_[0-9]+$', '_*')
            ELSE regexp_replace(
                regexp_replace(name, '[0-9]+x[0-9]+(x[0-9]+)*', '*', 'g'),
                '(align|stage|warpsize|_s|_k)[0-9]+', '\1*', 'g')
        END AS family
    FROM j
)
SELECT
    name, category, family, status, calls_a, calls_b, a_ns, b_ns, avg_a_ns, avg_b_ns,
    ratio, calls_ratio, per_call_ratio, variants_a, variants_b,
    CASE
        WHEN status = 'new' THEN 'only in B'
        WHEN status = 'removed' THEN 'only in A'
        WHEN calls_a = calls_b AND abs(ln(greatest(per_call_ratio, 1e-12))) < ln(1.05) THEN 'same calls, same time per call'
        WHEN calls_a = calls_b AND per_call_ratio >= 1 THEN 'same number of calls, ' || printf('%.2f', per_call_ratio) || 'x longer per call'
        WHEN calls_a = calls_b THEN 'same number of calls, ' || printf('%.2f', 1 / per_call_ratio) || 'x shorter per call'
        WHEN abs(ln(greatest(per_call_ratio, 1e-12))) < ln(1.05) AND calls_ratio >= 1 THEN printf('%.2f', calls_ratio) || 'x more calls, same time per call'
        WHEN abs(ln(greatest(per_call_ratio, 1e-12))) < ln(1.05) THEN printf('%.2f', 1 / calls_ratio) || 'x fewer calls, same time per call'
        ELSE printf('%.2f', calls_ratio) || 'x calls (' || CAST(calls_a AS VARCHAR) || ' -> ' || CAST(calls_b AS VARCHAR) || '), '
             || printf('%.2f', per_call_ratio) || 'x time per call'
    END AS pattern
FROM r
ORDER BY greatest(a_ns, b_ns) DESC, name
