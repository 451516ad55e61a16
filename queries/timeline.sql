-- name: timeline
-- version: 4
-- returns: kernels, memcpys, memsets and (when nvtx_lanes is true) NVTX ranges and marks on one clock, ordered by start: kind ('kernel', 'memcpy', 'memset', 'graph' = one execution of a CUDA graph traced whole, named 'graph <graphId>', 'nvtx'), start_ns and end_ns relative to the trace start t0, duration_ns, name (kernel short name, "<unresolved id N>" / "<null name id>" as in census, copy kind label, 'memset', or NVTX text), device_id, stream_id, copy_kind, bytes, throughput_gbps (bytes per ns = GB/s). Events overlapping the window [from_ns, to_ns) are kept; NULL bounds mean open.
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, shortName, deviceId, streamId), CUPTI_ACTIVITY_KIND_MEMCPY(start, end, bytes, copyKind, deviceId, streamId), CUPTI_ACTIVITY_KIND_MEMSET(start, end, bytes, deviceId, streamId), CUPTI_ACTIVITY_KIND_GRAPH_TRACE(start, end, graphId, deviceId, streamId), NVTX_EVENTS(start, end, eventType, text, textId, globalTid), StringIds(id, value), ENUM_CUDA_MEMCPY_OPER(id, label)
-- params: t0 (trace start, ns); from_ns (window start relative to t0, or NULL); to_ns (window end relative to t0, or NULL); nvtx_lanes (boolean); row_limit (integer)
-- dialect: duckdb
WITH events AS (
    SELECT
        'kernel' AS kind, k.start, k."end",
        nsysq_name_label(k.shortName, s.value) AS name,
        k.deviceId AS device_id, k.streamId AS stream_id,
        CAST(NULL AS VARCHAR) AS copy_kind, CAST(NULL AS BIGINT) AS bytes
    FROM CUPTI_ACTIVITY_KIND_KERNEL AS k
    LEFT JOIN StringIds AS s ON s.id = k.shortName
    UNION ALL
    SELECT
        'memcpy', m.start, m."end",
        'memcpy ' || COALESCE(e.label, 'copyKind=' || CAST(m.copyKind AS VARCHAR)),
        m.deviceId, m.streamId,
        COALESCE(e.label, 'copyKind=' || CAST(m.copyKind AS VARCHAR)), m.bytes
    FROM CUPTI_ACTIVITY_KIND_MEMCPY AS m
    LEFT JOIN ENUM_CUDA_MEMCPY_OPER AS e ON e.id = m.copyKind
    UNION ALL
    SELECT 'memset', z.start, z."end", 'memset', z.deviceId, z.streamId, NULL, z.bytes
    FROM CUPTI_ACTIVITY_KIND_MEMSET AS z
    UNION ALL  -- a CUDA graph traced whole: one row per execution (its kernels are not in the kernel table)
    SELECT 'graph', g.start, g."end", 'graph ' || CAST(g.graphId AS VARCHAR), g.deviceId, g.streamId, NULL, NULL
    FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE AS g
    UNION ALL
    SELECT
        'nvtx', n.start, COALESCE(n."end", n.start),
        COALESCE(n.text, t.value, '<unnamed range>'),
        NULL, NULL, NULL, NULL
    FROM NVTX_EVENTS AS n
    LEFT JOIN StringIds AS t ON t.id = n.textId
    WHERE $nvtx_lanes AND n.eventType IN (34, 59, 60)
)
SELECT
    kind,
    start - $t0 AS start_ns,
    "end" - $t0 AS end_ns,
    "end" - start AS duration_ns,
    name,
    device_id,
    stream_id,
    copy_kind,
    bytes,
    CASE WHEN bytes IS NOT NULL AND "end" > start THEN bytes / ("end" - start) END
        AS throughput_gbps
FROM events
WHERE ($to_ns IS NULL OR start - $t0 < $to_ns)
  AND ($from_ns IS NULL OR "end" - $t0 >= $from_ns)
ORDER BY start, kind, device_id, stream_id, "end", name, bytes  -- a total order: ranges may share a start
LIMIT $row_limit
