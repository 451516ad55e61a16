"""nsysq's C libraries (built at install by hatch_build.py, called through ctypes): one way to load
one, with its functions' signatures set and its ABI version checked."""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

#: A library's functions: name -> (restype, argtypes), as ctypes takes them.
Signatures = dict[str, tuple[Any, list[Any]]]


def load(path: Path, signatures: Signatures, version_function: str, version: int) -> ctypes.CDLL | None:
    """The library at ``path`` with ``signatures`` set, or None when it is missing, lacks one of the
    functions, or ``version_function()`` is not ``version`` (built from another source: a stale
    build in a source tree)."""
    try:
        lib = ctypes.CDLL(str(path))
        for name, (restype, argtypes) in signatures.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = restype, argtypes
    except (OSError, AttributeError):  # not built, or built from an older source
        return None
    return lib if getattr(lib, version_function)() == version else None
