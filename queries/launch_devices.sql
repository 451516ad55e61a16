-- name: launch_devices
-- version: 1
-- returns: one row per distinct (globalPid, deviceId) of the kernel table: global_pid, device_id (the CUDA ordinal as the process saw it), pid, the GPU it maps to (gpu_id, gpu_name, mapping = how: 'TARGET_INFO_CUDA_DEVICE' (process ordinal -> GPU id, nsys 2025.1+), 'cuDevice' (TARGET_INFO_GPU.cuDevice = deviceId; exact when the process saw every GPU in system order), 'TARGET_INFO_CUDA_GPU' (2020.x, per process), NULL when no GPU row matches), sms (TARGET_INFO_CUDA_DEVICE.numMultiprocessors when the export has it, else the GPU's SM count), and the GPU's limits and allocation constants as in queries/gpus.sql. Never TARGET_INFO_GPU.id = deviceId: in multi-GPU exports the ids are nsys's own numbering. nsysq exposes it as nsysq_launch_devices.
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(globalPid, deviceId), TARGET_INFO_CUDA_DEVICE(gpuId, cudaId, pid, numMultiprocessors), nsysq_gpus (queries/gpus.sql)
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
candidates AS (
    SELECT l.global_pid, l.device_id, l.pid, 1 AS priority, 'TARGET_INFO_CUDA_DEVICE' AS mapping,
           d.numMultiprocessors AS device_sms, g.*
    FROM launch AS l
    JOIN TARGET_INFO_CUDA_DEVICE AS d ON d.pid = l.pid AND d.cudaId = l.device_id
    JOIN cuda_gpus AS g ON g.source = 'TARGET_INFO_GPU' AND g.gpu_id = d.gpuId
    UNION ALL
    SELECT l.global_pid, l.device_id, l.pid, 2, 'cuDevice', NULL, g.*
    FROM launch AS l
    JOIN cuda_gpus AS g ON g.source = 'TARGET_INFO_GPU' AND g.cuda_device = l.device_id
    UNION ALL
    SELECT l.global_pid, l.device_id, l.pid, 3, 'TARGET_INFO_CUDA_GPU', NULL, g.*
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
