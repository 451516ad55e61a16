-- name: iters_range_names
-- version: 1
-- returns: the distinct (domain, step name) of the kept NVTX ranges, the step name being 'ProfilerStep#N' for every PyTorch ProfilerStep#<number> and the name otherwise (queries/iters/candidates.sql's grouping): code (0-based, in domain and name order), domain, name, and h, DuckDB's hash of (domain, step name) as queries/iters/range_codes.sql computes it. nsysq iters names its candidate groups with them (nsysq.iterations.candidates).
-- tables: nsysq_nvtx_ranges (queries/nvtx/ranges.sql)
-- params: none
-- dialect: duckdb
WITH steps AS (
    SELECT DISTINCT domain,
           CASE WHEN regexp_matches(name, '^ProfilerStep#[0-9]+$') THEN 'ProfilerStep#N' ELSE name END AS name
    FROM nsysq_nvtx_ranges
    WHERE dropped IS NULL
)
SELECT row_number() OVER (ORDER BY domain, name) - 1 AS code, domain, name, hash(domain, name) AS h
FROM steps
ORDER BY code
