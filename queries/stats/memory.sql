-- name: stats_memory
-- version: 1
-- returns: nsys stats cuda_gpu_mem_time_sum and cuda_gpu_mem_size_sum before rounding, from one pass: one row per memcpy copy kind (op = 'memcpy', copy_kind, kind_label from ENUM_CUDA_MEMCPY_OPER or nsysq's built-in map) plus one for every memset (op = 'memset', copy_kind NULL), devices, streams and processes pooled: count, total_ns, med_ns, min_ns, max_ns, stddev_ns (durations) and total_bytes, med_bytes, min_bytes, max_bytes, stddev_bytes (sizes; sample deviations, 0 for one op). An op is kept when it overlaps [from_ns, to_ns) (NULL: unbounded).
-- tables: CUPTI_ACTIVITY_KIND_MEMCPY(start, end, bytes, copyKind), CUPTI_ACTIVITY_KIND_MEMSET(start, end, bytes), ENUM_CUDA_MEMCPY_OPER(id, label)
-- params: from_ns (absolute ns or NULL); to_ns (absolute ns or NULL)
-- dialect: duckdb
WITH ops AS (
    SELECT 'memcpy' AS op, copyKind AS copy_kind, "end" - start AS dur, bytes
    FROM CUPTI_ACTIVITY_KIND_MEMCPY
    WHERE ($from_ns IS NULL OR "end" > $from_ns) AND ($to_ns IS NULL OR start < $to_ns)
    UNION ALL
    SELECT 'memset', CAST(NULL AS BIGINT), "end" - start, bytes
    FROM CUPTI_ACTIVITY_KIND_MEMSET
    WHERE ($from_ns IS NULL OR "end" > $from_ns) AND ($to_ns IS NULL OR start < $to_ns)
),
per_kind AS (
    SELECT
        op,
        copy_kind,
        count(*) AS count,
        sum(dur) AS total_ns,
        median(dur) AS med_ns,
        min(dur) AS min_ns,
        max(dur) AS max_ns,
        COALESCE(stddev_samp(dur), 0) AS stddev_ns,
        sum(bytes) AS total_bytes,
        median(bytes) AS med_bytes,
        min(bytes) AS min_bytes,
        max(bytes) AS max_bytes,
        COALESCE(stddev_samp(bytes), 0) AS stddev_bytes
    FROM ops
    GROUP BY op, copy_kind
)
SELECT p.op, p.copy_kind, e.label AS kind_label, p.* EXCLUDE (op, copy_kind)
FROM per_kind AS p
LEFT JOIN ENUM_CUDA_MEMCPY_OPER AS e ON e.id = p.copy_kind
ORDER BY p.total_ns DESC, p.op, p.copy_kind
