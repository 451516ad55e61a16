-- name: census
-- version: 1
-- returns: one row per kernel name (rank, name, instances, total_ns, avg_ns, med_ns, min_ns, max_ns, stddev_ns, share_pct, variants = distinct demangled names in the row, kernel_names = names the row stands for) sorted by total time, then instances, then name; with limit > 0 only the top rows plus one "other (K kernels)" row, so rows always add up to the trace's totals. Names that do not resolve through StringIds appear as "<unresolved id N>" or "<null name id>".
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, shortName, demangledName), StringIds(id, value)
-- params: names ('short' or 'demangled'); limit (integer, 0 = every row)
-- dialect: duckdb
WITH k AS (
    SELECT
        CASE WHEN $names = 'demangled' THEN demangledName ELSE shortName END AS name_id,
        demangledName AS variant_id,
        "end" - start AS dur
    FROM CUPTI_ACTIVITY_KIND_KERNEL
),
named AS (
    SELECT
        COALESCE(
            s.value,
            CASE WHEN k.name_id IS NULL THEN '<null name id>'
                 ELSE '<unresolved id ' || CAST(k.name_id AS VARCHAR) || '>' END
        ) AS name,
        k.variant_id,
        k.dur
    FROM k
    LEFT JOIN StringIds AS s ON s.id = k.name_id
),
per_name AS (
    SELECT
        name,
        count(*) AS instances,
        sum(dur) AS total_ns,
        avg(dur) AS avg_ns,
        median(dur) AS med_ns,
        min(dur) AS min_ns,
        max(dur) AS max_ns,
        stddev_samp(dur) AS stddev_ns,
        count(DISTINCT variant_id) AS variants
    FROM named
    GROUP BY name
),
ranked AS (
    SELECT *, row_number() OVER (ORDER BY total_ns DESC, instances DESC, name) AS rank
    FROM per_name
),
grand AS (
    SELECT sum(total_ns) AS all_ns FROM per_name
)
SELECT * FROM (
    SELECT
        rank, name, instances, total_ns, avg_ns, med_ns, min_ns, max_ns, stddev_ns,
        CASE WHEN all_ns > 0 THEN 100.0 * total_ns / all_ns END AS share_pct,
        variants,
        1 AS kernel_names
    FROM ranked, grand
    WHERE $limit <= 0 OR rank <= $limit
    UNION ALL
    SELECT
        NULL AS rank,
        'other (' || CAST(count(DISTINCT n.name) AS VARCHAR) || CASE WHEN count(DISTINCT n.name) = 1 THEN ' kernel)' ELSE ' kernels)' END AS name,
        count(*) AS instances,
        sum(n.dur) AS total_ns,
        avg(n.dur) AS avg_ns,
        median(n.dur) AS med_ns,
        min(n.dur) AS min_ns,
        max(n.dur) AS max_ns,
        stddev_samp(n.dur) AS stddev_ns,
        CASE WHEN max(all_ns) > 0 THEN 100.0 * sum(n.dur) / max(all_ns) END AS share_pct,
        count(DISTINCT n.variant_id) AS variants,
        count(DISTINCT n.name) AS kernel_names
    FROM named AS n
    JOIN ranked AS r ON r.name = n.name AND r.rank > $limit
    CROSS JOIN grand
    WHERE $limit > 0
    HAVING count(*) > 0
)
ORDER BY rank NULLS LAST
