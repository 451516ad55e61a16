-- name: categorized_kernels
-- version: 1
-- returns: one row per distinct (short name, demangled name) pair of the trace: short_name, demangled_name, category (the first lineup rule that matches, "Other" when none does), rule_order (that rule's position, NULL for "Other"); sorted by category, then names.
-- tables: nsysq_kernel_category(short_name, demangled_name, category, rule_order) (temp table built by nsysq from queries/kernel/category.sql)
-- params: none
-- dialect: duckdb
SELECT short_name, demangled_name, category, rule_order
FROM nsysq_kernel_category
ORDER BY category, short_name, demangled_name
