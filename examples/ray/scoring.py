"""The scoring job of examples/java, sharded over isthmus device actors on a Ray cluster.

Queries (a few hundred thousand embeddings) are scored against an item catalog: scaled dot
products (gemm), a row softmax, each query's best item. Every query is a noisy copy of a known
item, so the answer is checked. The same job runs as a Python task and as a Java task
(``example.ScoringShard``, an ``io.isthmus.ShardTask``), and is compared with the single-process
run.

    python examples/ray/scoring.py                        # local Ray, two PoCL CPU devices
    python examples/ray/scoring.py --address auto --actors 8 --backend cuda    # a GPU cluster
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np

import isthmus
import isthmus.ray

HERE = Path(__file__).resolve().parent
ARGMAX = """
__kernel void row_argmax(__global const float* p, int rows, int cols, __global int* best, __global float* bestp) {
    int r = get_global_id(0);
    if (r >= rows) return;
    const __global float* row = p + (long)r * cols;
    int bi = 0; float bv = row[0];
    for (int c = 1; c < cols; c++) { float v = row[c]; if (v > bv) { bv = v; bi = c; } }
    best[r] = bi; bestp[r] = bv;
}
"""


def score_shard(dev, bufs):
    """The Python task: the same steps as example.ScoringShard."""
    queries, catalog = bufs
    n, dim = queries.shape
    items_t = isthmus.ops.transpose(catalog)
    logits = isthmus.ops.gemm(queries, items_t, alpha=1.0 / np.sqrt(dim))
    probs = isthmus.ops.softmax(logits)
    best, best_p = dev.empty(n, np.int32), dev.empty(n, np.float32)
    dev.compile(ARGMAX, "row_argmax")(probs, np.int32(n), np.int32(catalog.shape[0]), best, best_p,
                                      config=isthmus.LaunchConfig((n,)))
    return best, best_p


def java_classes() -> str:
    """example.ScoringShard compiled against the installed isthmus jar (javac, into examples/ray/build)."""
    from isthmus.java import jvm

    out = HERE / "build"
    source = HERE / "java" / "example" / "ScoringShard.java"
    target = out / "example" / "ScoringShard.class"
    if not target.exists() or target.stat().st_mtime < source.stat().st_mtime:
        javac = shutil.which("javac") or "javac"
        subprocess.run([javac, "-d", str(out), "-cp", ":".join(jvm.isthmus_classpath()), str(source)], check=True)
    return str(out)


def dataset(queries: int, items: int, dim: int, shards: int, seed: int = 7):
    rng = np.random.default_rng(seed)
    catalog = rng.standard_normal((items, dim)).astype(np.float32)
    planted = rng.integers(0, items, queries)
    q = (catalog[planted] + 0.1 * rng.standard_normal((queries, dim))).astype(np.float32)
    return catalog, planted, [(part, catalog) for part in np.array_split(q, shards)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--address", help="Ray cluster to join (default: start a local one)")
    ap.add_argument("--actors", type=int, default=2)
    ap.add_argument("--backend", default="auto", choices=("auto", "cuda", "opencl"))
    ap.add_argument("--cpu-devices", type=int, default=2, help="local Ray only: PoCL CPU devices to expose")
    ap.add_argument("--queries", type=int, default=300_000)
    ap.add_argument("--items", type=int, default=256)
    ap.add_argument("--dim", type=int, default=32)
    ap.add_argument("--shards", type=int, default=30)
    args = ap.parse_args()

    import ray

    if args.address:
        ray.init(address=args.address)
    else:
        ray.init(num_cpus=args.actors, include_dashboard=False,
                 runtime_env={"env_vars": {"POCL_DEVICES": " ".join(["pthread"] * args.cpu_devices)}})
    catalog, planted, shards = dataset(args.queries, args.items, args.dim, args.shards)
    print(f"{args.queries} queries x {args.items} items (dim {args.dim}) in {args.shards} shards, "
          f"{args.actors} device actors")
    with isthmus.ray.DevicePool(args.actors, backend=args.backend, classpath=[java_classes()]) as pool:
        for a in pool.actors():
            print(f"  actor pid {a['pid']}: {a['device']['id']} {a['device']['name']}")
        results = {}
        for name, task in (("python", score_shard), ("java", isthmus.ray.JavaTask("example.ScoringShard"))):
            t0 = time.perf_counter()
            out = pool.map(task, shards)
            seconds = time.perf_counter() - t0
            best = np.concatenate([b for b, _ in out])
            results[name] = out
            print(f"{name:6s} task: {seconds:6.2f} s, {args.queries / seconds:9.0f} queries/s, "
                  f"{np.mean(best == planted):.4f} of queries found their planted item")
    same = all(np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
               for a, b in zip(results["python"], results["java"]))
    local = isthmus.ray.run_local(score_shard, shards[:3])
    same_local = all(np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]) for a, b in zip(local, results["java"]))
    print(f"Java == Python results: {same}; first shards == single-process run: {same_local}")
    ray.shutdown()


if __name__ == "__main__":
    main()
