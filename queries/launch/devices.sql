-- name: launch_devices
-- version: 2
-- returns: one row per distinct (globalPid, deviceId) of the kernel table: global_pid, device_id (the CUDA ordinal as the process saw it), pid, the GPU it maps to (gpu_id, gpu_name, mapping = how: 'TARGET_INFO_CUDA_DEVICE' (process ordinal -> GPU id, nsys 2025.1+), 'CUDA_VISIBLE_DEVICES' (the ordinal's entry in the CUDA_VISIBLE_DEVICES the export records: a GPU UUID names the GPU; a system ordinal k is the GPU with cuDevice = k when the export lists more CUDA GPUs than the variable names, i.e. nsys saw them all and the process a subset), 'MIG instance' (the entry is a MIG instance: the export does not give its SM count, so sms is NULL), 'cuDevice' (TARGET_INFO_GPU.cuDevice = deviceId; exact when the process saw every GPU in system order), 'TARGET_INFO_CUDA_GPU' (2020.x, per process), NULL when no GPU row matches), sms (TARGET_INFO_CUDA_DEVICE.numMultiprocessors when the export has it, else the GPU's SM count), and the GPU's limits and allocation constants as in queries/gpus.sql. Never TARGET_INFO_GPU.id = deviceId: in multi-GPU exports the ids are nsys's own numbering. nsysq exposes it as nsysq_launch_devices.
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(globalPid, deviceId), TARGET_INFO_CUDA_DEVICE(gpuId, cudaId, pid, numMultiprocessors), nsysq_cuda_visible_devices (the CUDA_VISIBLE_DEVICES values read from META_DATA_CAPTURE and TARGET_INFO_SYSTEM_ENV when the trace opens, nsysq/export/schema.py), nsysq_gpus (queries/gpus.sql)
-- params: none
-- dialect: duckdb
WITH seen AS (
    SELECT DISTINCT globalPid, deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL
),
launch AS (
    SELECT globalPid AS global_pid, deviceId AS device_id, (globalPid >> 24) & 16777215 AS pid FROM seen
),
cuda_gpus AS (
    SELECT * FROM nsysq_gpus WHERE sms > 0
),
-- CUDA_VISIBLE_DEVICES as the export records it, from its better source (the launched processes'
-- environment, else nsys's own), used only when that source holds one value.
visible AS (
    SELECT min(list) AS list FROM nsysq_cuda_visible_devices
    WHERE source = (SELECT min(source) FROM nsysq_cuda_visible_devices)
    HAVING count(DISTINCT list) = 1
),
entries AS (  -- each (process, ordinal)'s entry, and whether the export lists more CUDA GPUs than it names
    SELECT
        l.*, trim(string_split(v.list, ',')[l.device_id + 1]) AS entry,
        len(string_split(v.list, ',')) < (SELECT count(*) FROM cuda_gpus WHERE source = 'TARGET_INFO_GPU')
            AS subset
    FROM launch AS l, visible AS v
    WHERE l.device_id >= 0
),
by_uuid AS (  -- a (possibly shortened) GPU UUID: exactly one GPU must carry it
    SELECT
        e.global_pid AS of_pid, e.device_id AS of_device, e.pid AS of_process, g.*,
        count(*) OVER (PARTITION BY e.global_pid, e.device_id) AS matches
    FROM entries AS e
    JOIN cuda_gpus AS g ON g.source = 'TARGET_INFO_GPU' AND upper(e.entry) LIKE 'GPU-_%'
        AND starts_with(lower(g.uuid), lower(substr(e.entry, 5)))
),
candidates AS (
    SELECT l.global_pid, l.device_id, l.pid, 1 AS priority, 'TARGET_INFO_CUDA_DEVICE' AS mapping,
           d.numMultiprocessors AS device_sms, g.*
    FROM launch AS l
    JOIN TARGET_INFO_CUDA_DEVICE AS d ON d.pid = l.pid AND d.cudaId = l.device_id
    JOIN cuda_gpus AS g ON g.source = 'TARGET_INFO_GPU' AND g.gpu_id = d.gpuId
    UNION ALL
    SELECT of_pid, of_device, of_process, 2, 'CUDA_VISIBLE_DEVICES', NULL, * EXCLUDE (of_pid, of_device, of_process, matches)
    FROM by_uuid WHERE matches = 1
    UNION ALL
    SELECT e.global_pid, e.device_id, e.pid, 2, 'CUDA_VISIBLE_DEVICES', NULL, g.*
    FROM entries AS e
    JOIN cuda_gpus AS g ON g.source = 'TARGET_INFO_GPU' AND e.subset AND regexp_full_match(e.entry, '[0-9]+')
        AND g.cuda_device = CAST(e.entry AS BIGINT)
    UNION ALL  -- a MIG instance: its SM count is not in the export, and the whole GPU's would be wrong
    SELECT e.global_pid, e.device_id, e.pid, 2, 'MIG instance', NULL, g.*
    FROM entries AS e
    LEFT JOIN cuda_gpus AS g ON false
    WHERE upper(e.entry) LIKE 'MIG-%'
    UNION ALL
    SELECT l.global_pid, l.device_id, l.pid, 3, 'cuDevice', NULL, g.*
    FROM launch AS l
    JOIN cuda_gpus AS g ON g.source = 'TARGET_INFO_GPU' AND g.cuda_device = l.device_id
    UNION ALL
    SELECT l.global_pid, l.device_id, l.pid, 4, 'TARGET_INFO_CUDA_GPU', NULL, g.*
    FROM launch AS l
    JOIN cuda_gpus AS g ON g.source = 'TARGET_INFO_CUDA_GPU' AND g.cuda_device = l.device_id
        AND (g.pid = l.pid OR g.pid IS NULL)
),
best AS (
    SELECT * FROM candidates
    QUALIFY row_number() OVER (PARTITION BY global_pid, device_id ORDER BY priority, gpu_id) = 1
)
SELECT
    l.global_pid, l.device_id, l.pid,
    b.gpu_id, b.name AS gpu_name, b.mapping,
    COALESCE(b.device_sms, b.sms) AS sms,
    b.compute_major, b.compute_minor, b.threads_per_warp, b.max_warps_per_sm, b.max_threads_per_sm,
    b.max_blocks_per_sm, b.max_registers_per_sm, b.max_shared_memory_per_sm,
    b.reserved_shared_memory_per_block, b.register_allocation_unit, b.register_sub_partitions,
    b.shared_memory_granularity
FROM launch AS l
LEFT JOIN best AS b ON b.global_pid IS NOT DISTINCT FROM l.global_pid AND b.device_id IS NOT DISTINCT FROM l.device_id
