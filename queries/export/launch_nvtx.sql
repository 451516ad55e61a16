-- name: export_launch_nvtx
-- version: 1
-- returns: what queries/export/nvtx.sql returns (same columns, same window, same order), for the NVTX ranges around the calls of nsysq_export_launches only: push/pop (59) and start/end (60) ranges that ended on the thread they started on, whose interval holds a whole launching call of that thread (range start <= call start, call end <= range end: nsysq nvtx's launch attribution, every enclosing range). The CPU side of a scoped `nsysq export`; under --nvtx it includes the selected ranges that launched GPU work. The call tested is the first launching call of the thread that starts at or after the range's start (an ASOF join: launching calls of one thread do not overlap, so a later one cannot fit where the first does not).
-- tables: NVTX_EVENTS(start, end, eventType, text, textId, globalTid, endGlobalTid, domainId), StringIds(id, value), nsysq_export_launches (queries/export/launches.sql)
-- params: t0 (trace start, ns); from_ns (window start relative to t0, or NULL); to_ns (window end relative to t0, or NULL)
-- dialect: duckdb
WITH ranges AS (
    SELECT n.eventType, n.start, n."end", n.globalTid, n.text, n.textId, n.domainId
    FROM NVTX_EVENTS AS n
    WHERE n.eventType IN (59, 60)
      AND n."end" IS NOT NULL
      AND (n.endGlobalTid IS NULL OR n.endGlobalTid = n.globalTid)
      AND ($to_ns IS NULL OR n.start - $t0 < $to_ns)
      AND ($from_ns IS NULL OR n."end" - $t0 >= $from_ns)
),
calls AS (
    SELECT globalTid, start, "end" FROM nsysq_export_launches
)
SELECT
    CASE r.eventType WHEN 59 THEN 'push_pop' ELSE 'start_end' END AS kind,
    r.start AS start_ns,
    r."end" AS end_ns,
    r.globalTid AS thread,
    COALESCE(r.text, t.value, '<unnamed range>') AS name,
    r.domainId AS domain_id
FROM ranges AS r
ASOF JOIN calls AS c ON c.globalTid = r.globalTid AND r.start <= c.start
LEFT JOIN StringIds AS t ON t.id = r.textId
WHERE c."end" <= r."end"
ORDER BY r.start, r.globalTid
