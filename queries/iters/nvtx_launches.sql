-- name: iters_nvtx_launches
-- version: 1
-- returns: the launches (globalPid, correlationId) of each iteration's GPU work and its position it (0-based, in the order of rids): the ops the NVTX attribution gives to range rids[it + 1] by launch attribution (nsysq_nvtx_pairs: every range enclosing the launching call). nsysq keeps it as the temp table nsysq_iter_launches.
-- tables: nsysq_nvtx_pairs (queries/nvtx/pairs.sql), nsysq_nvtx_ops (queries/nvtx/ops.sql)
-- params: rids (list: the iterations' range ids, in order)
-- dialect: duckdb
WITH chosen AS (
    SELECT unnest($rids) AS rid, unnest(range(len($rids))) AS it
)
SELECT DISTINCT o.pid AS globalPid, o.corr AS correlationId, c.it
FROM chosen AS c
JOIN nsysq_nvtx_pairs AS p ON p.rid = c.rid
JOIN nsysq_nvtx_ops AS o ON o.oid = p.oid
