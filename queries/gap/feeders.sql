-- name: gap_feeders
-- version: 2
-- returns: one row per (device_id, thread): the host threads (globalTid) that feed each device, i.e. made a CUDA API call whose correlationId is that of one of the device's kernels, memcpys, memsets or whole-graph executions (the cudaGraphLaunch call), within the same process (globalTid >> 24 = globalPid >> 24; an op without globalPid matches by correlationId alone). `nsysq gaps` reads the idle time's causes from these threads' calls.
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(deviceId, correlationId, globalPid), CUPTI_ACTIVITY_KIND_MEMCPY(deviceId, correlationId, globalPid), CUPTI_ACTIVITY_KIND_MEMSET(deviceId, correlationId, globalPid), CUPTI_ACTIVITY_KIND_GRAPH_TRACE(deviceId, correlationId, globalPid), CUPTI_ACTIVITY_KIND_RUNTIME(globalTid, correlationId)
-- params: none
-- dialect: duckdb
WITH ops AS (
    SELECT deviceId AS dev, correlationId AS corr, globalPid >> 24 AS proc FROM CUPTI_ACTIVITY_KIND_KERNEL
    UNION ALL
    SELECT deviceId, correlationId, globalPid >> 24 FROM CUPTI_ACTIVITY_KIND_MEMCPY
    UNION ALL
    SELECT deviceId, correlationId, globalPid >> 24 FROM CUPTI_ACTIVITY_KIND_MEMSET
    UNION ALL
    SELECT deviceId, correlationId, globalPid >> 24 FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE
),
calls AS (
    SELECT globalTid AS tid, globalTid >> 24 AS proc, correlationId AS corr
    FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE globalTid IS NOT NULL
)
SELECT DISTINCT o.dev AS device_id, c.tid AS thread
FROM ops AS o JOIN calls AS c ON c.corr = o.corr
WHERE o.proc IS NULL OR o.proc = c.proc
ORDER BY device_id NULLS LAST, thread
