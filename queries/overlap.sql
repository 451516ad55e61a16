-- name: overlap
-- version: 1
-- returns: communication/compute and memcpy/compute overlap, in two sections told apart by `section`. 'device': one row per deviceId with kernels or memcpys: kernels, comm_kernels (kernels in the communication category of the lineup rules), comm_ns (length of the union of communication kernel intervals), compute_ns (union of every other kernel), overlap_ns (communication time during which a compute kernel ran on the same device), exposed_ns = comm_ns - overlap_ns, memcpys, memcpy_ns (union of memcpy intervals), memcpy_overlap_ns (memcpy time during which a compute kernel ran), memcpy_exposed_ns = memcpy_ns - memcpy_overlap_ns. 'collective': one row per (deviceId, collective kind of the communication kernel, read from its short name by the kind rules; 'unknown' when none matches): kernels, comm_ns, overlap_ns, exposed_ns. Ops with a NULL start or end are left out; an end before the start counts as zero-length.
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, shortName, demangledName), CUPTI_ACTIVITY_KIND_MEMCPY(start, end, deviceId), nsysq_kernel_category (temp table built by nsysq from queries/kernel_category.sql)
-- params: comm_category (the lineup category of communication kernels); kind_names (list: the collective kind of each rule); kind_patterns (list: the LIKE pattern of each rule, on the lower-cased short name, first match wins)
-- dialect: duckdb
WITH kind_rules AS (
    SELECT i AS rule_order, $kind_names[i] AS kind, $kind_patterns[i] AS pattern
    FROM range(1, len($kind_patterns) + 1) AS r(i)
),
pairs AS (
    SELECT COALESCE(c.shortName, -1) AS sid, COALESCE(c.demangledName, -1) AS did,
           c.category = $comm_category AS is_comm,
           CASE WHEN c.category = $comm_category
                THEN COALESCE(arg_min(r.kind, r.rule_order), 'unknown') END AS kind
    FROM nsysq_kernel_category AS c
    LEFT JOIN kind_rules AS r
        ON c.category = $comm_category AND lower(c.short_name) LIKE r.pattern
    GROUP BY c.shortName, c.demangledName, c.category
),
kern AS (
    SELECT COALESCE(k.deviceId, -1) AS dev, k.start AS s, greatest(k."end", k.start) AS e,
           p.is_comm, p.kind
    FROM CUPTI_ACTIVITY_KIND_KERNEL AS k
    JOIN pairs AS p ON p.sid = COALESCE(k.shortName, -1) AND p.did = COALESCE(k.demangledName, -1)
    WHERE k.start IS NOT NULL AND k."end" IS NOT NULL
),
copies AS (
    SELECT COALESCE(deviceId, -1) AS dev, start AS s, greatest("end", start) AS e
    FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE start IS NOT NULL AND "end" IS NOT NULL
),
-- Each interval set becomes its disjoint islands: sorted by start, an island begins where an
-- interval starts after every earlier one has ended, and ends where the next one begins.
compute_marked AS (
    SELECT dev, s, max(e) OVER (PARTITION BY dev ORDER BY s, e
                                ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
    FROM kern WHERE NOT is_comm
),
compute_islands AS MATERIALIZED (
    SELECT st.dev, st.s,
           COALESCE(lead(st.prev_end) OVER (PARTITION BY st.dev ORDER BY st.s), l.last_e) AS e
    FROM (SELECT * FROM compute_marked WHERE prev_end IS NULL OR s > prev_end) AS st
    JOIN (SELECT dev, max(e) AS last_e FROM kern WHERE NOT is_comm GROUP BY dev) AS l
        ON l.dev = st.dev
),
-- Compute coverage before each island: |compute ∩ (-inf, t)| = before + min(t - s, e - s).
compute_cover AS MATERIALIZED (
    SELECT dev, s, e,
           COALESCE(sum(e - s) OVER (PARTITION BY dev ORDER BY s
                                     ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before
    FROM compute_islands
),
comm_marked AS (
    SELECT dev, kind, s, e,
           max(e) OVER (PARTITION BY dev ORDER BY s, e
                        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end,
           max(e) OVER (PARTITION BY dev, kind ORDER BY s, e
                        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_kind_end
    FROM kern WHERE is_comm
),
comm_islands AS (
    SELECT st.dev, '' AS kind, st.s,
           COALESCE(lead(st.prev_end) OVER (PARTITION BY st.dev ORDER BY st.s), l.last_e) AS e
    FROM (SELECT * FROM comm_marked WHERE prev_end IS NULL OR s > prev_end) AS st
    JOIN (SELECT dev, max(e) AS last_e FROM comm_marked GROUP BY dev) AS l ON l.dev = st.dev
),
kind_islands AS (
    SELECT st.dev, st.kind, st.s,
           COALESCE(lead(st.prev_kind_end) OVER (PARTITION BY st.dev, st.kind ORDER BY st.s),
                    l.last_e) AS e
    FROM (SELECT * FROM comm_marked WHERE prev_kind_end IS NULL OR s > prev_kind_end) AS st
    JOIN (SELECT dev, kind, max(e) AS last_e FROM comm_marked GROUP BY dev, kind) AS l
        ON l.dev = st.dev AND l.kind = st.kind
),
copy_marked AS (
    SELECT dev, s, max(e) OVER (PARTITION BY dev ORDER BY s, e
                                ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
    FROM copies
),
copy_islands AS (
    SELECT st.dev, '~memcpy' AS kind, st.s,
           COALESCE(lead(st.prev_end) OVER (PARTITION BY st.dev ORDER BY st.s), l.last_e) AS e
    FROM (SELECT * FROM copy_marked WHERE prev_end IS NULL OR s > prev_end) AS st
    JOIN (SELECT dev, max(e) AS last_e FROM copies GROUP BY dev) AS l ON l.dev = st.dev
),
-- kind '' = all communication, '~memcpy' = memcpys, otherwise one collective kind.
islands AS (
    SELECT * FROM comm_islands UNION ALL SELECT * FROM kind_islands
    UNION ALL SELECT * FROM copy_islands
),
probes AS (
    SELECT dev, kind, s AS t, -1 AS sign FROM islands
    UNION ALL SELECT dev, kind, e, 1 FROM islands
),
covered AS (
    SELECT p.dev, p.kind,
           sum(p.sign * CASE WHEN c.s IS NULL THEN 0
                             ELSE c.before + least(p.t - c.s, c.e - c.s) END) AS overlap_ns
    FROM probes AS p ASOF LEFT JOIN compute_cover AS c ON c.dev = p.dev AND p.t >= c.s
    GROUP BY p.dev, p.kind
),
lengths AS (
    SELECT dev, kind, sum(e - s) AS ns FROM islands GROUP BY dev, kind
),
kernel_counts AS (
    SELECT dev, count(*) AS kernels, count(*) FILTER (WHERE is_comm) AS comm_kernels
    FROM kern GROUP BY dev
),
kind_counts AS (
    SELECT dev, kind, count(*) AS kernels FROM kern WHERE is_comm GROUP BY dev, kind
),
copy_counts AS (
    SELECT dev, count(*) AS memcpys FROM copies GROUP BY dev
),
compute_len AS (
    SELECT dev, sum(e - s) AS ns FROM compute_islands GROUP BY dev
),
devices AS (
    SELECT dev FROM kernel_counts UNION SELECT dev FROM copy_counts
)
SELECT
    'device' AS section, NULLIF(d.dev, -1) AS device_id, CAST(NULL AS VARCHAR) AS collective,
    COALESCE(k.kernels, 0) AS kernels, COALESCE(k.comm_kernels, 0) AS comm_kernels,
    COALESCE(cl.ns, 0) AS comm_ns, COALESCE(pl.ns, 0) AS compute_ns,
    COALESCE(co.overlap_ns, 0) AS overlap_ns,
    COALESCE(cl.ns, 0) - COALESCE(co.overlap_ns, 0) AS exposed_ns,
    COALESCE(m.memcpys, 0) AS memcpys, COALESCE(ml.ns, 0) AS memcpy_ns,
    COALESCE(mo.overlap_ns, 0) AS memcpy_overlap_ns,
    COALESCE(ml.ns, 0) - COALESCE(mo.overlap_ns, 0) AS memcpy_exposed_ns
FROM devices AS d
LEFT JOIN kernel_counts AS k ON k.dev = d.dev
LEFT JOIN copy_counts AS m ON m.dev = d.dev
LEFT JOIN compute_len AS pl ON pl.dev = d.dev
LEFT JOIN lengths AS cl ON cl.dev = d.dev AND cl.kind = ''
LEFT JOIN covered AS co ON co.dev = d.dev AND co.kind = ''
LEFT JOIN lengths AS ml ON ml.dev = d.dev AND ml.kind = '~memcpy'
LEFT JOIN covered AS mo ON mo.dev = d.dev AND mo.kind = '~memcpy'
UNION ALL
SELECT
    'collective', NULLIF(n.dev, -1), n.kind, n.kernels, n.kernels, l.ns, NULL,
    COALESCE(o.overlap_ns, 0), l.ns - COALESCE(o.overlap_ns, 0), NULL, NULL, NULL, NULL
FROM kind_counts AS n
JOIN lengths AS l ON l.dev = n.dev AND l.kind = n.kind
LEFT JOIN covered AS o ON o.dev = n.dev AND o.kind = n.kind
ORDER BY section DESC, device_id NULLS LAST, comm_ns DESC, collective
