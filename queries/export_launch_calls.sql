-- name: export_launch_calls
-- version: 1
-- returns: what queries/export_api_calls.sql returns (same columns, same window, same order), for the calls of nsysq_export_launches only: the CPU side of a scoped `nsysq export` (--device, --stream, --nvtx, --nvtx-like), where every call written launched a GPU operation in scope.
-- tables: nsysq_export_launches (queries/export_launches.sql), StringIds(id, value)
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
FROM nsysq_export_launches AS r
LEFT JOIN StringIds AS s ON s.id = r.nameId
WHERE ($to_ns IS NULL OR r.start - $t0 < $to_ns)
  AND ($from_ns IS NULL OR r."end" - $t0 >= $from_ns)
ORDER BY r.start, r.globalTid
