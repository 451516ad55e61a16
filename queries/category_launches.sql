-- name: category_launches
-- version: 1
-- returns: one row per (short kernel name, lineup category) with launches in the trace: short_name, category, launches; sorted by name, then most launches first. Tells which category a short name falls in mostly when its demangled variants fall in several.
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(shortName, demangledName), nsysq_kernel_category(shortName, demangledName, short_name, category) (temp table built by nsysq from queries/kernel/category.sql)
-- params: none
-- dialect: duckdb
SELECT c.short_name, c.category, count(*) AS launches
FROM CUPTI_ACTIVITY_KIND_KERNEL AS k
JOIN nsysq_kernel_category AS c
    ON c.shortName IS NOT DISTINCT FROM k.shortName
   AND c.demangledName IS NOT DISTINCT FROM k.demangledName
GROUP BY c.short_name, c.category
ORDER BY c.short_name, launches DESC, c.category
