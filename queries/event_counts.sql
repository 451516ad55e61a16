-- name: event_counts
-- version: 1
-- returns: one row of row counts: kernels, memcpys, memsets, nvtx_events, cuda_api_calls (CUPTI_ACTIVITY_KIND_RUNTIME rows of event class 0 runtime or 1 driver; class 67 backtrace rows duplicate them and are not counted).
-- tables: CUPTI_ACTIVITY_KIND_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET, NVTX_EVENTS, CUPTI_ACTIVITY_KIND_RUNTIME(eventClass)
-- params: none
-- dialect: portable
SELECT
    (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL) AS kernels,
    (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY) AS memcpys,
    (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMSET) AS memsets,
    (SELECT count(*) FROM NVTX_EVENTS) AS nvtx_events,
    (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass IN (0, 1)) AS cuda_api_calls
