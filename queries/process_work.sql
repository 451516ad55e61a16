-- name: process_work
-- version: 1
-- returns: one row per process with GPU work: pid ((globalPid >> 24) & 0xFFFFFF, the operating-system pid; what --pid takes), kernels, kernel_ns (sum of kernel durations), memcpys, memsets, graph_executions (CUDA graphs traced whole), graph_ns, devices (the deviceIds it ran on, comma-separated). Rows add up to the trace's totals.
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, globalPid), CUPTI_ACTIVITY_KIND_MEMCPY(deviceId, globalPid), CUPTI_ACTIVITY_KIND_MEMSET(deviceId, globalPid), CUPTI_ACTIVITY_KIND_GRAPH_TRACE(start, end, deviceId, globalPid)
-- params: none
-- dialect: duckdb
WITH ops AS (
    SELECT 0 AS kind, globalPid, deviceId, "end" - start AS dur FROM CUPTI_ACTIVITY_KIND_KERNEL
    UNION ALL SELECT 1, globalPid, deviceId, NULL FROM CUPTI_ACTIVITY_KIND_MEMCPY
    UNION ALL SELECT 2, globalPid, deviceId, NULL FROM CUPTI_ACTIVITY_KIND_MEMSET
    UNION ALL SELECT 3, globalPid, deviceId, "end" - start FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE
)
SELECT
    (globalPid >> 24) & 16777215 AS pid,
    count(*) FILTER (WHERE kind = 0) AS kernels,
    COALESCE(sum(dur) FILTER (WHERE kind = 0), 0) AS kernel_ns,
    count(*) FILTER (WHERE kind = 1) AS memcpys,
    count(*) FILTER (WHERE kind = 2) AS memsets,
    count(*) FILTER (WHERE kind = 3) AS graph_executions,
    COALESCE(sum(dur) FILTER (WHERE kind = 3), 0) AS graph_ns,
    string_agg(DISTINCT CAST(deviceId AS VARCHAR), ',' ORDER BY CAST(deviceId AS VARCHAR)) AS devices
FROM ops
GROUP BY (globalPid >> 24) & 16777215
ORDER BY kernel_ns + graph_ns DESC, pid
