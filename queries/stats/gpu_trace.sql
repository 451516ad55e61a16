-- name: stats_gpu_trace
-- version: 1
-- returns: nsys stats cuda_gpu_trace: one row per kernel, memcpy and memset in scope, in start order (then end): op ('kernel', 'memcpy', 'memset'), start_ns (as stored), duration_ns, corr_id, grid and block (kernels), registers per thread, static and dynamic shared memory bytes (kernels), bytes and throughput_bps (bytes x (10^9 div duration), the division in integers first; memcpys and memsets), src_kind and dst_kind (memory-kind labels of a memcpy; a memset's kind as dst_kind), device (GPU name (deviceId)), context_id, stream_id, name_id and name (kernels: demangled name; memcpys: copy_kind and its label; memsets: NULL). An op is kept when it overlaps [from_ns, to_ns) (NULL: unbounded).
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, correlationId, deviceId, contextId, streamId, demangledName, gridX, gridY, gridZ, blockX, blockY, blockZ, registersPerThread, staticSharedMemory, dynamicSharedMemory), CUPTI_ACTIVITY_KIND_MEMCPY(start, end, correlationId, deviceId, contextId, streamId, bytes, copyKind, srcKind, dstKind), CUPTI_ACTIVITY_KIND_MEMSET(start, end, correlationId, deviceId, contextId, streamId, bytes, memKind), ENUM_CUDA_MEMCPY_OPER(id, label), ENUM_CUDA_MEM_KIND(id, label), TARGET_INFO_GPU(id, name), StringIds(id, value)
-- params: from_ns (absolute ns or NULL); to_ns (absolute ns or NULL)
-- dialect: duckdb
WITH ops AS (
    SELECT
        'kernel' AS op, start, "end", correlationId, deviceId, contextId, streamId,
        gridX, gridY, gridZ, blockX, blockY, blockZ, registersPerThread,
        staticSharedMemory, dynamicSharedMemory, CAST(NULL AS BIGINT) AS bytes,
        CAST(NULL AS BIGINT) AS copyKind, CAST(NULL AS BIGINT) AS srcKind, CAST(NULL AS BIGINT) AS dstKind,
        demangledName AS name_id
    FROM CUPTI_ACTIVITY_KIND_KERNEL
    UNION ALL
    SELECT
        'memcpy', start, "end", correlationId, deviceId, contextId, streamId,
        NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, bytes, copyKind, srcKind, dstKind, NULL
    FROM CUPTI_ACTIVITY_KIND_MEMCPY
    UNION ALL
    SELECT
        'memset', start, "end", correlationId, deviceId, contextId, streamId,
        NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, bytes, NULL, NULL, memKind, NULL
    FROM CUPTI_ACTIVITY_KIND_MEMSET
)
SELECT
    o.op,
    o.start AS start_ns,
    o."end" - o.start AS duration_ns,
    o.correlationId AS corr_id,
    o.gridX AS grid_x, o.gridY AS grid_y, o.gridZ AS grid_z,
    o.blockX AS block_x, o.blockY AS block_y, o.blockZ AS block_z,
    o.registersPerThread AS registers_per_thread,
    o.staticSharedMemory AS static_shared_bytes,
    o.dynamicSharedMemory AS dynamic_shared_bytes,
    o.bytes,
    CASE WHEN o.bytes IS NOT NULL AND o."end" > o.start
        THEN o.bytes * (1000000000 // (o."end" - o.start)) END AS throughput_bps,
    sk.label AS src_kind,
    dk.label AS dst_kind,
    COALESCE(g.name, 'GPU') || ' (' || CAST(o.deviceId AS VARCHAR) || ')' AS device,
    o.contextId AS context_id,
    o.streamId AS stream_id,
    o.copyKind AS copy_kind,
    ck.label AS kind_label,
    CASE WHEN o.op = 'kernel' THEN nsysq_name_label(o.name_id, s.value) END AS name
FROM ops AS o
LEFT JOIN StringIds AS s ON s.id = o.name_id
LEFT JOIN ENUM_CUDA_MEMCPY_OPER AS ck ON ck.id = o.copyKind
LEFT JOIN ENUM_CUDA_MEM_KIND AS sk ON sk.id = o.srcKind
LEFT JOIN ENUM_CUDA_MEM_KIND AS dk ON dk.id = o.dstKind
LEFT JOIN (SELECT id, min(name) AS name FROM TARGET_INFO_GPU GROUP BY id) AS g ON g.id = o.deviceId
WHERE ($from_ns IS NULL OR o."end" > $from_ns) AND ($to_ns IS NULL OR o.start < $to_ns)
ORDER BY o.start, o."end", o.op
