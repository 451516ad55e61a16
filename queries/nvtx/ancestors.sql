-- name: nvtx_ancestors
-- version: 1
-- returns: one row (rid, anc) per kept range and each range that encloses it on its push/pop stack, itself included (anc = rid): the parent chain of nsysq_nvtx_stack walked up by a recursive query over ranges (never over operations). A start/end range has only itself. nsysq keeps it as the temp table nsysq_nvtx_ancestors.
-- tables: nsysq_nvtx_stack (queries/nvtx/stack.sql)
-- params: none
-- dialect: duckdb
WITH RECURSIVE up (rid, anc) AS (
    SELECT rid, rid FROM nsysq_nvtx_stack
    UNION ALL
    SELECT u.rid, t.prid
    FROM up AS u
    JOIN nsysq_nvtx_stack AS t ON t.rid = u.anc
    WHERE t.prid IS NOT NULL
)
SELECT rid, anc FROM up
