-- name: stats_osrt
-- version: 1
-- returns: nsys stats osrt_sum before rounding: one row per OS runtime function over the OSRT_API rows with eventClass = 27 (the calls; 31/32 are nsys's "profiling started/finished" markers): name_id, name, num_calls, total_ns, med_ns, min_ns, max_ns, stddev_ns (sample; 0 for one call). A call is kept when it overlaps [from_ns, to_ns) (NULL: unbounded).
-- tables: OSRT_API(start, end, eventClass, nameId), StringIds(id, value)
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
    FROM OSRT_API
    WHERE eventClass = 27
        AND ($from_ns IS NULL OR "end" > $from_ns) AND ($to_ns IS NULL OR start < $to_ns)
    GROUP BY nameId
)
SELECT p.name_id, nsysq_name_label(p.name_id, s.value) AS name, p.* EXCLUDE (name_id)
FROM per_name AS p
LEFT JOIN StringIds AS s ON s.id = p.name_id
ORDER BY p.total_ns DESC, name
