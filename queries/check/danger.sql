-- name: check_danger
-- version: 1
-- returns: nsysq check's rule danger: kernels the danger rules match (the first rule whose LIKE pattern matches the lower-cased short or demangled name, per rule field, wins: the test of nsysq diff's danger kernels, queries/diff/danger.sql), one row per danger kind and short name holding at least min_share_pct % of the kernel time in the window, longest first: kind, name, instances, total_ns, first_start_ns (its first launch, relative to t0), share_pct (of the kernel time in the window), devices (distinct deviceIds). Launches overlapping the window [from_ns, to_ns) are kept; NULL bounds mean open.
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, shortName, demangledName, deviceId), StringIds(id, value)
-- params: t0 (trace start, ns); from_ns (window start relative to t0, or NULL); to_ns (window end relative to t0, or NULL); min_share_pct (a kernel is reported from this share of kernel time, %); danger_kinds (list: each rule's kind); danger_fields (list: each rule's field, 'short' or 'demangled'); danger_patterns (list: each rule's lower-case LIKE pattern)
-- dialect: duckdb
-- The launches are grouped once, by name pair and device (millions of rows into a few groups);
-- the kernel time in the window and every later step read the groups.
WITH rules AS (
    SELECT i AS rule_order, $danger_kinds[i] AS kind, $danger_fields[i] AS field, $danger_patterns[i] AS pattern
    FROM range(1, len($danger_patterns) + 1) AS r(i)
),
k AS (
    SELECT
        shortName, demangledName, deviceId,
        count(*) AS instances, sum("end" - start) AS total_ns, min(start) AS first_start
    FROM CUPTI_ACTIVITY_KIND_KERNEL
    WHERE ($to_ns IS NULL OR start - $t0 < $to_ns) AND ($from_ns IS NULL OR "end" - $t0 >= $from_ns)
    GROUP BY ALL
),
grand AS (
    SELECT sum(total_ns) AS all_ns FROM k
),
pairs AS (
    SELECT
        shortName, demangledName, sum(instances) AS instances, sum(total_ns) AS total_ns,
        min(first_start) AS first_start, list(DISTINCT deviceId) AS devices
    FROM k
    GROUP BY shortName, demangledName
),
named AS (
    SELECT p.*, nsysq_name_label(p.shortName, s.value) AS short_name, d.value AS demangled
    FROM pairs AS p
    LEFT JOIN StringIds AS s ON s.id = p.shortName
    LEFT JOIN StringIds AS d ON d.id = p.demangledName
),
matched AS (
    SELECT n.shortName, n.demangledName, arg_min(r.kind, r.rule_order) AS kind
    FROM named AS n
    JOIN rules AS r
        ON (CASE r.field WHEN 'demangled' THEN lower(n.demangled) ELSE lower(n.short_name) END) LIKE r.pattern
    GROUP BY n.shortName, n.demangledName
),
per_kind AS (
    SELECT
        m.kind, n.short_name AS name, sum(n.instances) AS instances, sum(n.total_ns) AS total_ns,
        min(n.first_start) AS first_start, list_sort(list_distinct(flatten(list(n.devices)))) AS devices
    FROM matched AS m
    JOIN named AS n ON n.shortName IS NOT DISTINCT FROM m.shortName
        AND n.demangledName IS NOT DISTINCT FROM m.demangledName
    GROUP BY m.kind, n.short_name
)
SELECT
    p.kind, p.name, p.instances, p.total_ns, p.first_start - $t0 AS first_start_ns,
    100.0 * p.total_ns / g.all_ns AS share_pct, p.devices
FROM per_kind AS p
CROSS JOIN grand AS g
WHERE g.all_ns > 0 AND 100.0 * p.total_ns / g.all_ns >= $min_share_pct
ORDER BY p.total_ns DESC, p.instances DESC, p.kind, p.name
