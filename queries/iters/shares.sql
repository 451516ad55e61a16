-- name: iters_shares
-- version: 1
-- returns: for each fit group of nsysq_iter_groups (queries/iters/candidates.sql): tid, dom, domain, name, lvl, instances, gpu_ns (the GPU time of the ops the NVTX attribution gives the group's ranges by launch attribution, each op once) and thread_gpu_ns (the GPU time of every op launched from the thread); the largest share gpu_ns / thread_gpu_ns first. nsysq iters takes the first whose share is over one half.
-- tables: nsysq_iter_groups (queries/iters/candidates.sql), nsysq_nvtx_ranges (queries/nvtx/ranges.sql), nsysq_nvtx_stack (queries/nvtx/stack.sql), nsysq_nvtx_pairs (queries/nvtx/pairs.sql), nsysq_nvtx_ops (queries/nvtx/ops.sql)
-- params: none
-- dialect: duckdb
WITH fit AS (
    SELECT tid, dom, domain, name, lvl, instances FROM nsysq_iter_groups WHERE fit
),
ranges AS (
    SELECT r.rid, f.tid, f.dom, f.name, f.lvl
    FROM nsysq_nvtx_ranges AS r
    JOIN nsysq_nvtx_stack AS s ON s.rid = r.rid
    JOIN fit AS f ON f.tid = r.tid AND f.dom = r.dom AND f.name = r.name AND f.lvl = s.lvl
    WHERE r.dropped IS NULL
),
attributed AS (
    SELECT a.tid, a.dom, a.name, a.lvl, sum(o.ge - o.gs) AS gpu_ns
    FROM (SELECT DISTINCT r.tid, r.dom, r.name, r.lvl, p.oid
          FROM ranges AS r JOIN nsysq_nvtx_pairs AS p ON p.rid = r.rid) AS a
    JOIN nsysq_nvtx_ops AS o ON o.oid = a.oid
    GROUP BY ALL
),
threads AS (
    SELECT tid, sum(ge - gs) AS thread_gpu_ns
    FROM nsysq_nvtx_ops WHERE tid IN (SELECT tid FROM fit) GROUP BY tid
)
SELECT f.tid, f.dom, f.domain, f.name, f.lvl, f.instances, COALESCE(a.gpu_ns, 0) AS gpu_ns,
       COALESCE(t.thread_gpu_ns, 0) AS thread_gpu_ns
FROM fit AS f
LEFT JOIN attributed AS a ON a.tid = f.tid AND a.dom = f.dom AND a.name = f.name AND a.lvl = f.lvl
LEFT JOIN threads AS t ON t.tid = f.tid
ORDER BY COALESCE(a.gpu_ns, 0) / greatest(COALESCE(t.thread_gpu_ns, 0), 1) DESC, f.lvl, f.instances,
         f.tid, f.dom, f.name
