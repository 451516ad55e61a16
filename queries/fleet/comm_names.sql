-- name: fleet_comm_names
-- version: 1
-- returns: one row per shortName id (-1 for NULL) with a name pair in the category $comm_category: sid and short_name (resolved as in census).
-- tables: nsysq_kernel_category(shortName, short_name, category) (temp table built by nsysq from queries/kernel/category.sql)
-- params: comm_category (the lineup category of communication kernels)
-- dialect: duckdb
SELECT COALESCE(shortName, -1) AS sid, min(short_name) AS short_name
FROM nsysq_kernel_category
WHERE category = $comm_category
GROUP BY 1
ORDER BY 1
