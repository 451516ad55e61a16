-- name: kernel_groups_span
-- version: 1
-- returns: one row: first_start (the earliest kernel start, ns) and last_end (the latest kernel end) of one trace, read from its kernel groups (no second pass over the kernel table); NULLs when it recorded no kernels. nsysq diff widens them with the copies' times into the GPU span.
-- tables: nsysq_kernel_groups (temp table nsysq builds from queries/kernel/groups.sql)
-- params: none
-- dialect: duckdb
SELECT min(first_start) AS first_start, max(last_end) AS last_end FROM nsysq_kernel_groups
