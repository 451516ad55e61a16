-- name: nvtx_stack
-- version: 2
-- returns: one row per range nsysq keeps (nsysq_nvtx_ranges with dropped NULL): rid, lvl (nesting level on its thread and domain, 0 = outermost; for a start/end range, the number of push/pop ranges of its domain open on its thread when it starts) and prid (the push/pop range it is nested in, NULL at level 0 and for start/end ranges, which sit on no stack). nsysq keeps it as the temp table nsysq_nvtx_stack.
-- tables: nsysq_nvtx_ranges (queries/nvtx/ranges.sql), nsysq_nvtx_marks (queries/nvtx/marks.sql)
-- params: none
-- dialect: duckdb
WITH pushed AS (
    SELECT rid, tid, dom, seq, depth - 1 AS lvl FROM nsysq_nvtx_marks WHERE d = 1
),
parents AS (
    -- The parent: the last range pushed one level up before this one, on the same thread and domain.
    SELECT c.rid, c.lvl, p.rid AS prid
    FROM pushed AS c
    ASOF LEFT JOIN pushed AS p
        ON p.tid = c.tid AND p.dom = c.dom AND p.lvl = c.lvl - 1 AND c.seq >= p.seq
),
start_end AS (
    SELECT rid, tid, dom, start FROM nsysq_nvtx_ranges WHERE kind = 'start/end' AND dropped IS NULL
),
stack_seen AS (
    -- Only the stacks of threads and domains with start/end ranges (the ASOF join sorts all it gets).
    SELECT m.tid, m.dom, m.ts, m.depth
    FROM nsysq_nvtx_marks AS m
    WHERE m.last_at_ts AND EXISTS (SELECT 1 FROM start_end AS r WHERE r.tid = m.tid AND r.dom = m.dom)
),
started AS (
    -- A start/end range: how many push/pop ranges of its domain its thread had open when it started.
    SELECT r.rid, COALESCE(m.depth, 0) AS lvl, CAST(NULL AS BIGINT) AS prid
    FROM start_end AS r
    ASOF LEFT JOIN stack_seen AS m ON m.tid = r.tid AND m.dom = r.dom AND r.start >= m.ts
)
SELECT rid, lvl, prid FROM parents
UNION ALL
SELECT rid, lvl, prid FROM started
