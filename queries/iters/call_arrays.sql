-- name: iters_call_arrays
-- version: 1
-- returns: the CUDA runtime and driver calls that can launch GPU work (eventClass 0 or 1, with a correlationId and a thread), as the numeric columns nsysq iters reads (nsysq.iterations.launches): tid (globalTid), k (the launch's key: process number, globalTid >> 24, times 2^32 plus the correlationId; NULL when either does not fit, below 2^31 and 2^32), s, e (the call's start and end). The calls of queries/nvtx/ops.sql's join.
-- tables: CUPTI_ACTIVITY_KIND_RUNTIME(start, end, eventClass, globalTid, correlationId)
-- params: none
-- dialect: duckdb
SELECT
    globalTid AS tid,
    CASE
        WHEN globalTid >= 0 AND globalTid >> 24 < 2147483648 AND correlationId >= 0
             AND correlationId < 4294967296
        THEN ((globalTid >> 24) << 32) | CAST(correlationId AS BIGINT)
    END AS k,
    start AS s,
    "end" AS e
FROM CUPTI_ACTIVITY_KIND_RUNTIME
WHERE eventClass IN (0, 1) AND correlationId IS NOT NULL AND globalTid IS NOT NULL
