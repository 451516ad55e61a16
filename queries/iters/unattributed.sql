-- name: iters_unattributed
-- version: 1
-- returns: one row: ops and gpu_ns of the GPU ops with a start and an end (kernels, memcpys, memsets, whole-graph executions) whose launch is in no iteration (not in nsysq_iter_launches): work before the first iteration, after the last, between them, or launched from another thread; and of those, during_ops and during_gpu_ns: the ones whose launching call (eventClass 0 or 1, same correlationId and process) started inside an iteration's window [starts[i], ends[i]] (ascending starts) on any thread, such as the backward pass PyTorch's autograd thread launches during a ProfilerStep. nsysq iters counts them in its footer.
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, globalPid, correlationId), CUPTI_ACTIVITY_KIND_MEMCPY(start, end, globalPid, correlationId), CUPTI_ACTIVITY_KIND_MEMSET(start, end, globalPid, correlationId), CUPTI_ACTIVITY_KIND_GRAPH_TRACE(start, end, globalPid, correlationId), CUPTI_ACTIVITY_KIND_RUNTIME(start, eventClass, globalTid, correlationId), nsysq_iter_launches (queries/iters/nvtx_launches.sql or period_launches.sql)
-- params: starts (list: the iterations' starts, ascending); ends (list: their ends)
-- dialect: duckdb
WITH ops AS (
    SELECT start, "end", globalPid, correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL
    UNION ALL
    SELECT start, "end", globalPid, correlationId FROM CUPTI_ACTIVITY_KIND_MEMCPY
    UNION ALL
    SELECT start, "end", globalPid, correlationId FROM CUPTI_ACTIVITY_KIND_MEMSET
    UNION ALL
    SELECT start, "end", globalPid, correlationId FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE
),
left_out AS (
    SELECT o.start, o."end", o.globalPid, o.correlationId
    FROM ops AS o
    WHERE o.start IS NOT NULL AND o."end" IS NOT NULL
      AND NOT EXISTS (
          SELECT 1 FROM nsysq_iter_launches AS l
          WHERE l.globalPid = o.globalPid AND l.correlationId = o.correlationId
      )
),
calls AS (
    SELECT DISTINCT globalTid & ~CAST(16777215 AS BIGINT) AS pid, correlationId, start AS cs
    FROM CUPTI_ACTIVITY_KIND_RUNTIME
    WHERE eventClass IN (0, 1) AND correlationId IS NOT NULL
),
windows AS (
    SELECT unnest($starts) AS ws, unnest($ends) AS we
),
launched AS (
    SELECT x.*, c.cs FROM left_out AS x
    LEFT JOIN calls AS c ON c.pid = x.globalPid AND c.correlationId = x.correlationId
),
during AS (
    SELECT l.start, l."end" FROM launched AS l
    ASOF JOIN windows AS w ON l.cs >= w.ws
    WHERE l.cs <= w.we
)
SELECT (SELECT count(*) FROM left_out) AS ops,
       (SELECT COALESCE(sum(greatest("end" - start, 0)), 0) FROM left_out) AS gpu_ns,
       (SELECT count(*) FROM during) AS during_ops,
       (SELECT COALESCE(sum(greatest("end" - start, 0)), 0) FROM during) AS during_gpu_ns
