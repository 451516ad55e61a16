-- name: iters_op_arrays
-- version: 1
-- returns: every GPU operation (kernels, memcpys, memsets, whole-graph executions, as queries/nvtx/ops.sql), as the numeric columns nsysq iters reads (nsysq.iterations.launches): pid (globalPid), corr (correlationId), gs, ge (its GPU start and end; any may be NULL).
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, correlationId, globalPid), CUPTI_ACTIVITY_KIND_MEMCPY(start, end, correlationId, globalPid), CUPTI_ACTIVITY_KIND_MEMSET(start, end, correlationId, globalPid), CUPTI_ACTIVITY_KIND_GRAPH_TRACE(start, end, correlationId, globalPid)
-- params: none
-- dialect: duckdb
SELECT globalPid AS pid, correlationId AS corr, start AS gs, "end" AS ge FROM CUPTI_ACTIVITY_KIND_KERNEL
UNION ALL
SELECT globalPid, correlationId, start, "end" FROM CUPTI_ACTIVITY_KIND_MEMCPY
UNION ALL
SELECT globalPid, correlationId, start, "end" FROM CUPTI_ACTIVITY_KIND_MEMSET
UNION ALL
SELECT globalPid, correlationId, start, "end" FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE
