-- name: gpu_ops
-- version: 2
-- returns: one row per GPU op with a start and an end: kind (0 kernel, 1 memcpy, 2 memset, 3 execution of a CUDA graph traced whole, CUPTI_ACTIVITY_KIND_GRAPH_TRACE, as in queries/gap/ops.sql), dev (deviceId; -1 when NULL), s (start), e (end; the start when the end is before it), sid and did (a kernel's shortName and demangledName ids, -1 when NULL or not a kernel). nsysq marks each kernel communication or compute, and its collective kind, by its name pair's row of queries/kernel/comm_pairs.sql; nsysq diff's GPU totals (nsysq.gputime.gpu_busy) and nsysq overlap are unions and intersections of these intervals per device (nsysq.gputime.intervals: starts and ends sorted). On a direct read of the export's pages the same rows are read from the decoded columns (graph executions from queries/gap/graph_ops.sql).
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, shortName, demangledName), CUPTI_ACTIVITY_KIND_MEMCPY(start, end, deviceId), CUPTI_ACTIVITY_KIND_MEMSET(start, end, deviceId), CUPTI_ACTIVITY_KIND_GRAPH_TRACE(start, end, deviceId)
-- params: none
-- dialect: duckdb
SELECT 0 AS kind, COALESCE(deviceId, -1) AS dev, start AS s, greatest("end", start) AS e,
       COALESCE(shortName, -1) AS sid, COALESCE(demangledName, -1) AS did
FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE start IS NOT NULL AND "end" IS NOT NULL
UNION ALL
SELECT 1, COALESCE(deviceId, -1), start, greatest("end", start), -1, -1
FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE start IS NOT NULL AND "end" IS NOT NULL
UNION ALL
SELECT 2, COALESCE(deviceId, -1), start, greatest("end", start), -1, -1
FROM CUPTI_ACTIVITY_KIND_MEMSET WHERE start IS NOT NULL AND "end" IS NOT NULL
UNION ALL
SELECT 3, COALESCE(deviceId, -1), start, greatest("end", start), -1, -1
FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE WHERE start IS NOT NULL AND "end" IS NOT NULL
