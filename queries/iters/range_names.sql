-- name: iters_range_names
-- version: 1
-- returns: the distinct (domain, step name) of the kept NVTX ranges, step name as nsysq_step_name (queries/iters/step_name.sql) folds it: code (0-based, in domain and name order), domain, name, and h, DuckDB's hash of (domain, step name) as queries/iters/range_codes.sql computes it. nsysq iters names its candidate groups with them (nsysq.iterations.candidates).
-- tables: nsysq_nvtx_ranges (queries/nvtx/ranges.sql)
-- params: none
-- dialect: duckdb
SELECT row_number() OVER (ORDER BY domain, name) - 1 AS code, domain, name, hash(domain, name) AS h
FROM (SELECT DISTINCT domain, nsysq_step_name(name) AS name FROM nsysq_nvtx_ranges WHERE dropped IS NULL)
ORDER BY code
