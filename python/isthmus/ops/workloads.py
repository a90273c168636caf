"""Standard workloads of the kernel library: inputs, the isthmus call, the reference and the bytes/
flops each moves, all read from the op specs (their sample problems, inputs, call, reference and
error kind), shared by the demo, ``isthmus bench`` and the benchmarks. Nothing here knows an op by
name or a problem vocabulary: a spec that declares ``batch, heads, seq, head_dim`` runs as any other."""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Iterable

import numpy as np

from .registry import OPS
from .spec import OpSpec


@dataclass
class Workload:
    spec: OpSpec
    label: str
    problem: dict
    host: tuple  # NumPy inputs
    bytes: int  # fewest bytes moved through device memory
    flops: int

    @property
    def op(self) -> str:
        return self.spec.name

    def make(self, dev) -> tuple:
        """The device inputs."""
        return tuple(dev.asarray(h) for h in self.host)

    def call(self, *args, out=None):
        """The op on device inputs (into ``out`` when given)."""
        return self.spec.sample_call(*args, out=out)

    def bound(self, args: tuple, out=None):
        """The op's call on device inputs ``args`` (into ``out`` when given) as a function of no
        arguments, its positional arguments worked out once: what a host-overhead figure times is
        the library call, not the sample's argument binding (a spec whose sample call is its own,
        such as top_k's, keeps it)."""
        if type(self.spec).sample_call is not OpSpec.sample_call:
            return functools.partial(self.call, *args) if out is None else functools.partial(self.call, *args, out=out)
        pos = self.spec._sample_args(args)
        if out is None:
            return functools.partial(self.spec.run, *pos)
        return functools.partial(self.spec.run, *pos, **{self.spec.out_arg: out})

    def expect(self) -> np.ndarray:
        """The reference result in float64 arithmetic, rounded to the result's dtype."""
        return self.spec.sample_expect(*self.host, exact=True)

    def numpy(self):
        """The call a NumPy user makes instead (the spec's reference, in the kernel's precision)."""
        return self.spec.sample_expect(*self.host)

    def vendor(self, xp, views: tuple):
        """The same call with another array module (CuPy) on its views of the device inputs."""
        return self.spec.sample_expect(*views, xp=xp)

    def error(self, out: np.ndarray) -> float:
        """Relative error of a result, of the spec's kind (:meth:`OpSpec.result_error`): "relative"
        (over the reference's norm), "magnitude" (over the inputs' magnitudes: a sum of mixed signs
        can cancel to near zero, and its rounding error scales with the magnitudes)."""
        return self.spec.result_error(out, self.expect(), self.host)

    def tolerance(self, dtype=np.float32) -> float:
        return tolerance(self.spec, dtype, k=self.host[0].shape[-1])

    def metric(self, ms: float) -> tuple[float, str]:
        return (self.flops / ms / 1e6, "GFLOP/s") if self.flops else (self.bytes / ms / 1e6, "GB/s")


def _label(name: str, p: dict) -> str:
    if len(p) == 1:
        return f"{name} {next(iter(p))}={next(iter(p.values()))}"
    values = set(p.values())
    return f"{name} {values.pop()}^{len(p)}" if len(values) == 1 and len(p) > 2 else f"{name} " + "x".join(
        str(v) for v in p.values())


def workload(spec: OpSpec, problem: dict, dtype=np.float32, rng=None, host: tuple | None = None) -> Workload:
    """``spec`` at ``problem``: its sample inputs (``host`` when given), call, reference, bytes and flops."""
    if host is None:
        host = tuple(spec.inputs(problem, dtype, rng if rng is not None else np.random.default_rng(0)))
    moved = spec.moved(problem, np.dtype(dtype).itemsize)
    return Workload(spec, _label(spec.name, problem), dict(problem), host, moved, spec.flops(problem) if spec.flops else 0)


def standard(which: str, specs: Iterable[OpSpec] | None = None, dtype=np.float32, seed: int = 0) -> list[Workload]:
    """A workload of every library op (or of ``specs``) at its spec's sample problem ``which``:
    "gpu", "cpu", "quick" (the standard ones) or "tiny" (host overhead)."""
    rng = np.random.default_rng(seed)
    specs = OPS.values() if specs is None else specs
    return [workload(spec, getattr(spec.sizes, which), dtype, rng) for spec in specs]


def sizes_for(dev, quick: bool = False) -> str:
    """Which standard problems suit ``dev``: "quick", "gpu" or "cpu"."""
    return "quick" if quick else "gpu" if dev.kind == "gpu" else "cpu"


def tolerance(spec: OpSpec | str, dtype, k: int = 1) -> float:
    """Relative-error bound (||out-ref|| / ||ref||) fitted to the dtype: the spec's tolerance in
    units of the dtype's, growing with the length k of a contraction's sums (ops that count flops)."""
    if isinstance(spec, str):
        spec = OPS.get(spec) or OpSpec  # (a name the library does not have: the default tolerance)
    units = {np.dtype(np.float16): 3e-3, np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12}
    base = units.get(np.dtype(dtype), 0.0)
    return base * spec.tolerance * (max(1.0, np.sqrt(k)) if spec.flops else 1.0)


def host_result(out) -> np.ndarray:
    """An op's result on the host: a Buffer's values; an op that returns several buffers (kv_append's
    caches, merge_attention_states' output and lse) their values raveled and concatenated in the
    first one's dtype, as its spec's reference gives them."""
    if isinstance(out, tuple):
        first = out[0].to_numpy()
        return np.concatenate([first.ravel(), *(o.to_numpy().astype(first.dtype).ravel() for o in out[1:])])
    return out.to_numpy()

