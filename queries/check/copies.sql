-- name: check_copies
-- version: 1
-- returns: the memory operations nsys analyze's rules cuda_memcpy_async, cuda_memcpy_sync and cuda_memset_sync flag, each with the CUDA runtime call that launched it (eventClass 0 or 1, same correlationId, same process), at most row_limit per rule (the longest first; 0 = all): rule, rank, matched (the rule's operations before the cut), matched_ns (their total duration), start_ns (GPU start relative to t0), duration_ns (GPU duration), pid, tid (the calling thread, globalTid & 0xFFFFFF), device_id, stream_id, api_name, bytes, src_kind, dst_kind (memcpys) and mem_kind (memsets) as ENUM_CUDA_MEM_KIND labels, call_tid, call_start, call_end (the call, for its NVTX range). cuda_memcpy_async: memcpys whose call's name is LIKE 'cudaMemcpy%Async%' and whose source or destination is pageable memory (kind 0). cuda_memcpy_sync: memcpys whose call is 'cudaMemcpy%' but not '%Async%', except host-to-device copies (copyKind 1) of at most 64,000 bytes and copies whose srcDeviceId equals dstDeviceId. cuda_memset_sync: memsets whose call is 'cudaMemset%' but not '%async%', on pinned (memKind 1) or managed (4) memory. Names match case-insensitively, as SQLite's LIKE does. Operations overlapping the window [from_ns, to_ns) are kept; NULL bounds mean open.
-- tables: CUPTI_ACTIVITY_KIND_MEMCPY(start, end, deviceId, streamId, correlationId, globalPid, bytes, copyKind, srcKind, dstKind, srcDeviceId, dstDeviceId), CUPTI_ACTIVITY_KIND_MEMSET(start, end, deviceId, streamId, correlationId, globalPid, bytes, memKind), CUPTI_ACTIVITY_KIND_RUNTIME(start, end, eventClass, globalTid, correlationId, nameId), StringIds(id, value), ENUM_CUDA_MEM_KIND(id, label)
-- params: t0 (trace start, ns); from_ns (window start relative to t0, or NULL); to_ns (window end relative to t0, or NULL); row_limit (rows per rule, 0 = all)
-- dialect: duckdb
-- Each call name is matched once (in names), not once per operation, and each rule joins only the
-- operations and calls that can meet its conditions (the three rules never match one pair twice).
WITH names AS (
    SELECT
        id, value,
        value ILIKE 'cudaMemcpy%Async%' AS copy_async,
        value ILIKE 'cudaMemcpy%' AND value NOT ILIKE '%Async%' AS copy_sync,
        value ILIKE 'cudaMemset%' AND value NOT ILIKE '%async%' AS set_sync
    FROM StringIds WHERE value ILIKE 'cudaMemcpy%' OR value ILIKE 'cudaMemset%'
),
calls AS (
    SELECT
        r.correlationId AS corr, r.globalTid & ~CAST(16777215 AS BIGINT) AS pid, r.globalTid AS tid,
        r.start AS cs, r."end" AS ce, n.value AS api_name, n.copy_async, n.copy_sync, n.set_sync
    FROM CUPTI_ACTIVITY_KIND_RUNTIME AS r
    JOIN names AS n ON n.id = r.nameId
    WHERE r.eventClass IN (0, 1) AND r.correlationId IS NOT NULL AND (n.copy_async OR n.copy_sync OR n.set_sync)
),
ops AS (
    SELECT
        FALSE AS is_memset, start, "end", deviceId, streamId, correlationId, globalPid, bytes, copyKind,
        srcKind, dstKind, srcDeviceId, dstDeviceId, CAST(NULL AS BIGINT) AS memKind
    FROM CUPTI_ACTIVITY_KIND_MEMCPY
    UNION ALL
    SELECT TRUE, start, "end", deviceId, streamId, correlationId, globalPid, bytes, NULL, NULL, NULL, NULL,
        NULL, memKind
    FROM CUPTI_ACTIVITY_KIND_MEMSET
),
windowed AS (
    SELECT
        *,
        NOT is_memset AND (srcKind = 0 OR dstKind = 0) AS may_async,
        NOT is_memset AND NOT (copyKind = 1 AND bytes <= 64000)
            AND NOT COALESCE(srcDeviceId = dstDeviceId, FALSE) AS may_sync,
        is_memset AND memKind IN (1, 4) AS may_set
    FROM ops
    WHERE ($to_ns IS NULL OR start - $t0 < $to_ns) AND ($from_ns IS NULL OR "end" - $t0 >= $from_ns)
),
matched AS (
    SELECT o.*, c.tid, c.cs, c.ce, c.api_name, 'cuda_memcpy_async' AS rule
    FROM windowed AS o JOIN calls AS c ON c.corr = o.correlationId AND c.pid = o.globalPid
    WHERE c.copy_async AND o.may_async
    UNION ALL
    SELECT o.*, c.tid, c.cs, c.ce, c.api_name, 'cuda_memcpy_sync' AS rule
    FROM windowed AS o JOIN calls AS c ON c.corr = o.correlationId AND c.pid = o.globalPid
    WHERE c.copy_sync AND o.may_sync
    UNION ALL
    SELECT o.*, c.tid, c.cs, c.ce, c.api_name, 'cuda_memset_sync' AS rule
    FROM windowed AS o JOIN calls AS c ON c.corr = o.correlationId AND c.pid = o.globalPid
    WHERE c.set_sync AND o.may_set
),
ranked AS (
    SELECT
        *,
        row_number() OVER (
            PARTITION BY rule ORDER BY "end" - start DESC, start, globalPid, correlationId
        ) AS rank,
        count(*) OVER (PARTITION BY rule) AS matched,
        sum("end" - start) OVER (PARTITION BY rule) AS matched_ns
    FROM matched
)
SELECT
    r.rule, r.rank, r.matched, r.matched_ns,
    r.start - $t0 AS start_ns,
    r."end" - r.start AS duration_ns,
    (r.globalPid >> 24) & 16777215 AS pid,
    r.tid & 16777215 AS tid,
    r.deviceId AS device_id,
    r.streamId AS stream_id,
    r.api_name,
    r.bytes,
    sk.label AS src_kind,
    dk.label AS dst_kind,
    mk.label AS mem_kind,
    r.tid AS call_tid,
    r.cs AS call_start,
    r.ce AS call_end
FROM ranked AS r
LEFT JOIN ENUM_CUDA_MEM_KIND AS sk ON sk.id = r.srcKind
LEFT JOIN ENUM_CUDA_MEM_KIND AS dk ON dk.id = r.dstKind
LEFT JOIN ENUM_CUDA_MEM_KIND AS mk ON mk.id = r.memKind
WHERE $row_limit <= 0 OR r.rank <= $row_limit
ORDER BY r.rule, r.rank
