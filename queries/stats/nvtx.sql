-- name: stats_nvtx
-- version: 2
-- returns: nsys stats nvtx_sum and nvtx_pushpop_sum before rounding: one row per (domain, range text, style) over the NVTX ranges (eventType 59 push/pop and 60 start/end, 70/71 their NVTXT forms): domain (the name its eventType 75 row registered in the range's process; NULL for the default domain), text (the range's text or its registered string), style ('PushPop' or 'StartEnd'), instances, total_ns, med_ns, min_ns, max_ns, stddev_ns (sample; 0 for one range). A range that never ended lasts to the last NVTX timestamp in the file; nested ranges are not subtracted from their parents. A range is kept when it overlaps [from_ns, to_ns) (NULL: unbounded).
-- tables: NVTX_EVENTS(start, end, eventType, text, textId, domainId, globalTid), StringIds(id, value)
-- params: from_ns (absolute ns or NULL); to_ns (absolute ns or NULL)
-- dialect: duckdb
WITH events AS MATERIALIZED (  -- one scan of the table: the sqlite scanner reads it once
    SELECT start, "end", eventType, text, textId, domainId, globalTid FROM NVTX_EVENTS
),
last_seen AS (
    SELECT max(GREATEST(start, COALESCE("end", start))) AS t FROM events
),
domains AS (  -- a domain id is registered per process
    SELECT n.domainId, (n.globalTid >> 24) & 16777215 AS pid, min(COALESCE(n.text, s.value)) AS domain
    FROM events AS n
    LEFT JOIN StringIds AS s ON s.id = n.textId
    WHERE n.eventType = 75
    GROUP BY n.domainId, pid
),
ranges AS (
    SELECT
        n.domainId,
        (n.globalTid >> 24) & 16777215 AS pid,
        COALESCE(n.text, s.value) AS text,
        CASE WHEN n.eventType IN (59, 70) THEN 'PushPop' ELSE 'StartEnd' END AS style,
        COALESCE(n."end", l.t) - n.start AS dur,
        COALESCE(n."end", l.t) AS stop,
        n.start
    FROM events AS n
    CROSS JOIN last_seen AS l
    LEFT JOIN StringIds AS s ON s.id = n.textId
    WHERE n.eventType IN (59, 60, 70, 71)
)
SELECT
    d.domain,
    r.text,
    r.style,
    count(*) AS instances,
    sum(r.dur) AS total_ns,
    median(r.dur) AS med_ns,
    min(r.dur) AS min_ns,
    max(r.dur) AS max_ns,
    COALESCE(stddev_samp(r.dur), 0) AS stddev_ns
FROM ranges AS r
LEFT JOIN domains AS d ON d.domainId IS NOT DISTINCT FROM r.domainId AND d.pid IS NOT DISTINCT FROM r.pid
WHERE ($from_ns IS NULL OR r.stop > $from_ns) AND ($to_ns IS NULL OR r.start < $to_ns)
GROUP BY d.domain, r.text, r.style
ORDER BY total_ns DESC, r.text, r.style
