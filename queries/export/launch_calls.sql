-- name: export_launch_calls
-- version: 1
-- returns: what queries/export/api_calls.sql returns (same columns, same window, same order), for the calls of nsysq_export_launches only: the CPU side of a scoped `nsysq export` (--device, --stream, --nvtx, --nvtx-like), where every call written launched a GPU operation in scope.
-- tables: nsysq_export_launches (queries/export/launches.sql), StringIds(id, value)
-- params: t0 (trace start, ns); from_ns (window start relative to t0, or NULL); to_ns (window end relative to t0, or NULL)
-- dialect: duckdb
-- Why a file of its own and not a parameter of export_api_calls: the two differ only in the relation
-- they read (this one the launching calls kept in nsysq_export_launches, which the scoped export
-- builds and the unscoped one does not; DuckDB binds every table a query names, so one file could not
-- name it when it is absent). A `$launches_only OR EXISTS (...)` filter in one file is planned as a
-- mark join over every call even when the flag makes it moot (0.87 s against 0.001 s for a plain
-- filter over 3 million calls, DuckDB 1.5), so the unscoped export would pay the scoped one's cost.
-- Keep the columns, window and order of the two files the same (tests/test_export.py compares them).
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
