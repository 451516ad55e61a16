-- name: kernel_presence
-- version: 1
-- returns: one row: has_kernels (1 when the kernel table holds at least one row, else 0), without scanning the table.
-- tables: CUPTI_ACTIVITY_KIND_KERNEL
-- params: none
-- dialect: portable
SELECT CASE WHEN EXISTS (SELECT 1 FROM CUPTI_ACTIVITY_KIND_KERNEL) THEN 1 ELSE 0 END AS has_kernels
