-- name: copies
-- version: 2
-- returns: memory operations by kind: one row per memcpy copy kind plus one 'memset' row (operation = 'memcpy' or 'memset', kind = copy kind label or 'memset', copy_kind_id, operations, bytes, total_ns, first_start, last_end), sorted by operation then bytes.
-- tables: CUPTI_ACTIVITY_KIND_MEMCPY(start, end, bytes, copyKind), CUPTI_ACTIVITY_KIND_MEMSET(start, end, bytes), ENUM_CUDA_MEMCPY_OPER(id, label)
-- params: none
-- dialect: duckdb
SELECT * FROM (
    SELECT
        'memcpy' AS operation,
        COALESCE(e.label, 'copyKind=' || CAST(m.copyKind AS VARCHAR)) AS kind,
        m.copyKind AS copy_kind_id,
        count(*) AS operations,
        COALESCE(sum(m.bytes), 0) AS bytes,
        COALESCE(sum(m."end" - m.start), 0) AS total_ns,
        min(m.start) AS first_start,
        max(m."end") AS last_end
    FROM CUPTI_ACTIVITY_KIND_MEMCPY AS m
    LEFT JOIN ENUM_CUDA_MEMCPY_OPER AS e ON e.id = m.copyKind
    GROUP BY m.copyKind, e.label
    UNION ALL
    SELECT 'memset', 'memset', NULL, count(*), COALESCE(sum(bytes), 0), COALESCE(sum("end" - start), 0),
           min(start), max("end")
    FROM CUPTI_ACTIVITY_KIND_MEMSET
    HAVING count(*) > 0
)
ORDER BY operation, bytes DESC, kind
