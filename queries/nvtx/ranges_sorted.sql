-- name: nvtx_ranges_sorted
-- version: 1
-- returns: one row per NVTX range row (push/pop 59 and 70, start/end 60 and 71), in the order that numbers them (queries/nvtx/ranges.sql: thread, domain, start, longer first, kind, name; a sort into a table costs less than the same order in a window): pid (globalPid of the process), tid (globalTid), dom (domainId, 0 when NULL), domain (the domain's name from the eventType-75 row with the same domainId in the same process; '' for the default domain 0; 'domain N' when no such row), name (text, else the registered string of textId, else '<unnamed range>'), kind ('push/pop' or 'start/end'), start, end (NULL when never ended; with extend_unended, a range that never ended on its own thread ends at the last NVTX timestamp of the trace, max(COALESCE(end, start)) over NVTX_EVENTS, as nsys's reports do), extended (true for such a range) and dropped (NULL for a range nsysq attributes work to; 'other thread' when it ended on another thread, 'never ended' when end is NULL and extend_unended is false). nsysq keeps it as the temp table nsysq_nvtx_ranges_sorted, dropped once numbered.
-- tables: NVTX_EVENTS(start, end, eventType, text, textId, globalTid, endGlobalTid, domainId), StringIds(id, value)
-- params: extend_unended (boolean)
-- dialect: duckdb
WITH events AS MATERIALIZED (
    -- One scan of the NVTX table for the domain names and the ranges.
    SELECT start, "end", eventType, text, textId, globalTid, endGlobalTid, domainId
    FROM NVTX_EVENTS
    WHERE eventType IN (59, 60, 70, 71, 75)
),
last_nvtx AS (
    SELECT max(COALESCE("end", start)) AS ts FROM NVTX_EVENTS WHERE $extend_unended
),
domains AS (
    -- DomainCreate rows name a domain id within one process (nsys: globalTid & 0x...FF000000).
    SELECT
        n.globalTid & ~CAST(16777215 AS BIGINT) AS pid,
        n.domainId AS dom,
        min(COALESCE(n.text, s.value)) AS domain
    FROM events AS n
    LEFT JOIN StringIds AS s ON s.id = n.textId
    WHERE n.eventType = 75 AND n.domainId IS NOT NULL
    GROUP BY 1, 2
),
ranges AS (
    SELECT
        n.globalTid & ~CAST(16777215 AS BIGINT) AS pid,
        n.globalTid AS tid,
        COALESCE(n.domainId, 0) AS dom,
        COALESCE(n.text, s.value, '<unnamed range>') AS name,
        CASE WHEN n.eventType IN (59, 70) THEN 'push/pop' ELSE 'start/end' END AS kind,
        n.start,
        n."end",
        n.endGlobalTid IS NOT NULL AND n.endGlobalTid <> n.globalTid AS other_thread
    FROM events AS n
    LEFT JOIN StringIds AS s ON s.id = n.textId
    WHERE n.eventType IN (59, 60, 70, 71)
),
ended AS (
    SELECT
        pid, tid, dom, name, kind, start,
        CASE WHEN extended THEN (SELECT ts FROM last_nvtx) ELSE "end" END AS "end",
        extended,
        CASE WHEN other_thread THEN 'other thread' WHEN "end" IS NULL AND NOT extended THEN 'never ended' END
            AS dropped
    FROM (SELECT *, "end" IS NULL AND NOT other_thread AND $extend_unended AS extended FROM ranges)
)
SELECT
    r.pid,
    r.tid,
    r.dom,
    CASE
        WHEN r.dom = 0 THEN ''
        ELSE COALESCE(d.domain, 'domain ' || CAST(r.dom AS VARCHAR))
    END AS domain,
    r.name,
    r.kind,
    r.start,
    r."end",
    r.extended,
    r.dropped
FROM ended AS r
LEFT JOIN domains AS d ON d.pid = r.pid AND d.dom = r.dom
-- Outer ranges first at equal starts (longer first), so the sweep in nvtx_marks pushes them first.
ORDER BY r.tid, r.dom, r.start, r."end" DESC NULLS FIRST, r.kind, r.name
