-- name: iters_fit_ranges
-- version: 1
-- returns: the kept NVTX ranges of the fit groups of nsysq_iter_groups (queries/iters/candidates.sql): g (the group's position among the fit groups ordered by tid, dom, name, lvl), tid, start, end, pushpop (kind = 'push/pop'); by group, start and rid. nsysq iters sums the GPU work of each group's launching calls from them (nsysq.iterations.launches: queries/iters/shares.sql's gpu_ns without the NVTX attribution's pairs).
-- tables: nsysq_iter_groups (queries/iters/candidates.sql), nsysq_nvtx_ranges (queries/nvtx/ranges.sql), nsysq_nvtx_stack (queries/nvtx/stack.sql)
-- params: none
-- dialect: duckdb
WITH fit AS (
    SELECT row_number() OVER (ORDER BY tid, dom, name, lvl) - 1 AS g, tid, dom, name, lvl
    FROM nsysq_iter_groups WHERE fit
)
SELECT f.g, r.tid, r.start, r."end", r.kind = 'push/pop' AS pushpop
FROM nsysq_nvtx_ranges AS r
JOIN nsysq_nvtx_stack AS s ON s.rid = r.rid
JOIN fit AS f ON f.tid = r.tid AND f.dom = r.dom AND f.name = r.name AND f.lvl = s.lvl
WHERE r.dropped IS NULL
ORDER BY f.g, r.start, r.rid
