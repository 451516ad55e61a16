-- name: nvtx_ranges
-- version: 1
-- returns: one row per NVTX range row (push/pop 59 and 70, start/end 60 and 71): rid (a stable row id), pid (globalPid of the process), tid (globalTid), dom (domainId, 0 when NULL), domain (the domain's name from the eventType-75 row with the same domainId in the same process; '' for the default domain 0; 'domain N' when no such row), name (text, else the registered string of textId, else '<unnamed range>'), kind ('push/pop' or 'start/end'), start, end (NULL when never ended) and dropped (NULL for a range nsysq attributes work to; 'other thread' when it ended on another thread, 'never ended' when end is NULL). nsysq keeps it as the temp table nsysq_nvtx_ranges.
-- tables: NVTX_EVENTS(start, end, eventType, text, textId, globalTid, endGlobalTid, domainId), StringIds(id, value)
-- params: none
-- dialect: duckdb
WITH domains AS (
    -- DomainCreate rows name a domain id within one process (nsys: globalTid & 0x...FF000000).
    SELECT
        n.globalTid & ~CAST(16777215 AS BIGINT) AS pid,
        n.domainId AS dom,
        min(COALESCE(n.text, s.value)) AS domain
    FROM NVTX_EVENTS AS n
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
        CASE
            WHEN n.endGlobalTid IS NOT NULL AND n.endGlobalTid <> n.globalTid THEN 'other thread'
            WHEN n."end" IS NULL THEN 'never ended'
        END AS dropped
    FROM NVTX_EVENTS AS n
    LEFT JOIN StringIds AS s ON s.id = n.textId
    WHERE n.eventType IN (59, 60, 70, 71)
)
SELECT
    -- Outer ranges first at equal starts (longer first), so the sweep in nvtx_marks pushes them first.
    row_number() OVER (ORDER BY r.tid, r.dom, r.start, r."end" DESC NULLS FIRST, r.kind, r.name) AS rid,
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
    r.dropped
FROM ranges AS r
LEFT JOIN domains AS d ON d.pid = r.pid AND d.dom = r.dom
