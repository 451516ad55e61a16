-- name: nvtx_range_arrays
-- version: 1
-- returns: every range row of nsysq_nvtx_ranges in rid order, as the numeric columns the sweep (nsysq.analyses.nvtx_sweep) reads: rid, tid (globalTid; the smallest BIGINT when NULL, a thread no call has), dom, pushpop (kind = 'push/pop'), start, end (start when NULL: such a range is never kept), kept (dropped IS NULL).
-- tables: nsysq_nvtx_ranges (queries/nvtx/ranges.sql)
-- params: none
-- dialect: duckdb
SELECT
    rid,
    COALESCE(tid, CAST(-9223372036854775808 AS BIGINT)) AS tid,
    CAST(dom AS BIGINT) AS dom,
    kind = 'push/pop' AS pushpop,
    start,
    COALESCE("end", start) AS "end",
    dropped IS NULL AS kept
FROM nsysq_nvtx_ranges
ORDER BY rid
