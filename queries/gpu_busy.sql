-- name: gpu_busy
-- version: 1
-- returns: one row per deviceId with GPU ops: ops (kernels + memcpys + memsets with a start and an end), span_ns (first op start to last op end), busy_ns (length of the union of the op intervals; overlapping streams counted once), idle_ns = span_ns - busy_ns, idle_gaps. The same union as the device rows of queries/gaps.sql, without the causes: `nsysq diff` reads gpu_busy_ns and gpu_idle_ns from it. An op whose end is before its start counts as zero-length.
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId), CUPTI_ACTIVITY_KIND_MEMCPY(start, end, deviceId), CUPTI_ACTIVITY_KIND_MEMSET(start, end, deviceId)
-- params: none
-- dialect: duckdb
WITH raw_ops AS (
    SELECT deviceId AS dev, start AS s, "end" AS e FROM CUPTI_ACTIVITY_KIND_KERNEL
    UNION ALL
    SELECT deviceId, start, "end" FROM CUPTI_ACTIVITY_KIND_MEMCPY
    UNION ALL
    SELECT deviceId, start, "end" FROM CUPTI_ACTIVITY_KIND_MEMSET
),
ops AS (
    SELECT dev, s, greatest(e, s) AS e FROM raw_ops WHERE s IS NOT NULL AND e IS NOT NULL
),
-- Ops by start: the device is idle before an op that starts after every earlier op has ended.
marked AS (
    SELECT dev, s, e,
           max(e) OVER (PARTITION BY dev ORDER BY s, e
                        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
    FROM ops
)
SELECT
    dev AS device_id,
    count(*) AS ops,
    max(e) - min(s) AS span_ns,
    max(e) - min(s) - sum(CASE WHEN s > prev_end THEN s - prev_end ELSE 0 END) AS busy_ns,
    sum(CASE WHEN s > prev_end THEN s - prev_end ELSE 0 END) AS idle_ns,
    count(*) FILTER (WHERE s > prev_end) AS idle_gaps
FROM marked
GROUP BY dev
ORDER BY device_id NULLS LAST
