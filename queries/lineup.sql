-- name: lineup
-- version: 4
-- returns: one row per category (category, instances, total_ns, avg_ns, min_ns, max_ns, share_pct, kernels = distinct short names, top_kernel = the short name with most time) sorted by total time; rows add up to the census totals. CUDA graphs traced whole (nsys --cuda-graph-trace=graph) add one row, category 'CUDA graph (traced whole)': instances = executions, kernels = distinct graphs, top_kernel = the 'graph <graphId>' with most time.
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, shortName, demangledName), CUPTI_ACTIVITY_KIND_GRAPH_TRACE(start, end, graphId), nsysq_kernel_category (temp table built by nsysq from queries/kernel_category.sql)
-- params: none
-- dialect: duckdb
-- Everything goes through a per-(name id pair) aggregate. No median: a category mixes different
-- kernels, so its median describes none of them (census and stakeout give per-kernel medians).
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
),
per_name AS (
    SELECT c.category, c.short_name, sum(p.n) AS n, sum(p.ns) AS ns, min(p.lo) AS lo, max(p.hi) AS hi
    FROM per_pair AS p JOIN c ON c.sid = p.sid AND c.did = p.did
    GROUP BY c.category, c.short_name
),
graphs AS (  -- CUDA graphs traced whole: their kernels are not in the kernel table
    SELECT 'CUDA graph (traced whole)' AS category, 'graph ' || CAST(graphId AS VARCHAR) AS short_name,
           count(*) AS n, sum("end" - start) AS ns, min("end" - start) AS lo, max("end" - start) AS hi
    FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE GROUP BY graphId
),
per_category AS (
    SELECT category, sum(n) AS instances, sum(ns) AS total_ns, min(lo) AS min_ns, max(hi) AS max_ns,
           count(*) AS kernels, arg_max(short_name, ns) AS top_kernel
    FROM (SELECT * FROM per_name UNION ALL SELECT * FROM graphs) GROUP BY category
),
grand AS (
    SELECT sum(total_ns) AS all_ns FROM per_category
)
SELECT
    p.category,
    p.instances,
    p.total_ns,
    p.total_ns / p.instances AS avg_ns,
    p.min_ns,
    p.max_ns,
    CASE WHEN g.all_ns > 0 THEN 100.0 * p.total_ns / g.all_ns END AS share_pct,
    p.kernels,
    p.top_kernel
FROM per_category AS p
CROSS JOIN grand AS g
ORDER BY p.total_ns DESC, p.instances DESC, p.category
