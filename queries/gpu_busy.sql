-- name: gpu_busy
-- version: 1
-- returns: one row per deviceId with GPU ops, for nsysq diff's totals: ops (kernels + memcpys + memsets with a start and an end), span_ns (first op start to last op end), busy_ns (length of the union of the op intervals; overlapping streams counted once), idle_ns = span_ns - busy_ns, idle_gaps (the same unions as the device rows of queries/gaps.sql, without the causes); comm_ns (union of the communication kernels: lineup category $comm_category) and comm_exposed_ns (communication time during which no other kernel ran on the device: exposed_ns of queries/overlap.sql). One sort of the ops serves all three unions. An op whose end is before its start counts as zero-length.
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, shortName, demangledName), CUPTI_ACTIVITY_KIND_MEMCPY(start, end, deviceId), CUPTI_ACTIVITY_KIND_MEMSET(start, end, deviceId), nsysq_kernel_category (temp table built by nsysq from queries/kernel_category.sql)
-- params: comm_category (the lineup category of communication kernels)
-- dialect: duckdb
WITH pairs AS (
    SELECT COALESCE(shortName, -1) AS sid, COALESCE(demangledName, -1) AS did,
           bool_or(category = $comm_category) AS is_comm
    FROM nsysq_kernel_category GROUP BY shortName, demangledName
),
raw_ops AS (  -- kind 0: compute kernel, 1: communication kernel, 2: memcpy or memset
    SELECT CASE WHEN COALESCE(p.is_comm, false) THEN 1 ELSE 0 END AS kind,
           COALESCE(k.deviceId, -1) AS dev, k.start AS s, k."end" AS e
    FROM CUPTI_ACTIVITY_KIND_KERNEL AS k
    LEFT JOIN pairs AS p ON p.sid = COALESCE(k.shortName, -1) AND p.did = COALESCE(k.demangledName, -1)
    UNION ALL
    SELECT 2, COALESCE(deviceId, -1), start, "end" FROM CUPTI_ACTIVITY_KIND_MEMCPY
    UNION ALL
    SELECT 2, COALESCE(deviceId, -1), start, "end" FROM CUPTI_ACTIVITY_KIND_MEMSET
),
ops AS (
    SELECT kind, dev, s, greatest(e, s) AS e FROM raw_ops WHERE s IS NOT NULL AND e IS NOT NULL
),
-- Ops by start, with the latest end so far of every op, of communication and of compute kernels:
-- an idle gap (an island of one kind) begins where an op (of that kind) starts after it.
marked AS (
    SELECT kind, dev, s,
           max(e) OVER w AS prev_end,
           max(CASE WHEN kind = 1 THEN e END) OVER w AS prev_comm_end,
           max(CASE WHEN kind = 0 THEN e END) OVER w AS prev_compute_end
    FROM ops
    WINDOW w AS (PARTITION BY dev ORDER BY s, e ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
),
starts AS MATERIALIZED (
    SELECT kind, dev, s, prev_end, prev_comm_end, prev_compute_end FROM marked
    WHERE s > prev_end
       OR (kind = 1 AND (prev_comm_end IS NULL OR s > prev_comm_end))
       OR (kind = 0 AND (prev_compute_end IS NULL OR s > prev_compute_end))
),
dev_ops AS MATERIALIZED (
    SELECT dev, count(*) AS n_ops, min(s) AS first_s, max(e) AS last_e,
           max(e) FILTER (WHERE kind = 1) AS last_comm_e, max(e) FILTER (WHERE kind = 0) AS last_compute_e
    FROM ops GROUP BY dev
),
idle AS (
    SELECT dev, sum(s - prev_end) AS idle_ns, count(*) AS idle_gaps FROM starts WHERE s > prev_end GROUP BY dev
),
-- An island ends where the next island of its kind begins (the latest end before that start).
comm_islands AS (
    SELECT st.dev, st.s,
           COALESCE(lead(st.prev_comm_end) OVER (PARTITION BY st.dev ORDER BY st.s), d.last_comm_e) AS e
    FROM (SELECT * FROM starts WHERE kind = 1 AND (prev_comm_end IS NULL OR s > prev_comm_end)) AS st
    JOIN dev_ops AS d ON d.dev = st.dev
),
compute_islands AS (
    SELECT st.dev, st.s,
           COALESCE(lead(st.prev_compute_end) OVER (PARTITION BY st.dev ORDER BY st.s), d.last_compute_e) AS e
    FROM (SELECT * FROM starts WHERE kind = 0 AND (prev_compute_end IS NULL OR s > prev_compute_end)) AS st
    JOIN dev_ops AS d ON d.dev = st.dev
),
-- Compute coverage before each compute island: |compute ∩ (-inf, t)| = before + min(t - s, e - s).
compute_cover AS MATERIALIZED (
    SELECT dev, s, e,
           COALESCE(sum(e - s) OVER (PARTITION BY dev ORDER BY s
                                     ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before
    FROM compute_islands
),
probes AS (
    SELECT dev, s AS t, -1 AS sign FROM comm_islands UNION ALL SELECT dev, e, 1 FROM comm_islands
),
covered AS (
    SELECT p.dev,
           sum(p.sign * CASE WHEN c.s IS NULL THEN 0
                             ELSE c.before + least(p.t - c.s, c.e - c.s) END) AS overlap_ns
    FROM probes AS p ASOF LEFT JOIN compute_cover AS c ON c.dev = p.dev AND p.t >= c.s
    GROUP BY p.dev
),
comm AS (
    SELECT dev, sum(e - s) AS comm_ns FROM comm_islands GROUP BY dev
)
SELECT
    NULLIF(d.dev, -1) AS device_id,
    d.n_ops AS ops,
    d.last_e - d.first_s AS span_ns,
    d.last_e - d.first_s - COALESCE(i.idle_ns, 0) AS busy_ns,
    COALESCE(i.idle_ns, 0) AS idle_ns,
    COALESCE(i.idle_gaps, 0) AS idle_gaps,
    COALESCE(c.comm_ns, 0) AS comm_ns,
    COALESCE(c.comm_ns, 0) - COALESCE(o.overlap_ns, 0) AS comm_exposed_ns
FROM dev_ops AS d
LEFT JOIN idle AS i ON i.dev = d.dev
LEFT JOIN comm AS c ON c.dev = d.dev
LEFT JOIN covered AS o ON o.dev = d.dev
ORDER BY device_id NULLS LAST
