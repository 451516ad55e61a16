-- name: nvtx_rows_coded
-- version: 1
-- returns: queries/nvtx/rows.sql's rows (same columns, types and order) from the kept ranges as numeric arrays (nsysq.analyses.nvtx): per kept range its rid, level, CPU-side duration, and its name and domain as codes into two small tables, so that no string is read per range.
-- tables: nsysq_nvtx_coded (rid, lvl, name_code, domain_code, cpu_ns: one row per kept range), nsysq_nvtx_coded_names (code, name), nsysq_nvtx_coded_domains (code, domain), nsysq_nvtx_per_range (queries/nvtx/per_range.sql)
-- params: depth (integer or NULL); like (pattern or NULL); domain (name or NULL); group_names (boolean)
-- dialect: duckdb
WITH names AS (
    SELECT
        code,
        CASE
            WHEN $group_names THEN regexp_replace(name, ', (seq|op_id|sizes|input_op_ids) = .*$', '', 's')
            ELSE name
        END AS name
    FROM nsysq_nvtx_coded_names
),
instances AS (
    SELECT
        d.domain,
        n.name,
        r.cpu_ns,
        p.kernels, p.kernel_ns, p.memcpys, p.memsets, p.graph_executions, p.graph_ns,
        p.gpu_span_ns, p.gpu_busy_ns
    FROM nsysq_nvtx_coded AS r
    JOIN names AS n ON n.code = r.name_code
    JOIN nsysq_nvtx_coded_domains AS d ON d.code = r.domain_code
    LEFT JOIN nsysq_nvtx_per_range AS p ON p.rid = r.rid
    WHERE ($depth IS NULL OR r.lvl = $depth)
      AND ($domain IS NULL OR d.domain = $domain)
),
named AS (
    SELECT
        domain, name,
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
    WHERE $like IS NULL OR name ILIKE $like
    GROUP BY domain, name
)
SELECT
    row_number() OVER (ORDER BY kernel_ns + graph_ns DESC, total_ns DESC, domain, name) AS rank,
    *
FROM named
