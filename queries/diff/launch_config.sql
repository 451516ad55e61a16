-- name: diff_launch_config
-- version: 1
-- returns: one row per short kernel name in both traces whose launch configurations differ: name, category, calls_a, calls_b, grid_a, grid_b, block_a, block_b, registers_a, registers_b, smem_a, smem_b (static+dynamic bytes) of each trace's most frequent configuration, configs_a, configs_b (distinct configurations), changed (which of grid, block, registers, shared memory differ; "config mix" when only the set of configurations changed). Sorted by time in B.
-- tables: side_kernels(side, short_name, category, calls, total_ns, name_configs, name_config_sig, top_grid, top_block, top_registers, top_static_smem, top_dynamic_smem) (per-trace rows of queries/diff_side_kernels.sql)
-- params: none
-- dialect: duckdb
WITH n AS (
    SELECT
        side, short_name,
        arg_max(category, total_ns) AS category,
        sum(calls) AS calls,
        sum(total_ns) AS ns,
        any_value(name_configs) AS configs,
        any_value(name_config_sig) AS sig,
        any_value(top_grid) AS grid,
        any_value(top_block) AS block,
        any_value(top_registers) AS regs,
        COALESCE(CAST(any_value(top_static_smem) AS VARCHAR), '?') || '+'
            || COALESCE(CAST(any_value(top_dynamic_smem) AS VARCHAR), '?') AS smem
    FROM side_kernels
    GROUP BY side, short_name
),
j AS (
    SELECT
        a.short_name AS name, b.category, a.calls AS calls_a, b.calls AS calls_b, b.ns AS b_ns,
        a.grid AS grid_a, b.grid AS grid_b, a.block AS block_a, b.block AS block_b,
        a.regs AS registers_a, b.regs AS registers_b, a.smem AS smem_a, b.smem AS smem_b,
        a.configs AS configs_a, b.configs AS configs_b, a.sig AS sig_a, b.sig AS sig_b
    FROM (SELECT * FROM n WHERE side = 'a') AS a
    JOIN (SELECT * FROM n WHERE side = 'b') AS b ON a.short_name = b.short_name
)
SELECT
    name, category, calls_a, calls_b, grid_a, grid_b, block_a, block_b, registers_a, registers_b,
    smem_a, smem_b, configs_a, configs_b,
    COALESCE(NULLIF(concat_ws(', ',
        CASE WHEN grid_a IS DISTINCT FROM grid_b THEN 'grid' END,
        CASE WHEN block_a IS DISTINCT FROM block_b THEN 'block' END,
        CASE WHEN registers_a IS DISTINCT FROM registers_b THEN 'registers' END,
        CASE WHEN smem_a IS DISTINCT FROM smem_b THEN 'shared memory' END), ''), 'config mix') AS changed
FROM j
WHERE sig_a IS DISTINCT FROM sig_b
ORDER BY b_ns DESC, name
