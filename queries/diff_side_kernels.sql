-- name: diff_side_kernels
-- version: 2
-- returns: one row per distinct (short name, demangled name) pair of one trace, read in one pass for nsysq diff: short_name, demangled_name, category (first matching lineup rule), calls, total_ns, min_ns, max_ns, configs (distinct launch configurations of the pair); and for the pair's short name: name_configs (distinct launch configurations), name_config_sig (md5 of the sorted distinct configurations), top_config (the most frequent one, "grid GXxGYxGZ block BXxBYxBZ regs R smem S+D"), top_grid, top_block, top_registers, top_static_smem, top_dynamic_smem, top_config_calls. Names that do not resolve read "<unresolved id N>" / "<null name id>" as in census.
-- tables: nsysq_kernel_groups (temp table nsysq builds from queries/kernel/groups.sql), nsysq_kernel_category(shortName, demangledName, short_name, demangled_name, category)
-- params: none
-- dialect: duckdb
WITH g AS (
    SELECT COALESCE(shortName, -1) AS sid, COALESCE(demangledName, -1) AS did, * EXCLUDE (shortName, demangledName)
    FROM nsysq_kernel_groups
),
c AS (
    SELECT COALESCE(shortName, -1) AS sid, COALESCE(demangledName, -1) AS did,
           short_name, demangled_name, category
    FROM nsysq_kernel_category
),
gc AS (
    SELECT
        c.short_name, c.demangled_name, c.category, g.*,
        concat_ws('x', COALESCE(CAST(g.gridX AS VARCHAR), '?'), COALESCE(CAST(g.gridY AS VARCHAR), '?'),
                  COALESCE(CAST(g.gridZ AS VARCHAR), '?')) AS grid,
        concat_ws('x', COALESCE(CAST(g.blockX AS VARCHAR), '?'), COALESCE(CAST(g.blockY AS VARCHAR), '?'),
                  COALESCE(CAST(g.blockZ AS VARCHAR), '?')) AS block
    FROM g JOIN c ON c.sid = g.sid AND c.did = g.did
),
name_cfg AS (
    SELECT
        short_name, grid, block, regs, ssm, dsm,
        'grid ' || grid || ' block ' || block
            || ' regs ' || COALESCE(CAST(regs AS VARCHAR), '?')
            || ' smem ' || COALESCE(CAST(ssm AS VARCHAR), '?') || '+' || COALESCE(CAST(dsm AS VARCHAR), '?') AS cfg,
        sum(calls) AS n
    FROM gc
    GROUP BY short_name, grid, block, regs, ssm, dsm
),
name_summary AS (
    SELECT
        short_name,
        count(*) AS name_configs,
        md5(string_agg(cfg, ';' ORDER BY cfg)) AS name_config_sig
    FROM name_cfg
    GROUP BY short_name
),
name_top AS (
    SELECT * FROM (
        SELECT *, row_number() OVER (PARTITION BY short_name ORDER BY n DESC, cfg) AS rn
        FROM name_cfg
    ) WHERE rn = 1
),
pairs AS (
    SELECT
        short_name, demangled_name, category,
        sum(calls) AS calls,
        sum(total_ns) AS total_ns,
        min(min_ns) AS min_ns,
        max(max_ns) AS max_ns,
        count(*) AS configs
    FROM gc
    GROUP BY short_name, demangled_name, category
)
SELECT
    p.short_name, p.demangled_name, p.category, p.calls, p.total_ns, p.min_ns, p.max_ns, p.configs,
    s.name_configs, s.name_config_sig,
    t.cfg AS top_config, t.grid AS top_grid, t.block AS top_block, t.regs AS top_registers,
    t.ssm AS top_static_smem, t.dsm AS top_dynamic_smem, t.n AS top_config_calls
FROM pairs AS p
JOIN name_summary AS s ON s.short_name = p.short_name
JOIN name_top AS t ON t.short_name = p.short_name
ORDER BY p.total_ns DESC, p.short_name, p.demangled_name
