-- name: nvtx_unnested
-- version: 1
-- returns: one row, unnested: the number of push/pop ranges that leave their stack out of order (the sweep's depth after the range's end differs from its level: a range above it was still open). A real NVTX stack never does this; when it happens, nsysq attributes by the plain interval join (queries/nvtx/interval_pairs.sql) instead of the stack lookup. Zero means the stacks nest properly, which makes the ASOF lookup of queries/nvtx/inner.sql exact. nsysq keeps it as the temp table nsysq_nvtx_unnested (the sweep it reads is dropped once used).
-- tables: nsysq_nvtx_marks (queries/nvtx/marks.sql), nsysq_nvtx_stack (queries/nvtx/stack.sql)
-- params: none
-- dialect: duckdb
SELECT count(*) AS unnested
FROM nsysq_nvtx_marks AS m
JOIN nsysq_nvtx_stack AS t ON t.rid = m.rid
WHERE m.d = -1 AND m.depth <> t.lvl
