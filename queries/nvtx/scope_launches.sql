-- name: nvtx_scope_launches
-- version: 2
-- returns: one row (globalPid, correlationId) per GPU operation attributed to the selected ranges (nsysq_nvtx_selected) by launch attribution (nsysq_nvtx_pairs: every enclosing range, or with --nvtx-mode innermost the deepest range of each domain): the launches a --nvtx scope keeps (nsysq.session.scope.OpFilter, which keeps each launch once). Every op of one launch shares its attribution (in node-traced CUDA graphs every kernel shares the cudaGraphLaunch id), so the pair identifies what to keep. nsysq keeps it as the temp table nsysq_nvtx_launches.
-- tables: nsysq_nvtx_selected (queries/nvtx/select.sql), nsysq_nvtx_pairs (queries/nvtx/pairs.sql), nsysq_nvtx_ops (queries/nvtx/ops.sql)
-- params: none
-- dialect: duckdb
SELECT o.pid AS globalPid, o.corr AS correlationId
FROM nsysq_nvtx_ops AS o
WHERE o.oid IN (
    SELECT p.oid FROM nsysq_nvtx_pairs AS p JOIN nsysq_nvtx_selected AS s ON s.rid = p.rid
)
