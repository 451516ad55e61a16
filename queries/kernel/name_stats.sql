-- name: kernel_name_stats
-- version: 5
-- returns: launch statistics per kernel name, for both name kinds: one row per (names, name_id) with names = 'short' (name_id = shortName) or 'demangled' (name_id = demangledName): instances, total_ns, avg_ns, med_ns, min_ns, max_ns, stddev_ns, variants (distinct demangled names), zero_length (launches with end = start), fill_known_ns (time in launches whose GPU's SM count is known), underfilled_ns and underfilled_launches (time and launches with sm_fill_pct < 50: fewer thread blocks than half the SMs, macro nsysq_sm_fill_pct in queries/sm_fill.sql). nsysq exposes it as nsysq_kernel_name_stats: a view on a direct read, a table stored in the cached copy (so census on the copy never aggregates 5M rows).
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, shortName, demangledName, gridX, gridY, gridZ, deviceId, globalPid), nsysq_launch_devices (queries/launch/devices.sql), TARGET_INFO_GPU, TARGET_INFO_CUDA_GPU, TARGET_INFO_CUDA_DEVICE
-- params: none
-- dialect: duckdb
WITH k AS (
    SELECT shortName, demangledName, "end" - start AS dur FROM CUPTI_ACTIVITY_KIND_KERNEL
),
by_kind AS (  -- every launch once per name kind; a filter on names prunes the other branch
    SELECT 'short' AS names, shortName AS name_id, dur FROM k
    UNION ALL
    SELECT 'demangled' AS names, demangledName AS name_id, dur FROM k
),
stats AS (
    SELECT
        names,
        name_id,
        count(*) AS instances,
        sum(dur) AS total_ns,
        avg(dur) AS avg_ns,
        median(dur) AS med_ns,
        min(dur) AS min_ns,
        max(dur) AS max_ns,
        stddev_samp(dur) AS stddev_ns,
        count(*) FILTER (WHERE dur = 0) AS zero_length
    FROM by_kind
    GROUP BY names, name_id
),
-- The fill needs the grid and the device of each launch: launches are first grouped by name pair,
-- grid and device (a few thousand groups; the block count is a product of each group's grid, not
-- of every launch's), and only the groups meet the device table. The groups also give each name's
-- variants (distinct demangled names), so the per-launch pass above keeps no set per name.
grids AS (
    SELECT
        shortName, demangledName, gridX, gridY, gridZ, deviceId, globalPid,
        count(*) AS n, sum("end" - start) AS ns
    FROM CUPTI_ACTIVITY_KIND_KERNEL
    GROUP BY ALL
),
filled AS (
    SELECT
        g.shortName, g.demangledName, g.n, g.ns, d.sms IS NOT NULL AS known,
        COALESCE(nsysq_sm_fill_pct(nsysq_dims(g.gridX, g.gridY, g.gridZ), d.sms) < 50, false) AS under
    FROM grids AS g
    LEFT JOIN nsysq_launch_devices AS d
        ON d.global_pid IS NOT DISTINCT FROM g.globalPid AND d.device_id IS NOT DISTINCT FROM g.deviceId
),
fill AS (
    SELECT 'short' AS names, shortName AS name_id, * EXCLUDE (shortName) FROM filled
    UNION ALL
    SELECT 'demangled' AS names, demangledName AS name_id, * EXCLUDE (shortName) FROM filled
),
fill_by_name AS (
    SELECT
        names, name_id,
        count(DISTINCT demangledName) AS variants,
        COALESCE(sum(ns) FILTER (WHERE known), 0) AS fill_known_ns,
        COALESCE(sum(ns) FILTER (WHERE under), 0) AS underfilled_ns,
        COALESCE(sum(n) FILTER (WHERE under), 0) AS underfilled_launches
    FROM fill
    GROUP BY names, name_id
)
SELECT
    s.names, s.name_id, s.instances, s.total_ns, s.avg_ns, s.med_ns, s.min_ns, s.max_ns, s.stddev_ns,
    f.variants, s.zero_length, f.fill_known_ns, f.underfilled_ns, f.underfilled_launches
FROM stats AS s
JOIN fill_by_name AS f ON f.names = s.names AND f.name_id IS NOT DISTINCT FROM s.name_id
