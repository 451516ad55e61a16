-- name: stats_api_trace
-- version: 1
-- returns: nsys stats cuda_api_trace: one row per CUDA API call in scope, in start order: start_ns (as stored), duration_ns, name (the _vNNNN suffix dropped, as cuda_api_sum prints it), result (returnValue), corr_id, pid and tid (decoded from globalTid). A call is kept when it overlaps [from_ns, to_ns) (NULL: unbounded).
-- tables: CUPTI_ACTIVITY_KIND_RUNTIME(start, end, nameId, returnValue, correlationId, globalTid), StringIds(id, value)
-- params: from_ns (absolute ns or NULL); to_ns (absolute ns or NULL)
-- dialect: duckdb
SELECT
    r.start AS start_ns,
    r."end" - r.start AS duration_ns,
    regexp_replace(nsysq_name_label(r.nameId, s.value), '_v[0-9]{4}$', '') AS name,
    r.returnValue AS result,
    r.correlationId AS corr_id,
    (r.globalTid >> 24) & 16777215 AS pid,
    r.globalTid & 16777215 AS tid
FROM CUPTI_ACTIVITY_KIND_RUNTIME AS r
LEFT JOIN StringIds AS s ON s.id = r.nameId
WHERE ($from_ns IS NULL OR r."end" > $from_ns) AND ($to_ns IS NULL OR r.start < $to_ns)
ORDER BY r.start, r."end"
