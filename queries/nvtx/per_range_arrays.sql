-- name: nvtx_per_range_arrays
-- version: 1
-- returns: nsysq_nvtx_per_range's rows in rid order, as the numeric columns nsysq.analyses.nvtx sets beside each kept range for queries/nvtx/rows_coded.sql: rid, kernels, kernel_ns, memcpys, memsets, graph_executions, graph_ns, gpu_span_ns, gpu_busy_ns (read when the per-range sums came from queries/nvtx/per_range.sql, not from the sweep's arrays).
-- tables: nsysq_nvtx_per_range (queries/nvtx/per_range.sql)
-- params: none
-- dialect: duckdb
SELECT
    rid, kernels, kernel_ns, memcpys, memsets, graph_executions, graph_ns, gpu_span_ns, gpu_busy_ns
FROM nsysq_nvtx_per_range
ORDER BY rid
