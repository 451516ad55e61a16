"""A profile as a loop: where its iterations are (NVTX step ranges, or the period of the GPU work),
each iteration's GPU time, and which ones are out of line (``nsysq iters``, the ``--iteration`` scope).
Above the analyses and gputime (it uses the NVTX attribution and the overlap of communication), below
the Trace."""
