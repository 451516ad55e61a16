-- name: gaps
-- version: 2
-- returns: GPU busy and idle time, one result in two sections told apart by `section` (per stream: queries/gap_streams.sql). 'device': one row per deviceId: ops (kernels + memcpys + memsets + executions of CUDA graphs traced whole, CUPTI_ACTIVITY_KIND_GRAPH_TRACE, named 'graph <graphId>'), start_ns (first op start relative to t0), span_ns (first op start to last op end), busy_ns (length of the union of the op intervals; overlapping streams counted once), idle_ns = span_ns - busy_ns, idle_gaps (maximal idle intervals inside the span), feeding_threads (host threads whose CUDA API calls launched the device's ops, from queries/gap_feeders.sql), and idle time by cause: host_wait_ns + launch_bound_ns + host_busy_ns + unknown_ns = idle_ns (rules in docs/gaps.md). 'gap': the top idle gaps of at least min_gap ns, longest first: device_id, rank, start_ns, gap_ns, the same four cause columns (adding up to gap_ns) and cause (the one with most time), the op that ended last before the gap and the op that starts it (kind, name, stream). Ops with a NULL start or end are left out and counted in skipped_ops (device rows); an op whose end is before its start counts as zero-length.
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, streamId, shortName), CUPTI_ACTIVITY_KIND_MEMCPY(start, end, deviceId, streamId, copyKind), CUPTI_ACTIVITY_KIND_MEMSET(start, end, deviceId, streamId), CUPTI_ACTIVITY_KIND_GRAPH_TRACE(start, end, deviceId, streamId, graphId), CUPTI_ACTIVITY_KIND_RUNTIME(start, end, globalTid, nameId), StringIds(id, value), ENUM_CUDA_MEMCPY_OPER(id, label)
-- params: t0 (trace start, ns); feeder_devices (list: device of each feeding thread, from queries/gap_feeders.sql); feeder_threads (list: its globalTid); top (integer: how many gaps to list); min_gap (integer ns: shortest gap listed); call_causes (list: the cause of each API-call rule, 'host_wait' or 'launch_bound'); call_patterns (list: the LIKE pattern of each rule, on the lower-cased call name, first match wins)
-- dialect: duckdb
WITH raw_ops AS (
    SELECT 0 AS kind, deviceId AS dev, streamId AS stream, start AS s, "end" AS e
    FROM CUPTI_ACTIVITY_KIND_KERNEL
    UNION ALL
    SELECT 1, deviceId, streamId, start, "end" FROM CUPTI_ACTIVITY_KIND_MEMCPY
    UNION ALL
    SELECT 2, deviceId, streamId, start, "end" FROM CUPTI_ACTIVITY_KIND_MEMSET
    UNION ALL
    SELECT 3, deviceId, streamId, start, "end" FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE
),
ops AS (
    SELECT kind, dev, stream, s, greatest(e, s) AS e
    FROM raw_ops WHERE s IS NOT NULL AND e IS NOT NULL
),
-- Idle gaps: ops by start; a gap opens where an op starts after every earlier op has ended.
dev_marked AS (
    SELECT dev, s, max(e) OVER (PARTITION BY dev ORDER BY s, e
                                ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
    FROM ops
),
gap_list AS MATERIALIZED (
    SELECT dev, prev_end AS gs, s AS ge FROM dev_marked WHERE s > prev_end
),
dev_ops AS MATERIALIZED (
    SELECT dev, count(*) AS n_ops, min(s) AS first_s, max(e) AS last_e FROM ops GROUP BY dev
),
-- Host threads feeding each device (queries/gap_feeders.sql), passed in as two lists.
calls AS (
    SELECT globalTid AS tid, nameId, start AS s, "end" AS e
    FROM CUPTI_ACTIVITY_KIND_RUNTIME
    WHERE start IS NOT NULL AND "end" IS NOT NULL AND globalTid IS NOT NULL
),
feeders AS (
    SELECT $feeder_devices[i] AS dev, $feeder_threads[i] AS tid
    FROM range(1, len($feeder_threads) + 1) AS r(i)
),
rules AS (
    SELECT i AS rule_order, $call_causes[i] AS cause, $call_patterns[i] AS pattern
    FROM range(1, len($call_patterns) + 1) AS r(i)
),
call_names AS (
    SELECT DISTINCT nameId FROM calls WHERE tid IN (SELECT tid FROM feeders)
),
call_class AS (
    SELECT n.nameId, arg_min(r.cause, r.rule_order) AS cause
    FROM call_names AS n
    JOIN StringIds AS sid ON sid.id = n.nameId
    JOIN rules AS r ON lower(sid.value) LIKE r.pattern
    GROUP BY n.nameId
),
-- Each classified call once per device its thread feeds, through maps from thread to devices
-- and from name to class (a handful of keys each: no hash join over the calls).
feeder_map AS (
    SELECT map(list(tid), list(devs)) AS devs_of
    FROM (SELECT tid, list(dev) AS devs FROM feeders GROUP BY tid)
),
class_map AS (
    SELECT map(list(nameId), list(cause)) AS cause_of FROM call_class
),
host_calls AS (
    SELECT unnest(m.devs_of[c.tid]) AS dev, c.s, c.e, k.cause_of[c.nameId] AS cause
    FROM calls AS c, feeder_map AS m, class_map AS k
    -- a thread feeding no device has no entry (unnest(NULL) gives no row), nor an unclassified call
    WHERE c.e > c.s AND k.cause_of[c.nameId] IS NOT NULL
),
-- Calls meet gaps by a hash join on time buckets as wide as the mean distance between gaps:
-- each gap and each call is listed under every bucket it touches (a gap in about 2, a call in
-- 1 + its length / the width, after cutting it to the stretch of time the gaps cover), and each
-- (call, gap) pair that overlaps keeps the call's part inside the gap.
bucket AS (  -- NULLs when there is no gap: then no call is bucketed at all
    SELECT (max(ge) - min(gs)) // count(*) + 1 AS w, min(gs) AS lo, max(ge) AS hi FROM gap_list
),
gap_buckets AS (
    SELECT g.dev, g.gs, g.ge, unnest(range(g.gs // b.w, (g.ge - 1) // b.w + 1)) AS bucket
    FROM gap_list AS g, bucket AS b
),
cut_calls AS (  -- a call outside the gaps' stretch is cut to nothing: an empty range below
    SELECT c.dev, greatest(c.s, b.lo) AS s, least(c.e, b.hi) AS e, c.cause, b.w
    FROM host_calls AS c, bucket AS b
),
call_buckets AS (
    SELECT dev, s, e, cause, unnest(range(s // w, (e - 1) // w + 1)) AS bucket FROM cut_calls
),
idle_calls AS (
    SELECT DISTINCT c.dev, greatest(c.s, g.gs) AS s, least(c.e, g.ge) AS e, c.cause
    FROM call_buckets AS c
    JOIN gap_buckets AS g ON g.dev = c.dev AND g.bucket = c.bucket
    WHERE c.s < g.ge AND c.e > g.gs
),
-- One sweep per device over gap and classified-call boundaries: each stretch between two
-- consecutive boundaries lies in at most one gap and has one host state.
events AS (
    SELECT dev, gs AS t, 1 AS d_gap, 1 AS opens, 0 AS d_launch, 0 AS d_wait FROM gap_list
    UNION ALL SELECT dev, ge, -1, 0, 0, 0 FROM gap_list
    UNION ALL
    SELECT dev, s, 0, 0, CASE WHEN cause = 'launch_bound' THEN 1 ELSE 0 END,
           CASE WHEN cause = 'host_wait' THEN 1 ELSE 0 END
    FROM idle_calls
    UNION ALL
    SELECT dev, e, 0, 0, CASE WHEN cause = 'launch_bound' THEN -1 ELSE 0 END,
           CASE WHEN cause = 'host_wait' THEN -1 ELSE 0 END
    FROM idle_calls
),
boundaries AS (
    SELECT dev, t, sum(d_gap) AS d_gap, sum(opens) AS opens, sum(d_launch) AS d_launch,
           sum(d_wait) AS d_wait
    FROM events GROUP BY dev, t
),
swept AS (
    SELECT dev, t,
           lead(t) OVER (PARTITION BY dev ORDER BY t) AS t_next,
           sum(d_gap) OVER w AS in_gap,
           sum(d_launch) OVER w AS launching,
           sum(d_wait) OVER w AS waiting,
           max(CASE WHEN opens > 0 THEN t END) OVER w AS gap_start
    FROM boundaries
    WINDOW w AS (PARTITION BY dev ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
),
gap_causes AS MATERIALIZED (
    SELECT dev, gap_start AS gs,
           sum(CASE WHEN launching > 0 THEN t_next - t ELSE 0 END) AS launch_ns,
           sum(CASE WHEN launching <= 0 AND waiting > 0 THEN t_next - t ELSE 0 END) AS wait_ns
    FROM swept WHERE in_gap > 0 AND t_next IS NOT NULL
    GROUP BY dev, gap_start
),
gap_rows AS MATERIALIZED (
    SELECT g.dev, g.gs, g.ge, g.ge - g.gs AS gap_ns,
           CASE WHEN f.dev IS NULL THEN 0 ELSE COALESCE(c.wait_ns, 0) END AS host_wait_ns,
           CASE WHEN f.dev IS NULL THEN 0 ELSE COALESCE(c.launch_ns, 0) END AS launch_bound_ns,
           CASE WHEN f.dev IS NULL THEN 0
                ELSE g.ge - g.gs - COALESCE(c.wait_ns, 0) - COALESCE(c.launch_ns, 0) END AS host_busy_ns,
           CASE WHEN f.dev IS NULL THEN g.ge - g.gs ELSE 0 END AS unknown_ns
    FROM gap_list AS g
    LEFT JOIN gap_causes AS c ON c.dev IS NOT DISTINCT FROM g.dev AND c.gs = g.gs
    LEFT JOIN (SELECT DISTINCT dev FROM feeders) AS f ON f.dev IS NOT DISTINCT FROM g.dev
),
skipped AS (
    SELECT dev, count(*) AS n FROM raw_ops WHERE s IS NULL OR e IS NULL GROUP BY dev
),
dev_gaps AS (
    SELECT dev, count(*) AS n_gaps, sum(gap_ns) AS idle, sum(host_wait_ns) AS host_wait_ns,
           sum(launch_bound_ns) AS launch_bound_ns, sum(host_busy_ns) AS host_busy_ns,
           sum(unknown_ns) AS unknown_ns
    FROM gap_rows GROUP BY dev
),
dev_feeders AS (
    SELECT dev, count(*) AS n FROM feeders GROUP BY dev
),
top_gaps AS (
    SELECT *, row_number() OVER (ORDER BY gap_ns DESC, dev NULLS LAST, gs) AS rank
    FROM gap_rows WHERE gap_ns >= $min_gap
    QUALIFY rank <= $top
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
    'device' AS section, d.dev AS device_id, CAST(NULL AS BIGINT) AS stream_id,
    CAST(NULL AS BIGINT) AS rank, d.n_ops AS ops, COALESCE(k.n, 0) AS skipped_ops,
    d.first_s - $t0 AS start_ns, d.last_e - d.first_s AS span_ns,
    d.last_e - d.first_s - COALESCE(g.idle, 0) AS busy_ns, COALESCE(g.idle, 0) AS idle_ns,
    COALESCE(g.n_gaps, 0) AS idle_gaps, COALESCE(f.n, 0) AS feeding_threads,
    COALESCE(g.host_wait_ns, 0) AS host_wait_ns, COALESCE(g.launch_bound_ns, 0) AS launch_bound_ns,
    COALESCE(g.host_busy_ns, 0) AS host_busy_ns, COALESCE(g.unknown_ns, 0) AS unknown_ns,
    CAST(NULL AS BIGINT) AS gap_ns,
    CAST(NULL AS VARCHAR) AS before_kind, CAST(NULL AS VARCHAR) AS before_name,
    CAST(NULL AS BIGINT) AS before_stream, CAST(NULL AS VARCHAR) AS after_kind,
    CAST(NULL AS VARCHAR) AS after_name, CAST(NULL AS BIGINT) AS after_stream
FROM dev_ops AS d
LEFT JOIN dev_gaps AS g ON g.dev IS NOT DISTINCT FROM d.dev
LEFT JOIN dev_feeders AS f ON f.dev IS NOT DISTINCT FROM d.dev
LEFT JOIN skipped AS k ON k.dev IS NOT DISTINCT FROM d.dev
UNION ALL
SELECT
    'gap', g.dev, NULL, g.rank, NULL, NULL, g.gs - $t0, NULL, NULL, NULL, NULL, NULL,
    g.host_wait_ns, g.launch_bound_ns, g.host_busy_ns, g.unknown_ns, g.gap_ns,
    ['kernel', 'memcpy', 'memset', 'graph'][b.op[1]::INTEGER + 1], b.op[2], b.op[3]::BIGINT,
    ['kernel', 'memcpy', 'memset', 'graph'][a.op[1]::INTEGER + 1], a.op[2], a.op[3]::BIGINT
FROM top_gaps AS g
LEFT JOIN before_op AS b ON b.rank = g.rank
LEFT JOIN after_op AS a ON a.rank = g.rank
ORDER BY section, device_id NULLS LAST, rank
