"""Every module a question about a trace imports, imported before threads ask questions."""

from __future__ import annotations

import importlib
import pkgutil

from nsysq.base.threads import before_threads

#: The packages a Trace and its questions import from, function-level imports included.
QUESTION_PACKAGES = (
    "nsysq.catalog",
    "nsysq.export",
    "nsysq.session",
    "nsysq.analyses",
    "nsysq.gputime",
    "nsysq.stats",
    "nsysq.iterations",
    "nsysq.trace",
)
#: What those packages import inside functions only (first use), outside nsysq.
LAZY_IMPORTS = (
    "duckdb",
    "pandas",
    "json",
    "hashlib",
    "zipfile",
    "tomllib",
    "importlib.readers",
    "importlib.resources.readers",
)


def preload_for_threads() -> None:
    """Import, on the calling thread, what opening traces and answering questions on other threads
    would import there: Python 3.11's imports are not safe in two threads at once
    (:func:`nsysq.base.threads.before_threads`). For the fleet's threads and the MCP server's
    tools; a single trace's threads import nothing but numpy. Later calls cost a dictionary lookup
    per module."""
    before_threads()
    for name in LAZY_IMPORTS:
        importlib.import_module(name)
    for package in QUESTION_PACKAGES:
        path = importlib.import_module(package).__path__
        for module in pkgutil.walk_packages(path, prefix=f"{package}."):
            if _is_python(module):  # not the page decoder's shared library (loaded with ctypes)
                importlib.import_module(module.name)


def _is_python(module: pkgutil.ModuleInfo) -> bool:
    spec = module.module_finder.find_spec(module.name, None)
    return spec is not None and (spec.origin or "").endswith(".py")
