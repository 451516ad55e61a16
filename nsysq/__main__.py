"""``python -m nsysq``: the same as the ``nsysq`` command."""

from nsysq.cli.root import main

main()
