"""NVIDIA's own reports and rules on any export: ``nsysq stats`` (the ``nsys stats`` reports, number for
number) and ``nsysq check`` (the ``nsys analyze`` expert rules and nsysq's own). Above the analyses and
gputime (a rule may use their answers), below the Trace."""
