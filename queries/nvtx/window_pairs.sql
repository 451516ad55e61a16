-- name: nvtx_window_pairs
-- version: 1
-- returns: one row (oid, rid) per GPU operation and kept range whose interval holds the operation's whole GPU interval (range start <= GPU start, GPU end <= range end), whatever thread or process launched it: the time-window attribution (nsysq nvtx --window), for work launched from other threads. nsysq keeps it as the temp table nsysq_nvtx_pairs.
-- tables: nsysq_nvtx_ops (queries/nvtx/ops.sql), nsysq_nvtx_ranges (queries/nvtx/ranges.sql)
-- params: none
-- dialect: duckdb
SELECT o.oid, r.rid
FROM nsysq_nvtx_ops AS o
JOIN (SELECT rid, start, "end" FROM nsysq_nvtx_ranges WHERE dropped IS NULL) AS r
    ON o.gs >= r.start AND o.ge <= r."end"
