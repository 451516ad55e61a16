-- name: stats_api
-- version: 1
-- returns: nsys stats cuda_api_sum before rounding: one row per API name id over every row of CUPTI_ACTIVITY_KIND_RUNTIME in scope (runtime and driver calls): name_id, name (the stored name with a trailing 4-digit version suffix _vNNNN dropped, as nsys prints it: cudaLaunchKernel_v7000 -> cudaLaunchKernel, cuMemcpyHtoDAsync_v2 stays), num_calls, total_ns, med_ns, min_ns, max_ns, stddev_ns (sample; 0 for one call). Two ids that print the same stay two rows, as in nsys. A call is kept when it overlaps [from_ns, to_ns) (NULL: unbounded).
-- tables: CUPTI_ACTIVITY_KIND_RUNTIME(start, end, nameId), StringIds(id, value)
-- params: from_ns (absolute ns or NULL); to_ns (absolute ns or NULL)
-- dialect: duckdb
WITH per_name AS (
    SELECT
        nameId AS name_id,
        count(*) AS num_calls,
        sum("end" - start) AS total_ns,
        median("end" - start) AS med_ns,
        min("end" - start) AS min_ns,
        max("end" - start) AS max_ns,
        COALESCE(stddev_samp("end" - start), 0) AS stddev_ns
    FROM CUPTI_ACTIVITY_KIND_RUNTIME
    WHERE ($from_ns IS NULL OR "end" > $from_ns) AND ($to_ns IS NULL OR start < $to_ns)
    GROUP BY nameId
)
SELECT
    p.name_id,
    regexp_replace(nsysq_name_label(p.name_id, s.value), '_v[0-9]{4}$', '') AS name,
    p.* EXCLUDE (name_id)
FROM per_name AS p
LEFT JOIN StringIds AS s ON s.id = p.name_id
ORDER BY p.total_ns DESC, name
