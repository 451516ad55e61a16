"""CLI commands for diff, registered on the shared app (imported at the end of nsysq.cli)."""

from __future__ import annotations
