-- name: nvtx_ops
-- version: 2
-- returns: one row per GPU operation (kernels, memcpys, memsets, and executions of CUDA graphs traced whole, CUPTI_ACTIVITY_KIND_GRAPH_TRACE: one op launched by its cudaGraphLaunch call): oid (a row id), kind ('kernel', 'memcpy', 'memset', 'graph': an ENUM, one byte a row), gs and ge (its GPU start and end), pid (globalPid), corr (correlationId), and the CUDA runtime or driver call that launched it (eventClass 0 or 1, same correlationId, same process: eventClass-67 backtrace rows share the id and are not calls): tid (its thread), s and e (its start and end); tid, s and e are NULL when no call matches. nsysq keeps it as the temp table nsysq_nvtx_ops.
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, correlationId, globalPid), CUPTI_ACTIVITY_KIND_MEMCPY(start, end, correlationId, globalPid), CUPTI_ACTIVITY_KIND_MEMSET(start, end, correlationId, globalPid), CUPTI_ACTIVITY_KIND_GRAPH_TRACE(start, end, correlationId, globalPid), CUPTI_ACTIVITY_KIND_RUNTIME(start, end, eventClass, globalTid, correlationId)
-- params: none
-- dialect: duckdb
WITH gpu AS (
    SELECT 'kernel' AS kind, start, "end", correlationId, globalPid
    FROM CUPTI_ACTIVITY_KIND_KERNEL
    UNION ALL
    SELECT 'memcpy', start, "end", correlationId, globalPid
    FROM CUPTI_ACTIVITY_KIND_MEMCPY
    UNION ALL
    SELECT 'memset', start, "end", correlationId, globalPid
    FROM CUPTI_ACTIVITY_KIND_MEMSET
    UNION ALL
    SELECT 'graph', start, "end", correlationId, globalPid
    FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE
),
calls AS (
    SELECT correlationId, globalTid & ~CAST(16777215 AS BIGINT) AS pid, globalTid, start, "end"
    FROM CUPTI_ACTIVITY_KIND_RUNTIME
    WHERE eventClass IN (0, 1) AND correlationId IS NOT NULL
)
SELECT
    row_number() OVER () AS oid,
    CAST(g.kind AS ENUM('kernel', 'memcpy', 'memset', 'graph')) AS kind,
    g.start AS gs,
    g."end" AS ge,
    g.globalPid AS pid,
    g.correlationId AS corr,
    c.globalTid AS tid,
    c.start AS s,
    c."end" AS e
FROM gpu AS g
LEFT JOIN calls AS c ON c.correlationId = g.correlationId AND c.pid = g.globalPid
