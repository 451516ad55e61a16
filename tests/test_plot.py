"""Plots: assert what is drawn (bars, labels, lanes, outliers, ratios) from the returned Axes,
render each plot to PNG once, drive ``nsysq plot`` to png/svg/pdf, and plot every real trace."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import nsysq
from nsysq.base.errors import NoDataError
from tests.conftest import REAL_TRACES, ROOT

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import PathCollection, PolyCollection  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402

from nsysq import plot  # noqa: E402
from nsysq.plot import style as plot_style  # noqa: E402
from nsysq.trace.notebook import kernel_category_map, timeline_frame, trace_html  # noqa: E402

FLASH = "reshape_and_cache_flash_kernel"


@pytest.fixture(scope="session")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The shipped example pair, or the same pair built by the project's own code."""
    a, b = ROOT / "examples" / "bs1.sqlite", ROOT / "examples" / "bs16.sqlite"
    if a.exists() and b.exists():
        return a, b
    from nsysq.synth.scenarios import example_pair

    built = list(example_pair(tmp_path_factory.mktemp("examples")))
    return built[0], built[1]


@pytest.fixture(scope="session")
def bs1(pair: tuple[Path, Path]) -> Iterator[nsysq.Trace]:
    with nsysq.open(pair[0]) as t:
        yield t


@pytest.fixture(scope="session")
def diff_result(pair: tuple[Path, Path]) -> Any:
    return nsysq.diff(pair[0], pair[1])


@pytest.fixture(autouse=True)
def _close_figures() -> Iterator[None]:
    yield
    plt.close("all")


def _ticks(ax: Any, axis: str = "y") -> list[str]:
    labels = ax.get_yticklabels() if axis == "y" else ax.get_xticklabels()
    return [t.get_text() for t in labels]


def _texts(ax: Any) -> list[str]:
    return [t.get_text() for t in ax.texts]


def _png(ax: Any, path: Path) -> None:
    ax.figure.savefig(path, dpi=60)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5_000


# -- census ------------------------------------------------------------------------------------------
def test_census_bars_labels_and_other(bs1: nsysq.Trace, tmp_path: Path) -> None:
    df = bs1.census(limit=10)
    ax = plot.plot_census(df)
    bars = ax.containers[0]
    assert len(bars) == 11  # ten kernels and "other"
    ticks = _ticks(ax)
    assert ticks[0] == "device_kernel"
    assert ticks[-1] == "other (15 kernels)"
    assert to_hex(bars[-1].get_facecolor()) == plot_style.OTHER_BAR
    texts = _texts(ax)
    assert len(texts) == 11 and all("%" in t and "ms" in t for t in texts)
    assert texts[0].startswith("877 ms · 70.2% · 748 calls")
    # bars add up to the trace's kernel time (ms on the axis)
    assert sum(b.get_width() for b in bars) == pytest.approx(1250.0, rel=1e-6)
    assert "8,955 kernels" in ax.get_title("left")
    _png(ax, tmp_path / "census.png")


def test_census_folds_rows_beyond_top_into_other(bs1: nsysq.Trace) -> None:
    ax = plot.plot_census(bs1.census(limit=0, unit="us"), top=5)
    assert len(ax.containers[0]) == 6
    assert _ticks(ax)[-1] == "other (20 kernels)"
    assert "(ms" in ax.get_xaxis().get_label().get_text()  # display unit picked from the data


def test_long_names_are_shortened_distinct_and_wrapped() -> None:
    stem = "sm80_xmma_fprop_implicit_gemm_f16f16_f16f16_f16_nhwckrsc_nhwc_tilesize{}_stage4_warpsize2x2x1_g1_tensor16x8x16_t1r3s3_execute_kernel_trt"  # noqa: E501
    names = [stem.format(t) for t in ("128x128x32", "128x64x64", "256x64x32")]
    demangled = "void cutlass::device_kernel<flash::FlashAttnFwdSm90<cute::tuple<int, int>, cutlass::bfloat16_t>>(T1::Params)"  # noqa: E501
    labels = plot_style.unique_labels([*names, demangled], 44)
    assert len(set(labels)) == 4
    for label in labels:
        assert len(label.split("\n")) <= 2 and all(len(line) <= 44 for line in label.split("\n"))
    for label, tile in zip(labels, ("128x128x32", "128x64x64", "256x64x32"), strict=False):
        assert tile in label.replace("\n", "")
    assert labels[3] == "cutlass::device_kernel<flash::\nFlashAttnFwdSm90<…>>"  # wrapped at ::
    assert len(plot.shorten("x" * 100, 30)) == 30


def test_census_log_scale_keeps_small_bars(bs1: nsysq.Trace) -> None:
    ax = plot.plot_census(bs1.census(limit=25), log=True)
    assert ax.get_xscale() == "log"
    assert min(b.get_width() for b in ax.containers[0]) > ax.get_xlim()[0]


# -- lineup ------------------------------------------------------------------------------------------
def test_lineup_one_bar_per_category_in_category_colours(bs1: nsysq.Trace, tmp_path: Path) -> None:
    df = bs1.lineup()
    ax = plot.plot_lineup(df)
    bars = ax.containers[0]
    assert len(bars) == len(df) == 8
    assert _ticks(ax) == list(df["category"])
    for bar, cat in zip(bars, df["category"], strict=True):
        assert to_hex(bar.get_facecolor()) == plot.category_color(cat)
    flash = next(t for t in _texts(ax) if "reshape_and_cache" in t)
    assert flash.startswith("1.20 ms · 0.1% · 392 calls")
    _png(ax, tmp_path / "lineup.png")


# -- stakeout ----------------------------------------------------------------------------------------
def test_stakeout_points_histogram_and_median(bs1: nsysq.Trace, tmp_path: Path) -> None:
    df = bs1.stakeout(FLASH)
    ax = plot.plot_stakeout(df)
    points = [
        c for c in ax.collections if isinstance(c, PathCollection) and c.get_gid() != plot.UNDERFILLED_GID
    ]
    assert sum(len(c.get_offsets()) for c in points) == 392
    hist = ax.nsysq_hist
    assert sum(p.get_width() for p in hist.patches) == 392  # horizontal histogram counts
    assert "392 launches" in ax.get_title("left") and FLASH in ax.get_title("left")
    assert any(line.get_label().startswith("median 3.") for line in ax.get_lines())
    assert ax.get_ylabel() == "duration (µs)"
    _png(ax, tmp_path / "stakeout.png")


def test_stakeout_colours_by_launch_configuration() -> None:
    import pandas as pd

    df = pd.DataFrame(
        {
            "start_ns": range(6),
            "duration_ns": [10, 11, 12, 50, 52, 51],
            "name": ["k"] * 6,
            **{c: [1] * 6 for c in ("grid_y", "grid_z", "block_y", "block_z")},
            "grid_x": [132, 132, 132, 264, 264, 264],
            "block_x": [128] * 6,
        }
    )
    ax = plot.plot_stakeout(df, unit="ns")
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "grid 132×1×1, block 128×1×1 (3)" in labels
    assert "grid 264×1×1, block 128×1×1 (3)" in labels


# -- timeline ----------------------------------------------------------------------------------------
def _bars(ax: Any) -> int:
    return sum(len(c.get_paths()) for c in ax.collections if isinstance(c, PolyCollection))


def test_timeline_lanes_colours_and_nvtx(bs1: nsysq.Trace, tmp_path: Path) -> None:
    df = timeline_frame(bs1.session, start_ms=95, end_ms=110, nvtx_lanes=True, limit=0)
    ax = plot.plot_timeline(df)
    assert _ticks(ax) == ["NVTX 1", "NVTX 2", "GPU 0 · stream 7"]
    assert _bars(ax) == len(df)  # every event drawn, NVTX included
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"CUTLASS GEMM", "Persistent GEMM (nvjet)", "NVTX range"} <= set(legend)
    assert any(label.startswith("memcpy ") for label in legend)
    assert "decoder_layer_0" in _texts(ax)  # NVTX ranges labelled where they fit
    assert ax.get_xlim() == pytest.approx((95.0, 110.0))
    _png(ax, tmp_path / "timeline.png")


def test_timeline_thousands_of_events_few_artists() -> None:
    import pandas as pd

    n = 4000
    kinds = ["kernel"] * (n - 400) + ["memcpy"] * 300 + ["memset"] * 100
    df = pd.DataFrame(
        {
            "kind": kinds,
            "start_ns": [i * 1000 for i in range(n)],
            "end_ns": [i * 1000 + 700 for i in range(n)],
            "name": [f"k{i % 7}" if k == "kernel" else k for i, k in enumerate(kinds)],
            "device_id": [i % 2 for i in range(n)],
            "stream_id": [7 + (i // 2) % 2 for i in range(n)],
            "copy_kind": ["Host-to-Device" if k == "memcpy" else None for k in kinds],
        }
    )
    cats = {f"k{i}": ("Flash attention" if i == 3 else "Elementwise") for i in range(7)}
    ax = plot.plot_timeline(df, categories=cats)
    assert _ticks(ax) == ["GPU 0 · stream 7", "GPU 0 · stream 8", "GPU 1 · stream 7", "GPU 1 · stream 8"]
    assert _bars(ax) == n
    assert len(ax.collections) <= 4 * 4  # one collection per lane and colour, not per event
    colours = {to_hex(c.get_facecolor()[0]) for c in ax.collections}
    assert plot.category_color("Flash attention") in colours
    assert plot.copy_kind_color("Host-to-Device") in colours


def test_timeline_without_categories_and_without_kernels() -> None:
    import pandas as pd

    df = pd.DataFrame(
        {
            "kind": ["memcpy", "memset"],
            "start_ms": [0.0, 1.0],
            "end_ms": [0.5, 1.2],
            "name": ["memcpy Device-to-Host", "memset"],
            "device_id": [0, 0],
            "stream_id": [1, 1],
            "copy_kind": ["Device-to-Host", None],
        }
    )
    ax = plot.plot_timeline(df)
    assert _ticks(ax) == ["GPU 0 · stream 1"] and _bars(ax) == 2


def test_timeline_title_legend_order_and_nvtx_cut() -> None:
    """The title says what was cut (rows, NVTX depth); the legend lists kernel categories by drawn
    time, then memory ops by name, then NVTX; the axis starts at 0 when --from is a hair below."""
    import pandas as pd

    rows = [
        ("kernel", 0, 100, "small", "Softmax", None),
        ("kernel", 100, 900, "big", "CUTLASS GEMM", None),
        ("memcpy", 900, 950, "memcpy", None, "Host-to-Device"),
        ("memset", 950, 960, "memset", None, None),
        ("memcpy", 960, 990, "memcpy", None, "Device-to-Host"),
    ]
    rows += [("nvtx", 10 * k, 1000 - 10 * k, f"level{k}", None, None) for k in range(3)]  # nested 3 deep
    df = pd.DataFrame(rows, columns=["kind", "start_ns", "end_ns", "name", "category", "copy_kind"])
    df["device_id"], df["stream_id"] = 0, 7
    df.attrs["footer"] = {"from_ns": -0.0001, "to_ns": 1000, "truncated": True, "shown_rows": len(df)}
    ax = plot.plot_timeline(df, max_nvtx_lanes=2)
    title = ax.get_title("left")
    assert title.startswith("timeline 0.00 ns – 1,000 ns: 5 GPU events on 1 stream (first 8 rows only")
    assert title.endswith("; NVTX deeper than 2 levels not drawn")
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == [
        "CUTLASS GEMM",
        "Softmax",
        "memcpy Device-to-Host",
        "memcpy Host-to-Device",
        "memset",
        "NVTX range",
    ]
    assert _ticks(ax) == ["NVTX 1", "NVTX 2", "GPU 0 · stream 7"]
    assert _bars(ax) == 5 + 2  # the third NVTX level is not drawn
    assert ax.get_xlim() == (0.0, 1000.0)


def test_kernel_category_map(bs1: nsysq.Trace) -> None:
    mapping = kernel_category_map(bs1.session)
    assert mapping[FLASH] == "Flash attention"
    assert mapping["device_kernel"] == "CUTLASS GEMM"


# -- diff --------------------------------------------------------------------------------------------
def test_diff_pairs_ratios_and_outlier(diff_result: Any, tmp_path: Path) -> None:
    cats = diff_result.categories
    ax = plot.plot_diff(diff_result)
    a_bars, b_bars = ax.containers[0], ax.containers[1]
    assert len(a_bars) == len(b_bars) == len(cats)
    ticks = _ticks(ax)
    assert set(ticks) == set(cats["category"])
    texts = _texts(ax)
    assert "5.15×  outlier" in texts
    ratio_texts = [t for t in texts if t.endswith("×") or t.endswith("outlier")]
    assert len(ratio_texts) == len(cats)
    red = [t.get_text() for t in ax.get_yticklabels() if to_hex(t.get_color()) == plot_style.HIGHLIGHT]
    assert red == ["Flash attention"]  # exactly the flagged category
    flagged = [t for t in ax.texts if t.get_text().endswith("outlier")]
    assert len(flagged) == 1 and to_hex(flagged[0].get_color()) == plot_style.HIGHLIGHT
    i = ticks.index("Flash attention")
    assert a_bars[i].get_width() == pytest.approx(1.198) and b_bars[i].get_width() == pytest.approx(6.17)
    assert ax.get_xscale() == "log"
    assert "bs1 → bs16" in ax.get_title("left") and "out of line: Flash attention" in ax.get_title("left")
    _png(ax, tmp_path / "diff.png")


def test_diff_kernels_keeps_outliers_and_marks_new(diff_result: Any) -> None:
    ax = plot.plot_diff(diff_result, section="kernels", top=6)
    ticks = [t.replace("\n", "") for t in _ticks(ax)]
    assert len(ticks) == 6 and FLASH in ticks  # a small outlier is never cut by top
    ax = plot.plot_diff(diff_result, section="kernels", top=40)
    assert "new" in _texts(ax)


def test_diff_frame_in_another_unit_draws_the_same(diff_result: Any) -> None:
    """A diff section in ms (a_ms/b_ms, as DiffResult.section names it) draws the same bars as in ns."""
    in_ns = plot.plot_diff(diff_result)
    in_ms = plot.plot_diff(diff_result.section("categories", "ms").to_pandas(), labels=("bs1", "bs16"))
    widths = [[b.get_width() for b in ax.containers[k]] for ax in (in_ns, in_ms) for k in (0, 1)]
    assert widths[0] == pytest.approx(widths[2], nan_ok=True)
    assert widths[1] == pytest.approx(widths[3], nan_ok=True)
    assert _texts(in_ns) == _texts(in_ms)
    assert in_ns.get_title("left").endswith("\ntypical change 1.04×; out of line: Flash attention")
    with pytest.raises(ValueError, match="b_ns"):
        plot.plot_diff(diff_result.categories.drop(columns=["b_ns"]))


def test_category_colours_match_the_packaged_lineup_rules() -> None:
    """Every category the packaged lineup rules can give (and "Other") has its own fixed colour, and
    every fixed colour names such a category: renaming a category in lineup_rules.toml fails here."""
    from nsysq.catalog.rules import OTHER, load_lineup_rules

    categories = {rule.category for rule in load_lineup_rules()} | {OTHER}
    assert sorted(categories - set(plot.CATEGORY_COLORS)) == [], "categories without a colour"
    assert sorted(set(plot.CATEGORY_COLORS) - categories) == [], "colours of no packaged category"
    assert len(set(plot.CATEGORY_COLORS.values())) == len(plot.CATEGORY_COLORS), "two share a colour"


# -- notebook ----------------------------------------------------------------------------------------
def test_trace_html_summary(bs1: nsysq.Trace) -> None:
    html = bs1._repr_html_()
    assert html == trace_html(bs1.session)
    for needle in ("bs1.sqlite", "NVIDIA H200", "8,955", "kernels", "1,099", "memcpy", "2025.1"):
        assert needle in html


def test_importing_plot_does_not_import_matplotlib() -> None:
    code = "import sys, nsysq.plot, nsysq.trace.notebook; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- CLI ---------------------------------------------------------------------------------------------
def _cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from nsysq.cli import main; main()", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
    )


MAGIC = {".png": b"\x89PNG", ".svg": b"<?xml", ".pdf": b"%PDF"}


@pytest.mark.parametrize(
    ("command", "suffix"),
    [
        (("census", "{a}", "-n", "8"), ".png"),
        (("lineup", "{a}"), ".svg"),
        (("stakeout", "{a}", FLASH), ".pdf"),
        (("timeline", "{a}", "--from", "100", "--to", "110", "--nvtx-lanes"), ".png"),
        (("diff", "{a}", "{b}"), ".svg"),
        (("diff", "{a}", "{b}", "--section", "kernels", "--size", "9x7"), ".pdf"),
    ],
)
def test_cli_plot_writes_each_format(
    command: tuple[str, ...], suffix: str, pair: tuple[Path, Path], tmp_path: Path
) -> None:
    out = tmp_path / f"{command[0]}{suffix}"
    args = [c.format(a=pair[0], b=pair[1]) for c in command]
    proc = _cli("plot", *args, "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    assert out.read_bytes()[: len(MAGIC[suffix])] == MAGIC[suffix]
    assert f"wrote {out}" in proc.stderr


def test_cli_plot_errors_are_one_sentence(pair: tuple[Path, Path], tmp_path: Path) -> None:
    proc = _cli("plot", "census", pair[0], "-o", tmp_path / "x.txt")
    assert proc.returncode == 2 and "end the output name 'x.txt' with .png, .svg or .pdf." in proc.stderr
    assert "Traceback" not in proc.stderr
    proc = _cli("plot", "stakeout", pair[0], "no_such_kernel", "-o", tmp_path / "x.png")
    assert proc.returncode == 2 and "no_such_kernel" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "x.png").exists()


def test_picture_helpers_refuse_in_one_sentence(tmp_path: Path) -> None:
    """nsysq.plot's helpers for callers that write pictures (every plot command uses them)."""
    from nsysq.base.errors import UsageError

    plot.check_picture_path(tmp_path / "a.SVG")
    with pytest.raises(UsageError, match="end the output name .a.txt. with .png, .svg or .pdf"):
        plot.check_picture_path(tmp_path / "a.txt")
    with pytest.raises(UsageError, match="does not exist; create it first"):
        plot.check_picture_path(tmp_path / "nowhere" / "a.png")
    assert plot.parse_figsize(None) is None and plot.parse_figsize("12X6.5") == (12.0, 6.5)
    for bad in ("12", "axb", "0x5", "101x5"):
        with pytest.raises(UsageError, match="--size"):
            plot.parse_figsize(bad)
    assert plot.sized_axes(None) is None
    ax = plot.sized_axes("4x3")
    assert ax is not None and tuple(ax.figure.get_size_inches()) == (4.0, 3.0)
    with pytest.raises(UsageError, match="could not write"):
        plot.write_picture(ax, tmp_path / "a-folder.png" / "x.png")
    plot.write_picture(ax, tmp_path / "x.png", dpi=40, title="t")
    assert (tmp_path / "x.png").read_bytes()[:4] == MAGIC[".png"]


# -- every real trace ----------------------------------------------------------------------------------
def test_every_plot_on_real_trace(real_trace: Path, tmp_path: Path) -> None:
    with nsysq.open(real_trace) as t:
        df = timeline_frame(t.session, nvtx_lanes=True, limit=20000)
        ax = plot.plot_timeline(df)
        gpu_events = int((df["kind"] != "nvtx").sum())
        if "not drawn" in ax.get_title("left"):  # NVTX nested deeper than the lanes shown
            assert gpu_events < _bars(ax) < len(df)
        else:
            assert _bars(ax) == len(df)
        _png(ax, tmp_path / "timeline.png")
        try:
            census = t.census(limit=12)
        except NoDataError:
            assert not t.info()["counts"]["kernels"]
            return
        ax = plot.plot_census(census)
        assert len(ax.containers[0]) == len(census)
        ax = plot.plot_lineup(t.lineup())
        assert len(ax.containers[0]) >= 1
        top = str(census["name"].iloc[0])
        stake = t.stakeout(top)
        ax = plot.plot_stakeout(stake)
        assert sum(len(c.get_offsets()) for c in ax.collections if _launch_points(c)) == len(stake)
        ax.figure.savefig(tmp_path / "stakeout.png", dpi=50)


@pytest.mark.skipif(len(REAL_TRACES) < 2, reason="needs two real exports")
def test_diff_plot_on_real_pairs(tmp_path: Path) -> None:
    with_kernels = []
    for p in REAL_TRACES:
        with nsysq.open(p) as t:
            if t.info()["counts"]["kernels"]:
                with_kernels.append(p)
    for a, b in zip(with_kernels, with_kernels[1:], strict=False):
        result = nsysq.diff(a, b)
        for section in ("categories", "kernels"):
            ax = plot.plot_diff(result, section=section)
            frame = getattr(result, section)
            assert len(ax.containers[0]) == min(len(frame), 25)
        ax.figure.savefig(tmp_path / f"{a.stem}-{b.stem}.png", dpi=40)
        plt.close("all")


def _launch_points(collection: object) -> bool:
    """A scatter of launches (not the red rings plot_stakeout adds around under-filled ones)."""
    return isinstance(collection, PathCollection) and collection.get_gid() != plot.UNDERFILLED_GID
