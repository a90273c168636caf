"""isthmus on Ray against isthmus in one process: per-shard overhead, and throughput with one and
two device actors. Writes JSON + markdown to benchmarks/results/.

    python -m benchmarks ray_overhead [--threads-per-device 1] [--shards 40] [--rounds 3] [--out DIR] [--quick]

The job is the scoring step of examples/ray (gemm + softmax + row argmax; inputs a shard of
queries and the catalog, outputs two small vectors). Devices: PoCL's pthread device twice
(POCL_DEVICES="pthread pthread"), each limited to ``--threads-per-device`` worker threads, so on a
2-core machine two devices are two cores and one device is one. Baselines, in this process:
``direct`` is the plainest loop (asarray, task, to_numpy per shard) on one device; ``direct x2``
runs that loop on both devices at once (two threads, shards split), the baseline for two actors.
Ray runs keep the pools warm (programs compiled) and time ``pool.map`` end to end: putting the
shards in the object store, the actors' work, fetching results. Rounds are interleaved (direct,
Ray, direct x2, Ray x2, ...: ``isthmus.measure.interleaved``) and the median is reported, as other
work may share the machine.
"""
from __future__ import annotations

import argparse
import json
import os
import threading

import numpy as np

from isthmus import measure

SMOKE = "starts a Ray cluster and two device actors (over a minute on 2 cores); tests/ray covers isthmus.ray"


def scoring(dev, bufs):
    import isthmus

    queries, catalog = bufs
    n, dim = queries.shape
    probs = isthmus.ops.softmax(isthmus.ops.gemm(queries, isthmus.ops.transpose(catalog), alpha=1.0 / np.sqrt(dim)))
    best, best_p = dev.empty(n, np.int32), dev.empty(n, np.float32)
    dev.compile(ARGMAX, "row_argmax")(probs, np.int32(n), np.int32(catalog.shape[0]), best, best_p,
                                      config=isthmus.LaunchConfig((n,)))
    return best, best_p


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


def make_shards(rows: int, count: int, items: int, dim: int, seed: int = 1):
    rng = np.random.default_rng(seed)
    catalog = rng.standard_normal((items, dim)).astype(np.float32)
    return [(rng.standard_normal((rows, dim)).astype(np.float32), catalog) for _ in range(count)]


def direct(dev, shards) -> list:
    out = []
    for arrays in shards:
        bufs = [dev.asarray(a) for a in arrays]
        results = scoring(dev, bufs)
        out.append(tuple(r.to_numpy() for r in results))
        for b in (*bufs, *results):
            b.close()
    return out


def direct_two(devs, shards) -> None:
    halves = [shards[0::2], shards[1::2]]
    threads = [threading.Thread(target=direct, args=(d, h)) for d, h in zip(devs, halves)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def timed_s(cases: dict, rounds: int) -> dict:
    """Median seconds of each case in alternating rounds; each case runs once first (warm-up)."""
    for fn in cases.values():
        fn()
    clock = measure.WallClock()
    times = measure.interleaved({name: measure.round_of(clock, fn) for name, fn in cases.items()}, rounds)
    return {name: t.median / 1e3 for name, t in times.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads-per-device", type=int, default=1)
    ap.add_argument("--shards", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch", type=int, default=4, help="shards per Ray call in the batched runs")
    ap.add_argument("--out", default=None, help="folder for ray_overhead-<tag>.md/.json")
    ap.add_argument("--tag", default="", help="suffix of the result file names (default pocl-<threads>thread)")
    ap.add_argument("--quick", action="store_true", help="a few tiny shards, one round (a smoke test)")
    ap.add_argument("--rows", default="4096,16384,32768",
                    help="rows per shard, comma-separated (pick sizes whose direct time is about 10-100 ms)")
    args = ap.parse_args(argv)
    sizes, tiny_count = tuple(int(r) for r in args.rows.split(",")), 200
    if args.quick:
        sizes, tiny_count, args.shards, args.rounds = (64,), 8, 4, 1
    env = {"POCL_DEVICES": "pthread pthread", "POCL_MAX_PTHREAD_COUNT": str(args.threads_per_device)}
    os.environ.update(env)  # this process's devices: the same as the actors'

    import ray

    import isthmus
    import isthmus.ray

    load_before = os.getloadavg()
    devs = [d for d in isthmus.devices() if d.backend == "opencl"][:2]
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": env})
    free = {"num_cpus": 0}  # both pools exist at once; only one runs at a time
    pool1 = isthmus.ray.DevicePool(1, devices=[devs[0].id], actor_options=free)
    pool2 = isthmus.ray.DevicePool(2, devices=[d.id for d in devs], actor_options=free)

    rows_out = []
    # 1. per-shard overhead: shards with next to no work
    tiny = make_shards(rows=4, count=tiny_count, items=8, dim=8)
    t = timed_s({"direct": lambda: direct(devs[0], tiny), "run_local": lambda: isthmus.ray.run_local(scoring, tiny,
                 devs[0]), "ray": lambda: pool1.map(scoring, tiny),
                 "ray_batch": lambda: pool1.map(scoring, tiny, batch=args.batch),
                 "ray_one": lambda: pool1.map(scoring, tiny[:1])}, args.rounds)
    overhead = {"shards": len(tiny), "direct_us": t["direct"] / len(tiny) * 1e6,
                "run_local_us": t["run_local"] / len(tiny) * 1e6, "ray_us": t["ray"] / len(tiny) * 1e6,
                "ray_single_shard_latency_ms": t["ray_one"] * 1e3}
    overhead["ray_batch_us"] = t["ray_batch"] / len(tiny) * 1e6
    overhead["batch"] = args.batch
    overhead["ray_overhead_us"] = overhead["ray_us"] - overhead["direct_us"]
    overhead["ray_batch_overhead_us"] = overhead["ray_batch_us"] - overhead["direct_us"]
    print(json.dumps(overhead, indent=1), flush=True)

    # 2. throughput at shards of about 10 ms and 40 ms of device work (one device, direct)
    for rows in sizes:
        shards = make_shards(rows=rows, count=args.shards, items=256, dim=64)
        assert all(np.array_equal(a[0], b[0]) for a, b in zip(pool2.map(scoring, shards), direct(devs[0], shards)))
        t = timed_s({"direct": lambda: direct(devs[0], shards), "ray1": lambda: pool1.map(scoring, shards),
                     "ray1b": lambda: pool1.map(scoring, shards, batch=args.batch),
                     "direct2": lambda: direct_two(devs, shards), "ray2": lambda: pool2.map(scoring, shards),
                     "ray2b": lambda: pool2.map(scoring, shards, batch=args.batch)}, args.rounds)
        row = {"rows_per_shard": rows, "shards": len(shards), "ms_per_shard_direct": t["direct"] / len(shards) * 1e3}
        for name in t:
            row[f"{name}_shards_per_s"] = len(shards) / t[name]
        row["ray1_of_direct"] = t["direct"] / t["ray1"]
        row["ray1b_of_direct"] = t["direct"] / t["ray1b"]
        row["ray2_of_direct2"] = t["direct2"] / t["ray2"]
        row["ray2b_of_direct2"] = t["direct2"] / t["ray2b"]
        row["ray2_per_device_of_direct"] = t["direct"] / t["ray2"] / 2
        print(json.dumps(row, indent=1), flush=True)
        rows_out.append(row)
    pool1.close()
    pool2.close()
    ray.shutdown()

    load = [round(load_before[0], 1), round(os.getloadavg()[0], 1)]
    report = measure.Report("ray_overhead", "isthmus on Ray vs one process", devs,
                            data={"env": env, "load_average_before_after": load, "overhead": overhead,
                                  "throughput": rows_out},
                            notes=[f"{env}; other work shared the cores (load average {load[0]} before, {load[1]} "
                                   "after): ratios within one run are what counts, and they move between runs"])
    tables(report, overhead, rows_out)
    print(report.markdown())
    if args.out:
        print(f"wrote {report.write(args.out, args.tag or f'pocl-{args.threads_per_device}thread')}.md/.json")
    return 0


def tables(report, overhead: dict, rows: list) -> None:
    report.add_table(["direct loop", "run_local (pipeline)", "Ray map", "Ray overhead",
                      f"Ray map, batch {overhead['batch']}", "its overhead", "one-shard map latency"],
                     [[f"{overhead['direct_us']:.0f} µs", f"{overhead['run_local_us']:.0f} µs",
                       f"{overhead['ray_us']:.0f} µs", f"{overhead['ray_overhead_us']:.0f} µs",
                       f"{overhead['ray_batch_us']:.0f} µs", f"{overhead['ray_batch_overhead_us']:.0f} µs",
                       f"{overhead['ray_single_shard_latency_ms']:.1f} ms"]],
                     "Per-shard overhead (tiny shards, one actor, pipelined):")
    report.add_table(["rows/shard", "ms/shard (direct)", "direct 1 dev", "Ray 1 actor", "Ray1 / direct", "batched",
                      "direct 2 dev", "Ray 2 actors", "Ray2 / direct2", "batched", "Ray2 per device / direct"],
                     [[r["rows_per_shard"], f"{r['ms_per_shard_direct']:.1f}", f"{r['direct_shards_per_s']:.1f}",
                       f"{r['ray1_shards_per_s']:.1f}", f"{r['ray1_of_direct']:.0%}", f"{r['ray1b_of_direct']:.0%}",
                       f"{r['direct2_shards_per_s']:.1f}", f"{r['ray2_shards_per_s']:.1f}",
                       f"{r['ray2_of_direct2']:.0%}", f"{r['ray2b_of_direct2']:.0%}",
                       f"{r['ray2_per_device_of_direct']:.0%}"] for r in rows],
                     f"Throughput (shards/s). Ray runs: batch 1, then batch {overhead['batch']} (shards per Ray "
                     "call). Ray1 / direct is the per-device target (>= 90% for shards of >= 10 ms); with two devices "
                     "on two shared cores the baseline for two actors is direct x2.")


if __name__ == "__main__":
    raise SystemExit(main())
