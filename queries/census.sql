-- name: census
-- version: 2
-- returns: one row per kernel name (rank, name, instances, total_ns, avg_ns, med_ns, min_ns, max_ns, stddev_ns, share_pct, variants = distinct demangled names in the row, kernel_names = names the row stands for, zero_length = launches with end = start, unresolved = launches whose name id does not resolve) sorted by total time, then instances, then name; with limit > 0 only the top rows plus one "other (K kernels)" row, so rows always add up to the trace's totals. Names that do not resolve through StringIds appear as "<unresolved id N>" or "<null name id>". Rows are per name id: nsys interns each string once in StringIds.
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, shortName, demangledName), StringIds(id, value)
-- params: names ('short' or 'demangled'); limit (integer, 0 = every row)
-- dialect: duckdb
-- Aggregates on the integer name id and resolves names afterwards: the 5M-row pass never touches text.
WITH k AS (
    SELECT
        CASE WHEN $names = 'demangled' THEN demangledName ELSE shortName END AS name_id,
        demangledName AS variant_id,
        "end" - start AS dur
    FROM CUPTI_ACTIVITY_KIND_KERNEL
),
per_name AS (
    SELECT
        name_id,
        count(*) AS instances,
        sum(dur) AS total_ns,
        avg(dur) AS avg_ns,
        median(dur) AS med_ns,
        min(dur) AS min_ns,
        max(dur) AS max_ns,
        stddev_samp(dur) AS stddev_ns,
        count(DISTINCT variant_id) AS variants,
        count(*) FILTER (WHERE dur = 0) AS zero_length
    FROM k
    GROUP BY name_id
),
named AS (
    SELECT
        p.*,
        COALESCE(
            s.value,
            CASE WHEN p.name_id IS NULL THEN '<null name id>'
                 ELSE '<unresolved id ' || CAST(p.name_id AS VARCHAR) || '>' END
        ) AS name,
        s.value IS NULL AS is_unresolved
    FROM per_name AS p
    LEFT JOIN StringIds AS s ON s.id = p.name_id
),
ranked AS (
    SELECT *, row_number() OVER (ORDER BY total_ns DESC, instances DESC, name) AS rank FROM named
),
grand AS (
    SELECT sum(total_ns) AS all_ns FROM per_name
)
SELECT * FROM (
    SELECT
        rank, name, instances, total_ns, avg_ns, med_ns, min_ns, max_ns, stddev_ns,
        CASE WHEN all_ns > 0 THEN 100.0 * total_ns / all_ns END AS share_pct,
        variants, 1 AS kernel_names, zero_length,
        CASE WHEN is_unresolved THEN instances ELSE 0 END AS unresolved
    FROM ranked, grand
    WHERE $limit <= 0 OR rank <= $limit
    UNION ALL
    SELECT
        NULL, 'other (' || CAST(count(DISTINCT r.name_id) AS VARCHAR)
            || CASE WHEN count(DISTINCT r.name_id) = 1 THEN ' kernel)' ELSE ' kernels)' END,
        count(*), sum(k.dur), avg(k.dur), median(k.dur), min(k.dur), max(k.dur), stddev_samp(k.dur),
        CASE WHEN max(all_ns) > 0 THEN 100.0 * sum(k.dur) / max(all_ns) END,
        count(DISTINCT k.variant_id), count(DISTINCT r.name_id),
        count(*) FILTER (WHERE k.dur = 0),
        count(*) FILTER (WHERE r.is_unresolved)
    FROM k
    JOIN ranked AS r ON COALESCE(r.name_id, -1) = COALESCE(k.name_id, -1) AND r.rank > $limit
    CROSS JOIN grand
    WHERE $limit > 0
    HAVING count(*) > 0
)
ORDER BY rank NULLS LAST
