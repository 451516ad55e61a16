-- name: scope_values
-- version: 1
-- returns: the devices, streams and processes that hold GPU work (kernels, memcpys, memsets, whole-graph executions): one row per (dimension, value) with dimension 'device' (deviceId), 'stream' (streamId) or 'pid' ((globalPid >> 24) & 0xFFFFFF, the operating-system pid) and ops = GPU ops on it. A --device/--stream/--pid scope must name one of them.
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(deviceId, streamId, globalPid), CUPTI_ACTIVITY_KIND_MEMCPY(deviceId, streamId, globalPid), CUPTI_ACTIVITY_KIND_MEMSET(deviceId, streamId, globalPid), CUPTI_ACTIVITY_KIND_GRAPH_TRACE(deviceId, streamId, globalPid)
-- params: none
-- dialect: duckdb
WITH ops AS (
    SELECT deviceId, streamId, globalPid, count(*) AS n FROM (
        SELECT deviceId, streamId, globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL
        UNION ALL SELECT deviceId, streamId, globalPid FROM CUPTI_ACTIVITY_KIND_MEMCPY
        UNION ALL SELECT deviceId, streamId, globalPid FROM CUPTI_ACTIVITY_KIND_MEMSET
        UNION ALL SELECT deviceId, streamId, globalPid FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE
    )
    GROUP BY deviceId, streamId, globalPid
)
SELECT 'device' AS dimension, deviceId AS value, sum(n) AS ops FROM ops WHERE deviceId IS NOT NULL GROUP BY deviceId
UNION ALL
SELECT 'stream', streamId, sum(n) FROM ops WHERE streamId IS NOT NULL GROUP BY streamId
UNION ALL
SELECT 'pid', (globalPid >> 24) & 16777215, sum(n) FROM ops WHERE globalPid IS NOT NULL GROUP BY (globalPid >> 24) & 16777215
ORDER BY 1, 2
