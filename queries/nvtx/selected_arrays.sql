-- name: nvtx_selected_arrays
-- version: 1
-- returns: the rid of every range a --nvtx selector picked (nsysq_nvtx_selected), for the sweep (nsysq.analyses.nvtx), which finds their launches from its own pairs.
-- tables: nsysq_nvtx_selected (queries/nvtx/select.sql)
-- params: none
-- dialect: duckdb
SELECT rid FROM nsysq_nvtx_selected
