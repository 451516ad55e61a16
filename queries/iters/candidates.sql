-- name: iters_candidates
-- version: 1
-- returns: one row per candidate source of iterations among the kept NVTX ranges: the ranges of one name (every ProfilerStep#N counts as the one name 'ProfilerStep#N') at one nesting level on one thread and domain: tid, dom, domain, name, lvl, profiler (true for ProfilerStep#N), instances, overlaps (ranges of the group that start before the previous one ended), gpu_ns (the GPU time of the ops attributed to the group's ranges by launch attribution, each op once) and thread_gpu_ns (the GPU time of every op launched from the thread). nsysq iters picks its step ranges from these rows (docs/iters.md).
-- tables: nsysq_nvtx_ranges (queries/nvtx/ranges.sql), nsysq_nvtx_stack (queries/nvtx/stack.sql), nsysq_nvtx_pairs (queries/nvtx/pairs.sql), nsysq_nvtx_ops (queries/nvtx/ops.sql)
-- params: none
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
),
attributed AS (
    SELECT r.tid, r.dom, r.name, r.lvl, sum(o.ge - o.gs) AS gpu_ns
    FROM (SELECT DISTINCT r.tid, r.dom, r.name, r.lvl, p.oid
          FROM ranges AS r JOIN nsysq_nvtx_pairs AS p ON p.rid = r.rid) AS r
    JOIN nsysq_nvtx_ops AS o ON o.oid = r.oid
    GROUP BY ALL
),
threads AS (
    SELECT tid, sum(ge - gs) AS thread_gpu_ns FROM nsysq_nvtx_ops WHERE tid IS NOT NULL GROUP BY tid
)
SELECT g.tid, g.dom, g.domain, g.name, g.lvl, g.profiler, g.instances, g.overlaps,
       COALESCE(a.gpu_ns, 0) AS gpu_ns, COALESCE(t.thread_gpu_ns, 0) AS thread_gpu_ns
FROM grouped AS g
LEFT JOIN attributed AS a ON a.tid = g.tid AND a.dom = g.dom AND a.name = g.name AND a.lvl = g.lvl
LEFT JOIN threads AS t ON t.tid = g.tid
ORDER BY g.profiler DESC, gpu_ns DESC, g.lvl, g.instances, g.tid, g.dom, g.name
