"""The base every layer stands on: errors, time units, the result Table, output paths."""
