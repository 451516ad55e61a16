-- name: gap_calls
-- version: 1
-- returns: one row per CUDA API call with a thread: tid (globalTid), corr (correlationId), name_id (nameId), s (start), e (end), NULLs as recorded. `nsysq gaps` matches them with the GPU ops by correlationId (the feeding threads, as queries/gap/feeders.sql) and splits each idle gap by what the feeding threads' calls were doing (nsysq.gputime.gap_unions); on a direct read of the export's pages the same rows come from the decoded columns.
-- tables: CUPTI_ACTIVITY_KIND_RUNTIME(start, end, globalTid, correlationId, nameId)
-- params: none
-- dialect: duckdb
SELECT globalTid AS tid, correlationId AS corr, nameId AS name_id, start AS s, "end" AS e
FROM CUPTI_ACTIVITY_KIND_RUNTIME
WHERE globalTid IS NOT NULL
