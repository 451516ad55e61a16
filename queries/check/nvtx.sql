-- name: check_nvtx
-- version: 1
-- returns: for each CUDA API call given (tids[i], starts[i], ends[i]: its globalTid, start and end), the innermost NVTX range holding it, by the rule of nsysq nvtx's launch attribution (queries/nvtx/inner.sql): a range nsysq keeps (nsysq_nvtx_ranges with dropped NULL: push/pop or start/end, ended on its own thread) on the call's thread whose interval holds the whole call (start <= call start, call end <= end); of those, the innermost is the latest to start (then the earliest to end), whatever its domain. One row per call that some range holds: k (the call's position in the lists, from 1), domain, name. nsysq check names the range of each finding it shows.
-- tables: nsysq_nvtx_ranges (queries/nvtx/ranges.sql)
-- params: tids (list of globalTid); starts (list of call starts, ns); ends (list of call ends, ns)
-- dialect: duckdb
WITH calls AS (
    SELECT i AS k, $tids[i] AS tid, $starts[i] AS s, $ends[i] AS e
    FROM range(1, len($tids) + 1) AS r(i)
)
SELECT c.k, r.domain, r.name
FROM calls AS c
JOIN nsysq_nvtx_ranges AS r ON r.tid = c.tid AND r.start <= c.s AND c.e <= r."end"
WHERE r.dropped IS NULL
QUALIFY row_number() OVER (PARTITION BY c.k ORDER BY r.start DESC, r."end", r.rid) = 1
ORDER BY c.k
