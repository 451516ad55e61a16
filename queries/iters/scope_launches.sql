-- name: iters_scope_launches
-- version: 1
-- returns: the launches (globalPid, correlationId) of the iterations at positions first..last (0-based, inclusive) of nsysq_iter_launches: the set an --iteration scope keeps (nsysq.session.scope.OpFilter reads it as the temp table nsysq_iter_scope).
-- tables: nsysq_iter_launches (queries/iters/nvtx_launches.sql or period_launches.sql)
-- params: first (position of the first iteration); last (position of the last)
-- dialect: duckdb
SELECT DISTINCT globalPid, correlationId FROM nsysq_iter_launches WHERE it BETWEEN $first AND $last
