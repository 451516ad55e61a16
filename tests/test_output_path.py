"""The one check of an output file's name and folder (plot, export, report)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nsysq.base.errors import UsageError
from nsysq.base.output_path import check_output_path


def test_the_suffix_picks_the_format_in_any_case(tmp_path: Path) -> None:
    check_output_path(tmp_path / "t.JSON.GZ", (".json", ".json.gz"))
    check_output_path(tmp_path / "r.htm", (".html", ".htm"))
    with pytest.raises(UsageError, match=r"end the output name 't.gz' with .json or .json.gz\."):
        check_output_path(tmp_path / "t.gz", (".json", ".json.gz"))
    with pytest.raises(UsageError, match=r"with .png, .svg or .pdf\."):
        check_output_path(tmp_path / "a", (".png", ".svg", ".pdf"))


def test_the_folder_must_exist_and_be_a_folder(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist; create it first"):
        check_output_path(tmp_path / "nowhere" / "a.png", (".png",))
    (tmp_path / "file").write_text("")
    with pytest.raises(UsageError, match="does not exist; create it first"):
        check_output_path(tmp_path / "file" / "a.png", (".png",))
    check_output_path("a.png", (".png",))  # no folder: the working directory
