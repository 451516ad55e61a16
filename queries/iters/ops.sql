-- name: iters_ops
-- version: 1
-- returns: one row per (iteration, GPU op with a start and an end) of the iterations' launches (nsysq_iter_launches): it, kind (0 kernel, 1 memcpy, 2 memset, 3 whole-graph execution, as queries/gpu_ops.sql), dev (deviceId, -1 when NULL), s, e (the start when the end is before it), sid and did (a kernel's shortName and demangledName ids, -1 otherwise), by iteration and start (so the interval sorts after it are of nearly sorted arrays). nsysq iters sums these per iteration (nsysq.iterations.table).
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, shortName, demangledName, globalPid, correlationId), CUPTI_ACTIVITY_KIND_MEMCPY(start, end, deviceId, globalPid, correlationId), CUPTI_ACTIVITY_KIND_MEMSET(start, end, deviceId, globalPid, correlationId), CUPTI_ACTIVITY_KIND_GRAPH_TRACE(start, end, deviceId, globalPid, correlationId), nsysq_iter_launches (queries/iters/nvtx_launches.sql or period_launches.sql)
-- params: none
-- dialect: duckdb
WITH ops AS (
    SELECT 0 AS kind, deviceId, start, "end", shortName, demangledName, globalPid, correlationId
    FROM CUPTI_ACTIVITY_KIND_KERNEL
    UNION ALL
    SELECT 1, deviceId, start, "end", NULL, NULL, globalPid, correlationId FROM CUPTI_ACTIVITY_KIND_MEMCPY
    UNION ALL
    SELECT 2, deviceId, start, "end", NULL, NULL, globalPid, correlationId FROM CUPTI_ACTIVITY_KIND_MEMSET
    UNION ALL
    SELECT 3, deviceId, start, "end", NULL, NULL, globalPid, correlationId FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE
)
SELECT l.it, o.kind, COALESCE(o.deviceId, -1) AS dev, o.start AS s, greatest(o."end", o.start) AS e,
       COALESCE(o.shortName, -1) AS sid, COALESCE(o.demangledName, -1) AS did
FROM ops AS o
JOIN nsysq_iter_launches AS l ON l.globalPid = o.globalPid AND l.correlationId = o.correlationId
WHERE o.start IS NOT NULL AND o."end" IS NOT NULL
ORDER BY l.it, o.start
