-- name: iters_named
-- version: 1
-- returns: per thread and domain with kept NVTX ranges named range_name: tid, dom, instances, gpu_ns (the GPU time of the ops attributed to them by launch attribution, each op once); most GPU time first. nsysq iters --nvtx NAME takes the first thread.
-- tables: nsysq_nvtx_ranges (queries/nvtx/ranges.sql), nsysq_nvtx_pairs (queries/nvtx/pairs.sql), nsysq_nvtx_ops (queries/nvtx/ops.sql)
-- params: range_name (the range name)
-- dialect: duckdb
WITH named AS (
    SELECT rid, tid, dom FROM nsysq_nvtx_ranges WHERE dropped IS NULL AND name = $range_name
),
ops AS (
    SELECT DISTINCT n.tid, n.dom, p.oid FROM named AS n JOIN nsysq_nvtx_pairs AS p ON p.rid = n.rid
)
SELECT n.tid, n.dom, n.instances, COALESCE(g.gpu_ns, 0) AS gpu_ns
FROM (SELECT tid, dom, count(*) AS instances FROM named GROUP BY ALL) AS n
LEFT JOIN (
    SELECT x.tid, x.dom, sum(o.ge - o.gs) AS gpu_ns FROM ops AS x JOIN nsysq_nvtx_ops AS o ON o.oid = x.oid GROUP BY ALL
) AS g ON g.tid = n.tid AND g.dom = n.dom
ORDER BY gpu_ns DESC, n.instances DESC, n.tid, n.dom
