-- name: gpus
-- version: 2
-- returns: one row per GPU the export describes, with its SM count and per-SM limits: source (the table it comes from: TARGET_INFO_GPU from nsys 2021.2, TARGET_INFO_CUDA_GPU in 2020.x, one row per process and device), gpu_id (TARGET_INFO_GPU.id, or the legacy deviceId), pid (legacy rows only), cuda_device (the CUDA ordinal nsys records for it), name, bus_location, uuid (TARGET_INFO_GPU.uuid, NULL for legacy rows), sms, compute_major, compute_minor, threads_per_warp, max_warps_per_sm, max_threads_per_sm (warps x threads per warp), max_blocks_per_sm, max_registers_per_sm, max_shared_memory_per_sm, max_shared_memory_per_block_optin, reserved_shared_memory_per_block (maxShmemPerSm - maxShmemPerBlockOptin when both are known; 0 for compute capability 7.x and older, whose per-block maximum equals the per-SM one; else NULL), (a limit the export records as 0, as the RTX 6000 export does for maxBlocksPerSm, reads NULL: unknown), and the allocation constants of cuda_occupancy.h for the compute capability (NULL when unknown): register_allocation_unit (registers per warp), register_sub_partitions, shared_memory_granularity (bytes). nsysq exposes it as nsysq_gpus.
-- tables: TARGET_INFO_GPU(id, name, busLocation, uuid, smCount, cuDevice, computeMajor, computeMinor, threadsPerWarp, maxWarpsPerSm, maxBlocksPerSm, maxRegistersPerSm, maxShmemPerSm, maxShmemPerBlockOptin), TARGET_INFO_CUDA_GPU(deviceId, pid, name, pciBusId, numMultiprocessors, computeCapabilityMajor, computeCapabilityMinor, numThreadsPerWarp, maxWarpsPerMultiprocessor, maxBlocksPerMultiprocessor, maxRegistersPerMultiprocessor, maxSharedMemoryPerMultiprocessor)
-- params: none
-- dialect: duckdb
WITH described AS (
    SELECT
        'TARGET_INFO_GPU' AS source, id AS gpu_id, CAST(NULL AS BIGINT) AS pid, cuDevice AS cuda_device,
        name, busLocation AS bus_location, uuid, smCount AS sms,
        computeMajor AS compute_major, computeMinor AS compute_minor,
        NULLIF(threadsPerWarp, 0) AS threads_per_warp, NULLIF(maxWarpsPerSm, 0) AS max_warps_per_sm,
        NULLIF(maxBlocksPerSm, 0) AS max_blocks_per_sm, NULLIF(maxRegistersPerSm, 0) AS max_registers_per_sm,
        NULLIF(maxShmemPerSm, 0) AS max_shared_memory_per_sm, NULLIF(maxShmemPerBlockOptin, 0) AS max_shared_memory_per_block_optin
    FROM TARGET_INFO_GPU
    WHERE smCount IS NOT NULL  -- the 5-column table of the NVHPC 21.2 nsys holds no limits
    UNION ALL
    SELECT
        'TARGET_INFO_CUDA_GPU', deviceId, pid, deviceId,
        name, pciBusId, NULL, numMultiprocessors,
        computeCapabilityMajor, computeCapabilityMinor,
        NULLIF(numThreadsPerWarp, 0), NULLIF(maxWarpsPerMultiprocessor, 0),
        NULLIF(maxBlocksPerMultiprocessor, 0), NULLIF(maxRegistersPerMultiprocessor, 0),
        NULLIF(maxSharedMemoryPerMultiprocessor, 0), NULL
    FROM TARGET_INFO_CUDA_GPU
),
-- cuda_occupancy.h: cudaOccRegAllocationGranularity (256 registers per warp),
-- cudaOccSubPartitionsPerMultiprocessor (2 on cc 6.0, else 4), cudaOccSMemAllocationGranularity
-- (256 B up to cc 7.x, 128 B from cc 8.0). Not in the export: kept per compute capability here.
arch(major, minor_or_any, register_allocation_unit, register_sub_partitions, shared_memory_granularity) AS (
    VALUES (3, -1, 256, 4, 256), (5, -1, 256, 4, 256), (6, 0, 256, 2, 256), (6, -1, 256, 4, 256),
           (7, -1, 256, 4, 256), (8, -1, 256, 4, 128), (9, -1, 256, 4, 128), (10, -1, 256, 4, 128),
           (11, -1, 256, 4, 128), (12, -1, 256, 4, 128)
)
SELECT
    d.source, d.gpu_id, d.pid, d.cuda_device, d.name, d.bus_location, d.uuid, d.sms,
    d.compute_major, d.compute_minor, d.threads_per_warp, d.max_warps_per_sm,
    d.max_warps_per_sm * d.threads_per_warp AS max_threads_per_sm,
    d.max_blocks_per_sm, d.max_registers_per_sm, d.max_shared_memory_per_sm,
    d.max_shared_memory_per_block_optin,
    CASE
        WHEN d.max_shared_memory_per_sm > 0 AND d.max_shared_memory_per_block_optin > 0
            THEN d.max_shared_memory_per_sm - d.max_shared_memory_per_block_optin
        WHEN d.compute_major BETWEEN 1 AND 7 THEN 0
    END AS reserved_shared_memory_per_block,
    COALESCE(e.register_allocation_unit, a.register_allocation_unit) AS register_allocation_unit,
    COALESCE(e.register_sub_partitions, a.register_sub_partitions) AS register_sub_partitions,
    COALESCE(e.shared_memory_granularity, a.shared_memory_granularity) AS shared_memory_granularity
FROM described AS d
LEFT JOIN arch AS e ON e.major = d.compute_major AND e.minor_or_any = d.compute_minor
LEFT JOIN arch AS a ON a.major = d.compute_major AND a.minor_or_any = -1
ORDER BY d.source DESC, d.gpu_id, d.pid
