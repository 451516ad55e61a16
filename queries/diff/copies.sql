-- name: diff_copies
-- version: 1
-- returns: one row per memory operation kind in either trace (each memcpy copy kind, and memset): operation, kind, ops_a, ops_b, ops_ratio, bytes_a, bytes_b, bytes_ratio, a_ns, b_ns. Sorted memcpy first, then by the larger byte count.
-- tables: side_copies(side, operation, kind, operations, bytes, total_ns) (per-trace rows of queries/copies.sql)
-- params: none
-- dialect: duckdb
WITH a AS (SELECT * FROM side_copies WHERE side = 'a'),
b AS (SELECT * FROM side_copies WHERE side = 'b')
SELECT
    COALESCE(a.operation, b.operation) AS operation,
    COALESCE(a.kind, b.kind) AS kind,
    COALESCE(a.operations, 0) AS ops_a,
    COALESCE(b.operations, 0) AS ops_b,
    CASE WHEN a.operations > 0 THEN COALESCE(b.operations, 0) / a.operations END AS ops_ratio,
    COALESCE(a.bytes, 0) AS bytes_a,
    COALESCE(b.bytes, 0) AS bytes_b,
    CASE WHEN a.bytes > 0 THEN COALESCE(b.bytes, 0) / a.bytes END AS bytes_ratio,
    COALESCE(a.total_ns, 0) AS a_ns,
    COALESCE(b.total_ns, 0) AS b_ns
FROM a FULL OUTER JOIN b ON a.operation = b.operation AND a.kind = b.kind
ORDER BY operation, greatest(COALESCE(a.bytes, 0), COALESCE(b.bytes, 0)) DESC, kind
