"""rmsnorm: x / sqrt(mean(x^2) + eps) * (offset + weight) over the last dimension, optionally fused
with the residual add of a transformer block (``residual += x`` in place, the sum normalized).

One kernel (norm.cl) in two layouts: on GPUs a team of items per row holding the row in registers
(several rows per work-group for narrow rows, a row per work-group up to 1024 items for wide ones,
streaming what the registers do not hold), chunks moved as 16-byte vectors where aligned; on CPUs
a row per work-item in 16-wide OpenCL vectors. The rule below picks the config by row width and
dtype; tuning refines it per device.
"""
from __future__ import annotations

from ..spec import Launch, OpSpec, Output, Scalar, Sizes, Tensor, Tunable, sample

_HOLD = 32  # values an item holds in registers at most (a 1024-item group stays within 64 registers)


def rule(buckets: dict, device, dt, params: dict) -> dict:
    """GPUs: chunks of 16 bytes (VPT 4 for 4-byte types, 8 for 16-bit ones), about 16 values held
    per item, a team of up to 1024 items per row (the rest of a longer row streamed), narrow rows
    several to a group of 256. CPUs: a row per work-item, groups of up to 16 rows."""
    cap = 1 << (min(1024, device.max_work_group_size).bit_length() - 1)
    if device.kind == "cpu":
        return {"LAYOUT": 1, "WG": max(1, min(16, buckets["rows"] // 4))}
    size = dt.np.itemsize if dt is not None else 4
    vpt = max(1, 16 // size)
    chunks = -(-buckets["cols"] // vpt)
    tpr = min(cap, 1 << (max(1, -(-chunks // max(1, 16 // vpt))) - 1).bit_length())
    cache = min(1 << (-(-chunks // tpr) - 1).bit_length(), max(1, _HOLD // vpt))
    wg = max(tpr, min(256, cap))
    return {"LAYOUT": 0, "WG": wg, "RPG": wg // tpr, "VPT": vpt, "CACHE": cache}


def grid(p: dict, c: dict) -> tuple[tuple[int], tuple[int]]:
    wg = c["WG"]
    per = wg if c["LAYOUT"] == 1 else c["RPG"]  # rows per work-group
    return (-(-p["rows"] // per) * wg,), (wg,)


def reference(xp, x, weight, eps=1e-6, residual=None, offset=0.0):
    """In the kernel's precision (float64 for float64 inputs, else float32); with ``residual``, the
    sum as the kernel stores it (rounded to x's dtype) is what is normalized."""
    acc = xp.float64 if x.dtype == xp.float64 else xp.float32
    s = x if residual is None else (residual.astype(acc) + x.astype(acc)).astype(x.dtype)
    s = s.astype(acc)
    inv = 1 / xp.sqrt((s * s).mean(axis=-1, keepdims=True) + acc(eps))
    return (s * inv * (acc(offset) + weight.astype(acc))).astype(x.dtype)


SPEC = OpSpec(
    name="rmsnorm", source="norm.cl", entries=("rmsnorm",), dtypes=("float32", "float64", "float16", "bfloat16"),
    args=(Tensor("x", min_ndim=1), Tensor("weight", shape=("cols",)), Scalar("eps", default=1e-6, minimum=0.0),
          Tensor("residual", shape="x", optional=True, written=True), Scalar("offset", default=0.0)),
    problem={"rows": "x.size // x.shape[-1] if x.shape[-1] else 0", "cols": "x.shape[-1]"},
    out=Output(like="x", alias=True),  # out may be x itself
    launch=Launch("rmsnorm", grid, args=("rows:long", "cols:long", "eps", "offset", "x", "weight", "residual", "out")),
    # LAYOUT 0: a team of WG/RPG items per row, chunks of VPT elements, CACHE chunks per item held
    # in registers; 1 (CPUs: OpenCL C vectors, which the CUDA prelude lacks): a row per work-item
    tunables=(Tunable("LAYOUT", (0, 1), 0), Tunable("WG", (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024), 256),
              Tunable("RPG", (1, 2, 4, 8, 16, 32, 64, 128, 256), 1, when=("LAYOUT", (0,))),
              Tunable("VPT", (1, 2, 4, 8), 4, when=("LAYOUT", (0,))),
              Tunable("CACHE", (0, 1, 2, 4, 8, 16), 4, when=("LAYOUT", (0,)))),
    restrictions=("WG <= max_work_group_size", "LAYOUT == 0 or is_cpu", "LAYOUT == 1 or WG >= 32", "RPG <= WG",
                  "WG * acc_size <= local_mem_size", f"VPT * CACHE <= {_HOLD}",
                  # several rows to a group only where a team holds its whole row
                  "RPG == 1 or WG // RPG * VPT * CACHE >= cols"),
    # PoCL 2 cores (loaded VM): a row per work-item ran 3.1-5.2x NumPy's float32 formula at 1024 x 3000/4096
    # for groups of 1-16 rows; the GPU layout 0.7-2.2x (benchmarks/results/runs/*-norms-pocl)
    cpu_defaults=(("LAYOUT", 1), ("WG", 16)), rule=rule,
    reference=reference, inputs=lambda p, dt, rng: (sample(rng, (p["rows"], p["cols"]), dt), sample(rng, p["cols"], dt)),
    sizes=Sizes(gpu={"rows": 16384, "cols": 4096}, cpu={"rows": 2048, "cols": 4096}, quick={"rows": 512, "cols": 1024},
                tiny={"rows": 8, "cols": 32},
                odd=({"rows": 1, "cols": 1}, {"rows": 3, "cols": 7}, {"rows": 13, "cols": 1000},
                     {"rows": 5, "cols": 4097}, {"rows": 2, "cols": 65537})),
    moved=lambda p, size: (2 * p["rows"] * p["cols"] + p["cols"]) * size,
    summary="RMS norm over the last dimension, optionally fused with residual += x",
    doc="""x / sqrt(mean(x^2) + eps) * (offset + weight) over the last dimension of x (any leading
    dimensions; weight has x.shape[-1] elements), in float32 arithmetic for 16-bit dtypes, rounded
    once; into a new Buffer or ``out`` (which may be x itself); returns it.

    ``residual`` (x's shape): the fused add of a transformer block, ``residual += x`` in place
    (rounded to the dtype) and the norm of that sum returned; residual shares memory with nothing
    else. ``offset``: 1.0 for Gemma's ``(1 + weight)`` (Liger's ``offset``). ``eps`` >= 0.

    >>> h = isthmus.ops.rmsnorm(x, w, 1e-6)                        # Llama's RMSNorm
    >>> h = isthmus.ops.rmsnorm(x, w, 1e-6, residual=r, out=x)     # r += x; x = rmsnorm(r)
    """,
)
