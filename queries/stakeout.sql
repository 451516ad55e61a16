-- name: stakeout
-- version: 6
-- returns: every launch of the kernels whose short or demangled name equals the kernel param (match = 'exact') or matches it as a case-insensitive LIKE pattern (match = 'like'), ordered by start: start_ns relative to the trace start t0, duration_ns, name, grid_x/y/z, block_x/y/z, registers_per_thread, static_shared_memory, dynamic_shared_memory, device_id, stream_id, correlation_id, demangled_name; then the launch against the GPU it ran on (nsysq_launch_devices, NULL when the export has no GPU info): blocks (gridX x gridY x gridZ), threads_per_block, sms, sm_fill_pct (100 x min(blocks, sms) / sms, macro nsysq_sm_fill_pct), blocks_per_sm (theoretical resident blocks per SM, the cuda_occupancy.h model: warps, registers in per-warp allocation units over the SM's sub-partitions, shared memory (static + dynamic + the per-block reservation, rounded to the allocation granularity) against the launch's carveout sharedMemoryExecuted, and the SM's block limit), limited_by (the limits that bind: warps, registers, shared memory, blocks; joined with ' & ' on a tie) and waves (blocks / (blocks_per_sm x sms)); all three NULL when any input is unknown. A CUDA graph traced whole is staked out by its census name 'graph <graphId>': one row per execution, launch configuration and fill NULL, name = demangled_name = 'graph <graphId>'.
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, shortName, demangledName, gridX, gridY, gridZ, blockX, blockY, blockZ, registersPerThread, staticSharedMemory, dynamicSharedMemory, sharedMemoryExecuted, deviceId, streamId, correlationId, globalPid), CUPTI_ACTIVITY_KIND_GRAPH_TRACE(start, end, graphId, deviceId, streamId, correlationId), StringIds(id, value), nsysq_launch_devices (queries/launch/devices.sql), TARGET_INFO_GPU, TARGET_INFO_CUDA_GPU, TARGET_INFO_CUDA_DEVICE
-- params: kernel (name or LIKE pattern); match ('exact' or 'like'); t0 (trace start, ns); row_limit (at most this many launches, earliest first)
-- dialect: duckdb
WITH ids AS (
    SELECT id FROM StringIds
    WHERE CASE WHEN $match = 'like' THEN lower(value) LIKE lower($kernel) ELSE value = $kernel END
),
kernel_picked AS (
    -- Two selective scans instead of one OR of two IN-lists (about 2x faster on 5M launches); the
    -- launches are picked before any projection: a CTE both scans read would be materialized
    -- whole (every launch, 800 MB at 5M).
    SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE shortName IN (SELECT id FROM ids)
    UNION ALL
    SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL
    WHERE demangledName IN (SELECT id FROM ids) AND COALESCE(shortName, -1) NOT IN (SELECT id FROM ids)
),
picked AS (
    SELECT * FROM (
        SELECT
            start, "end", shortName, demangledName, gridX, gridY, gridZ, blockX, blockY, blockZ,
            registersPerThread, staticSharedMemory, dynamicSharedMemory, sharedMemoryExecuted, deviceId,
            streamId, correlationId, globalPid, CAST(NULL AS VARCHAR) AS graph_name
        FROM kernel_picked
        UNION ALL  -- a CUDA graph traced whole, by its census name
        SELECT
            start, "end", NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
            deviceId, streamId, correlationId, NULL, 'graph ' || CAST(graphId AS VARCHAR)
        FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE
        WHERE CASE WHEN $match = 'like' THEN lower('graph ' || CAST(graphId AS VARCHAR)) LIKE lower($kernel)
                   ELSE 'graph ' || CAST(graphId AS VARCHAR) = $kernel END
    )
    -- LIMIT after ORDER BY here trips a DuckDB 1.5.5 internal error over the sqlite scanner; QUALIFY is exact.
    QUALIFY row_number() OVER (ORDER BY start, deviceId, streamId) <= $row_limit
),
shaped AS (
    SELECT
        k.*,
        nsysq_dims(k.gridX, k.gridY, k.gridZ) AS blocks,
        nsysq_dims(k.blockX, k.blockY, k.blockZ) AS threads,
        d.sms, d.threads_per_warp, d.max_warps_per_sm, d.max_blocks_per_sm, d.max_registers_per_sm,
        d.register_allocation_unit AS reg_unit, d.register_sub_partitions AS sub_partitions,
        d.shared_memory_granularity AS smem_unit, d.reserved_shared_memory_per_block AS smem_reserved
    FROM picked AS k
    LEFT JOIN nsysq_launch_devices AS d
        ON d.global_pid IS NOT DISTINCT FROM k.globalPid AND d.device_id IS NOT DISTINCT FROM k.deviceId
),
warps AS (
    SELECT *, CAST(ceil(threads / threads_per_warp) AS BIGINT) AS warps_per_block FROM shaped
),
limits AS (
    SELECT
        *,
        max_warps_per_sm // warps_per_block AS by_warps,
        CASE WHEN registersPerThread = 0 THEN max_blocks_per_sm
             ELSE (max_registers_per_sm // sub_partitions
                   // CAST(ceil(registersPerThread * threads_per_warp / reg_unit) * reg_unit AS BIGINT))
                  * sub_partitions // warps_per_block
        END AS by_registers,
        CASE WHEN staticSharedMemory + dynamicSharedMemory + smem_reserved = 0 THEN max_blocks_per_sm
             ELSE sharedMemoryExecuted
                  // CAST(ceil((staticSharedMemory + dynamicSharedMemory + smem_reserved) / smem_unit)
                          * smem_unit AS BIGINT)
        END AS by_smem,
        max_blocks_per_sm AS by_blocks
    FROM warps
),
occupancy AS (
    SELECT
        *,
        CASE WHEN by_warps IS NOT NULL AND by_registers IS NOT NULL AND by_smem IS NOT NULL
                  AND by_blocks IS NOT NULL  -- least() skips NULLs: an unknown limit leaves it unknown
             THEN least(by_warps, by_registers, by_smem, by_blocks) END AS per_sm
    FROM limits
)
SELECT
    k.start - $t0 AS start_ns,
    k."end" - k.start AS duration_ns,
    COALESCE(k.graph_name, s.value) AS name,
    k.gridX AS grid_x,
    k.gridY AS grid_y,
    k.gridZ AS grid_z,
    k.blockX AS block_x,
    k.blockY AS block_y,
    k.blockZ AS block_z,
    k.registersPerThread AS registers_per_thread,
    k.staticSharedMemory AS static_shared_memory,
    k.dynamicSharedMemory AS dynamic_shared_memory,
    k.deviceId AS device_id,
    k.streamId AS stream_id,
    k.correlationId AS correlation_id,
    COALESCE(k.graph_name, d.value) AS demangled_name,
    k.blocks,
    k.threads AS threads_per_block,
    k.sms,
    nsysq_sm_fill_pct(k.blocks, k.sms) AS sm_fill_pct,
    CASE WHEN k.per_sm > 0 THEN k.per_sm END AS blocks_per_sm,
    CASE WHEN k.per_sm > 0 THEN concat_ws(' & ',
        CASE WHEN k.by_warps = k.per_sm THEN 'warps' END,
        CASE WHEN k.by_registers = k.per_sm THEN 'registers' END,
        CASE WHEN k.by_smem = k.per_sm THEN 'shared memory' END,
        CASE WHEN k.by_blocks = k.per_sm THEN 'blocks' END) END AS limited_by,
    CASE WHEN k.per_sm > 0 AND k.sms > 0 THEN k.blocks / (k.per_sm * k.sms) END AS waves
FROM occupancy AS k
LEFT JOIN StringIds AS s ON s.id = k.shortName
LEFT JOIN StringIds AS d ON d.id = k.demangledName
ORDER BY k.start, k.deviceId, k.streamId
