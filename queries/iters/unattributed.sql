-- name: iters_unattributed
-- version: 1
-- returns: one row: ops and gpu_ns of the GPU ops with a start and an end (kernels, memcpys, memsets, whole-graph executions) whose launch is in no iteration (not in nsysq_iter_launches): work before the first iteration, after the last, between them, or launched from another thread. nsysq iters counts it in its footer.
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, globalPid, correlationId), CUPTI_ACTIVITY_KIND_MEMCPY(start, end, globalPid, correlationId), CUPTI_ACTIVITY_KIND_MEMSET(start, end, globalPid, correlationId), CUPTI_ACTIVITY_KIND_GRAPH_TRACE(start, end, globalPid, correlationId), nsysq_iter_launches (queries/iters/nvtx_launches.sql or period_launches.sql)
-- params: none
-- dialect: duckdb
WITH ops AS (
    SELECT start, "end", globalPid, correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL
    UNION ALL
    SELECT start, "end", globalPid, correlationId FROM CUPTI_ACTIVITY_KIND_MEMCPY
    UNION ALL
    SELECT start, "end", globalPid, correlationId FROM CUPTI_ACTIVITY_KIND_MEMSET
    UNION ALL
    SELECT start, "end", globalPid, correlationId FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE
)
SELECT count(*) AS ops, COALESCE(sum(greatest(o."end" - o.start, 0)), 0) AS gpu_ns
FROM ops AS o
WHERE o.start IS NOT NULL AND o."end" IS NOT NULL
  AND NOT EXISTS (
      SELECT 1 FROM nsysq_iter_launches AS l
      WHERE l.globalPid = o.globalPid AND l.correlationId = o.correlationId
  )
