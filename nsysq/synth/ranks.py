"""Synthetic distributed training jobs for ``nsysq fleet collectives``: NCCL collectives across ranks.

:func:`collective_ranks` writes one export per rank (nsys 2025.1 schema), each with its own
capture start (``TARGET_INFO_SESSION_START_TIME.utcEpochNs``, the real DDL of that version), so the
ranks' timestamps only line up once aligned; :func:`collective_node` writes one export holding
several ranks (one process per device) on one clock. The job is a training loop simulated on every
rank at once: per step an NVTX ``step`` range holding ``data_loader`` (CPU only), ``forward`` and
``backward`` (GEMM and elementwise kernels on the compute stream), an AllReduce on the NCCL stream,
``optimizer`` (elementwise kernels) and an AllGather; one Broadcast before the first step. An NCCL
kernel starts when its rank arrives and ends, on every rank, when the last rank has arrived plus
the collective's own cost: early ranks wait inside the kernel. On ``late_rank`` at ``late_steps``
one phase grows (``late_phase``: the ``data_loader`` NVTX range, or the backward GEMMs, category
"Persistent GEMM (nvjet)"), so that rank arrives late at those steps' AllReduce.
Everything is deterministic (fixed seeds, no clock).
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from nsysq.synth.writer import H200, Row, TraceSpec, global_pid, global_tid, write_trace

VERSION = "2025.1"
JOB_EPOCH_NS = 1_764_633_600_000_000_000  # 2025-12-02T00:00:00Z: the job's absolute time zero
BASE_NS = 1_000_000_000  # where the job's work starts, ns after the earliest capture start
SESSION_START_DDL = (
    "CREATE TABLE TARGET_INFO_SESSION_START_TIME (\n"
    "    utcEpochNs                  INTEGER,                               "
    "-- UTC Epoch timestamp at start of the capture (ns).\n"
    "    utcTime                     TEXT,                                  "
    "-- Start of the capture in UTC.\n"
    "    localTime                   TEXT                                   "
    "-- Start of the capture in local time of target.\n"
    ")"
)
"""The table as nsys 2025.1 writes it (DDL copied from a real 2025.1 export)."""

NCCL_NAMES = {
    "2.19": {
        "AllReduce": (
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
            "ncclDevKernelArgsStorage<(unsigned long)4096>",
        ),
        "AllGather": ("ncclDevKernel_AllGather_RING_LL", "ncclDevKernelArgsStorage<(unsigned long)4096>"),
        "Broadcast": ("ncclDevKernel_Broadcast_RING_LL", "ncclDevKernelArgsStorage<(unsigned long)4096>"),
    },
    "2.18": {
        "AllReduce": ("ncclKernel_AllReduce_RING_LL_Sum_float", "ncclWorkElem"),
        "AllGather": ("ncclKernel_AllGather_RING_LL_Sum_int8_t", "ncclWorkElem"),
        "Broadcast": ("ncclKernel_Broadcast_RING_LL_Sum_int8_t", "ncclWorkElem"),
    },
}
"""Short name and argument list of each collective's kernel, per NCCL naming generation."""
GEMM = ("nvjet_tst_128x256_64x4_2x1_v_bz_coopA_TNN", "nvjet_tst_128x256_64x4_2x1_v_bz_coopA_TNN")
ELEMENTWISE = (
    "vectorized_elementwise_kernel",
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "std::array<char *, 3>>(int, T2, T3)",
)
COSTS = {"AllReduce": 250_000, "AllGather": 120_000, "Broadcast": 80_000}
"""Each collective's own cost once every rank has arrived (ns)."""


@dataclass
class Rank:
    """One rank's rows on the job's clock (ns after the job's time zero)."""

    index: int
    pid: int
    device: int
    kernels: list[Row] = field(default_factory=list)
    nvtx: list[Row] = field(default_factory=list)
    cursor: int = BASE_NS
    corr: int = 0

    @property
    def compute_stream(self) -> int:
        return 7 + 16 * self.device

    @property
    def nccl_stream(self) -> int:
        return 13 + 16 * self.device

    def kernel(self, names: tuple[str, str], start: int, end: int, stream: int, grid: int = 132) -> None:
        self.corr += 1
        short, args = names
        demangled = args if "(" in args or args == short else f"{short}({args})"
        self.kernels.append(
            {
                "start": start,
                "end": end,
                "deviceId": self.device,
                "streamId": stream,
                "contextId": 1 + self.device,
                "correlationId": self.corr,
                "globalPid": global_pid(self.pid),
                "shortName": short,
                "demangledName": demangled,
                "gridX": grid,
                "blockX": 640 if short.startswith("nccl") else 256,
            }
        )

    def range(self, name: str, start: int, end: int) -> None:
        self.nvtx.append(
            {
                "start": start,
                "end": end,
                "eventType": 59,
                "text": name,
                "globalTid": global_tid(self.pid, self.pid),
            }
        )

    def compute(self, rng: random.Random, name: str, kernels: Sequence[tuple[tuple[str, str], int]]) -> None:
        """An NVTX range around kernels run one after another on the compute stream."""
        begin = self.cursor
        t = begin + 5_000
        for names, dur in kernels:
            jittered = int(dur * rng.uniform(0.98, 1.02))
            self.kernel(names, t, t + jittered, self.compute_stream)
            t += jittered + rng.randint(2_000, 4_000)
        self.range(name, begin, t)
        self.cursor = t + 2_000


def _collective(ranks: list[Rank], rng: random.Random, kind: str, nccl: str) -> None:
    """Every rank arrives (its cursor plus a launch jitter); every kernel ends once the last has."""
    arrivals = [r.cursor + rng.randint(3_000, 20_000) for r in ranks]
    done = max(arrivals) + int(COSTS[kind] * rng.uniform(0.99, 1.01))
    for rank, arrival in zip(ranks, arrivals, strict=True):
        end = done + rng.randint(0, 500)
        rank.kernel(NCCL_NAMES[nccl][kind], arrival, end, rank.nccl_stream, grid=16)
        rank.cursor = end + 5_000


def simulate(
    ranks: int,
    steps: int,
    *,
    late_rank: int | None,
    late_steps: Sequence[int],
    late_ns: int,
    late_phase: str,
    nccl: str,
    seed: int,
    pids: Sequence[int],
    devices: Sequence[int],
) -> list[Rank]:
    """Every rank's kernels and NVTX ranges on the job's clock."""
    if late_phase not in ("nvtx", "category"):
        raise ValueError("late_phase is 'nvtx' (the data_loader range grows) or 'category' (the GEMMs)")
    rng = random.Random(seed)
    job = [Rank(i, pids[i], devices[i]) for i in range(ranks)]
    _collective(job, rng, "Broadcast", nccl)
    for step in range(steps):
        starts = [r.cursor for r in job]
        for rank in job:
            late = rank.index == late_rank and step in late_steps
            loader = 150_000 + rng.randint(-5_000, 5_000) + (late_ns if late and late_phase == "nvtx" else 0)
            rank.range("data_loader", rank.cursor, rank.cursor + loader)
            rank.cursor += loader + 5_000
            rank.compute(rng, "forward", [(GEMM, 120_000), (ELEMENTWISE, 15_000)] * 4)
            slower = 1 + late_ns // (8 * 200_000) if late and late_phase == "category" else 1
            rank.compute(rng, "backward", [(GEMM, 200_000 * slower), (ELEMENTWISE, 10_000)] * 8)
        _collective(job, rng, "AllReduce", nccl)
        for rank in job:
            rank.compute(rng, "optimizer", [(ELEMENTWISE, 20_000)] * 6)
        _collective(job, rng, "AllGather", nccl)
        for rank, start in zip(job, starts, strict=True):
            rank.range("step", start, rank.cursor)
    return job


def _spec(members: list[Rank], shift: int) -> TraceSpec:
    """One export of ``members`` with every timestamp moved by ``-shift`` (its own capture start)."""

    def moved(rows: list[Row]) -> list[Row]:
        return [{**r, "start": r["start"] - shift, "end": r["end"] - shift} for r in rows]

    kernels = sorted(
        (k for m in members for k in moved(m.kernels)), key=lambda k: (k["start"], k["deviceId"])
    )
    nvtx = sorted((n for m in members for n in moved(m.nvtx)), key=lambda n: n["start"])
    devices = sorted({m.device for m in members})
    return TraceSpec(
        version=VERSION,
        kernels=kernels,
        nvtx=nvtx,
        gpus=[{**H200, "id": d, "cuDevice": d, "busLocation": f"0000:{0x45 + d:02x}:00.0"} for d in devices],
        cuda_devices=[{"gpuId": m.device, "cudaId": m.device, "pid": m.pid} for m in members],
        threads=[
            {"nameId": "python3", "priority": 0, "globalTid": global_tid(m.pid, m.pid)} for m in members
        ],
        analysis={"duration": 0, "startTime": 0, "stopTime": 0},
    )


def _session_start(path: Path, utc_epoch_ns: int) -> None:
    """Add TARGET_INFO_SESSION_START_TIME as nsys 2025.1 writes it (one row)."""
    import datetime

    when = datetime.datetime.fromtimestamp(utc_epoch_ns // 1_000_000_000, tz=datetime.UTC)
    text = when.strftime("%Y-%m-%dT%H:%M:%S")
    con = sqlite3.connect(path)
    try:
        con.execute(SESSION_START_DDL)
        con.execute("INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (?, ?, ?)", (utc_epoch_ns, text, text))
        con.commit()
    finally:
        con.close()


def collective_ranks(
    out_dir: str | Path,
    ranks: int = 8,
    steps: int = 12,
    *,
    late_rank: int | None = 5,
    late_steps: Sequence[int] = (3, 7, 8),
    late_ns: int = 3_000_000,
    late_phase: str = "nvtx",
    nccl: str = "2.19",
    without_clock: Sequence[int] = (),
    seed: int = 0,
) -> list[Path]:
    """One export per rank (``rank00.sqlite`` ...), rank r's capture starting ``offset_r`` (0 to
    250 ms, random) after the earliest one: its timestamps are the job's minus ``offset_r``, and its
    ``utcEpochNs`` is the job's epoch plus ``offset_r``. The ranks in ``without_clock`` have no
    TARGET_INFO_SESSION_START_TIME (and their timestamps are the job's, unshifted)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    job = simulate(
        ranks, steps, late_rank=late_rank, late_steps=late_steps, late_ns=late_ns, late_phase=late_phase,
        nccl=nccl, seed=seed, pids=[31_000 + 7 * r for r in range(ranks)],
        devices=[r % 8 for r in range(ranks)],
    )  # fmt: skip
    rng = random.Random(seed + 1)
    paths = []
    for rank in job:
        offset = 0 if rank.index == 0 else rng.randint(1_000_000, 250_000_000)
        clocked = rank.index not in without_clock
        path = write_trace(out / f"rank{rank.index:02d}.sqlite", _spec([rank], offset if clocked else 0))
        if clocked:
            _session_start(path, JOB_EPOCH_NS + offset)
        paths.append(path)
    return paths


def collective_node(
    path: str | Path,
    devices: int = 4,
    steps: int = 8,
    *,
    late_rank: int | None = 2,
    late_steps: Sequence[int] = (2, 5),
    late_ns: int = 2_000_000,
    late_phase: str = "nvtx",
    nccl: str = "2.18",
    seed: int = 7,
) -> Path:
    """One export holding ``devices`` ranks (one process per device, pids 5100 + r) on one clock."""
    job = simulate(
        devices, steps, late_rank=late_rank, late_steps=late_steps, late_ns=late_ns, late_phase=late_phase,
        nccl=nccl, seed=seed, pids=[5_100 + r for r in range(devices)], devices=list(range(devices)),
    )  # fmt: skip
    out = write_trace(path, _spec(job, 0))
    _session_start(out, JOB_EPOCH_NS)
    return out
