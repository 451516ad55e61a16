"""nsysq: make Nsight Systems SQLite exports answer questions."""

__version__ = "0.1.0"
