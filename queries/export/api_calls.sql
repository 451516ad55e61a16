-- name: export_api_calls
-- version: 1
-- returns: the CUDA API calls `nsysq export` writes on their CPU threads, ordered by start: start_ns and end_ns (absolute), thread (globalTid), process (globalTid >> 24, to pair a call with the GPU operations it launched), correlation_id, name (the call's name from StringIds, "<unresolved id N>" when missing), event_class (0 runtime, 1 driver), return_value. Rows of eventClass 67 (CUDA backtrace rows nsys 2022 writes beside the call, with the same correlationId) are left out. Calls overlapping the window [from_ns, to_ns) relative to t0 are kept; NULL bounds mean open.
-- tables: CUPTI_ACTIVITY_KIND_RUNTIME(start, end, eventClass, globalTid, correlationId, nameId, returnValue), StringIds(id, value)
-- params: t0 (trace start, ns); from_ns (window start relative to t0, or NULL); to_ns (window end relative to t0, or NULL)
-- dialect: duckdb
SELECT
    r.start AS start_ns,
    r."end" AS end_ns,
    r.globalTid AS thread,
    r.globalTid >> 24 AS process,
    r.correlationId AS correlation_id,
    nsysq_name_label(r.nameId, s.value) AS name,
    r.eventClass AS event_class,
    r.returnValue AS return_value
FROM CUPTI_ACTIVITY_KIND_RUNTIME AS r
LEFT JOIN StringIds AS s ON s.id = r.nameId
WHERE (r.eventClass IS NULL OR r.eventClass <> 67)
  AND ($to_ns IS NULL OR r.start - $t0 < $to_ns)
  AND ($from_ns IS NULL OR r."end" - $t0 >= $from_ns)
ORDER BY r.start, r.globalTid
