-- name: nvtx_rows
-- version: 3
-- returns: one row per (domain, range name) over the kept ranges that pass the filters (level = depth unless NULL; name ILIKE like unless NULL; domain name = domain unless NULL; with group_names the name without the suffixes PyTorch's emit_nvtx appends to every op's range: everything from the first ", seq = ", ", op_id = ", ", sizes = " or ", input_op_ids = " on): rank (by kernel_ns + graph_ns, the GPU time of the kernels and whole-graph executions launched, then total_ns, then domain and name), domain, name, instances, total_ns / avg_ns / med_ns / min_ns / max_ns (CPU-side duration, end - start), kernels, kernel_ns (sum of their GPU durations), memcpys, memsets, graph_executions, graph_ns (executions of CUDA graphs traced whole and their summed durations) (operations attributed), gpu_span_ns and gpu_busy_ns (per instance, summed over instances), each range's from nsysq_nvtx_per_range. nsysq keeps it as the temp table nsysq_nvtx_rows.
-- tables: nsysq_nvtx_per_range (queries/nvtx/per_range.sql), nsysq_nvtx_ranges (queries/nvtx/ranges.sql), nsysq_nvtx_stack (queries/nvtx/stack.sql)
-- params: depth (integer or NULL); like (pattern or NULL); domain (name or NULL); group_names (boolean)
-- dialect: duckdb
WITH instances AS (
    SELECT
        r.domain,
        CASE
            WHEN $group_names THEN regexp_replace(r.name, ', (seq|op_id|sizes|input_op_ids) = .*$', '', 's')
            ELSE r.name
        END AS name,
        r."end" - r.start AS cpu_ns,
        p.kernels, p.kernel_ns, p.memcpys, p.memsets, p.graph_executions, p.graph_ns,
        p.gpu_span_ns, p.gpu_busy_ns
    FROM nsysq_nvtx_ranges AS r
    JOIN nsysq_nvtx_stack AS t ON t.rid = r.rid
    LEFT JOIN nsysq_nvtx_per_range AS p ON p.rid = r.rid
    WHERE r.dropped IS NULL
      AND ($depth IS NULL OR t.lvl = $depth)
      AND ($domain IS NULL OR r.domain = $domain)
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
