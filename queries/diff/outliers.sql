-- name: diff_outliers
-- version: 1
-- returns: one row per row of score_input (key): log_ratio = ln(b_ns / a_ns), center = the time-weighted median log-ratio of the eligible rows, scale = max(1.4826 x the time-weighted median absolute deviation, $floor), score = (log_ratio - center) / scale, eligible (status 'both', both times > 0, larger time >= $min_ns), outlier (eligible and |score| >= $threshold). Weights are a_ns + b_ns.
-- tables: score_input(key, a_ns, b_ns, status) (a view nsysq diff points at its kernel or category rows)
-- params: min_ns (noise floor, ns); threshold (score cut-off); floor (smallest scale, log units)
-- dialect: duckdb
WITH e AS (
    SELECT key, ln(b_ns / a_ns) AS lr, CAST(a_ns + b_ns AS DOUBLE) AS w
    FROM score_input
    WHERE status = 'both' AND a_ns > 0 AND b_ns > 0 AND greatest(a_ns, b_ns) >= $min_ns
),
cum AS (
    SELECT lr, sum(w) OVER (ORDER BY lr, key ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS cw,
           sum(w) OVER () AS tw
    FROM e
),
m AS (
    SELECT min(lr) FILTER (WHERE cw >= tw / 2.0) AS center FROM cum
),
d AS (
    SELECT e.key, abs(e.lr - m.center) AS dev, e.w FROM e CROSS JOIN m
),
dcum AS (
    SELECT dev, sum(w) OVER (ORDER BY dev, key ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS cw,
           sum(w) OVER () AS tw
    FROM d
),
mad AS (
    SELECT min(dev) FILTER (WHERE cw >= tw / 2.0) AS mad FROM dcum
),
scored AS (
    SELECT
        s.key,
        CASE WHEN s.a_ns > 0 AND s.b_ns > 0 THEN ln(s.b_ns / s.a_ns) END AS log_ratio,
        m.center,
        greatest(1.4826 * COALESCE(mad.mad, 0), $floor) AS scale,
        e.key IS NOT NULL AS eligible
    FROM score_input AS s
    LEFT JOIN e ON e.key = s.key
    CROSS JOIN m
    CROSS JOIN mad
)
SELECT
    key, log_ratio, center, scale,
    CASE WHEN eligible THEN (log_ratio - center) / scale END AS score,
    eligible,
    COALESCE(eligible AND abs((log_ratio - center) / scale) >= $threshold, false) AS outlier
FROM scored
