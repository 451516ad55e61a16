-- name: nvtx_marks
-- version: 1
-- returns: the push/pop stacks as a sweep: one row per boundary (start d = +1, end d = -1) of every push/pop range nsysq keeps (nsysq_nvtx_ranges with dropped NULL), per thread and domain (tid, dom), in stack order: seq (position in that order), ts, d, rid, depth (ranges open after the boundary) and last_at_ts (true for the last boundary at its ts: the stack as a call at that ts sees it). Ends sort before starts at equal ts (back-to-back ranges), outer starts before inner ones, inner ends before outer ones, and a zero-length range ends right after it starts. nsysq keeps it as the temp table nsysq_nvtx_marks.
-- tables: nsysq_nvtx_ranges (queries/nvtx/ranges.sql)
-- params: none
-- dialect: duckdb
WITH kept AS (
    SELECT rid, tid, dom, start, "end"
    FROM nsysq_nvtx_ranges
    WHERE kind = 'push/pop' AND dropped IS NULL
),
boundaries AS (
    SELECT tid, dom, start AS ts, 1 AS d, rid, 1 AS grp, 2 * rid AS sub FROM kept
    UNION ALL
    SELECT
        tid, dom, "end", -1, rid,
        CASE WHEN "end" = start THEN 1 ELSE 0 END,
        CASE WHEN "end" = start THEN 2 * rid + 1 ELSE -rid END
    FROM kept
),
swept AS (
    SELECT
        tid, dom, ts, d, rid,
        row_number() OVER stack AS seq,
        sum(d) OVER (stack ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS depth,
        lead(ts) OVER stack AS next_ts
    FROM boundaries
    WINDOW stack AS (PARTITION BY tid, dom ORDER BY ts, grp, sub)
)
SELECT tid, dom, seq, ts, d, rid, depth, next_ts IS DISTINCT FROM ts AS last_at_ts
FROM swept
