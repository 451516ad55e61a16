-- name: check_underfilled
-- version: 1
-- returns: nsysq check's rule underfilled: kernel launches that keep fewer than fill_pct % of the GPU's SMs busy (macro nsysq_sm_fill_pct, as census --underfilled and stakeout compute it), grouped by process, device, short name and grid, the groups holding at least min_share_pct % of the kernel time in the window, longest first: pid, device_id, name, grid (gridX x gridY x gridZ), blocks, sms, sm_fill_pct, instances, total_ns, first_start_ns (the group's first launch, relative to t0), share_pct (of the kernel time in the window), fill_known (launches whose SM count the export gives). Launches on a GPU whose SM count the export does not give are never under-filled. Launches overlapping the window [from_ns, to_ns) are kept; NULL bounds mean open.
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, shortName, gridX, gridY, gridZ, deviceId, globalPid), StringIds(id, value), nsysq_launch_devices (queries/launch/devices.sql), TARGET_INFO_GPU, TARGET_INFO_CUDA_GPU, TARGET_INFO_CUDA_DEVICE
-- params: t0 (trace start, ns); from_ns (window start relative to t0, or NULL); to_ns (window end relative to t0, or NULL); fill_pct (a launch is under-filled below this SM fill, %); min_share_pct (a group is reported from this share of kernel time, %)
-- dialect: duckdb
-- The launches are grouped first (millions of rows into a few groups), then the groups meet their
-- GPU's SM count: the same rows as joining each launch to nsysq_launch_devices, for a fraction of it.
WITH k AS (
    SELECT
        shortName AS name_id, globalPid, deviceId, gridX, gridY, gridZ,
        count(*) AS instances, sum("end" - start) AS total_ns, min(start) AS first_start
    FROM CUPTI_ACTIVITY_KIND_KERNEL
    WHERE ($to_ns IS NULL OR start - $t0 < $to_ns) AND ($from_ns IS NULL OR "end" - $t0 >= $from_ns)
    GROUP BY ALL
),
g AS (
    SELECT k.*, nsysq_dims(k.gridX, k.gridY, k.gridZ) AS blocks, d.sms
    FROM k
    LEFT JOIN nsysq_launch_devices AS d
        ON d.global_pid IS NOT DISTINCT FROM k.globalPid AND d.device_id IS NOT DISTINCT FROM k.deviceId
),
grand AS (
    SELECT sum(total_ns) AS all_ns, COALESCE(sum(instances) FILTER (WHERE sms > 0), 0) AS fill_known FROM g
),
under AS (
    SELECT
        name_id, globalPid, deviceId, gridX, gridY, gridZ, blocks, sms,
        sum(instances) AS instances, sum(total_ns) AS total_ns, min(first_start) AS first_start
    FROM g
    WHERE nsysq_sm_fill_pct(blocks, sms) < $fill_pct
    GROUP BY ALL
)
SELECT
    (u.globalPid >> 24) & 16777215 AS pid,
    u.deviceId AS device_id,
    nsysq_name_label(u.name_id, s.value) AS name,
    concat_ws('x', u.gridX, u.gridY, u.gridZ) AS grid,
    u.blocks,
    u.sms,
    nsysq_sm_fill_pct(u.blocks, u.sms) AS sm_fill_pct,
    u.instances,
    u.total_ns,
    u.first_start - $t0 AS first_start_ns,
    100.0 * u.total_ns / g.all_ns AS share_pct,
    g.fill_known
FROM under AS u
CROSS JOIN grand AS g
LEFT JOIN StringIds AS s ON s.id = u.name_id
WHERE g.all_ns > 0 AND 100.0 * u.total_ns / g.all_ns >= $min_share_pct
ORDER BY u.total_ns DESC, u.instances DESC, name, pid, device_id, u.blocks
