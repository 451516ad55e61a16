-- name: lineup
-- version: 1
-- returns: one row per category (category, instances, total_ns, avg_ns, med_ns, min_ns, max_ns, share_pct, kernels = distinct short names, top_kernel = the short name with most time) sorted by total time; rows add up to the census totals.
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, shortName, demangledName), nsysq_kernel_category (view built by nsysq from queries/kernel_category.sql)
-- params: none
-- dialect: duckdb
WITH k AS (
    SELECT COALESCE(shortName, -1) AS sid, COALESCE(demangledName, -1) AS did, "end" - start AS dur
    FROM CUPTI_ACTIVITY_KIND_KERNEL
),
c AS (
    SELECT COALESCE(shortName, -1) AS sid, COALESCE(demangledName, -1) AS did, short_name, category
    FROM nsysq_kernel_category
),
per_kernel AS (
    SELECT c.category, c.short_name, k.dur
    FROM k JOIN c ON c.sid = k.sid AND c.did = k.did
),
by_name AS (
    SELECT category, short_name, sum(dur) AS name_ns FROM per_kernel GROUP BY category, short_name
),
top AS (
    SELECT category, arg_max(short_name, name_ns) AS top_kernel FROM by_name GROUP BY category
),
grand AS (
    SELECT sum(dur) AS all_ns FROM per_kernel
)
SELECT
    p.category,
    count(*) AS instances,
    sum(p.dur) AS total_ns,
    avg(p.dur) AS avg_ns,
    median(p.dur) AS med_ns,
    min(p.dur) AS min_ns,
    max(p.dur) AS max_ns,
    CASE WHEN max(g.all_ns) > 0 THEN 100.0 * sum(p.dur) / max(g.all_ns) END AS share_pct,
    count(DISTINCT p.short_name) AS kernels,
    max(t.top_kernel) AS top_kernel
FROM per_kernel AS p
JOIN top AS t ON t.category = p.category
CROSS JOIN grand AS g
GROUP BY p.category
ORDER BY total_ns DESC, instances DESC, p.category
