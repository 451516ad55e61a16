-- name: stats_kernels
-- version: 1
-- returns: nsys stats cuda_gpu_kern_sum before rounding: one row per kernel name id (name_id, name, instances, total_ns, med_ns, min_ns, max_ns, stddev_ns = sample standard deviation, 0 for one launch) over every kernel of the scope, devices, streams and processes pooled. names: 'demangled' groups by demangledName (nsys's default), 'base' by shortName, 'mangled' by mangledName (demangledName where the export has none). A kernel is kept when it overlaps the window [from_ns, to_ns) (NULL: unbounded).
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, demangledName, shortName, mangledName), StringIds(id, value)
-- params: names ('demangled', 'base' or 'mangled'); from_ns (absolute ns or NULL); to_ns (absolute ns or NULL)
-- dialect: duckdb
WITH k AS (
    SELECT
        CASE $names
            WHEN 'base' THEN shortName
            WHEN 'mangled' THEN COALESCE(mangledName, demangledName)
            ELSE demangledName
        END AS name_id,
        "end" - start AS dur
    FROM CUPTI_ACTIVITY_KIND_KERNEL
    WHERE ($from_ns IS NULL OR "end" > $from_ns) AND ($to_ns IS NULL OR start < $to_ns)
),
per_name AS (
    SELECT
        name_id,
        count(*) AS instances,
        sum(dur) AS total_ns,
        median(dur) AS med_ns,
        min(dur) AS min_ns,
        max(dur) AS max_ns,
        COALESCE(stddev_samp(dur), 0) AS stddev_ns
    FROM k
    GROUP BY name_id
)
SELECT p.name_id, nsysq_name_label(p.name_id, s.value) AS name, p.* EXCLUDE (name_id)
FROM per_name AS p
LEFT JOIN StringIds AS s ON s.id = p.name_id
ORDER BY p.total_ns DESC, name
