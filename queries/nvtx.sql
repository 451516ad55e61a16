-- name: nvtx
-- version: 2
-- returns: the rows of nsysq nvtx: one row per (domain, range name) from nsysq_nvtx_rows (queries/nvtx/rows.sql), in rank order, the first limit rows (every row when limit is 0): rank, domain, name, instances, total_ns, avg_ns, med_ns, min_ns, max_ns, kernels, kernel_ns, gpu_span_ns, gpu_busy_ns, memcpys, memsets, graph_executions, graph_ns.
-- tables: nsysq_nvtx_rows (queries/nvtx/rows.sql)
-- params: limit (integer, 0 = every row)
-- dialect: duckdb
SELECT
    rank, domain, name, instances, total_ns, avg_ns, med_ns, min_ns, max_ns,
    kernels, kernel_ns, gpu_span_ns, gpu_busy_ns, memcpys, memsets, graph_executions, graph_ns
FROM nsysq_nvtx_rows
WHERE $limit <= 0 OR rank <= $limit
ORDER BY rank
