-- name: nvtx_scope_window
-- version: 1
-- returns: the GPU operations (globalPid, correlationId, start, end) attributed to the selected ranges (nsysq_nvtx_selected) by the time window (nsysq_nvtx_pairs from queries/nvtx/window_pairs.sql: the operation's GPU interval lies inside the range, whatever thread launched it): the set a --nvtx scope keeps with --nvtx-mode window (nsysq.session.scope.OpFilter with per-operation keys). Per operation, not per launch: the kernels of one graph launch may lie partly inside a range and partly outside it.
-- tables: nsysq_nvtx_selected (queries/nvtx/select.sql), nsysq_nvtx_pairs (queries/nvtx/window_pairs.sql), nsysq_nvtx_ops (queries/nvtx/ops.sql)
-- params: none
-- dialect: duckdb
SELECT DISTINCT o.pid AS globalPid, o.corr AS correlationId, o.gs AS start, o.ge AS "end"
FROM nsysq_nvtx_selected AS s
JOIN nsysq_nvtx_pairs AS p ON p.rid = s.rid
JOIN nsysq_nvtx_ops AS o ON o.oid = p.oid
