-- name: census
-- version: 5
-- returns: one row per kernel name (rank, name, instances, total_ns, avg_ns, med_ns, min_ns, max_ns, stddev_ns, share_pct, variants = distinct demangled names in the row, kernel_names = names the row stands for, zero_length = launches with end = start, unresolved = launches whose name id does not resolve, underfilled_pct = the share of the row's time spent in launches with fewer thread blocks than half the GPU's SMs (sm_fill_pct < 50; NULL when the export gives no SM count, and for graph rows), underfilled_ns = that time) sorted by total time, then instances, then name; with limit > 0 only the top rows plus one "other (K kernels)" row, so rows always add up to the trace's totals. Names that do not resolve through StringIds appear as "<unresolved id N>" or "<null name id>" (macro nsysq_name_label, queries/name_label.sql). Rows are per name id: nsys interns each string once in StringIds. A CUDA graph traced whole (nsys --cuda-graph-trace=graph) has one row 'graph <graphId>' per graph: instances = its executions, times = their GPU spans (its kernels are not in the kernel table), variants and kernel_names 0.
-- tables: nsysq_kernel_name_stats (per-name statistics, queries/kernel/name_stats.sql), CUPTI_ACTIVITY_KIND_KERNEL(start, end, shortName, demangledName, gridX, gridY, gridZ, deviceId, globalPid), CUPTI_ACTIVITY_KIND_GRAPH_TRACE(start, end, graphId), StringIds(id, value), TARGET_INFO_GPU, TARGET_INFO_CUDA_GPU, TARGET_INFO_CUDA_DEVICE
-- params: names ('short' or 'demangled'); limit (integer, 0 = every row)
-- dialect: duckdb
-- Per-name rows come from nsysq_kernel_name_stats (stored in the cached copy); only the "other" row
-- reads launches again, those of the names it stands for, for its median, spread and variants.
WITH per_name AS (
    SELECT
        name_id, CAST(NULL AS BIGINT) AS graph_id, instances, total_ns, avg_ns, med_ns, min_ns, max_ns,
        stddev_ns, variants, zero_length, fill_known_ns, underfilled_ns
    FROM nsysq_kernel_name_stats
    WHERE names = $names
    UNION ALL  -- graphs traced whole: one row per graph, its executions as instances
    SELECT
        NULL, graphId, count(*), sum("end" - start), avg("end" - start), median("end" - start),
        min("end" - start), max("end" - start), stddev_samp("end" - start), 0,
        count(*) FILTER (WHERE "end" = start), 0, 0
    FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE
    GROUP BY graphId
),
named AS (
    SELECT
        p.*,
        CASE WHEN p.graph_id IS NOT NULL THEN 'graph ' || CAST(p.graph_id AS VARCHAR)
             ELSE nsysq_name_label(p.name_id, s.value) END AS name,
        p.graph_id IS NULL AND s.value IS NULL AS is_unresolved
    FROM per_name AS p
    LEFT JOIN StringIds AS s ON s.id = p.name_id
),
ranked AS (
    SELECT *, row_number() OVER (ORDER BY total_ns DESC, instances DESC, name) AS rank FROM named
),
grand AS (
    SELECT sum(total_ns) AS all_ns FROM per_name
),
rest AS (
    SELECT * FROM ranked WHERE $limit > 0 AND rank > $limit
),
rest_spread AS (
    SELECT
        median(dur) AS med_ns,
        stddev_samp(dur) AS stddev_ns,
        count(DISTINCT demangledName) AS variants
    FROM (
        SELECT k."end" - k.start AS dur, k.demangledName
        FROM CUPTI_ACTIVITY_KIND_KERNEL AS k
        WHERE COALESCE(CASE WHEN $names = 'demangled' THEN k.demangledName ELSE k.shortName END, -1)
            IN (SELECT COALESCE(name_id, -1) FROM rest WHERE graph_id IS NULL)
        UNION ALL
        SELECT g."end" - g.start, NULL FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE AS g
        WHERE g.graphId IN (SELECT graph_id FROM rest)
    )
)
SELECT * FROM (
    SELECT
        rank, name, instances, total_ns, avg_ns, med_ns, min_ns, max_ns, stddev_ns,
        CASE WHEN all_ns > 0 THEN 100.0 * total_ns / all_ns END AS share_pct,
        variants, CASE WHEN graph_id IS NULL THEN 1 ELSE 0 END AS kernel_names, zero_length,
        CASE WHEN is_unresolved THEN instances ELSE 0 END AS unresolved,
        CASE WHEN fill_known_ns > 0 AND total_ns > 0 THEN 100.0 * underfilled_ns / total_ns END
            AS underfilled_pct,
        CASE WHEN fill_known_ns > 0 THEN underfilled_ns END AS underfilled_ns
    FROM ranked, grand
    WHERE $limit <= 0 OR rank <= $limit
    UNION ALL
    SELECT
        NULL, 'other (' || CAST(count(*) AS VARCHAR)
            || CASE WHEN count(*) = 1 THEN ' kernel)' ELSE ' kernels)' END,
        sum(r.instances), sum(r.total_ns), sum(r.total_ns) / sum(r.instances), max(s.med_ns),
        min(r.min_ns), max(r.max_ns), max(s.stddev_ns),
        CASE WHEN max(g.all_ns) > 0 THEN 100.0 * sum(r.total_ns) / max(g.all_ns) END,
        max(s.variants), count(*) FILTER (WHERE r.graph_id IS NULL), sum(r.zero_length),
        sum(CASE WHEN r.is_unresolved THEN r.instances ELSE 0 END),
        CASE WHEN sum(r.fill_known_ns) > 0 AND sum(r.total_ns) > 0
             THEN 100.0 * sum(r.underfilled_ns) / sum(r.total_ns) END,
        CASE WHEN sum(r.fill_known_ns) > 0 THEN sum(r.underfilled_ns) END
    FROM rest AS r, rest_spread AS s, grand AS g
    HAVING count(*) > 0
)
ORDER BY rank NULLS LAST
