"""The version of nsysq (the wheel reads it from here: pyproject.toml [tool.hatch.version])."""

__version__ = "0.1.0"
