-- name: nvtx_per_range
-- version: 1
-- returns: one row per kept range with at least one attributed GPU operation (nsysq_nvtx_pairs): rid, kernels, kernel_ns (sum of their GPU durations), memcpys, memsets, graph_executions, graph_ns (executions of CUDA graphs traced whole and their summed durations), gpu_span_ns (last attributed op end - first op start, over every kind of op) and gpu_busy_ns (the union of attributed op intervals, every kind, by a running maximum of ends over ops sorted by start). nsysq keeps it as the temp table nsysq_nvtx_per_range; on nested stacks nsysq computes the same rows with one sorted pass (nsysq.analyses.nvtx_sweep) and keeps them under that name.
-- tables: nsysq_nvtx_pairs (queries/nvtx/pairs.sql or nvtx_window_pairs.sql), nsysq_nvtx_ops (queries/nvtx/ops.sql)
-- params: none
-- dialect: duckdb
WITH attributed AS (
    SELECT
        p.rid, o.kind, o.gs, o.ge,
        max(o.ge) OVER (
            PARTITION BY p.rid ORDER BY o.gs, o.ge ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
        ) AS covered_to
    FROM nsysq_nvtx_pairs AS p
    JOIN nsysq_nvtx_ops AS o ON o.oid = p.oid
)
SELECT
    rid,
    count(*) FILTER (WHERE kind = 'kernel') AS kernels,
    sum(ge - gs) FILTER (WHERE kind = 'kernel') AS kernel_ns,
    count(*) FILTER (WHERE kind = 'memcpy') AS memcpys,
    count(*) FILTER (WHERE kind = 'memset') AS memsets,
    count(*) FILTER (WHERE kind = 'graph') AS graph_executions,
    sum(ge - gs) FILTER (WHERE kind = 'graph') AS graph_ns,
    max(ge) - min(gs) AS gpu_span_ns,
    sum(greatest(0, ge - greatest(gs, COALESCE(covered_to, gs)))) AS gpu_busy_ns
FROM attributed
GROUP BY rid
