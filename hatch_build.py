"""Build hook: compile nsysq's native code into the wheel: nsysq/export/_pages.c (the SQLite page
decoder) and nsysq/analyses/_sweep.c (the NVTX per-range sums), each called through ctypes.

Each is a plain C shared library with no Python API, built with ``$CC`` or the C compiler
Python was built with, warnings as errors and the usual hardening flags (it parses untrusted
files). The wheel is tagged ``py3-none-<platform>``: any Python 3 on this platform loads it, none
links against it. Without a compiler the wheel is built without it (a pure ``py3-none-any`` wheel)
and nsysq reads kernel rows through DuckDB's sqlite scanner instead (same answers, slower first
reads); the build says so.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

SOURCE = Path("nsysq") / "export" / "_pages.c"
LIBRARY = "_pages.so"
# Every native library: (source, library built beside it); the decoder first.
NATIVE = ((SOURCE, LIBRARY), (Path("nsysq") / "analyses" / "_sweep.c", "_sweep.so"))
# Warnings as errors (shared with the sanitizer build in tests/test_sanitizers.py).
WARNINGS = (
    "-Wall", "-Wextra", "-Werror", "-Wshadow", "-Wconversion", "-Wpedantic",
    "-Wstrict-prototypes", "-Wmissing-prototypes",
)  # fmt: skip
HARDENING = (
    "-fPIC", "-fstack-protector-strong", "-U_FORTIFY_SOURCE", "-D_FORTIFY_SOURCE=2",
    "-fvisibility=hidden",  # only the NSYSQ_API functions of _pages.h are exported
)  # fmt: skip
ELF_LINK = ("-Wl,-z,relro,-z,now", "-Wl,-z,noexecstack")  # full RELRO, no executable stack


def compiler() -> list[str]:
    """The C compiler: ``$CC``, else the one Python was built with, else ``cc``."""
    return shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc") or ["cc"]


def compile_decoder(root: Path, out: Path, source: Path = SOURCE) -> str | None:
    """Compile the decoder (or another of NATIVE's sources) to ``out``; return None, or why it
    could not be built."""
    link = ELF_LINK if sys.platform.startswith(("linux", "freebsd")) else ()
    cmd = [*compiler(), "-O3", *WARNINGS, *HARDENING, "-shared", *link, "-o", str(out), str(root / source)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except OSError as exc:
        return f"{cmd[0]} not found ({exc.strerror})"
    if done.returncode != 0:
        return f"{' '.join(cmd)} failed: {done.stderr.strip()[:500]}"
    return None


def wheel_tag() -> str:
    """``py3-none-<platform>``: the library is loaded with ctypes, so no Python version or ABI."""
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"py3-none-{platform}"


class CustomBuildHook(BuildHookInterface[Any]):
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        root = Path(self.root)
        if version != "editable":  # the docs pages nsysq mcp serves as resources (nsysq/agents/server.py)
            for page in sorted((root / "docs").glob("*.md")):
                build_data["force_include"][str(page)] = f"nsysq/docs/{page.name}"
        built = []
        for source, library in NATIVE:
            if version == "editable":  # the package is imported from the source tree: build it there
                out = root / source.with_name(library)
            else:
                out = Path(tempfile.mkdtemp(prefix="nsysq-build-")) / library
            why = compile_decoder(root, out, source)
            if why is not None:
                instead = "first reads use DuckDB's sqlite scanner" if source == SOURCE else "numpy answers"
                self.app.display_warning(f"nsysq: {source.name} not built ({why}); {instead}.")
                continue
            built.append((out, source.with_name(library)))
        if not built:
            return
        build_data["pure_python"] = False
        build_data["tag"] = wheel_tag()
        if version != "editable":
            for out, target in built:
                build_data["force_include"][str(out)] = target.as_posix()
