-- name: nvtx_inner
-- version: 1
-- returns: which kept ranges hold each GPU operation's launching call, the way nsys projects NVTX ranges (same thread, call inside the range): one row (oid, rid) per operation and per domain with the innermost push/pop range of that domain open on the calling thread during the call, plus one row per start/end range on the calling thread whose interval holds the call (start <= call start, call end <= end). The push/pop lookup is an ASOF join on the sweep (nsysq_nvtx_marks): the stack as the call's start sees it, exact for stacks that nest (queries/nvtx/unnested.sql); a call that ends after that range (a call cannot straddle a pop on its own thread in a real trace, but nothing is assumed) goes to the deepest enclosing range that outlasts it (nsysq_nvtx_ancestors). Every enclosing push/pop range follows from the parents in nsysq_nvtx_stack. nsysq keeps it as the temp table nsysq_nvtx_inner.
-- tables: nsysq_nvtx_ops (queries/nvtx/ops.sql), nsysq_nvtx_ranges (queries/nvtx/ranges.sql), nsysq_nvtx_marks (queries/nvtx/marks.sql), nsysq_nvtx_stack (queries/nvtx/stack.sql), nsysq_nvtx_ancestors (queries/nvtx/ancestors.sql)
-- params: none
-- dialect: duckdb
WITH stacks AS (
    SELECT DISTINCT tid, dom FROM nsysq_nvtx_marks
),
calls AS (
    -- Each launching call once per domain that has a stack on its thread.
    SELECT o.oid, o.tid, k.dom, o.s, o.e
    FROM nsysq_nvtx_ops AS o
    JOIN stacks AS k ON k.tid = o.tid
),
top AS (
    -- The stack as a call starting at ts sees it: its depth and innermost range (after an end: the
    -- parent of the range that ended).
    SELECT m.tid, m.dom, m.ts, m.depth, CASE WHEN m.d = 1 THEN m.rid ELSE t.prid END AS inner_rid
    FROM nsysq_nvtx_marks AS m
    JOIN nsysq_nvtx_stack AS t ON t.rid = m.rid
    WHERE m.last_at_ts
),
seen AS (
    SELECT p.tid, p.dom, p.ts, p.depth, p.inner_rid, i."end" AS inner_end
    FROM top AS p
    LEFT JOIN nsysq_nvtx_ranges AS i ON i.rid = p.inner_rid
),
pushed AS (
    SELECT c.oid, c.dom, c.e, m.inner_rid, m.inner_end
    FROM calls AS c
    ASOF JOIN seen AS m ON m.tid = c.tid AND m.dom = c.dom AND c.s >= m.ts
    WHERE m.depth > 0
),
straddling AS (
    -- A call that ends after its innermost range does: the deepest enclosing range that outlasts it.
    SELECT p.oid, a.anc AS rid
    FROM pushed AS p
    JOIN nsysq_nvtx_ancestors AS a ON a.rid = p.inner_rid
    JOIN nsysq_nvtx_ranges AS r ON r.rid = a.anc
    JOIN nsysq_nvtx_stack AS t ON t.rid = a.anc
    WHERE p.inner_end < p.e AND r."end" >= p.e
    QUALIFY row_number() OVER (PARTITION BY p.oid, p.dom ORDER BY t.lvl DESC) = 1
),
started AS (
    SELECT o.oid, r.rid
    FROM nsysq_nvtx_ops AS o
    JOIN nsysq_nvtx_ranges AS r ON r.tid = o.tid AND r.start <= o.s AND o.e <= r."end"
    WHERE r.kind = 'start/end' AND r.dropped IS NULL
)
SELECT oid, inner_rid AS rid FROM pushed WHERE inner_end >= e
UNION ALL
SELECT oid, rid FROM straddling
UNION ALL
SELECT oid, rid FROM started
