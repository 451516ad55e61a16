-- name: nvtx_inner
-- version: 1
-- returns: which kept ranges hold each GPU operation's launching call, the way nsys projects NVTX ranges (same thread, call inside the range): one row (oid, rid) per operation and per domain with the innermost push/pop range of that domain open on the calling thread during the call, plus one row per start/end range on the calling thread whose interval holds the call (start <= call start, call end <= end). The push/pop lookup is an ASOF join on the sweep (nsysq_nvtx_marks): the stack as the call's start sees it; exact because a call cannot straddle a push or pop on its own thread. Every enclosing push/pop range follows from the parents in nsysq_nvtx_stack. nsysq keeps it as the temp table nsysq_nvtx_inner.
-- tables: nsysq_nvtx_ops (queries/nvtx_ops.sql), nsysq_nvtx_ranges (queries/nvtx_ranges.sql), nsysq_nvtx_marks (queries/nvtx_marks.sql), nsysq_nvtx_stack (queries/nvtx_stack.sql)
-- params: none
-- dialect: duckdb
WITH stacks AS (
    SELECT DISTINCT tid, dom FROM nsysq_nvtx_marks
),
calls AS (
    -- Each launching call once per domain that has a stack on its thread.
    SELECT o.oid, o.tid, k.dom, o.s
    FROM nsysq_nvtx_ops AS o
    JOIN stacks AS k ON k.tid = o.tid
),
seen AS (
    SELECT m.tid, m.dom, m.ts, m.depth, CASE WHEN m.d = 1 THEN m.rid ELSE t.prid END AS inner_rid
    FROM nsysq_nvtx_marks AS m
    LEFT JOIN nsysq_nvtx_stack AS t ON t.rid = m.rid AND m.d = -1
    WHERE m.last_at_ts
),
pushed AS (
    SELECT c.oid, m.inner_rid AS rid
    FROM calls AS c
    ASOF JOIN seen AS m ON m.tid = c.tid AND m.dom = c.dom AND c.s >= m.ts
    WHERE m.depth > 0
),
started AS (
    SELECT o.oid, r.rid
    FROM nsysq_nvtx_ops AS o
    JOIN nsysq_nvtx_ranges AS r ON r.tid = o.tid AND r.start <= o.s AND o.e <= r."end"
    WHERE r.kind = 'start/end' AND r.dropped IS NULL
)
SELECT oid, rid FROM pushed
UNION ALL
SELECT oid, rid FROM started
