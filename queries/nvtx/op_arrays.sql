-- name: nvtx_op_arrays
-- version: 1
-- returns: every GPU operation of nsysq_nvtx_ops in oid order, as the numeric columns the sweep (nsysq.analyses.nvtx_sweep) reads: oid, kind (0 kernel, 1 memcpy, 2 memset, 3 graph), gs, ge, called (a launching call was found), tid, s, e (0 when no call was found).
-- tables: nsysq_nvtx_ops (queries/nvtx/ops.sql)
-- params: none
-- dialect: duckdb
SELECT
    oid,
    CAST(enum_code(kind) AS TINYINT) AS kind,
    gs,
    ge,
    tid IS NOT NULL AS called,
    COALESCE(tid, 0) AS tid,
    COALESCE(s, 0) AS s,
    COALESCE(e, 0) AS e
FROM nsysq_nvtx_ops
ORDER BY oid
