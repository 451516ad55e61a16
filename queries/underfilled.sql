-- name: underfilled
-- version: 2
-- returns: the under-filled launches (sm_fill_pct < 50: fewer thread blocks than half the SMs of the GPU they ran on, macro nsysq_sm_fill_pct), one row per kernel name and launch grid, by time: rank, name, grid (gridX x gridY x gridZ), blocks, sms, sm_fill_pct, instances, total_ns, avg_ns, share_pct (of the trace's kernel time), name_share_pct (of that name's kernel time), meaning ("grid 1x1x1 on 132 SMs: 1 SM busy, 131 idle"); with limit > 0 only the top rows. Launches on a GPU whose SM count the export does not give are not listed (stakeout shows them with sms NULL).
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, shortName, demangledName, gridX, gridY, gridZ, deviceId, globalPid), StringIds(id, value), nsysq_launch_devices (queries/launch/devices.sql), TARGET_INFO_GPU, TARGET_INFO_CUDA_GPU, TARGET_INFO_CUDA_DEVICE
-- params: names ('short' or 'demangled'); limit (integer, 0 = every row)
-- dialect: duckdb
WITH k AS (
    SELECT
        CASE WHEN $names = 'demangled' THEN k.demangledName ELSE k.shortName END AS name_id,
        k.gridX, k.gridY, k.gridZ, nsysq_dims(k.gridX, k.gridY, k.gridZ) AS blocks, d.sms, k."end" - k.start AS dur
    FROM CUPTI_ACTIVITY_KIND_KERNEL AS k
    LEFT JOIN nsysq_launch_devices AS d
        ON d.global_pid IS NOT DISTINCT FROM k.globalPid AND d.device_id IS NOT DISTINCT FROM k.deviceId
),
per_name AS (
    SELECT name_id, sum(dur) AS name_ns FROM k GROUP BY name_id
),
grand AS (
    SELECT sum(dur) AS all_ns FROM k
),
under AS (
    SELECT name_id, gridX, gridY, gridZ, blocks, sms, count(*) AS instances, sum(dur) AS total_ns
    FROM k
    WHERE nsysq_sm_fill_pct(blocks, sms) < 50
    GROUP BY name_id, gridX, gridY, gridZ, blocks, sms
),
ranked AS (
    SELECT
        u.*,
        nsysq_name_label(u.name_id, s.value) AS name,
        row_number() OVER (ORDER BY u.total_ns DESC, u.instances DESC, s.value, u.blocks) AS rank
    FROM under AS u
    LEFT JOIN StringIds AS s ON s.id = u.name_id
)
SELECT
    r.rank,
    r.name,
    concat_ws('x', r.gridX, r.gridY, r.gridZ) AS grid,
    r.blocks,
    r.sms,
    nsysq_sm_fill_pct(r.blocks, r.sms) AS sm_fill_pct,
    r.instances,
    r.total_ns,
    r.total_ns / r.instances AS avg_ns,
    CASE WHEN g.all_ns > 0 THEN 100.0 * r.total_ns / g.all_ns END AS share_pct,
    CASE WHEN p.name_ns > 0 THEN 100.0 * r.total_ns / p.name_ns END AS name_share_pct,
    'grid ' || concat_ws('x', r.gridX, r.gridY, r.gridZ) || ' on ' || r.sms || ' SMs: '
        || CASE WHEN r.blocks = 0 THEN 'no SM busy'
                WHEN r.blocks = 1 THEN '1 SM busy'
                ELSE r.blocks || ' SMs busy' END
        || ', ' || (r.sms - r.blocks) || ' idle' AS meaning
FROM ranked AS r
JOIN per_name AS p ON p.name_id IS NOT DISTINCT FROM r.name_id
CROSS JOIN grand AS g
WHERE $limit <= 0 OR r.rank <= $limit
ORDER BY r.rank
