-- name: nvtx_scope_launches
-- version: 1
-- returns: the launches (globalPid, correlationId) of the GPU work attributed to the selected ranges (nsysq_nvtx_selected) by launch attribution (nsysq_nvtx_pairs: every enclosing range, or with --nvtx-mode innermost the deepest range of each domain): the set a --nvtx scope keeps (nsysq.session.scope.OpFilter). Every op of one launch shares its attribution (in node-traced CUDA graphs every kernel shares the cudaGraphLaunch id), so the pair identifies what to keep.
-- tables: nsysq_nvtx_selected (queries/nvtx/select.sql), nsysq_nvtx_pairs (queries/nvtx/pairs.sql), nsysq_nvtx_ops (queries/nvtx/ops.sql)
-- params: none
-- dialect: duckdb
SELECT DISTINCT o.pid AS globalPid, o.corr AS correlationId
FROM nsysq_nvtx_selected AS s
JOIN nsysq_nvtx_pairs AS p ON p.rid = s.rid
JOIN nsysq_nvtx_ops AS o ON o.oid = p.oid
