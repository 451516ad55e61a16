"""``python -m nsysq`` and the ``nsysq`` command (pyproject ``[project.scripts]``): the CLI plus
``nsysq mcp`` (nsysq.agents.entry), with Python's cyclic collector paused while they load
(nsysq.base.collector: resumed once a trace is open or nsysq's threads start)."""

from typing import NoReturn

from nsysq.base import collector


def main() -> NoReturn:
    """Run the ``nsysq`` command."""
    collector.pause()  # before typer and the command's modules are imported
    from nsysq.agents.entry import main as run

    run()


if __name__ == "__main__":  # not when a spawned worker of nsysq mcp imports it as __mp_main__
    main()
