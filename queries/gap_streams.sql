-- name: gap_streams
-- version: 2
-- returns: one row per (device_id, stream_id) with GPU ops: ops (kernels + memcpys + memsets + executions of CUDA graphs traced whole, with a start and an end), start_ns (first op start relative to t0), span_ns (first op start to last op end), busy_ns (length of the union of the stream's op intervals). An op whose end is before its start counts as zero-length.
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, streamId), CUPTI_ACTIVITY_KIND_MEMCPY(start, end, deviceId, streamId), CUPTI_ACTIVITY_KIND_MEMSET(start, end, deviceId, streamId), CUPTI_ACTIVITY_KIND_GRAPH_TRACE(start, end, deviceId, streamId)
-- params: t0 (trace start, ns)
-- dialect: duckdb
WITH raw_ops AS (
    SELECT deviceId AS dev, streamId AS stream, start AS s, "end" AS e FROM CUPTI_ACTIVITY_KIND_KERNEL
    UNION ALL
    SELECT deviceId, streamId, start, "end" FROM CUPTI_ACTIVITY_KIND_MEMCPY
    UNION ALL
    SELECT deviceId, streamId, start, "end" FROM CUPTI_ACTIVITY_KIND_MEMSET
    UNION ALL
    SELECT deviceId, streamId, start, "end" FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE
),
ops AS (
    SELECT dev, stream, s, greatest(e, s) AS e FROM raw_ops WHERE s IS NOT NULL AND e IS NOT NULL
),
-- Sorted by start, the stream is idle before an op that starts after every earlier op has ended.
marked AS (
    SELECT dev, stream, s, e,
           max(e) OVER (PARTITION BY dev, stream ORDER BY s, e
                        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
    FROM ops
)
SELECT
    dev AS device_id,
    stream AS stream_id,
    count(*) AS ops,
    min(s) - $t0 AS start_ns,
    max(e) - min(s) AS span_ns,
    max(e) - min(s) - sum(CASE WHEN s > prev_end THEN s - prev_end ELSE 0 END) AS busy_ns
FROM marked
GROUP BY dev, stream
ORDER BY device_id NULLS LAST, stream_id NULLS LAST
