-- name: kernel_comm_pairs
-- version: 1
-- returns: one row per distinct (shortName, demangledName) id pair of the kernel table (-1 for a NULL id) with is_comm: whether a lineup rule puts it in the category $comm_category. On a direct read nsysq marks the decoded kernel rows with it (the kind column of queries/gpu_ops.sql).
-- tables: nsysq_kernel_category (temp table built by nsysq from queries/kernel_category.sql)
-- params: comm_category (the lineup category of communication kernels)
-- dialect: duckdb
SELECT COALESCE(shortName, -1) AS sid, COALESCE(demangledName, -1) AS did,
       bool_or(category = $comm_category) AS is_comm
FROM nsysq_kernel_category
GROUP BY shortName, demangledName
ORDER BY sid, did
