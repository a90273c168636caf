"""Which norm.cl config is fastest on this device: rmsnorm and layernorm (plain and fused with the
residual add) at each hidden size, the spec's rule next to nearby configs, as % of copy.

    python -m benchmarks norm_configs [--device cuda:0] [--dtypes float32,bfloat16] [--rows 16384]
    python -m benchmarks norm_configs --ops layernorm --hidden 4096 --rows 64      # one case

For each case: the rule's config (what a call without a tuned config resolves to), then variants
of it (the team halved and doubled, the chunk's vector width, the chunks held per item), each
forced through the op's own call (isthmus.ops.resolve.forced), timed by device events (median of
``--repeat`` batches of 10 calls) and given as GB/s and % of a device-to-device copy of x timed the
same way. A diagnostic: what it prints feeds the rule (python/isthmus/ops/specs/rmsnorm.py); nothing
is recorded in benchmarks/results/.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

import isthmus
from isthmus.dtypes import lookup
from isthmus.measure import device_ms
from isthmus.ops.resolve import default_config, forced, forget_resolved

SMOKE = ["--rows", "8", "--hidden", "64", "--repeat", "2", "--dtypes", "float32"]


def variants(spec, dev, dt, problem: dict) -> list[dict]:
    """The rule's config first, then valid neighbours of it."""
    base = default_config(spec, dev, problem, dt)
    seen, out = set(), []

    def add(c):
        key = tuple(sorted(c.items()))
        if key not in seen and spec.is_valid(c, dev, problem, dt):
            seen.add(key)
            out.append(dict(c))

    add(base)
    if base.get("LAYOUT", 0) == 1:
        for wg in (1, 4, 16, 64):
            add({**base, "WG": wg})
    if base.get("LAYOUT", 0) == 1 or dev.kind == "cpu":
        return out
    tpr = base["WG"] // base["RPG"]
    for vpt in (8, 4, 2):  # the chunk's width, the values held the same
        add({**base, "VPT": vpt, "CACHE": max(1, base["CACHE"] * base["VPT"] // vpt)})
    for f in (2, 0.5, 4, 0.25):  # the team (items per row), the held chunks compensating, then not
        t = int(tpr * f)
        if t < 1:
            continue
        wg = max(t, base["WG"])
        add({**base, "WG": wg, "RPG": wg // t, "CACHE": max(1, int(base["CACHE"] / f))})
    for f in (2, 0.5):
        t = int(tpr * f)
        wg = max(t, base["WG"])
        add({**base, "WG": wg, "RPG": wg // t})
    for wg in (128, 512, 1024):  # narrow rows: more rows to a group
        if base["RPG"] > 1:
            add({**base, "WG": wg, "RPG": max(1, wg // tpr)})
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default=None)
    p.add_argument("--dtypes", default="float32,bfloat16")
    p.add_argument("--ops", default="layernorm,layernorm+residual,rmsnorm")
    p.add_argument("--hidden", default="2048,3000,4096,8192")
    p.add_argument("--rows", type=int, default=None, help="default: 16384 on a GPU, 512 on a CPU")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--max-variants", type=int, default=8)
    a = p.parse_args(argv)
    dev = isthmus.device(a.device)
    rows = a.rows or (16384 if dev.kind == "gpu" else 512)
    rng = np.random.default_rng(0)
    from isthmus.ops.specs.layernorm import SPEC as LN
    from isthmus.ops.specs.rmsnorm import SPEC as RMS
    print(f"{dev.id} {dev.name}: rows {rows}")
    for dtype in a.dtypes.split(","):
        if not dev.supports(dtype):
            continue
        dt = lookup(dtype)
        for cols in (int(h) for h in a.hidden.split(",")):
            shape = (rows, cols)
            x = dev.asarray(rng.standard_normal(shape, dtype=np.float32).astype(dt.np))
            r = dev.asarray(rng.standard_normal(shape, dtype=np.float32).astype(dt.np))
            w = dev.asarray(rng.standard_normal(cols, dtype=np.float32).astype(dt.np))
            out, dst = dev.empty(shape, dt.np), dev.empty(shape, dt.np)
            nb = rows * cols * dt.np.itemsize
            copy = device_ms(dev, lambda: dev._device_copy(dst._handle(), x._handle(), nb), repeat=a.repeat, batch=10)
            copy_gbs = 2 * nb / copy / 1e6
            for op in a.ops.split(","):
                spec = LN if op.startswith("layernorm") else RMS
                res = r if op.endswith("+residual") else None
                moved = (4 if res is not None else 2) * nb
                call = ((lambda: isthmus.ops.layernorm(x, w, w, 1e-5, res, out=out)) if spec is LN
                        else (lambda: isthmus.ops.rmsnorm(x, w, 1e-6, res, out=out)))
                problem = {"rows": rows, "cols": cols}
                cells = []
                for i, c in enumerate(variants(spec, dev, dt, problem)[:a.max_variants]):
                    forget_resolved()
                    try:
                        with forced(spec, c):
                            ms = device_ms(dev, call, repeat=a.repeat, batch=10)
                    except Exception as e:  # a config this device cannot build or launch: say so, go on
                        cells.append(f"{c}: {type(e).__name__}")
                        continue
                    tag = "rule " if i == 0 else ""
                    cells.append(f"{tag}WG{c['WG']} RPG{c.get('RPG', 1)} VPT{c.get('VPT', '-')} "
                                 f"CACHE{c.get('CACHE', '-')}: {100 * moved / ms / 1e6 / copy_gbs:.0f}%")
                forget_resolved()
                print(f"{op} {dtype} {rows}x{cols} (copy {copy_gbs:.0f} GB/s): " + "; ".join(cells), flush=True)
            for b in (x, r, w, out, dst):
                b.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
