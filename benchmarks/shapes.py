"""The shape sweep (#13 item 5): isthmus at the shapes real workloads use, each next to what a user
would call instead, in the same run, and the device's copy bandwidth (the ceiling of the
memory-bound ops), as ratios.

    python -m benchmarks shapes --device cuda:0 --out benchmarks/results/latest        # torch / cuBLAS peer
    python -m benchmarks shapes --device opencl:0 --out benchmarks/results/latest      # NVIDIA: CLBlast (CLBLAST_LIB)
    python -m benchmarks shapes --device opencl:0 --ops gemm                    # PoCL: NumPy peer
    python -m benchmarks shapes --device opencl:0 --quick                       # smoke test: tiny cases

Cases: softmax rows 262144x128, 4096x32000, 1024x128256 and an odd/prime shape; transpose
12345x6789 and a square; sum/max/axpy over 256 MB; gemm with batch 1..64 rows against transposed
weights 4096x4096, 11008x4096 and 4096x11008 (x @ W.T), squares 512..8192, float32/float16/bfloat16.
On a CPU device the sizes shrink (``CPU_SCALE``), gemm squares are 512..2048, and NumPy is the peer.
``--quick``: one tiny case per kind (a smoke test of the script, not a measurement).

Peers: torch (cuBLAS and torch's own kernels; ``allow_tf32 = False`` so float32 is float32) on
CUDA; CLBlast through ctypes on an OpenCL GPU (``CLBLAST_LIB``: CLBlastSgemm/CLBlastHgemm with
PyOpenCL's queue and buffer pointers; layout 101 row-major, 111 no transpose, 112 transposed;
status 0 is success); NumPy on a CPU device (the host BLAS). A missing peer is skipped with a note.

Timing (``isthmus.measure``): ``reps`` back-to-back calls per round, median of rounds, after a
warm-up; isthmus and its peer alternate round by round, so drift in the machine's load hits both.
On a GPU both sides are timed with device events (isthmus' own; torch's CUDA events; OpenCL
profiling markers on CLBlast's queue); on a CPU device both with the wall clock around a wait for
the device, as the NumPy peer has no device events. Each isthmus result is checked against the
peer's (or NumPy's) by ||out - ref|| / ||ref||.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys
from typing import Callable, NamedTuple

import numpy as np

from benchmarks import _results
import isthmus
from isthmus import measure

SMOKE = ["--quick", "--out", "{out}"]  # tests/benchmarks: one tiny case per kind

MB256 = 64 << 20  # float32 elements in 256 MB
CPU_SCALE = 16  # CPU devices: memory-bound cases this many times smaller
QUICK_SCALE = 1024  # --quick: a smoke test of the script
TOL = {"float32": 1e-4, "float16": 1e-2, "bfloat16": 2e-2}


class Case(NamedTuple):
    op: str
    label: str
    dtype: str
    ours: Callable[[], object]  # one isthmus call
    result: Callable[[], np.ndarray]  # isthmus's last result on the host
    peer_name: str
    peer: Callable[[], object] | None  # one peer call, or None
    peer_result: Callable[[], np.ndarray] | None
    flops: int
    nbytes: int
    note: str = ""


# ---- peers ----------------------------------------------------------------------------------
class Peers:
    """The library a user would call instead on this device: torch on CUDA, CLBlast on an OpenCL
    GPU, NumPy on a CPU device; ``sync()`` waits for the peer's device work."""

    def __init__(self, dev):
        self.dev = dev
        self.kind = "numpy" if dev.kind == "cpu" else dev.backend
        self.note = ""
        self.torch = self.clblast = None
        if self.kind == "cuda":
            try:
                import torch

                torch.backends.cuda.matmul.allow_tf32 = False
                torch.backends.cudnn.allow_tf32 = False
                self.torch = torch
                self.tdev = torch.device(f"cuda:{dev.index}")
            except ImportError as exc:
                self.note = f"torch missing ({exc}): no peer"
        elif self.kind == "opencl":
            self.clblast = _CLBlast.open(dev)
            if self.clblast is None:
                self.note = "CLBlast not found (set CLBLAST_LIB): gemm without peer; no OpenCL peer for other ops"

    def name(self) -> str:
        return {"cuda": "torch", "opencl": "CLBlast", "numpy": "NumPy"}[self.kind]

    def sync(self):
        if self.torch is not None:
            self.torch.cuda.synchronize(self.tdev)
        elif self.clblast is not None:
            self.clblast.queue.finish()

    def clock(self):
        """How the peer is timed: device events where it has them, else the wall clock."""
        if self.torch is not None:
            return measure.TorchClock(self.torch, self.tdev)
        if self.clblast is not None:
            return measure.QueueClock(self.clblast.queue)
        return measure.WallClock(self.sync)

    def tensor(self, host: np.ndarray, dtype: str):
        t = self.torch.from_numpy(np.ascontiguousarray(host.astype(np.float32))).to(self.tdev)
        return t.to({"float32": self.torch.float32, "float16": self.torch.float16,
                     "bfloat16": self.torch.bfloat16}[dtype])


class _CLBlast:
    """CLBlastSgemm / CLBlastHgemm through ctypes, on a PyOpenCL queue of the same OpenCL device."""

    def __init__(self, lib, cl, ctx, queue):
        self.lib, self.cl, self.ctx, self.queue = lib, cl, ctx, queue
        self.path = lib._name

    @classmethod
    def open(cls, dev):
        path = os.environ.get("CLBLAST_LIB")
        if not path:
            return None
        try:
            lib = ctypes.CDLL(path)
            import pyopencl as cl
        except (OSError, ImportError):
            return None
        native = [d for p in cl.get_platforms() for d in p.get_devices()][dev.index]
        ctx = cl.Context([native])
        return cls(lib, cl, ctx, cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE))

    def buffer(self, host: np.ndarray):
        mf = self.cl.mem_flags
        return self.cl.Buffer(self.ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=np.ascontiguousarray(host))

    def gemm_call(self, dtype: str, m: int, n: int, k: int, a, b, c, trans_b: bool) -> Callable[[], None]:
        """C = A @ op(B), row-major (A m x k; B k x n, or n x k transposed)."""
        fn = self.lib.CLBlastSgemm if dtype == "float32" else self.lib.CLBlastHgemm
        vp, sz = ctypes.c_void_p, ctypes.c_size_t
        if dtype == "float32":
            scal = ctypes.c_float
            one, zero = scal(1.0), scal(0.0)
        else:  # cl_half: the bit pattern of a half
            scal = ctypes.c_uint16
            one, zero = scal(0x3C00), scal(0)
        fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, sz, sz, sz, scal, vp, sz, sz, vp, sz, sz, scal,
                       vp, sz, sz, ctypes.POINTER(vp), vp]
        fn.restype = ctypes.c_int
        qptr = vp(self.queue.int_ptr)
        args = (101, 111, 112 if trans_b else 111, m, n, k, one, a.int_ptr, 0, k, b.int_ptr, 0, k if trans_b else n,
                zero, c.int_ptr, 0, n, ctypes.byref(qptr), None)

        keep = (a, b, c)  # the call passes raw handles: the buffers must live as long as it does

        def call():
            assert keep
            status = fn(*args)
            if status != 0:
                raise RuntimeError(f"CLBlast gemm failed with status {status}")
        return call


# ---- inputs ---------------------------------------------------------------------------------
def _host(rng, shape, dtype: str) -> np.ndarray:
    x = rng.standard_normal(shape, dtype=np.float32)
    if dtype == "float32":
        return x
    if dtype == "float16":
        return x.astype(np.float16)
    import ml_dtypes  # bfloat16 on the host: the ecosystem's dtype

    return x.astype(ml_dtypes.bfloat16)


def _isthmus_supports(dev, dtype: str) -> str:
    """'' when isthmus holds ``dtype`` on ``dev``, else why not."""
    try:
        isthmus.dtypes.lookup(dtype)
    except isthmus.IsthmusError as exc:
        return f"isthmus has no {dtype} here ({exc})"
    except ImportError as exc:
        return f"{dtype} needs {exc.name}"
    return "" if dev.supports(dtype) else f"{dev.id} has no {dtype}"


# ---- cases ----------------------------------------------------------------------------------
def gemm_cases(dev, peers: Peers, rng, dtypes) -> list[Case]:
    cpu = dev.kind == "cpu"
    weights = [(4096, 4096), (11008, 4096), (4096, 11008)]  # (n, k) of W stored n x k
    rows = (1, 16, 64)
    squares = (512, 1024, 2048) if cpu else (512, 1024, 2048, 4096, 8192)
    shapes = [(m, n, k, True) for n, k in weights for m in rows] + [(s, s, s, False) for s in squares]
    out = []
    for dtype in dtypes:
        why = _isthmus_supports(dev, dtype)
        for m, n, k, tb in shapes:
            label = f"{m}x{n}x{k} x@W.T" if tb else f"{m}^3"
            if why:
                out.append(_skipped("gemm", label, dtype, why))
                continue
            out.append(_gemm_case(dev, peers, rng, dtype, m, n, k, tb, label))
    return out


def _skipped(op, label, dtype, why) -> Case:
    return Case(op, label, dtype, None, None, "", None, None, 0, 0, why)


def quick_gemm_cases(dev, peers: Peers, rng, dtypes) -> list[Case]:
    """--quick: a skinny x @ W.T and a small square in each dtype (a smoke test, not a measurement)."""
    out = []
    for dtype in dtypes:
        why = _isthmus_supports(dev, dtype)
        for m, n, k, tb, label in ((3, 96, 40, True, "3x96x40 x@W.T"), (64, 64, 64, False, "64^3")):
            out.append(_skipped("gemm", label, dtype, why) if why else
                       _gemm_case(dev, peers, rng, dtype, m, n, k, tb, label))
    return out


def _gemm_case(dev, peers: Peers, rng, dtype, m, n, k, tb, label) -> Case:
    a = _host(rng, (m, k), dtype)
    b = _host(rng, (n, k) if tb else (k, n), dtype)
    da, db = dev.asarray(a), dev.asarray(b)
    dc = dev.empty((m, n), a.dtype)
    ours = lambda: isthmus.ops.gemm(da, db, dc, trans_b=tb)  # noqa: E731
    result = lambda: dc.to_numpy().astype(np.float32)  # noqa: E731
    flops, nbytes = 2 * m * n * k, (m * k + k * n + m * n) * a.dtype.itemsize
    peer = peer_result = None
    note = ""
    if peers.torch is not None:
        ta, tw = peers.tensor(a, dtype), peers.tensor(b, dtype)
        tc = peers.torch.empty((m, n), dtype=ta.dtype, device=peers.tdev)
        peer = (lambda: peers.torch.matmul(ta, tw.t(), out=tc)) if tb else (lambda: peers.torch.matmul(ta, tw, out=tc))
        peer_result = lambda: tc.float().cpu().numpy()  # noqa: E731
    elif peers.clblast is not None and dtype in ("float32", "float16"):
        cl = peers.clblast
        ba, bb, bc = cl.buffer(a), cl.buffer(b), cl.buffer(np.zeros((m, n), a.dtype))
        peer = cl.gemm_call(dtype, m, n, k, ba, bb, bc, tb)
        host_c = np.empty((m, n), a.dtype)
        peer_result = lambda: (cl.cl.enqueue_copy(cl.queue, host_c, bc), cl.queue.finish(), host_c.astype(np.float32))[2]
        try:
            peer()
        except RuntimeError as exc:  # CLBlast's half gemm needs cl_khr_fp16 (NVIDIA's OpenCL has none): isthmus alone
            peer = peer_result = None
            note = f"no CLBlast peer ({exc}: its {dtype} gemm needs cl_khr_fp16)"
    elif peers.kind == "numpy" and dtype == "float32":
        peer = (lambda: a @ b.T) if tb else (lambda: a @ b)
        peer_result = lambda: (a @ b.T if tb else a @ b).astype(np.float32)  # noqa: E731
    else:
        note = f"no {peers.name()} peer for {dtype}"
    if peer_result is None:  # still checked: against NumPy in float32
        a32, b32 = a.astype(np.float32), b.astype(np.float32)
        peer_result = lambda: a32 @ b32.T if tb else a32 @ b32  # noqa: E731
        note += " (checked against float32 NumPy)"
    return Case("gemm", label, dtype, ours, result, peers.name(), peer, peer_result, flops, nbytes, note)


def memory_cases(dev, peers: Peers, rng, quick: bool = False) -> list[Case]:
    cpu = dev.kind == "cpu"
    s = QUICK_SCALE if quick else CPU_SCALE if cpu else 1
    t = peers.torch
    out = []
    for rows, cols in ((262144 // s, 128), (4096 // s, 32000), (1024 // s, 128256), (65521 // s | 1, 257)):
        x = _host(rng, (rows, cols), "float32")
        dx, dy = dev.asarray(x), dev.empty((rows, cols), np.float32)
        peer, res = _peer_unary(peers, x, lambda v: t.softmax(v, dim=1),
                                lambda v: (lambda e: e / e.sum(axis=1, keepdims=True))(np.exp(v - v.max(1, keepdims=True))))
        out.append(Case("softmax", f"{rows}x{cols}", "float32", lambda dx=dx, dy=dy: isthmus.ops.softmax(dx, out=dy),
                        lambda dy=dy: dy.to_numpy(), peers.name(), peer, res, 0, 2 * x.nbytes))
    for rows, cols in ((12345 // (s // 4 or 1), 6789 // (s // 4 or 1)), (8192 // (s // 4 or 1),) * 2):
        x = _host(rng, (rows, cols), "float32")
        dx, dy = dev.asarray(x), dev.empty((cols, rows), np.float32)
        peer, res = _peer_unary(peers, x, lambda v: v.t().contiguous(), lambda v: np.ascontiguousarray(v.T))
        out.append(Case("transpose", f"{rows}x{cols}", "float32",
                        lambda dx=dx, dy=dy: isthmus.ops.transpose(dx, out=dy), lambda dy=dy: dy.to_numpy(),
                        peers.name(), peer, res, 0, 2 * x.nbytes))
    n = MB256 // s
    x, y = _host(rng, n, "float32"), _host(rng, n, "float32")
    dx, dy, ds = dev.asarray(x), dev.asarray(y), dev.empty(1, np.float32)
    for op, nbytes in (("sum", x.nbytes), ("max", x.nbytes)):
        peer, res = _peer_unary(peers, x, lambda v, op=op: getattr(t, op)(v).reshape(1),
                                lambda v, op=op: np.array([getattr(v, op)()], np.float32))
        out.append(Case(op, f"n={n}", "float32", lambda op=op: getattr(isthmus.ops, op)(dx, out=ds),
                        lambda: ds.to_numpy(), peers.name(), peer, res, 0, nbytes))
    out.append(_axpy_case(dev, peers, x, y, dx, dy, n))
    return out


def _axpy_case(dev, peers, x, y, dx, dy, n) -> Case:
    """y += 0 * x: the same traffic as any axpy, and y stays the same over repeated calls."""
    peer = res = None
    if peers.torch is not None:
        tx, ty = peers.tensor(x, "float32"), peers.tensor(y, "float32")
        peer, res = (lambda: ty.add_(tx, alpha=0.0)), (lambda: ty.cpu().numpy())
    elif peers.kind == "numpy":
        hy = y.copy()
        peer, res = (lambda: np.add(hy, 0.0 * x, out=hy)), (lambda: hy)
    return Case("axpy", f"n={n}", "float32", lambda: isthmus.ops.axpy(0.0, dx, dy), lambda: dy.to_numpy(),
                peers.name(), peer, res, 0, 3 * x.nbytes)


def _peer_unary(peers: Peers, x: np.ndarray, torch_fn, numpy_fn):
    if peers.torch is not None:
        tx = peers.tensor(x, "float32")
        box = {}

        def call():
            box["r"] = torch_fn(tx)
        return call, lambda: box["r"].float().cpu().numpy()
    if peers.kind == "numpy":
        return (lambda: numpy_fn(x)), (lambda: np.asarray(numpy_fn(x), np.float32))
    return None, None


# ---- timing ---------------------------------------------------------------------------------
def time_pair(dev, peers: Peers, ours, peer, rounds: int, budget_s: float,
              quick: bool = False) -> tuple[float, float | None]:
    """Median ms per call of ours and the peer, in alternating rounds of ``reps`` calls (each
    after a warm-up; ``reps`` fills about ``budget_s`` per side; on a CPU device each round after a
    pause of measure.CPU_SETTLE_S, unless ``quick``)."""
    cpu = dev.kind == "cpu"
    ours_clock = measure.WallClock(dev.synchronize) if cpu else dev
    first_ms = measure.host_ms(ours, repeat=1, warmup=1, sync=dev.synchronize)  # warm-up: compiles, allocates
    reps = max(1, min(50, int(budget_s * 1e3 / max(first_ms, 1e-3) / rounds / 2)))
    candidates = {"ours": measure.round_of(ours_clock, ours, reps)}
    if peer is not None:
        peer()
        peers.sync()
        candidates["peer"] = measure.round_of(peers.clock(), peer, reps)
    if cpu and not quick:
        candidates = {name: measure.settled(timed) for name, timed in candidates.items()}
    times = measure.interleaved(candidates, rounds)
    return times["ours"].median, (times["peer"].median if peer is not None else None)


def rel_error(out: np.ndarray, ref: np.ndarray) -> float:
    ref64 = np.asarray(ref, np.float64)
    return float(np.linalg.norm((np.asarray(out, np.float64) - ref64).ravel()) / (np.linalg.norm(ref64.ravel()) or 1))


def measure_case(dev, peers: Peers, case: Case, ceiling: float, rounds: int, budget_s: float,
                 quick: bool = False) -> dict:
    row = {"op": case.op, "case": case.label, "dtype": case.dtype, "peer": case.peer_name, "note": case.note}
    if case.ours is None:
        return row
    ours_ms, peer_ms = time_pair(dev, peers, case.ours, case.peer, rounds, budget_s, quick)
    ours_s, peer_s = ours_ms / 1e3, (peer_ms / 1e3 if peer_ms else None)
    if case.flops:
        row.update(unit="TFLOP/s", isthmus=case.flops / ours_s / 1e12)
        if peer_s:
            row["peer_value"] = case.flops / peer_s / 1e12
    else:
        row.update(unit="GB/s", isthmus=case.nbytes / ours_s / 1e9, fraction_of_copy=case.nbytes / ours_s / 1e9 / ceiling)
        if peer_s:
            row["peer_value"] = case.nbytes / peer_s / 1e9
    if peer_s:
        row["ratio"] = peer_s / ours_s
    if case.peer_result is not None:
        case.ours()
        row["error"] = rel_error(case.result(), case.peer_result())
        row["ok"] = bool(row["error"] <= TOL.get(case.dtype, 1e-4))
    return row


# ---- report ---------------------------------------------------------------------------------
def _versions(peers: Peers) -> dict:
    v = {"OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE", "")}  # when set, picks an older BLAS kernel
    if peers.clblast is not None:
        v["clblast"] = peers.clblast.path
    return v


def table(rows: list[dict]) -> list[list]:
    out = []
    for r in rows:
        if "isthmus" not in r:
            out.append([r["op"], r["case"], r["dtype"], "-", "-", "-", "-", "-", r["note"]])
            continue
        unit = r["unit"]
        fmt = (lambda v: f"{v:.2f} {unit}") if unit == "TFLOP/s" else (lambda v: f"{v:.3g} {unit}")
        if r["unit"] == "TFLOP/s" and r["isthmus"] < 1:
            fmt = lambda v: f"{v * 1e3:.1f} GFLOP/s"  # noqa: E731
        peer = fmt(r["peer_value"]) + f" ({r['peer']})" if "peer_value" in r else "-"
        ratio = f"{r['ratio']:.2f}x" if "ratio" in r else "-"
        frac = f"{r['fraction_of_copy']:.0%}" if "fraction_of_copy" in r else "-"
        err = (f"{r['error']:.1e}" + ("" if r.get("ok") else " FAIL")) if "error" in r else "-"
        out.append([r["op"], r["case"], r["dtype"], fmt(r["isthmus"]), peer, ratio, frac, err, r["note"]])
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default=None)
    p.add_argument("--ops", default="gemm,softmax,transpose,sum,max,axpy", help="comma-separated ops to run")
    p.add_argument("--dtypes", default="float32,float16,bfloat16", help="gemm dtypes")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--budget", type=float, default=0.5, help="seconds of timed calls per case and side (about)")
    p.add_argument("--out", default=None, help="directory for shapes-<backend>-<device>.md/.json")
    _results.add_run_option(p)
    p.add_argument("--tag", default="", help="suffix of the result file names")
    p.add_argument("--quick", action="store_true", help="one tiny case per kind (a smoke test, e.g. PoCL)")
    args = p.parse_args(argv)
    dev = isthmus.device(args.device)
    peers = Peers(dev)
    rng = np.random.default_rng(0)
    ops = set(args.ops.split(","))
    if args.quick:
        args.rounds, args.budget = 2, 0.005
    ceiling = measure.copy_bandwidth(dev, (1 << 20) if args.quick else None)
    gemm = quick_gemm_cases if args.quick else gemm_cases
    cases = gemm(dev, peers, rng, args.dtypes.split(",")) if "gemm" in ops else []
    if ops - {"gemm"}:
        cases += [c for c in memory_cases(dev, peers, rng, args.quick) if c.op in ops]
    rows = []
    for case in cases:
        try:
            row = measure_case(dev, peers, case, ceiling, args.rounds, args.budget, args.quick)
        except Exception as exc:  # one failing case must not lose the sweep: record it
            row = {"op": case.op, "case": case.label, "dtype": case.dtype, "note": f"{type(exc).__name__}: {exc}"}
        rows.append(row)
        print(json.dumps(row), flush=True)
    report = measure.Report("shapes", f"Shape sweep: isthmus on {dev.name} ({dev.backend}) vs {peers.name()}", dev,
                            data={"peer": peers.name(), "copy_GBps": ceiling, "rows": rows}, extra=_versions(peers),
                            notes=[f"device-to-device copy (ceiling of the memory-bound ops): {ceiling:.1f} GB/s"]
                            + ([f"note: {peers.note}"] if peers.note else []))
    report.add_table(["op", "case", "dtype", "isthmus", "peer", "isthmus / peer", "isthmus / copy", "error", "note"],
                     table(rows))
    print(report.markdown())
    _results.write(report, args.out, args.tag, args.run)
    return 0 if all(r.get("ok", True) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
