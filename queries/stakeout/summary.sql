-- name: stakeout_summary
-- version: 3
-- returns: the census statistics (instances, total_ns, avg_ns, med_ns, min_ns, max_ns, stddev_ns) of the launches stakeout selects, one row per demangled name (name, demangled_name); a CUDA graph traced whole, named 'graph <graphId>' as in census, as one row of its executions.
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, shortName, demangledName), CUPTI_ACTIVITY_KIND_GRAPH_TRACE(start, end, graphId), StringIds(id, value)
-- params: kernel (name or LIKE pattern); match ('exact' or 'like')
-- dialect: duckdb
WITH ids AS (
    SELECT id FROM StringIds
    WHERE CASE WHEN $match = 'like' THEN lower(value) LIKE lower($kernel) ELSE value = $kernel END
),
picked AS (
    SELECT s.value AS name, d.value AS demangled_name, k."end" - k.start AS dur
    FROM (
        SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE shortName IN (SELECT id FROM ids)
        UNION ALL
        SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL
        WHERE demangledName IN (SELECT id FROM ids) AND COALESCE(shortName, -1) NOT IN (SELECT id FROM ids)
    ) AS k
    LEFT JOIN StringIds AS s ON s.id = k.shortName
    LEFT JOIN StringIds AS d ON d.id = k.demangledName
    UNION ALL  -- a CUDA graph traced whole, by its census name
    SELECT 'graph ' || CAST(graphId AS VARCHAR), 'graph ' || CAST(graphId AS VARCHAR), "end" - start
    FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE
    WHERE CASE WHEN $match = 'like' THEN lower('graph ' || CAST(graphId AS VARCHAR)) LIKE lower($kernel)
               ELSE 'graph ' || CAST(graphId AS VARCHAR) = $kernel END
)
SELECT
    name,
    demangled_name,
    count(*) AS instances,
    sum(dur) AS total_ns,
    avg(dur) AS avg_ns,
    median(dur) AS med_ns,
    min(dur) AS min_ns,
    max(dur) AS max_ns,
    stddev_samp(dur) AS stddev_ns
FROM picked
GROUP BY name, demangled_name
ORDER BY total_ns DESC, instances DESC, name, demangled_name
