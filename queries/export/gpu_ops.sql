-- name: export_gpu_ops
-- version: 1
-- returns: the GPU operations `nsysq export` writes, one row each, ordered by start: kind ('kernel', 'memcpy', 'memset', 'graph'), start_ns and end_ns (absolute, as in the export), device_id, stream_id, correlation_id, process (globalPid >> 24, to pair an op with the CUDA API call that launched it), name (kernel short name as in census, 'memcpy <copy kind>', 'memset', 'graph <graphId>'), demangled_name (kernels), grid, block (kernels, 'XxYxZ'), registers_per_thread, shared_bytes (static + dynamic shared memory), bytes (memcpys, memsets), copy_kind (memcpys), graph_exec_id (graph executions). Operations overlapping the window [from_ns, to_ns) relative to t0 are kept; NULL bounds mean open.
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, streamId, correlationId, globalPid, shortName, demangledName, gridX, gridY, gridZ, blockX, blockY, blockZ, registersPerThread, staticSharedMemory, dynamicSharedMemory), CUPTI_ACTIVITY_KIND_MEMCPY(start, end, deviceId, streamId, correlationId, globalPid, bytes, copyKind), CUPTI_ACTIVITY_KIND_MEMSET(start, end, deviceId, streamId, correlationId, globalPid, bytes), CUPTI_ACTIVITY_KIND_GRAPH_TRACE(start, end, deviceId, streamId, correlationId, globalPid, graphId, graphExecId), StringIds(id, value), ENUM_CUDA_MEMCPY_OPER(id, label)
-- params: t0 (trace start, ns); from_ns (window start relative to t0, or NULL); to_ns (window end relative to t0, or NULL)
-- dialect: duckdb
WITH ops AS (
    SELECT
        'kernel' AS kind, k.start, k."end", k.deviceId, k.streamId, k.correlationId, k.globalPid,
        nsysq_name_label(k.shortName, s.value) AS name,
        nsysq_name_label(k.demangledName, d.value) AS demangled_name,
        CAST(k.gridX AS VARCHAR) || 'x' || CAST(k.gridY AS VARCHAR) || 'x' || CAST(k.gridZ AS VARCHAR) AS grid,
        CAST(k.blockX AS VARCHAR) || 'x' || CAST(k.blockY AS VARCHAR) || 'x' || CAST(k.blockZ AS VARCHAR)
            AS block,
        k.registersPerThread AS registers_per_thread,
        COALESCE(k.staticSharedMemory, 0) + COALESCE(k.dynamicSharedMemory, 0) AS shared_bytes,
        CAST(NULL AS BIGINT) AS bytes, CAST(NULL AS VARCHAR) AS copy_kind,
        CAST(NULL AS BIGINT) AS graph_exec_id
    FROM CUPTI_ACTIVITY_KIND_KERNEL AS k
    LEFT JOIN StringIds AS s ON s.id = k.shortName
    LEFT JOIN StringIds AS d ON d.id = k.demangledName
    UNION ALL
    SELECT
        'memcpy', m.start, m."end", m.deviceId, m.streamId, m.correlationId, m.globalPid,
        'memcpy ' || COALESCE(e.label, 'copyKind=' || CAST(m.copyKind AS VARCHAR)),
        NULL, NULL, NULL, NULL, NULL, m.bytes,
        COALESCE(e.label, 'copyKind=' || CAST(m.copyKind AS VARCHAR)), NULL
    FROM CUPTI_ACTIVITY_KIND_MEMCPY AS m
    LEFT JOIN ENUM_CUDA_MEMCPY_OPER AS e ON e.id = m.copyKind
    UNION ALL
    SELECT
        'memset', z.start, z."end", z.deviceId, z.streamId, z.correlationId, z.globalPid,
        'memset', NULL, NULL, NULL, NULL, NULL, z.bytes, NULL, NULL
    FROM CUPTI_ACTIVITY_KIND_MEMSET AS z
    UNION ALL
    SELECT
        'graph', g.start, g."end", g.deviceId, g.streamId, g.correlationId, g.globalPid,
        'graph ' || CAST(g.graphId AS VARCHAR), NULL, NULL, NULL, NULL, NULL, NULL, NULL, g.graphExecId
    FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE AS g
)
SELECT
    kind,
    start AS start_ns,
    "end" AS end_ns,
    deviceId AS device_id,
    streamId AS stream_id,
    correlationId AS correlation_id,
    globalPid >> 24 AS process,
    name, demangled_name, grid, block, registers_per_thread, shared_bytes, bytes, copy_kind, graph_exec_id
FROM ops
WHERE ($to_ns IS NULL OR start - $t0 < $to_ns)
  AND ($from_ns IS NULL OR "end" - $t0 >= $from_ns)
ORDER BY start, kind, device_id, stream_id
