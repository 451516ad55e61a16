-- name: check_api_sync
-- version: 1
-- returns: the calls nsys analyze's rule cuda_api_sync flags: CUDA API calls named cudaDeviceSynchronize or cudaStreamSynchronize (after dropping a trailing _vNNNN version suffix), at most row_limit (the longest first; 0 = all): rank, matched (the calls before the cut), matched_ns (their total duration), start_ns (relative to t0), duration_ns, pid, tid (globalTid & 0xFFFFFF), api_name, call_tid, call_start, call_end (the call, for its NVTX range). Calls overlapping the window [from_ns, to_ns) are kept; NULL bounds mean open.
-- tables: CUPTI_ACTIVITY_KIND_RUNTIME(start, end, globalTid, nameId), StringIds(id, value)
-- params: t0 (trace start, ns); from_ns (window start relative to t0, or NULL); to_ns (window end relative to t0, or NULL); row_limit (rows, 0 = all)
-- dialect: duckdb
WITH names AS (
    SELECT id, value FROM StringIds
    WHERE regexp_replace(value, '_v[0-9]{4}$', '') IN ('cudaDeviceSynchronize', 'cudaStreamSynchronize')
),
calls AS (
    SELECT r.start, r."end", r.globalTid, n.value AS api_name
    FROM CUPTI_ACTIVITY_KIND_RUNTIME AS r
    JOIN names AS n ON n.id = r.nameId
    WHERE ($to_ns IS NULL OR r.start - $t0 < $to_ns) AND ($from_ns IS NULL OR r."end" - $t0 >= $from_ns)
),
ranked AS (
    SELECT
        *,
        row_number() OVER (ORDER BY "end" - start DESC, start, globalTid) AS rank,
        count(*) OVER () AS matched,
        sum("end" - start) OVER () AS matched_ns
    FROM calls
)
SELECT
    rank, matched, matched_ns,
    start - $t0 AS start_ns,
    "end" - start AS duration_ns,
    (globalTid >> 24) & 16777215 AS pid,
    globalTid & 16777215 AS tid,
    api_name,
    globalTid AS call_tid,
    start AS call_start,
    "end" AS call_end
FROM ranked
WHERE $row_limit <= 0 OR rank <= $row_limit
ORDER BY rank
