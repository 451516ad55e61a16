-- name: iters_candidates
-- version: 1
-- returns: one row per candidate source of iterations among the kept NVTX ranges: the ranges of one name (every ProfilerStep#N counts as the one name 'ProfilerStep#N') at one nesting level on one thread and domain: tid, dom, domain, name, lvl, profiler (true for ProfilerStep#N), instances, overlaps (ranges of the group that start before an earlier one ended), fit (not profiler, at least min_instances instances and no overlaps: its share of the thread's GPU work decides, queries/iters/shares.sql). ProfilerStep#N groups first, most instances first. nsysq keeps it as the temp table nsysq_iter_groups.
-- tables: nsysq_nvtx_ranges (queries/nvtx/ranges.sql), nsysq_nvtx_stack (queries/nvtx/stack.sql)
-- params: min_instances (the fewest instances of a repeating range)
-- dialect: duckdb
WITH ranges AS (
    SELECT r.rid, r.tid, r.dom, r.domain, r.start, r."end", s.lvl,
           regexp_matches(r.name, '^ProfilerStep#[0-9]+$') AS profiler,
           CASE WHEN regexp_matches(r.name, '^ProfilerStep#[0-9]+$') THEN 'ProfilerStep#N' ELSE r.name END AS name
    FROM nsysq_nvtx_ranges AS r
    JOIN nsysq_nvtx_stack AS s ON s.rid = r.rid
    WHERE r.dropped IS NULL
),
grouped AS (
    SELECT tid, dom, domain, name, lvl, bool_or(profiler) AS profiler, count(*) AS instances,
           count(*) FILTER (WHERE overlapping) AS overlaps
    FROM (
        SELECT *, start < max("end") OVER (
            PARTITION BY tid, dom, name, lvl ORDER BY start, rid ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
        ) AS overlapping
        FROM ranges
    )
    GROUP BY ALL
)
SELECT *, NOT profiler AND instances >= $min_instances AND "overlaps" = 0 AS fit
FROM grouped
ORDER BY profiler DESC, instances DESC, lvl, tid, dom, name
