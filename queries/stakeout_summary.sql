-- name: stakeout_summary
-- version: 2
-- returns: the census statistics (instances, total_ns, avg_ns, med_ns, min_ns, max_ns, stddev_ns) of the launches stakeout selects, one row per demangled name (name, demangled_name).
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, shortName, demangledName), StringIds(id, value)
-- params: kernel (name or LIKE pattern); match ('exact' or 'like')
-- dialect: duckdb
WITH ids AS (
    SELECT id FROM StringIds
    WHERE CASE WHEN $match = 'like' THEN lower(value) LIKE lower($kernel) ELSE value = $kernel END
)
SELECT
    s.value AS name,
    d.value AS demangled_name,
    count(*) AS instances,
    sum(k."end" - k.start) AS total_ns,
    avg(k."end" - k.start) AS avg_ns,
    median(k."end" - k.start) AS med_ns,
    min(k."end" - k.start) AS min_ns,
    max(k."end" - k.start) AS max_ns,
    stddev_samp(k."end" - k.start) AS stddev_ns
FROM (
    SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE shortName IN (SELECT id FROM ids)
    UNION ALL
    SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL
    WHERE demangledName IN (SELECT id FROM ids) AND COALESCE(shortName, -1) NOT IN (SELECT id FROM ids)
) AS k
LEFT JOIN StringIds AS s ON s.id = k.shortName
LEFT JOIN StringIds AS d ON d.id = k.demangledName
GROUP BY s.value, d.value
ORDER BY total_ns DESC, instances DESC, name, demangled_name
