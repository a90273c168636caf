"""isthmus on Ray against isthmus in one process: per-shard overhead, and throughput with one and
two device actors. Writes JSON + markdown with --out DIR or --run QUESTION (benchmarks/results/README.md).

    python -m benchmarks ray_overhead [--threads-per-device 1] [--shards 40] [--rounds 3] [--out DIR] [--quick]
    python -m benchmarks ray_overhead --device cuda:0 --ms 5,10,20,40 --out DIR     # one GPU

The job is the scoring step of examples/ray (gemm + softmax + row argmax; inputs a shard of
queries and the catalog, outputs two small vectors).

Devices. Without ``--device``: PoCL's pthread device twice (POCL_DEVICES="pthread pthread"), each
limited to ``--threads-per-device`` worker threads, so on a 2-core machine two devices are two
cores and one device is one; one actor per device. With ``--device ID`` (a GPU: ``cuda:0``): that
one device for this process and every actor; the two-actor pool puts two actors (two processes,
two contexts) on it, so its ratio says whether a second actor's work fills the gaps the first
leaves (Ray's host work, the copies), against the same single device, not two.

Baselines, in this process: ``direct`` is the plainest loop (asarray, task, to_numpy per shard)
on one device; ``pipelined`` runs the shards through the actor's own pipeline (isthmus.ray's
Pipeline: uploads and downloads on a second queue or stream, three shards in flight) without Ray,
the best one process does; ``direct x2`` (two devices only) runs the direct loop on both devices
at once (two threads, shards split), the baseline for two actors. Ray runs keep the pools warm
(programs compiled) and time ``pool.map`` end to end: putting the shards in the object store, the
actors' work, fetching results. Rounds are interleaved (``isthmus.measure.interleaved``) and the
median is reported, as other work may share the machine.

Shard sizes: ``--rows`` (rows per shard), or ``--ms`` (milliseconds of direct-loop time per shard:
the rows are found by timing the direct loop on this device and scaling, as a GPU needs far more
rows than a CPU for the same time; shards per size then follow ``--pass-ms``). ``--items`` and
``--dim``: the catalog's shape (more items: more device work per byte of queries sent).
"""
from __future__ import annotations

import argparse
import json
import os
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from benchmarks import _results
from isthmus import measure

SMOKE = "starts a Ray cluster and two device actors (over a minute on 2 cores); tests/ray covers isthmus.ray"
PIPELINE_DEPTH = 3  # the actors' default (DevicePool(depth=3)); the pipelined baseline uses the same


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
    catalog = rng.standard_normal((items, dim), dtype=np.float32)
    return [(rng.standard_normal((rows, dim), dtype=np.float32), catalog) for _ in range(count)]


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


def pipelined(pipe, shards) -> list:
    """The shards through ``pipe`` (an isthmus.ray Pipeline) from a thread per slot, as an actor does."""
    from isthmus.ray.shards import shard_arrays

    with ThreadPoolExecutor(PIPELINE_DEPTH, thread_name_prefix="pipelined") as workers:
        return list(workers.map(lambda i: pipe.run(scoring, shard_arrays(shards[i], i), i), range(len(shards))))


def timed_s(cases: dict, rounds: int) -> dict:
    """Median seconds of each case in alternating rounds; each case runs once first (warm-up)."""
    for fn in cases.values():
        fn()
    clock = measure.WallClock()
    times = measure.interleaved({name: measure.round_of(clock, fn) for name, fn in cases.items()}, rounds)
    return {name: t.median / 1e3 for name, t in times.items()}


def say(text: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {text}", flush=True)


# ---- sizes ---------------------------------------------------------------------------------------

def calibrate(dev, items: int, dim: int, max_rows: int) -> tuple[float, float]:
    """(fixed ms, ms per row) of the direct loop on ``dev``: a straight line through two probe
    sizes, the smaller taking at least 2 ms (a GPU needs far more rows than a CPU for that)."""
    rows = 1024
    ms = _probe_ms(dev, rows, items, dim)
    while ms < 2.0 and rows * 4 <= max_rows:
        rows *= 4
        ms = _probe_ms(dev, rows, items, dim)
    big = min(max_rows, rows * 4)
    if big == rows:
        return 0.0, ms / rows
    ms_big = _probe_ms(dev, big, items, dim)
    per_row = (ms_big - ms) / (big - rows)
    if per_row <= 0:  # noise on a loaded machine: no fixed part then
        return 0.0, ms_big / big
    return max(0.0, ms_big - per_row * big), per_row


def _probe_ms(dev, rows: int, items: int, dim: int) -> float:
    shards = make_shards(rows, 3, items, dim, seed=7)
    direct(dev, shards)  # warm: programs, allocations of this size
    ms = min(_seconds(lambda: direct(dev, shards)) for _ in range(3)) / len(shards) * 1e3
    say(f"probe: {rows} rows, {ms:.2f} ms per shard")
    return ms


def _seconds(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def shard_sizes(args, dev) -> list[tuple[int, int]]:
    """(rows per shard, shard count) of each size to measure."""
    if not args.ms:
        return [(int(r), args.shards) for r in args.rows.split(",")]
    max_rows = max(64, int(args.max_shard_gb * 2**30 / (4 * args.items)) // 64 * 64)  # a shard's scores matrix
    fixed, per_row = calibrate(dev, args.items, args.dim, max_rows)
    say(f"direct loop: {fixed:.2f} ms + {per_row * 1e3:.3f} ms per 1000 rows")
    sizes = []
    for target in (float(m) for m in args.ms.split(",")):
        rows = min(max_rows, max(64, int((target - fixed) / per_row) // 64 * 64))
        count = max(8, min(args.shards, round(args.pass_ms / target)))
        say(f"{target:g} ms target: {rows} rows per shard, {count} shards")
        sizes.append((rows, count))
    return sizes


# ---- the cluster ---------------------------------------------------------------------------------

class Setup:
    """This process's device(s), its pipelines, and the two pools (one actor; two actors)."""

    def __init__(self, args):
        import ray

        import isthmus
        import isthmus.ray
        from isthmus.ray.pipeline import Pipeline

        self.shared = args.device is not None  # one device for everything (a GPU) vs one device per actor
        if self.shared:
            self.env = {}
            self.devs = [isthmus.device(args.device)]
        else:
            self.env = {"POCL_DEVICES": "pthread pthread", "POCL_MAX_PTHREAD_COUNT": str(args.threads_per_device)}
            os.environ.update(self.env)  # this process's devices: the same as the actors'
            self.devs = [d for d in isthmus.devices() if d.backend == "opencl"][:2]
        cuda = self.devs[0].backend == "cuda"
        init = {"num_cpus": 2, "include_dashboard": False, "log_to_driver": False}
        if self.env:
            init["runtime_env"] = {"env_vars": self.env}
        if cuda:
            init["num_gpus"] = 1
        ray.init(**init)
        if cuda:
            # Ray's GPU assignment, as a user's cluster would do it; three actors share the one GPU
            # (only one pool works at a time), so each asks for a quarter of it.
            free = {"num_cpus": 0, "num_gpus": 0.25}
            self.pool1 = isthmus.ray.DevicePool(1, backend="cuda", actor_options=free)
            self.pool2 = isthmus.ray.DevicePool(2, backend="cuda", actor_options=free)
        else:
            free = {"num_cpus": 0}  # both pools exist at once; only one runs at a time
            ids = [self.devs[0].id] * 2 if self.shared else [d.id for d in self.devs]
            self.pool1 = isthmus.ray.DevicePool(1, devices=ids[:1], actor_options=free)
            self.pool2 = isthmus.ray.DevicePool(2, devices=ids, actor_options=free)
        self.actors = [{"pool": n, "pid": a["pid"], "device": a["device"]["id"], "name": a["device"]["name"]}
                       for n, pool in (("one", self.pool1), ("two", self.pool2)) for a in pool.actors()]
        self.pipe = Pipeline(self.devs[0], PIPELINE_DEPTH)

    def close(self) -> None:
        import ray

        self.pipe.close()
        self.pool1.close()
        self.pool2.close()
        ray.shutdown()


# ---- the measurements ----------------------------------------------------------------------------

def overhead(setup: Setup, count: int, batch: int, rounds: int) -> dict:
    """Per-shard cost with next to no work: the Ray call's overhead."""
    import isthmus.ray

    dev, pool1 = setup.devs[0], setup.pool1
    tiny = make_shards(rows=4, count=count, items=8, dim=8)
    t = timed_s({"direct": lambda: direct(dev, tiny), "run_local": lambda: isthmus.ray.run_local(scoring, tiny, dev),
                 "ray": lambda: pool1.map(scoring, tiny), "ray_batch": lambda: pool1.map(scoring, tiny, batch=batch),
                 "ray_one": lambda: pool1.map(scoring, tiny[:1])}, rounds)
    out = {"shards": len(tiny), "direct_us": t["direct"] / len(tiny) * 1e6,
           "run_local_us": t["run_local"] / len(tiny) * 1e6, "ray_us": t["ray"] / len(tiny) * 1e6,
           "ray_single_shard_latency_ms": t["ray_one"] * 1e3}
    out["ray_batch_us"] = t["ray_batch"] / len(tiny) * 1e6
    out["batch"] = batch
    out["ray_overhead_us"] = out["ray_us"] - out["direct_us"]
    out["ray_batch_overhead_us"] = out["ray_batch_us"] - out["direct_us"]
    return out


def same_results(setup: Setup, shards) -> float:
    """The fraction of rows whose best item the two-actor map and the direct loop agree on (1.0: all)."""
    by_ray, here = setup.pool2.map(scoring, shards), direct(setup.devs[0], shards)
    agree = sum(int(np.sum(a[0] == b[0])) for a, b in zip(by_ray, here))
    return agree / sum(b[0].size for b in here)


def throughput(setup: Setup, rows: int, count: int, args) -> dict:
    dev, pool1, pool2, batch = setup.devs[0], setup.pool1, setup.pool2, args.batch
    shards = make_shards(rows=rows, count=count, items=args.items, dim=args.dim)
    same = same_results(setup, shards)
    cases = {"direct": lambda: direct(dev, shards), "pipelined": lambda: pipelined(setup.pipe, shards),
             "ray1": lambda: pool1.map(scoring, shards), "ray1b": lambda: pool1.map(scoring, shards, batch=batch)}
    if not setup.shared:
        cases["direct2"] = lambda: direct_two(setup.devs, shards)
    cases["ray2"] = lambda: pool2.map(scoring, shards)
    cases["ray2b"] = lambda: pool2.map(scoring, shards, batch=batch)
    t = timed_s(cases, args.rounds)
    row = {"rows_per_shard": rows, "shards": len(shards), "ms_per_shard_direct": t["direct"] / len(shards) * 1e3,
           "ms_per_shard_pipelined": t["pipelined"] / len(shards) * 1e3,
           "mb_per_shard": shards[0][0].nbytes / 1e6, "batch": batch, "same_best_as_direct": same}
    for name in t:
        row[f"{name}_shards_per_s"] = len(shards) / t[name]
    for ray_case in ("ray1", "ray1b"):
        row[f"{ray_case}_of_direct"] = t["direct"] / t[ray_case]
        row[f"{ray_case}_of_pipelined"] = t["pipelined"] / t[ray_case]
    if setup.shared:  # one device: two actors against one process on that same device
        for ray_case in ("ray2", "ray2b"):
            row[f"{ray_case}_of_direct"] = t["direct"] / t[ray_case]
            row[f"{ray_case}_of_pipelined"] = t["pipelined"] / t[ray_case]
    else:
        row["ray2_of_direct2"] = t["direct2"] / t["ray2"]
        row["ray2b_of_direct2"] = t["direct2"] / t["ray2b"]
        row["ray2_per_device_of_direct"] = t["direct"] / t["ray2"] / 2
    return row


# ---- the program ---------------------------------------------------------------------------------

def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default=None,
                    help="one device for this process and every actor (cuda:0 on a GPU machine); default: two PoCL "
                         "devices, one per actor")
    ap.add_argument("--threads-per-device", type=int, default=1, help="PoCL worker threads per device (no --device)")
    ap.add_argument("--shards", type=int, default=40, help="shards per size (with --ms: at most)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch", type=int, default=4, help="shards per Ray call in the batched runs")
    ap.add_argument("--out", default=None, help="folder for ray_overhead-<tag>.md/.json")
    _results.add_run_option(ap)
    ap.add_argument("--tag", default="", help="suffix of the result file names (default pocl-<threads>thread "
                                             "without --device, none with it)")
    ap.add_argument("--quick", action="store_true", help="a few tiny shards, one round (a smoke test)")
    ap.add_argument("--rows", default="4096,16384,32768",
                    help="rows per shard, comma-separated (pick sizes whose direct time is about 10-100 ms)")
    ap.add_argument("--ms", default="",
                    help="instead of --rows: direct-loop milliseconds per shard, comma-separated (e.g. 5,10,20,40); "
                         "the rows are found by timing this device")
    ap.add_argument("--pass-ms", type=float, default=800.0,
                    help="with --ms: shards per size = this / the size's ms (at least 8, at most --shards)")
    ap.add_argument("--items", type=int, default=256, help="catalog rows (items scored per query)")
    ap.add_argument("--dim", type=int, default=64, help="vector length of queries and items")
    ap.add_argument("--max-shard-gb", type=float, default=4.0,
                    help="with --ms: the largest shard, as GiB of its scores matrix (rows x items float32)")
    args = ap.parse_args(argv)
    if args.quick:
        args.rows, args.ms, args.shards, args.rounds = "64", "", 4, 1
    return args


def main(argv=None) -> int:
    args = parse(argv)
    tiny_count = 8 if args.quick else 200
    load_before = os.getloadavg()
    say("starting Ray and the device actors")
    setup = Setup(args)
    say(f"actors: {setup.actors}")
    failures: list[str] = []  # a section that fails is reported, and the others still run (one GPU call)
    rows_out = []
    try:
        head = _section(failures, "per-shard overhead", lambda: overhead(setup, tiny_count, args.batch, args.rounds))
        print(json.dumps(head, indent=1), flush=True)
        for rows, count in _section(failures, "shard sizes", lambda: shard_sizes(args, setup.devs[0])) or ():
            say(f"throughput: {count} shards of {rows} rows")
            row = _section(failures, f"{rows} rows per shard", lambda: throughput(setup, rows, count, args))
            if row is not None:
                print(json.dumps(row, indent=1), flush=True)
                rows_out.append(row)
    finally:
        setup.close()

    load = [round(load_before[0], 1), round(os.getloadavg()[0], 1)]
    where = (f"one device ({setup.devs[0].id}) for this process and every actor" if setup.shared
             else f"{setup.env}")
    report = measure.Report("ray_overhead", "isthmus on Ray vs one process", setup.devs,
                            data={"env": setup.env, "device": args.device, "actors": setup.actors,
                                  "catalog": {"items": args.items, "dim": args.dim},
                                  "load_average_before_after": load, "overhead": head, "throughput": rows_out,
                                  "failures": failures},
                            notes=[f"{where}; load average {load[0]} before, {load[1]} after (other work may share "
                                   "the cores): ratios within one run are what counts, and they move between runs",
                                   f"catalog {args.items} x {args.dim} float32; pipeline depth {PIPELINE_DEPTH}",
                                   *(f"FAILED: {f}" for f in failures)])
    tables(report, head, rows_out, setup.shared)
    print(report.markdown())
    tag = args.tag or ("" if setup.shared else f"pocl-{args.threads_per_device}thread")
    _results.write(report, args.out, tag, args.run)
    differ = [r["rows_per_shard"] for r in rows_out if r["same_best_as_direct"] < 1.0]
    if differ:
        print(f"the Ray results differ from the direct loop's at {differ} rows per shard (same_best_as_direct)")
    for f in failures:
        print(f"FAILED: {f}")
    return 1 if differ or failures else 0


def _section(failures: list, what: str, fn):
    """``fn()``, or None with the failure printed and noted in ``failures``."""
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - one failed part of a long device run must not lose the rest
        say(f"FAILED {what}: {type(exc).__name__}: {exc}")
        traceback.print_exc()
        failures.append(f"{what}: {type(exc).__name__}: {str(exc)[:300]}")
        return None


def tables(report, head: dict | None, rows: list, shared: bool) -> None:
    if head is not None:
        _overhead_table(report, head)
    if rows:
        _throughput_table(report, rows, shared)


def _overhead_table(report, head: dict) -> None:
    report.add_table(["direct loop", "run_local (pipeline)", "Ray map", "Ray overhead",
                      f"Ray map, batch {head['batch']}", "its overhead", "one-shard map latency"],
                     [[f"{head['direct_us']:.0f} µs", f"{head['run_local_us']:.0f} µs",
                       f"{head['ray_us']:.0f} µs", f"{head['ray_overhead_us']:.0f} µs",
                       f"{head['ray_batch_us']:.0f} µs", f"{head['ray_batch_overhead_us']:.0f} µs",
                       f"{head['ray_single_shard_latency_ms']:.1f} ms"]],
                     "Per-shard overhead (tiny shards, one actor, pipelined):")


def _throughput_table(report, rows: list, shared: bool) -> None:
    first = ["rows/shard", "MB/shard", "ms/shard (direct)", "ms/shard (pipelined)", "direct", "pipelined",
             "Ray 1 actor", "Ray1 / direct", "batched", "Ray1 / pipelined", "batched"]

    def one_actor(r):
        return [r["rows_per_shard"], f"{r['mb_per_shard']:.1f}", f"{r['ms_per_shard_direct']:.1f}",
                f"{r['ms_per_shard_pipelined']:.1f}", f"{r['direct_shards_per_s']:.1f}",
                f"{r['pipelined_shards_per_s']:.1f}", f"{r['ray1_shards_per_s']:.1f}", f"{r['ray1_of_direct']:.0%}",
                f"{r['ray1b_of_direct']:.0%}", f"{r['ray1_of_pipelined']:.0%}", f"{r['ray1b_of_pipelined']:.0%}"]

    caption = (f"Throughput (shards/s). Ray runs: batch 1, then batch {rows[0]['batch']} (shards per Ray call). "
               "Ray1 / direct is the per-device target (>= 90% for shards of >= 10 ms); Ray1 / pipelined compares "
               "with the same pipeline run in one process without Ray. ")
    if shared:
        report.add_table(first + ["Ray 2 actors, one device", "Ray2 / direct", "batched", "Ray2 / pipelined", "same"],
                         [one_actor(r) + [f"{r['ray2_shards_per_s']:.1f}", f"{r['ray2_of_direct']:.0%}",
                                          f"{r['ray2b_of_direct']:.0%}", f"{r['ray2_of_pipelined']:.0%}",
                                          f"{r['same_best_as_direct']:.0%}"] for r in rows],
                         caption + "Two actors share the one device (two processes, two contexts): Ray2 compares "
                         "them with one process on that device, not with two devices.")
        return
    report.add_table(first + ["direct 2 dev", "Ray 2 actors", "Ray2 / direct2", "batched", "Ray2 per device / direct",
                              "same"],
                     [one_actor(r) + [f"{r['direct2_shards_per_s']:.1f}", f"{r['ray2_shards_per_s']:.1f}",
                                      f"{r['ray2_of_direct2']:.0%}", f"{r['ray2b_of_direct2']:.0%}",
                                      f"{r['ray2_per_device_of_direct']:.0%}", f"{r['same_best_as_direct']:.0%}"]
                      for r in rows],
                     caption + "With two devices on two shared cores the baseline for two actors is direct x2.")


if __name__ == "__main__":
    raise SystemExit(main())
