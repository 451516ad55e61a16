-- name: nvtx_interval_pairs
-- version: 1
-- returns: the same (oid, rid) pairs as queries/nvtx/pairs.sql, by a plain interval join: every kept range on the launching call's thread whose interval holds the whole call (start <= call start, call end <= end); with innermost true, of the push/pop ranges of each domain only the one that started last (then ended first), start/end ranges all. Exact whatever the ranges look like, but quadratic per thread: nsysq uses it only when push/pop ranges do not nest (queries/nvtx/unnested.sql). nsysq keeps it as the temp table nsysq_nvtx_pairs.
-- tables: nsysq_nvtx_ops (queries/nvtx/ops.sql), nsysq_nvtx_ranges (queries/nvtx/ranges.sql)
-- params: innermost (boolean)
-- dialect: duckdb
WITH holding AS (
    SELECT o.oid, r.rid, r.dom, r.kind, r.start, r."end"
    FROM nsysq_nvtx_ops AS o
    JOIN (SELECT rid, tid, dom, kind, start, "end" FROM nsysq_nvtx_ranges WHERE dropped IS NULL) AS r
        ON r.tid = o.tid AND r.start <= o.s AND o.e <= r."end"
),
deepest AS (
    SELECT oid, rid
    FROM holding
    WHERE kind = 'push/pop'
    QUALIFY row_number() OVER (PARTITION BY oid, dom ORDER BY start DESC, "end", rid DESC) = 1
)
SELECT oid, rid FROM holding WHERE NOT $innermost OR kind = 'start/end'
UNION ALL
SELECT oid, rid FROM deepest WHERE $innermost
