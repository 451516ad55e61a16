"""A training loop as nsys 2024.6 exports it: the fixture of ``nsysq iters`` (docs/iters.md).

One process, one GPU, one Python thread that launches everything. Each step is a PyTorch
``ProfilerStep#N`` push/pop range (N from ``FIRST_STEP``) holding ``forward``, ``backward`` and
``optimizer`` ranges; the thread launches the step's kernels (compute on stream 7, one NCCL
all-reduce on stream 13 during the backward pass) and waits for the GPU at the end of the step
(``cudaStreamSynchronize``), so each range's CPU span follows its GPU work. Planted:

* warm-up: the first ``WARMUP`` steps run every kernel slower (``WARMUP_FACTORS``), and the first
  step runs one extra autotuning kernel (so the kernel sequence repeats in all but one step);
* one slow step, ``SLOW_STEP``: its ``flash_fwd_kernel`` launches take ``SLOW_FACTOR`` times their
  usual time, nothing else changes.

:func:`training` writes it; ``nvtx=False`` writes the same GPU work with no NVTX at all (the
variant ``nsysq iters`` splits by the period of the kernel sequence), ``step_name="train_step"``
the same with every step range so named (the variant it detects as a repeating range), and
``autograd=True`` launches the backward pass from a second thread, as PyTorch's autograd thread does. Kernel
times get a small deterministic jitter (seeded).
"""

from __future__ import annotations

import random
from pathlib import Path

from nsysq.synth.writer import DEFAULT_PID, H200, Row, TraceSpec, global_pid, global_tid, write_trace

VERSION = "2024.6"
STEPS = 14
FIRST_STEP = 2
WARMUP = 2
WARMUP_FACTORS = (2.5, 1.6)
SLOW_STEP = 10
SLOW_KERNEL = "flash_fwd_kernel"
SLOW_FACTOR = 3.0
LAYERS = 4
COMPUTE_STREAM = 7
COMM_STREAM = 13
BASE_NS = 1_000_000_000

_KERNELS: dict[str, tuple[str, int]] = {  # short name -> (demangled name, typical ns)
    "indexSelectLargeIndex": (
        "void at::native::indexSelectLargeIndex<float, long, unsigned int, 2, 2, -2, true>"
        "(at::cuda::detail::TensorInfo<float, unsigned int>, at::cuda::detail::TensorInfo<float, "
        "unsigned int>, at::cuda::detail::TensorInfo<long, unsigned int>, int, int, unsigned int, "
        "unsigned int, long)",
        120_000,
    ),
    "flash_fwd_kernel": (
        "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, "
        "cutlass::bfloat16_t>, false, true, false, false, true, true, false, false>(Flash_fwd_params)",
        2_000_000,
    ),
    "sm90_xmma_gemm_bf16bf16_bf16f32": (
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_"
        "segment_k_off_kernel__5x_cublas",
        1_500_000,
    ),
    "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel": (
        "void flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, 64, "
        "128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t>, false, true, false, false, false, "
        "true, false, false>(Flash_bwd_params)",
        3_000_000,
    ),
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL": (
        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        4_000_000,
    ),
    "multi_tensor_apply_kernel": (
        "void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float, float, int>, "
        "float, float, float, float, float, float, int, float>(long, int volatile *, "
        "TensorListMetadata<4>, AdamFunctor<float, float, int>, float, float, float, float, float, "
        "float, int, float)",
        800_000,
    ),
    "autotune_probe_kernel": ("void cudnn::autotune_probe_kernel<float>(float *, int)", 5_000_000),
}
_LAUNCH = "cudaLaunchKernel_v7000"
_SYNC = "cudaStreamSynchronize_v3020"


def _phases(first: bool) -> list[tuple[str, list[tuple[str, int]]]]:
    """The step's NVTX phases and their kernels as (short name, stream)."""
    forward = [("indexSelectLargeIndex", COMPUTE_STREAM)]
    if first:
        forward.append(("autotune_probe_kernel", COMPUTE_STREAM))
    for _ in range(LAYERS):
        forward += [("flash_fwd_kernel", COMPUTE_STREAM), ("sm90_xmma_gemm_bf16bf16_bf16f32", COMPUTE_STREAM)]
    backward = []
    for layer in range(LAYERS):
        backward += [
            ("flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel", COMPUTE_STREAM),
            ("sm90_xmma_gemm_bf16bf16_bf16f32", COMPUTE_STREAM),
        ]
        if layer == 1:
            backward.append(("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", COMM_STREAM))
    return [
        ("forward", forward),
        ("backward", backward),
        ("optimizer", [("multi_tensor_apply_kernel", COMPUTE_STREAM)]),
    ]


class _Loop:
    """Lays out the steps: CPU launches on one thread, GPU lanes per stream."""

    def __init__(self, seed: int, step_name: str | None, autograd: bool) -> None:
        self.step_name = step_name
        self.autograd = global_tid(DEFAULT_PID, DEFAULT_PID + 1) if autograd else None
        self.rng = random.Random(seed)
        self.tid = global_tid(DEFAULT_PID, DEFAULT_PID)
        self.cpu = BASE_NS
        self.lanes: dict[int, int] = {}
        self.corr = 0
        self.kernels: list[Row] = []
        self.runtime: list[Row] = []
        self.nvtx: list[Row] = []

    def _call(self, name: str, start: int, end: int, tid: int | None = None) -> None:
        self.runtime.append(
            {"start": start, "end": end, "eventClass": 0, "globalTid": tid or self.tid,
             "correlationId": self.corr, "nameId": name, "returnValue": 0}
        )  # fmt: skip

    def launch(self, short: str, stream: int, factor: float, tid: int | None = None) -> None:
        self.corr += 1
        demangled, typical = _KERNELS[short]
        call_start = self.cpu
        self.cpu += self.rng.randint(4_000, 6_000)
        self._call(_LAUNCH, call_start, self.cpu, tid)
        dur = int(typical * factor * self.rng.uniform(0.98, 1.02))
        start = max(self.lanes.get(stream, 0), call_start + 8_000) + self.rng.randint(1_000, 3_000)
        if stream == COMM_STREAM:  # the all-reduce waits for the compute stream's work so far
            start = max(start, self.lanes.get(COMPUTE_STREAM, 0))
        self.lanes[stream] = start + dur
        self.kernels.append(
            {"start": start, "end": start + dur, "deviceId": 0, "streamId": stream,
             "correlationId": self.corr, "globalPid": global_pid(DEFAULT_PID), "shortName": short,
             "demangledName": demangled, "gridX": 132, "gridY": 1, "gridZ": 1, "blockX": 128,
             "blockY": 1, "blockZ": 1, "registersPerThread": 128, "staticSharedMemory": 0,
             "dynamicSharedMemory": 49_152, "contextId": 1, "greenContextId": 0}
        )  # fmt: skip

    def range(self, name: str, start: int, end: int) -> None:
        self.nvtx.append(
            {"start": start, "end": end, "eventType": 59, "text": name, "globalTid": self.tid, "domainId": 0}
        )

    def step(self, index: int) -> None:
        step_start = self.cpu
        factor = WARMUP_FACTORS[index] if index < WARMUP else 1.0
        for phase, kernels in _phases(first=index == 0):
            phase_start = self.cpu
            for short, stream in kernels:
                slow = SLOW_FACTOR if index == SLOW_STEP - FIRST_STEP and short == SLOW_KERNEL else 1.0
                self.launch(short, stream, factor * slow, self.autograd if phase == "backward" else None)
            self.cpu += self.rng.randint(20_000, 40_000)
            self.range(phase, phase_start, self.cpu)
        self.corr += 1  # the end of the step: wait for the GPU
        sync_start = self.cpu
        self.cpu = max(self.cpu, *self.lanes.values()) + self.rng.randint(10_000, 20_000)
        self._call(_SYNC, sync_start, self.cpu)
        self.cpu += self.rng.randint(50_000, 80_000)  # the data loader
        self.range(self.step_name or f"ProfilerStep#{FIRST_STEP + index}", step_start, self.cpu)
        self.cpu += self.rng.randint(5_000, 10_000)


def training_spec(
    *, nvtx: bool = True, seed: int = 25, step_name: str | None = None, autograd: bool = False
) -> TraceSpec:
    """The training loop's export (see the module doc); ``nvtx=False``: without NVTX ranges;
    ``step_name``: every step range has this name instead of ``ProfilerStep#N``; ``autograd``: the
    backward pass's kernels are launched from a second thread (PyTorch's autograd thread)."""
    loop = _Loop(seed, step_name, autograd)
    for index in range(STEPS):
        loop.step(index)
    return TraceSpec(
        version=VERSION,
        kernels=loop.kernels,
        runtime=loop.runtime,
        nvtx=loop.nvtx if nvtx else [],
        gpus=[dict(H200)],
        threads=[{"nameId": "python3", "priority": 0, "globalTid": loop.tid}]
        + ([{"nameId": "pt_autograd_0", "priority": 0, "globalTid": loop.autograd}] if loop.autograd else []),
        analysis={"duration": loop.cpu + BASE_NS, "startTime": 0, "stopTime": loop.cpu + BASE_NS},
    )


def training(
    path: str | Path,
    *,
    nvtx: bool = True,
    seed: int = 25,
    step_name: str | None = None,
    autograd: bool = False,
) -> Path:
    """Write the training loop's export at ``path`` (see the module doc) and return the path."""
    return write_trace(path, training_spec(nvtx=nvtx, seed=seed, step_name=step_name, autograd=autograd))
