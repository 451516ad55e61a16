-- name: nvtx_rows_coded
-- version: 3
-- returns: queries/nvtx/rows.sql's rows (same columns, types and order) from the kept ranges as numeric arrays (nsysq.analyses.nvtx): per kept range its rid, level, CPU-side duration, its GPU work (queries/nvtx/per_range.sql's columns beside it, 0 for a range with none: no join), and its name and domain as codes into two small tables, so that no string is read per range.
-- tables: nsysq_nvtx_coded (rid, lvl, name_code, domain_code, cpu_ns, and nsysq_nvtx_per_range's kernels, kernel_ns, memcpys, memsets, graph_executions, graph_ns, gpu_span_ns, gpu_busy_ns: one row per kept range), nsysq_nvtx_coded_names (code, name), nsysq_nvtx_coded_domains (code, domain)
-- params: depth (integer or NULL); like (pattern or NULL); domain (name or NULL); group_names (boolean)
-- dialect: duckdb
-- Ranges are grouped by integer codes (each folded name and each domain stands for the smallest
-- code carrying it) and the strings joined to the groups at the end: no string per range, in the
-- join or in the grouping's hash table. A range with no GPU work carries zeros where rows.sql's
-- LEFT JOIN gives NULLs: the sums below come out the same (a NULL adds nothing; COALESCE makes a
-- group of NULLs 0).
WITH names AS (
    SELECT
        code,
        CASE
            WHEN $group_names THEN regexp_replace(name, ', (seq|op_id|sizes|input_op_ids) = .*$', '', 's')
            ELSE name
        END AS name
    FROM nsysq_nvtx_coded_names
),
name_groups AS (
    SELECT code, name, min(code) OVER (PARTITION BY name) AS name_group
    FROM names
    WHERE $like IS NULL OR name ILIKE $like
),
domain_groups AS (
    SELECT code, domain, min(code) OVER (PARTITION BY domain) AS domain_group
    FROM nsysq_nvtx_coded_domains
    WHERE $domain IS NULL OR domain = $domain
),
instances AS (
    SELECT
        d.domain_group,
        n.name_group,
        r.cpu_ns,
        r.kernels, r.kernel_ns, r.memcpys, r.memsets, r.graph_executions, r.graph_ns,
        r.gpu_span_ns, r.gpu_busy_ns
    FROM nsysq_nvtx_coded AS r
    JOIN name_groups AS n ON n.code = r.name_code
    JOIN domain_groups AS d ON d.code = r.domain_code
    WHERE $depth IS NULL OR r.lvl = $depth
),
grouped AS (
    SELECT
        domain_group, name_group,
        count(*) AS instances,
        sum(cpu_ns) AS total_ns,
        avg(cpu_ns) AS avg_ns,
        median(cpu_ns) AS med_ns,
        min(cpu_ns) AS min_ns,
        max(cpu_ns) AS max_ns,
        COALESCE(sum(kernels), 0) AS kernels,
        COALESCE(sum(kernel_ns), 0) AS kernel_ns,
        COALESCE(sum(gpu_span_ns), 0) AS gpu_span_ns,
        COALESCE(sum(gpu_busy_ns), 0) AS gpu_busy_ns,
        COALESCE(sum(memcpys), 0) AS memcpys,
        COALESCE(sum(memsets), 0) AS memsets,
        COALESCE(sum(graph_executions), 0) AS graph_executions,
        COALESCE(sum(graph_ns), 0) AS graph_ns
    FROM instances
    GROUP BY domain_group, name_group
),
named AS (
    SELECT d.domain, n.name, g.* EXCLUDE (domain_group, name_group)
    FROM grouped AS g
    JOIN domain_groups AS d ON d.code = g.domain_group
    JOIN name_groups AS n ON n.code = g.name_group
)
SELECT
    row_number() OVER (ORDER BY kernel_ns + graph_ns DESC, total_ns DESC, domain, name) AS rank,
    *
FROM named
