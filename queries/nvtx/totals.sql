-- name: nvtx_totals
-- version: 3
-- returns: one row with what nsysq nvtx's footer reconciles against: ranges (kept), ignored_other_thread and ignored_never_ended (range rows nsysq does not attribute work to), extended_ranges (ranges that never ended, run to the last NVTX timestamp with extend_unended), range_names (rows of nsysq_nvtx_rows), gpu_ops and gpu_ns (every kernel, memcpy, memset and whole-graph execution, and the sum of their durations), graph_executions (the whole-graph executions among them), ops_without_call (operations whose launching runtime/driver call is not in the trace), unattributed_ops and unattributed_gpu_ns (operations no kept range gets, and their summed durations), emit_nvtx_names (distinct range names that carry PyTorch emit_nvtx suffixes, ", seq = N" or ", op_id = N").
-- tables: nsysq_nvtx_ranges (queries/nvtx/ranges.sql), nsysq_nvtx_rows (queries/nvtx/rows.sql), nsysq_nvtx_ops (queries/nvtx/ops.sql), nsysq_nvtx_pairs (queries/nvtx/pairs.sql or nvtx_window_pairs.sql)
-- params: none
-- dialect: duckdb
WITH ranges AS (
    SELECT
        count(*) FILTER (WHERE dropped IS NULL) AS ranges,
        count(*) FILTER (WHERE dropped = 'other thread') AS ignored_other_thread,
        count(*) FILTER (WHERE dropped = 'never ended') AS ignored_never_ended,
        count(*) FILTER (WHERE extended) AS extended_ranges,
        (
            SELECT count(*) FROM (SELECT DISTINCT name FROM nsysq_nvtx_ranges)
            WHERE regexp_matches(name, ', (seq|op_id) = [0-9]+')
        ) AS emit_nvtx_names
    FROM nsysq_nvtx_ranges
),
attributed AS (
    SELECT DISTINCT oid FROM nsysq_nvtx_pairs
),
ops AS (
    SELECT
        count(*) AS gpu_ops,
        COALESCE(sum(o.ge - o.gs), 0) AS gpu_ns,
        count(*) FILTER (WHERE o.kind = 'graph') AS graph_executions,
        count(*) FILTER (WHERE o.tid IS NULL) AS ops_without_call,
        count(*) FILTER (WHERE a.oid IS NULL) AS unattributed_ops,
        COALESCE(sum(o.ge - o.gs) FILTER (WHERE a.oid IS NULL), 0) AS unattributed_gpu_ns
    FROM nsysq_nvtx_ops AS o
    LEFT JOIN attributed AS a ON a.oid = o.oid
)
SELECT
    r.ranges, r.ignored_other_thread, r.ignored_never_ended, r.extended_ranges,
    (SELECT count(*) FROM nsysq_nvtx_rows) AS range_names,
    o.gpu_ops, o.gpu_ns, o.graph_executions, o.ops_without_call, o.unattributed_ops, o.unattributed_gpu_ns,
    r.emit_nvtx_names
FROM ranges AS r, ops AS o
