-- name: iters_stream_kernels
-- version: 1
-- returns: the kernels of one stream (process pid, device dev, stream stream) in start order: s (start), e (end; the start when the end is before it), sid (shortName id, -1 when NULL). nsysq iters looks for the period of the sid sequence.
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, streamId, globalPid, shortName)
-- params: pid (globalPid); dev (deviceId); stream (streamId)
-- dialect: duckdb
SELECT start AS s, greatest("end", start) AS e, COALESCE(shortName, -1) AS sid
FROM CUPTI_ACTIVITY_KIND_KERNEL
WHERE globalPid = $pid AND deviceId = $dev AND streamId = $stream AND start IS NOT NULL AND "end" IS NOT NULL
ORDER BY start, "end"
