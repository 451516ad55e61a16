-- name: iters_op_arrays
-- version: 1
-- returns: every GPU operation (kernels, memcpys, memsets, whole-graph executions, as queries/nvtx/ops.sql), as the numeric columns nsysq iters reads (nsysq.iterations.launches): k (its launch's key as queries/iters/call_arrays.sql makes it: globalPid >> 24 times 2^32 plus the correlationId; NULL when either is NULL, the globalPid has thread bits or an id does not fit: then no call matches it) and d (end - start, NULL when either is).
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, correlationId, globalPid), CUPTI_ACTIVITY_KIND_MEMCPY(start, end, correlationId, globalPid), CUPTI_ACTIVITY_KIND_MEMSET(start, end, correlationId, globalPid), CUPTI_ACTIVITY_KIND_GRAPH_TRACE(start, end, correlationId, globalPid)
-- params: none
-- dialect: duckdb
WITH ops AS (
    SELECT globalPid AS pid, correlationId AS corr, start AS gs, "end" AS ge FROM CUPTI_ACTIVITY_KIND_KERNEL
    UNION ALL
    SELECT globalPid, correlationId, start, "end" FROM CUPTI_ACTIVITY_KIND_MEMCPY
    UNION ALL
    SELECT globalPid, correlationId, start, "end" FROM CUPTI_ACTIVITY_KIND_MEMSET
    UNION ALL
    SELECT globalPid, correlationId, start, "end" FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE
)
SELECT
    CASE
        WHEN pid & 16777215 = 0 AND pid >= 0 AND pid >> 24 < 2147483648 AND corr >= 0 AND corr < 4294967296
        THEN ((pid >> 24) << 32) | CAST(corr AS BIGINT)
    END AS k,
    ge - gs AS d
FROM ops
