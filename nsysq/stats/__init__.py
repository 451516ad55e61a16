"""NVIDIA's own reports and rules on any export: ``nsysq stats`` (the ``nsys stats`` reports, number for
number) and ``nsysq check`` (the ``nsys analyze`` expert rules and nsysq's own). Above the analyses and
gputime (a rule may use their answers), below the Trace.

The reports (docs/stats.md): ``reports`` (the registry, names and aliases, ``stats()``),
``summaries`` (the ``*_sum`` reports from their packaged queries, queries/stats/), ``traces``
(``cuda_gpu_trace``, ``cuda_api_trace``), ``flavor`` (what the nsys that wrote the export calls
things), ``numbers`` (SQLite's rounding, units, digit grouping), ``layout`` (nsys's CSV and console
layouts), ``model`` (a report's columns and result)."""
