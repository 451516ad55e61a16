-- name: nvtx_started
-- version: 1
-- returns: one row (oid, rid) per GPU operation and kept start/end range on its launching call's thread whose interval holds the whole call (start <= call start, call end <= end): the start/end part of queries/nvtx/inner.sql, which the sweep (nsysq.analyses.nvtx_sweep) runs alone (start/end ranges sit on no stack).
-- tables: nsysq_nvtx_ops (queries/nvtx/ops.sql), nsysq_nvtx_ranges (queries/nvtx/ranges.sql)
-- params: none
-- dialect: duckdb
SELECT o.oid, r.rid
FROM nsysq_nvtx_ops AS o
JOIN nsysq_nvtx_ranges AS r ON r.tid = o.tid AND r.start <= o.s AND o.e <= r."end"
WHERE r.kind = 'start/end' AND r.dropped IS NULL
