-- name: iters_names
-- version: 1
-- returns: the strings of the given StringIds ids: id, value. nsysq iters names the kernels of its causes with them.
-- tables: StringIds(id, value)
-- params: ids (list of string ids)
-- dialect: duckdb
SELECT id, value FROM StringIds WHERE id IN (SELECT unnest($ids))
