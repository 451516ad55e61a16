"""``python -m nsysq``: the same as the ``nsysq`` command (the CLI plus ``nsysq mcp``)."""

from nsysq.agents.entry import main

if __name__ == "__main__":  # not when a spawned worker of nsysq mcp imports it as __mp_main__
    main()
