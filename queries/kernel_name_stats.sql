-- name: kernel_name_stats
-- version: 1
-- returns: launch statistics per kernel name, for both name kinds: one row per (names, name_id) with names = 'short' (name_id = shortName) or 'demangled' (name_id = demangledName): instances, total_ns, avg_ns, med_ns, min_ns, max_ns, stddev_ns, variants (distinct demangled names), zero_length (launches with end = start). nsysq exposes it as nsysq_kernel_name_stats: a view on a direct read, a table stored in the cached copy (so census on the copy never aggregates 5M rows).
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, shortName, demangledName)
-- params: none
-- dialect: duckdb
WITH k AS (
    SELECT shortName, demangledName, "end" - start AS dur FROM CUPTI_ACTIVITY_KIND_KERNEL
),
by_kind AS (  -- every launch once per name kind; a filter on names prunes the other branch
    SELECT 'short' AS names, shortName AS name_id, demangledName, dur FROM k
    UNION ALL
    SELECT 'demangled' AS names, demangledName AS name_id, demangledName, dur FROM k
)
SELECT
    names,
    name_id,
    count(*) AS instances,
    sum(dur) AS total_ns,
    avg(dur) AS avg_ns,
    median(dur) AS med_ns,
    min(dur) AS min_ns,
    max(dur) AS max_ns,
    stddev_samp(dur) AS stddev_ns,
    count(DISTINCT demangledName) AS variants,
    count(*) FILTER (WHERE dur = 0) AS zero_length
FROM by_kind
GROUP BY names, name_id
