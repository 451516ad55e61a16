-- name: export_launches
-- version: 1
-- returns: the CUDA API calls (runtime and driver; not the eventClass-67 backtrace rows) that launched a GPU operation in scope: a kernel, memcpy, memset or whole-graph execution with the same correlationId in the same process (globalPid >> 24 = globalTid >> 24; any process when the operation's globalPid is NULL). Columns: start, end (absolute ns), globalTid, correlationId, nameId, eventClass, returnValue. A scoped `nsysq export` (--device, --stream, --nvtx, --nvtx-like) writes these calls and no other; nsysq keeps it as the temp table nsysq_export_launches.
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(correlationId, globalPid), CUPTI_ACTIVITY_KIND_MEMCPY(correlationId, globalPid), CUPTI_ACTIVITY_KIND_MEMSET(correlationId, globalPid), CUPTI_ACTIVITY_KIND_GRAPH_TRACE(correlationId, globalPid), CUPTI_ACTIVITY_KIND_RUNTIME(start, end, eventClass, globalTid, correlationId, nameId, returnValue)
-- params: none
-- dialect: duckdb
WITH ops AS (
    SELECT correlationId, globalPid >> 24 AS process FROM CUPTI_ACTIVITY_KIND_KERNEL
    UNION
    SELECT correlationId, globalPid >> 24 FROM CUPTI_ACTIVITY_KIND_MEMCPY
    UNION
    SELECT correlationId, globalPid >> 24 FROM CUPTI_ACTIVITY_KIND_MEMSET
    UNION
    SELECT correlationId, globalPid >> 24 FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE
)
SELECT r.start, r."end", r.globalTid, r.correlationId, r.nameId, r.eventClass, r.returnValue
FROM CUPTI_ACTIVITY_KIND_RUNTIME AS r
WHERE (r.eventClass IS NULL OR r.eventClass <> 67)
  AND r.correlationId IS NOT NULL
  AND (
      EXISTS (
          SELECT 1 FROM ops AS o
          WHERE o.correlationId = r.correlationId AND o.process = r.globalTid >> 24
      )
      OR EXISTS (SELECT 1 FROM ops AS o WHERE o.correlationId = r.correlationId AND o.process IS NULL)
  )
