-- name: fleet_lineup_kernels
-- version: 1
-- returns: one trace's mergeable lineup for nsysq fleet: one row per (category, short_name) with instances, total_ns, min_ns, max_ns. Summed over traces (by category) they give the fleet's lineup; the short names give its kernels and top_kernel columns.
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, shortName, demangledName), nsysq_kernel_category (temp table built by nsysq from queries/kernel/category.sql)
-- params: none
-- dialect: duckdb
WITH c AS (
    SELECT COALESCE(shortName, -1) AS sid, COALESCE(demangledName, -1) AS did, short_name, category
    FROM nsysq_kernel_category
),
k AS (
    SELECT COALESCE(shortName, -1) AS sid, COALESCE(demangledName, -1) AS did, "end" - start AS dur
    FROM CUPTI_ACTIVITY_KIND_KERNEL
),
per_pair AS (
    SELECT sid, did, count(*) AS n, sum(dur) AS ns, min(dur) AS lo, max(dur) AS hi FROM k GROUP BY sid, did
)
SELECT c.category, c.short_name, sum(p.n) AS instances, sum(p.ns) AS total_ns, min(p.lo) AS min_ns,
       max(p.hi) AS max_ns
FROM per_pair AS p
JOIN c ON c.sid = p.sid AND c.did = p.did
GROUP BY c.category, c.short_name
