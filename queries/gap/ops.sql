-- name: gap_ops
-- version: 1
-- returns: one row per GPU op (kernels, memcpys, memsets and executions of CUDA graphs traced whole, CUPTI_ACTIVITY_KIND_GRAPH_TRACE): kind (0 kernel, 1 memcpy, 2 memset, 3 graph), dev (deviceId), stream (streamId), s (start), e (end), corr (correlationId), pid (globalPid), NULLs as recorded. `nsysq gaps` unions these intervals per device and per stream (nsysq.gputime.gap_unions; ops with a NULL start or end are counted as skipped) and finds the threads feeding each device by correlationId; on a direct read of the export's pages, kernels, memcpys and memsets come from the decoded columns and only the graph executions from this query (gap_graph_ops).
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, streamId, correlationId, globalPid), CUPTI_ACTIVITY_KIND_MEMCPY(start, end, deviceId, streamId, correlationId, globalPid), CUPTI_ACTIVITY_KIND_MEMSET(start, end, deviceId, streamId, correlationId, globalPid), CUPTI_ACTIVITY_KIND_GRAPH_TRACE(start, end, deviceId, streamId, correlationId, globalPid)
-- params: none
-- dialect: duckdb
SELECT 0 AS kind, deviceId AS dev, streamId AS stream, start AS s, "end" AS e, correlationId AS corr,
       globalPid AS pid
FROM CUPTI_ACTIVITY_KIND_KERNEL
UNION ALL
SELECT 1, deviceId, streamId, start, "end", correlationId, globalPid FROM CUPTI_ACTIVITY_KIND_MEMCPY
UNION ALL
SELECT 2, deviceId, streamId, start, "end", correlationId, globalPid FROM CUPTI_ACTIVITY_KIND_MEMSET
UNION ALL
SELECT 3, deviceId, streamId, start, "end", correlationId, globalPid FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE
