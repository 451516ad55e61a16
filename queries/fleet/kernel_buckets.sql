-- name: fleet_kernel_buckets
-- version: 1
-- returns: one trace's mergeable kernel statistics for nsysq fleet: one row per (name, bucket) with instances, total_ns, sum_sq_ns2 (exact sum of squared durations, HUGEINT), min_ns, max_ns. bucket = ceil(ln(duration) / $log_gamma) for a duration > 0 (a log-spaced histogram: every duration in a bucket is within the relative error alpha of the bucket's representative value), -1 for a duration <= 0, NULL when start or end is NULL. Names are labelled as in census (nsysq_name_label). Summing these rows over traces gives exact counts, sums, minima, maxima and sums of squares.
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, shortName, demangledName), StringIds(id, value)
-- params: names ('short' or 'demangled'); log_gamma (ln((1 + alpha) / (1 - alpha)), the bucket width in log units)
-- dialect: duckdb
WITH k AS (
    SELECT
        CASE WHEN $names = 'demangled' THEN demangledName ELSE shortName END AS name_id,
        "end" - start AS dur
    FROM CUPTI_ACTIVITY_KIND_KERNEL
),
per_bucket AS (
    SELECT
        name_id,
        CASE WHEN dur > 0 THEN CAST(ceil(ln(dur) / $log_gamma) AS INTEGER) WHEN dur <= 0 THEN -1 END AS bucket,
        count(*) AS instances,
        sum(dur) AS total_ns,
        sum(CAST(dur AS HUGEINT) * dur) AS sum_sq_ns2,
        min(dur) AS min_ns,
        max(dur) AS max_ns
    FROM k
    GROUP BY ALL
)
SELECT nsysq_name_label(p.name_id, s.value) AS name, p.bucket, p.instances, p.total_ns, p.sum_sq_ns2,
       p.min_ns, p.max_ns
FROM per_bucket AS p
LEFT JOIN StringIds AS s ON s.id = p.name_id
