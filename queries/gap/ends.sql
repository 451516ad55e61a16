-- name: gap_ends
-- version: 1
-- returns: one row per listed idle gap (rank): the op that ended last before it (before_kind, before_name, before_stream: of the ops on the gap's device ending at the gap's start, the one that started last, kernels first on a tie) and the op that starts it (after_...: of the ops starting at the gap's end, the one that ends first, kernels first); kind 'kernel', 'memcpy', 'memset' or 'graph'; name: the kernel's short name (as census), 'memcpy <copy kind>', 'memset' or 'graph <graphId>'. NULLs where no op qualifies (a gap on ops without a deviceId).
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, streamId, shortName), CUPTI_ACTIVITY_KIND_MEMCPY(start, end, deviceId, streamId, copyKind), CUPTI_ACTIVITY_KIND_MEMSET(start, end, deviceId, streamId), CUPTI_ACTIVITY_KIND_GRAPH_TRACE(start, end, deviceId, streamId, graphId), StringIds(id, value), ENUM_CUDA_MEMCPY_OPER(id, label)
-- params: ranks (list: each listed gap's rank); devices (list: its deviceId); starts (list: its start, ns); ends (list: its end, ns)
-- dialect: duckdb
WITH top_gaps AS (
    SELECT $ranks[i] AS rank, $devices[i] AS dev, $starts[i] AS gs, $ends[i] AS ge
    FROM range(1, len($ranks) + 1) AS r(i)
),
gap_ends AS (
    SELECT dev, gs AS t FROM top_gaps UNION SELECT dev, ge FROM top_gaps
),
named_ops AS (
    SELECT 0 AS kind, k.deviceId AS dev, k.streamId AS stream, k.start AS s,
           greatest(k."end", k.start) AS e, k.shortName AS name_id
    FROM CUPTI_ACTIVITY_KIND_KERNEL AS k JOIN gap_ends AS g ON g.dev = k.deviceId AND g.t = k.start
    UNION
    SELECT 0, k.deviceId, k.streamId, k.start, greatest(k."end", k.start), k.shortName
    FROM CUPTI_ACTIVITY_KIND_KERNEL AS k
    JOIN gap_ends AS g ON g.dev = k.deviceId AND g.t = greatest(k."end", k.start)
    UNION
    SELECT 1, m.deviceId, m.streamId, m.start, greatest(m."end", m.start), m.copyKind
    FROM CUPTI_ACTIVITY_KIND_MEMCPY AS m JOIN gap_ends AS g ON g.dev = m.deviceId AND g.t = m.start
    UNION
    SELECT 1, m.deviceId, m.streamId, m.start, greatest(m."end", m.start), m.copyKind
    FROM CUPTI_ACTIVITY_KIND_MEMCPY AS m
    JOIN gap_ends AS g ON g.dev = m.deviceId AND g.t = greatest(m."end", m.start)
    UNION
    SELECT 2, z.deviceId, z.streamId, z.start, greatest(z."end", z.start), NULL
    FROM CUPTI_ACTIVITY_KIND_MEMSET AS z JOIN gap_ends AS g ON g.dev = z.deviceId AND g.t = z.start
    UNION
    SELECT 2, z.deviceId, z.streamId, z.start, greatest(z."end", z.start), NULL
    FROM CUPTI_ACTIVITY_KIND_MEMSET AS z
    JOIN gap_ends AS g ON g.dev = z.deviceId AND g.t = greatest(z."end", z.start)
    UNION
    SELECT 3, x.deviceId, x.streamId, x.start, greatest(x."end", x.start), x.graphId
    FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE AS x JOIN gap_ends AS g ON g.dev = x.deviceId AND g.t = x.start
    UNION
    SELECT 3, x.deviceId, x.streamId, x.start, greatest(x."end", x.start), x.graphId
    FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE AS x
    JOIN gap_ends AS g ON g.dev = x.deviceId AND g.t = greatest(x."end", x.start)
),
labelled_ops AS (
    SELECT o.kind, o.dev, o.stream, o.s, o.e,
           CASE o.kind
               WHEN 0 THEN nsysq_name_label(o.name_id, n.value)
               WHEN 1 THEN 'memcpy ' || COALESCE(x.label, 'copyKind=' || CAST(o.name_id AS VARCHAR))
               WHEN 3 THEN 'graph ' || CAST(o.name_id AS VARCHAR)
               ELSE 'memset' END AS name
    FROM named_ops AS o
    LEFT JOIN StringIds AS n ON o.kind = 0 AND n.id = o.name_id
    LEFT JOIN ENUM_CUDA_MEMCPY_OPER AS x ON o.kind = 1 AND x.id = o.name_id
),
before_op AS (
    SELECT g.rank, arg_max([o.kind::VARCHAR, o.name, o.stream::VARCHAR], [o.s, -o.kind]) AS op
    FROM top_gaps AS g JOIN labelled_ops AS o ON o.dev IS NOT DISTINCT FROM g.dev AND o.e = g.gs
    GROUP BY g.rank
),
after_op AS (
    SELECT g.rank, arg_min([o.kind::VARCHAR, o.name, o.stream::VARCHAR], [o.e, o.kind]) AS op
    FROM top_gaps AS g JOIN labelled_ops AS o ON o.dev IS NOT DISTINCT FROM g.dev AND o.s = g.ge
    GROUP BY g.rank
)
SELECT
    g.rank,
    ['kernel', 'memcpy', 'memset', 'graph'][b.op[1]::INTEGER + 1] AS before_kind,
    b.op[2] AS before_name, b.op[3]::BIGINT AS before_stream,
    ['kernel', 'memcpy', 'memset', 'graph'][a.op[1]::INTEGER + 1] AS after_kind,
    a.op[2] AS after_name, a.op[3]::BIGINT AS after_stream
FROM top_gaps AS g
LEFT JOIN before_op AS b ON b.rank = g.rank
LEFT JOIN after_op AS a ON a.rank = g.rank
ORDER BY g.rank
