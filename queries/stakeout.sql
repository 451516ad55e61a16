-- name: stakeout
-- version: 3
-- returns: every launch of the kernels whose short or demangled name equals the kernel param (match = 'exact') or matches it as a case-insensitive LIKE pattern (match = 'like'), ordered by start: start_ns relative to the trace start t0, duration_ns, name, grid_x/y/z, block_x/y/z, registers_per_thread, static_shared_memory, dynamic_shared_memory, device_id, stream_id, correlation_id, demangled_name. A CUDA graph traced whole is staked out by its census name 'graph <graphId>': one row per execution, launch configuration NULL, name = demangled_name = 'graph <graphId>'.
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, shortName, demangledName, gridX, gridY, gridZ, blockX, blockY, blockZ, registersPerThread, staticSharedMemory, dynamicSharedMemory, deviceId, streamId, correlationId), CUPTI_ACTIVITY_KIND_GRAPH_TRACE(start, end, graphId, deviceId, streamId, correlationId), StringIds(id, value)
-- params: kernel (name or LIKE pattern); match ('exact' or 'like'); t0 (trace start, ns); row_limit (at most this many launches, earliest first)
-- dialect: duckdb
WITH ids AS (
    SELECT id FROM StringIds
    WHERE CASE WHEN $match = 'like' THEN lower(value) LIKE lower($kernel) ELSE value = $kernel END
),
kernel_columns AS (
    SELECT
        start, "end", shortName, demangledName, gridX, gridY, gridZ, blockX, blockY, blockZ,
        registersPerThread, staticSharedMemory, dynamicSharedMemory, deviceId, streamId, correlationId,
        CAST(NULL AS VARCHAR) AS graph_name
    FROM CUPTI_ACTIVITY_KIND_KERNEL
),
picked AS (
    -- Two selective scans instead of one OR of two IN-lists (about 2x faster on 5M launches).
    SELECT * FROM (
        SELECT * FROM kernel_columns WHERE shortName IN (SELECT id FROM ids)
        UNION ALL
        SELECT * FROM kernel_columns
        WHERE demangledName IN (SELECT id FROM ids) AND COALESCE(shortName, -1) NOT IN (SELECT id FROM ids)
        UNION ALL  -- a CUDA graph traced whole, by its census name
        SELECT
            start, "end", NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
            deviceId, streamId, correlationId, 'graph ' || CAST(graphId AS VARCHAR)
        FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE
        WHERE CASE WHEN $match = 'like' THEN lower('graph ' || CAST(graphId AS VARCHAR)) LIKE lower($kernel)
                   ELSE 'graph ' || CAST(graphId AS VARCHAR) = $kernel END
    )
    -- LIMIT after ORDER BY here trips a DuckDB 1.5.5 internal error over the sqlite scanner; QUALIFY is exact.
    QUALIFY row_number() OVER (ORDER BY start, deviceId, streamId) <= $row_limit
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
    COALESCE(k.graph_name, d.value) AS demangled_name
FROM picked AS k
LEFT JOIN StringIds AS s ON s.id = k.shortName
LEFT JOIN StringIds AS d ON d.id = k.demangledName
ORDER BY k.start, k.deviceId, k.streamId
