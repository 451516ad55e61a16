-- name: lineup
-- version: 6
-- returns: one row per category (category, instances, total_ns, avg_ns, min_ns, max_ns, share_pct, kernels = distinct short names, top_kernel = the short name with most time, underfilled_pct = the share of the category's time spent in launches with fewer thread blocks than half the GPU's SMs (sm_fill_pct < 50; NULL when the export gives no SM count)) sorted by total time; rows add up to the census totals. CUDA graphs traced whole (nsys --cuda-graph-trace=graph) add one row, category 'CUDA graph (traced whole)': instances = executions, kernels = distinct graphs, top_kernel = the 'graph <graphId>' with most time, underfilled_pct NULL.
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, shortName, demangledName, gridX, gridY, gridZ, deviceId, globalPid), CUPTI_ACTIVITY_KIND_GRAPH_TRACE(start, end, graphId), nsysq_launch_devices (queries/launch/devices.sql), TARGET_INFO_GPU, TARGET_INFO_CUDA_GPU, TARGET_INFO_CUDA_DEVICE, nsysq_kernel_category (temp table built by nsysq from queries/kernel/category.sql)
-- params: none
-- dialect: duckdb
-- Everything goes through a per-(name id pair) aggregate. No median: a category mixes different
-- kernels, so its median describes none of them (census and stakeout give per-kernel medians).
WITH c AS (
    SELECT COALESCE(shortName, -1) AS sid, COALESCE(demangledName, -1) AS did, short_name, category
    FROM nsysq_kernel_category
),
k AS (
    SELECT
        COALESCE(k.shortName, -1) AS sid, COALESCE(k.demangledName, -1) AS did, k."end" - k.start AS dur,
        d.sms IS NOT NULL AS fill_known,
        COALESCE(nsysq_sm_fill_pct(nsysq_dims(k.gridX, k.gridY, k.gridZ), d.sms) < 50, false) AS underfilled
    FROM CUPTI_ACTIVITY_KIND_KERNEL AS k
    LEFT JOIN nsysq_launch_devices AS d
        ON d.global_pid IS NOT DISTINCT FROM k.globalPid AND d.device_id IS NOT DISTINCT FROM k.deviceId
),
per_pair AS (
    SELECT sid, did, count(*) AS n, sum(dur) AS ns, min(dur) AS lo, max(dur) AS hi,
           bool_or(fill_known) AS known, COALESCE(sum(dur) FILTER (WHERE underfilled), 0) AS under
    FROM k GROUP BY sid, did
),
per_name AS (
    SELECT c.category, c.short_name, sum(p.n) AS n, sum(p.ns) AS ns, min(p.lo) AS lo, max(p.hi) AS hi,
           bool_or(p.known) AS known, sum(p.under) AS under
    FROM per_pair AS p JOIN c ON c.sid = p.sid AND c.did = p.did
    GROUP BY c.category, c.short_name
),
graphs AS (  -- CUDA graphs traced whole: their kernels are not in the kernel table
    SELECT 'CUDA graph (traced whole)' AS category, 'graph ' || CAST(graphId AS VARCHAR) AS short_name,
           count(*) AS n, sum("end" - start) AS ns, min("end" - start) AS lo, max("end" - start) AS hi,
           false AS known, 0 AS under
    FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE GROUP BY graphId
),
per_category AS (
    SELECT category, sum(n) AS instances, sum(ns) AS total_ns, min(lo) AS min_ns, max(hi) AS max_ns,
           count(*) AS kernels, arg_max(short_name, ns) AS top_kernel,
           bool_or(known) AS known, sum(under) AS under
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
    p.top_kernel,
    CASE WHEN p.known AND p.total_ns > 0 THEN 100.0 * p.under / p.total_ns END AS underfilled_pct
FROM per_category AS p
CROSS JOIN grand AS g
ORDER BY p.total_ns DESC, p.instances DESC, p.category
