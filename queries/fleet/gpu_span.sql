-- name: fleet_gpu_span
-- version: 1
-- returns: one row: gpu_start (the earliest start among kernels, memcpys and memsets, ns), gpu_end (the latest end), span_ns = gpu_end - gpu_start; NULLs when the trace holds none of them.
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end), CUPTI_ACTIVITY_KIND_MEMCPY(start, end), CUPTI_ACTIVITY_KIND_MEMSET(start, end)
-- params: none
-- dialect: portable
WITH b AS (
    SELECT min(start) AS lo, max("end") AS hi FROM CUPTI_ACTIVITY_KIND_KERNEL
    UNION ALL SELECT min(start), max("end") FROM CUPTI_ACTIVITY_KIND_MEMCPY
    UNION ALL SELECT min(start), max("end") FROM CUPTI_ACTIVITY_KIND_MEMSET
)
SELECT min(lo) AS gpu_start, max(hi) AS gpu_end, max(hi) - min(lo) AS span_ns FROM b
