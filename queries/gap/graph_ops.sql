-- name: gap_graph_ops
-- version: 1
-- returns: the rows of queries/gap/ops.sql for executions of CUDA graphs traced whole (kind 3), for a direct read whose kernels, memcpys and memsets come from the decoded columns.
-- tables: CUPTI_ACTIVITY_KIND_GRAPH_TRACE(start, end, deviceId, streamId, correlationId, globalPid)
-- params: none
-- dialect: duckdb
SELECT 3 AS kind, deviceId AS dev, streamId AS stream, start AS s, "end" AS e, correlationId AS corr,
       globalPid AS pid
FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE
