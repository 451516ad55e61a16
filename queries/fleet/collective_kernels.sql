-- name: fleet_collective_kernels
-- version: 1
-- returns: one row per communication kernel with a start and an end (its shortName id among $comm_sids): pid ((globalPid >> 24) & 0xFFFFFF, -1 when NULL), dev (deviceId, -1 when NULL), stream (streamId, -1 when NULL), s (start), e (end; the start when the end is before it), sid and did (shortName and demangledName ids, -1 when NULL); sorted by pid, dev, stream, start: each stream's launch order. nsysq fleet collectives keeps each kernel's collective kind by its name pair's row of queries/kernel/comm_pairs.sql (as nsysq overlap does) and sends only these timestamps to the driver.
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, streamId, globalPid, shortName, demangledName)
-- params: comm_sids (list of the shortName ids, -1 for NULL, that have a name pair in the communication category)
-- dialect: duckdb
SELECT COALESCE((globalPid >> 24) & 16777215, -1) AS pid, COALESCE(deviceId, -1) AS dev,
       COALESCE(streamId, -1) AS stream, start AS s, greatest("end", start) AS e,
       COALESCE(shortName, -1) AS sid, COALESCE(demangledName, -1) AS did
FROM CUPTI_ACTIVITY_KIND_KERNEL
WHERE start IS NOT NULL AND "end" IS NOT NULL AND list_contains($comm_sids, COALESCE(shortName, -1))
ORDER BY pid, dev, stream, s
