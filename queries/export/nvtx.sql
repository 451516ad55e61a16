-- name: export_nvtx
-- version: 1
-- returns: the NVTX ranges and marks `nsysq export` writes on their CPU threads, ordered by start: kind ('push_pop' for eventType 59, 'start_end' for 60, 'mark' for 34), start_ns and end_ns (absolute; a mark's end is its start), thread (globalTid), name (text, else its StringIds value, else '<unnamed range>'), domain_id. end_ns is NULL for a range that was never closed (nsysq export counts those and leaves them out of the file). Events overlapping the window [from_ns, to_ns) relative to t0 are kept (an unclosed range by its start); NULL bounds mean open.
-- tables: NVTX_EVENTS(start, end, eventType, text, textId, globalTid, domainId), StringIds(id, value)
-- params: t0 (trace start, ns); from_ns (window start relative to t0, or NULL); to_ns (window end relative to t0, or NULL)
-- dialect: duckdb
SELECT
    CASE n.eventType WHEN 59 THEN 'push_pop' WHEN 60 THEN 'start_end' ELSE 'mark' END AS kind,
    n.start AS start_ns,
    CASE WHEN n.eventType = 34 THEN n.start ELSE n."end" END AS end_ns,
    n.globalTid AS thread,
    COALESCE(n.text, t.value, '<unnamed range>') AS name,
    n.domainId AS domain_id
FROM NVTX_EVENTS AS n
LEFT JOIN StringIds AS t ON t.id = n.textId
WHERE n.eventType IN (34, 59, 60)
  AND ($to_ns IS NULL OR n.start - $t0 < $to_ns)
  AND ($from_ns IS NULL OR COALESCE(n."end", n.start) - $t0 >= $from_ns)
ORDER BY n.start, n.globalTid
