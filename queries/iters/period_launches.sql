-- name: iters_period_launches
-- version: 1
-- returns: the launches (globalPid, correlationId) of each period's GPU work and its position it (0-based): the kernels, memcpys, memsets and whole-graph executions of process pid on device dev that start in [starts[it + 1], ends[it + 1]) (the periods' windows, in time order, not overlapping). nsysq keeps it as the temp table nsysq_iter_launches.
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, deviceId, globalPid, correlationId), CUPTI_ACTIVITY_KIND_MEMCPY(start, deviceId, globalPid, correlationId), CUPTI_ACTIVITY_KIND_MEMSET(start, deviceId, globalPid, correlationId), CUPTI_ACTIVITY_KIND_GRAPH_TRACE(start, deviceId, globalPid, correlationId)
-- params: pid (globalPid); dev (deviceId); starts (list: window starts); ends (list: window ends)
-- dialect: duckdb
WITH windows AS (
    SELECT unnest($starts) AS ws, unnest($ends) AS we, unnest(range(len($starts))) AS it
),
ops AS (
    SELECT start, globalPid, correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE globalPid = $pid AND deviceId = $dev
    UNION ALL
    SELECT start, globalPid, correlationId FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE globalPid = $pid AND deviceId = $dev
    UNION ALL
    SELECT start, globalPid, correlationId FROM CUPTI_ACTIVITY_KIND_MEMSET WHERE globalPid = $pid AND deviceId = $dev
    UNION ALL
    SELECT start, globalPid, correlationId FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE WHERE globalPid = $pid AND deviceId = $dev
)
SELECT DISTINCT o.globalPid, o.correlationId, w.it
FROM ops AS o
ASOF JOIN windows AS w ON o.start >= w.ws
WHERE o.start < w.we AND o.correlationId IS NOT NULL
