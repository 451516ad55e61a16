-- name: fleet_phase_kernels
-- version: 1
-- returns: one row per kernel of one rank (process $pid, device $dev: pid as (globalPid >> 24) & 0xFFFFFF, -1 for NULL; dev -1 for NULL) outside the category $comm_category, with a start and an end, that overlaps [$lo, $hi]: s, e (the start when the end is before it), category (its lineup category). nsysq fleet collectives sums them per category over the windows before the late rank's collectives.
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, globalPid, shortName, demangledName), nsysq_kernel_category(shortName, demangledName, category) (temp table built by nsysq from queries/kernel/category.sql)
-- params: pid (the rank's process id); dev (its device); lo (the time range's start, ns on the export's clock); hi (its end); comm_category (the lineup category of communication kernels)
-- dialect: duckdb
SELECT k.start AS s, greatest(k."end", k.start) AS e, c.category
FROM CUPTI_ACTIVITY_KIND_KERNEL AS k
JOIN nsysq_kernel_category AS c
    ON c.shortName IS NOT DISTINCT FROM k.shortName
   AND c.demangledName IS NOT DISTINCT FROM k.demangledName
WHERE k.start IS NOT NULL AND k."end" IS NOT NULL
  AND COALESCE((k.globalPid >> 24) & 16777215, -1) = $pid AND COALESCE(k.deviceId, -1) = $dev
  AND k.start < $hi AND k."end" > $lo AND c.category <> $comm_category
