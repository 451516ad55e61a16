"""``python -m nsysq``: the same as the ``nsysq`` command (the CLI plus ``nsysq mcp``)."""

from nsysq.agents.entry import main

main()
