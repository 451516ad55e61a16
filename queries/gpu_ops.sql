-- name: gpu_ops
-- version: 1
-- returns: one row per GPU op with a start and an end (kernels, memcpys, memsets): kind (0 = kernel of any category but $comm_category, 1 = kernel in the lineup category $comm_category, 2 = memcpy or memset), dev (deviceId; -1 when NULL), s (start), e (end; the start when the end is before it). nsysq diff's GPU totals are the unions of these intervals per device (nsysq.gpu_busy, computed by nsysq.intervals from the starts and ends sorted; on a direct read of the export's pages the same rows are read from the decoded columns).
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, shortName, demangledName), CUPTI_ACTIVITY_KIND_MEMCPY(start, end, deviceId), CUPTI_ACTIVITY_KIND_MEMSET(start, end, deviceId), nsysq_kernel_category (temp table built by nsysq from queries/kernel_category.sql)
-- params: comm_category (the lineup category of communication kernels)
-- dialect: duckdb
WITH comm AS (
    SELECT COALESCE(shortName, -1) AS sid, COALESCE(demangledName, -1) AS did
    FROM nsysq_kernel_category
    GROUP BY shortName, demangledName
    HAVING bool_or(category = $comm_category)
)
SELECT CASE WHEN c.sid IS NULL THEN 0 ELSE 1 END AS kind, COALESCE(k.deviceId, -1) AS dev,
       k.start AS s, greatest(k."end", k.start) AS e
FROM CUPTI_ACTIVITY_KIND_KERNEL AS k
LEFT JOIN comm AS c ON c.sid = COALESCE(k.shortName, -1) AND c.did = COALESCE(k.demangledName, -1)
WHERE k.start IS NOT NULL AND k."end" IS NOT NULL
UNION ALL
SELECT 2, COALESCE(deviceId, -1), start, greatest("end", start)
FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE start IS NOT NULL AND "end" IS NOT NULL
UNION ALL
SELECT 2, COALESCE(deviceId, -1), start, greatest("end", start)
FROM CUPTI_ACTIVITY_KIND_MEMSET WHERE start IS NOT NULL AND "end" IS NOT NULL
