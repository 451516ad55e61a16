-- name: nvtx_select
-- version: 1
-- returns: the kept ranges (rid) a --nvtx selector names: name equal to range_name (match 'exact') or matching it as a case-insensitive LIKE pattern (match 'like'), of domain domain (its name; '' = the default domain; NULL = any domain), and with instance set only the instance-th of them (zero-based, in start order, then thread, then rid). nsysq keeps it as the temp table nsysq_nvtx_selected.
-- tables: nsysq_nvtx_ranges (queries/nvtx/ranges.sql)
-- params: range_name (range name or pattern); match ('exact' or 'like'); domain (name or NULL); instance (integer or NULL)
-- dialect: duckdb
SELECT rid
FROM nsysq_nvtx_ranges
WHERE dropped IS NULL
  AND CASE WHEN $match = 'like' THEN name ILIKE $range_name ELSE name = $range_name END
  AND ($domain IS NULL OR domain = $domain)
QUALIFY $instance IS NULL OR row_number() OVER (ORDER BY start, tid, rid) - 1 = $instance
