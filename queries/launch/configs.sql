-- name: launch_configs
-- version: 2
-- returns: the launch configurations of the kernels whose short or demangled name equals the kernel param, one row per distinct configuration, most launches first: grid_x/y/z, block_x/y/z, blocks, threads_per_block, registers_per_thread, static_shared_memory, dynamic_shared_memory, shared_memory_executed, cluster_x/y/z (nsys 2025.5+, else NULL), sms (SM count of the GPU, nsysq_launch_devices), sm_fill_pct, launches, total_ns.
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, shortName, demangledName, gridX, gridY, gridZ, blockX, blockY, blockZ, registersPerThread, staticSharedMemory, dynamicSharedMemory, sharedMemoryExecuted, clusterX, clusterY, clusterZ, deviceId, globalPid), StringIds(id, value), nsysq_launch_devices (queries/launch/devices.sql), TARGET_INFO_GPU, TARGET_INFO_CUDA_GPU, TARGET_INFO_CUDA_DEVICE
-- params: kernel (exact short or demangled name)
-- dialect: duckdb
WITH ids AS (
    SELECT id FROM StringIds WHERE value = $kernel
),
picked AS (
    SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL
    WHERE shortName IN (SELECT id FROM ids) OR demangledName IN (SELECT id FROM ids)
)
SELECT
    k.gridX AS grid_x, k.gridY AS grid_y, k.gridZ AS grid_z,
    k.blockX AS block_x, k.blockY AS block_y, k.blockZ AS block_z,
    nsysq_dims(k.gridX, k.gridY, k.gridZ) AS blocks,
    nsysq_dims(k.blockX, k.blockY, k.blockZ) AS threads_per_block,
    k.registersPerThread AS registers_per_thread,
    k.staticSharedMemory AS static_shared_memory,
    k.dynamicSharedMemory AS dynamic_shared_memory,
    k.sharedMemoryExecuted AS shared_memory_executed,
    k.clusterX AS cluster_x, k.clusterY AS cluster_y, k.clusterZ AS cluster_z,
    d.sms,
    nsysq_sm_fill_pct(nsysq_dims(k.gridX, k.gridY, k.gridZ), d.sms) AS sm_fill_pct,
    count(*) AS launches,
    sum(k."end" - k.start) AS total_ns
FROM picked AS k
LEFT JOIN nsysq_launch_devices AS d
    ON d.global_pid IS NOT DISTINCT FROM k.globalPid AND d.device_id IS NOT DISTINCT FROM k.deviceId
GROUP BY ALL
ORDER BY launches DESC, total_ns DESC, grid_x, grid_y, grid_z, block_x
