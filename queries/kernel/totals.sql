-- name: kernel_totals
-- version: 1
-- returns: one row: kernels (launches), kernel_ns (sum of end - start), distinct_short_names, unresolved_names (launches whose shortName is NULL or not in StringIds), zero_length (launches with end = start).
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, shortName), StringIds(id, value)
-- params: none
-- dialect: portable
SELECT
    count(*) AS kernels,
    COALESCE(sum(k."end" - k.start), 0) AS kernel_ns,
    count(DISTINCT k.shortName) AS distinct_short_names,
    COALESCE(sum(CASE WHEN s.value IS NULL THEN 1 ELSE 0 END), 0) AS unresolved_names,
    COALESCE(sum(CASE WHEN k."end" = k.start THEN 1 ELSE 0 END), 0) AS zero_length
FROM CUPTI_ACTIVITY_KIND_KERNEL AS k
LEFT JOIN StringIds AS s ON s.id = k.shortName
