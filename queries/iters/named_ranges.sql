-- name: iters_named_ranges
-- version: 1
-- returns: the kept NVTX ranges named range_name: tid, dom, start, end, pushpop (kind = 'push/pop'); by thread, domain, start and rid. nsysq iters --nvtx NAME sums the GPU work of each thread's ranges from their launching calls (nsysq.iterations.launches: queries/iters/named.sql's gpu_ns without the NVTX attribution's pairs).
-- tables: nsysq_nvtx_ranges (queries/nvtx/ranges.sql)
-- params: range_name (the range name)
-- dialect: duckdb
SELECT tid, dom, start, "end", kind = 'push/pop' AS pushpop
FROM nsysq_nvtx_ranges
WHERE dropped IS NULL AND name = $range_name
ORDER BY tid, dom, start, rid
