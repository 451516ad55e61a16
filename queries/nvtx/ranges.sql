-- name: nvtx_ranges
-- version: 3
-- returns: one row per NVTX range row (push/pop 59 and 70, start/end 60 and 71): rid (a stable row id: the row's position in the order of queries/nvtx/ranges_sorted.sql, thread, domain, start, longer first, kind, name, which the sorted table keeps as its insertion order), pid (globalPid of the process), tid (globalTid), dom (domainId, 0 when NULL), domain (the domain's name from the eventType-75 row with the same domainId in the same process; '' for the default domain 0; 'domain N' when no such row), name (text, else the registered string of textId, else '<unnamed range>'), kind ('push/pop' or 'start/end'), start, end (NULL when never ended; with extend_unended, a range that never ended on its own thread ends at the last NVTX timestamp of the trace, max(COALESCE(end, start)) over NVTX_EVENTS, as nsys's reports do), extended (true for such a range) and dropped (NULL for a range nsysq attributes work to; 'other thread' when it ended on another thread, 'never ended' when end is NULL and extend_unended is false). nsysq keeps it as the temp table nsysq_nvtx_ranges.
-- tables: nsysq_nvtx_ranges_sorted (queries/nvtx/ranges_sorted.sql)
-- params: none
-- dialect: duckdb
SELECT row_number() OVER () AS rid, * FROM nsysq_nvtx_ranges_sorted
