"""Build hook: compile nsysq/_pages.c (the SQLite page decoder, called through ctypes) into the wheel.

The decoder is a plain C shared library with no Python API, built with the C compiler Python was
built with. Without a compiler the wheel is built without it and nsysq reads kernel rows through
DuckDB's sqlite scanner instead (same answers, slower first reads); the build says so.
"""

from __future__ import annotations

import shlex
import subprocess
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

SOURCE = Path("nsysq") / "_pages.c"
LIBRARY = "_pages.so"


def compile_decoder(root: Path, out: Path) -> str | None:
    """Compile the decoder to ``out``; return None, or why it could not be built."""
    cc = shlex.split(sysconfig.get_config_var("CC") or "cc") or ["cc"]
    cmd = [*cc, "-O2", "-fPIC", "-shared", "-o", str(out), str(root / SOURCE)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except OSError as exc:
        return f"{cmd[0]} not found ({exc.strerror})"
    if done.returncode != 0:
        return f"{' '.join(cmd)} failed: {done.stderr.strip()[:500]}"
    return None


class CustomBuildHook(BuildHookInterface):
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        root = Path(self.root)
        if version == "editable":  # the package is imported from the source tree: build it there
            out = root / "nsysq" / LIBRARY
        else:
            out = Path(tempfile.mkdtemp(prefix="nsysq-build-")) / LIBRARY
        why = compile_decoder(root, out)
        if why is not None:
            self.app.display_warning(
                f"nsysq: page decoder not built ({why}); first reads will use DuckDB's sqlite scanner."
            )
            return
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        if version != "editable":
            build_data["force_include"][str(out)] = f"nsysq/{LIBRARY}"
