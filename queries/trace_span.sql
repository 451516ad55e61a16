-- name: trace_span
-- version: 2
-- returns: one row: t0 (the earliest start among kernels, memcpys, memsets, whole-graph executions and CUDA API calls, ns), t_end (the latest end), span_ns = t_end - t0. NULLs when the trace holds none of them.
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end), CUPTI_ACTIVITY_KIND_MEMCPY(start, end), CUPTI_ACTIVITY_KIND_MEMSET(start, end), CUPTI_ACTIVITY_KIND_GRAPH_TRACE(start, end), CUPTI_ACTIVITY_KIND_RUNTIME(start, end)
-- params: none
-- dialect: portable
WITH b AS (
    SELECT min(start) AS lo, max("end") AS hi FROM CUPTI_ACTIVITY_KIND_KERNEL
    UNION ALL SELECT min(start), max("end") FROM CUPTI_ACTIVITY_KIND_MEMCPY
    UNION ALL SELECT min(start), max("end") FROM CUPTI_ACTIVITY_KIND_MEMSET
    UNION ALL SELECT min(start), max("end") FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE
    UNION ALL SELECT min(start), max("end") FROM CUPTI_ACTIVITY_KIND_RUNTIME
)
SELECT min(lo) AS t0, max(hi) AS t_end, max(hi) - min(lo) AS span_ns FROM b
