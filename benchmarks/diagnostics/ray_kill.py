"""The kill-an-actor run, repeated: a job over two device actors during which one actor is killed
(SIGKILL of its process, or ray.kill, alternately; a random actor after a random number of
results; shards sent one per Ray call, or three, alternately by pairs of runs). Each run must return every shard once, equal to the single-process run. Writes JSON +
markdown with --out DIR or --run QUESTION (benchmarks/results/README.md).

    python -m benchmarks ray_kill [--runs 20] [--shards 24] [--out DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import time

import numpy as np

from benchmarks import _results
from isthmus import measure

SMOKE = "starts a Ray cluster and kills actors (minutes on 2 cores); tests/ray/test_ray_kill.py covers it"


def slow_softmax(dev, bufs):
    import isthmus

    time.sleep(0.02)  # every actor busy long enough for the kill to land mid-job
    return isthmus.ops.softmax(bufs[0])


def one_run(pool, rng, run: int, shards_n: int) -> dict:
    import ray

    import isthmus.ray

    shards = [rng.standard_normal((int(r), 33)).astype(np.float32) for r in rng.integers(1, 120, shards_n)]
    victim_slot = int(rng.integers(0, len(pool)))
    after = int(rng.integers(2, shards_n // 2))
    how = "os.kill" if run % 2 == 0 else "ray.kill"
    batch = 1 if run // 2 % 2 == 0 else 3  # shards per Ray call: a death loses whole batches
    victim = pool.actors()[victim_slot]["pid"]
    handle = pool.handles[victim_slot]
    seen = []

    def on_result(index):
        seen.append(index)
        if len(seen) == after:
            if how == "os.kill":
                os.kill(victim, signal.SIGKILL)
            else:
                ray.kill(handle, no_restart=True)

    box = {}
    seconds = measure.host_ms(lambda: box.setdefault("out", pool.map(slow_softmax, shards, batch=batch,
                                                                      on_result=on_result)), repeat=1, warmup=0) / 1e3
    out = box["out"]
    want = isthmus.ray.run_local(slow_softmax, shards)
    report = pool.last_report
    lost = sorted(set(range(shards_n)) - set(seen))
    duplicated = sorted({i for i in seen if seen.count(i) > 1})
    wrong = [i for i, (a, b) in enumerate(zip(out, want)) if not np.array_equal(a, b)]
    ok = not lost and not duplicated and not wrong and len(out) == shards_n and report.replaced == 1
    return {"run": run, "how": how, "batch": batch, "victim_slot": victim_slot, "killed_after_results": after,
            "replaced": report.replaced, "rerun_after_death": report.rerun_after_death, "lost": lost,
            "duplicated": duplicated, "wrong": wrong, "seconds": round(seconds, 2), "ok": ok}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--shards", type=int, default=24)
    ap.add_argument("--out", default=None, help="folder for ray_kill.md/.json")
    _results.add_run_option(ap)
    ap.add_argument("--tag", default="", help="suffix of the result file names")
    args = ap.parse_args(argv)
    env = {"POCL_DEVICES": "pthread pthread"}
    os.environ.update(env)

    import ray

    import isthmus.ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": env})
    rng = np.random.default_rng(int.from_bytes(os.urandom(4), "little"))
    runs = []
    with isthmus.ray.DevicePool(2, max_restarts=args.runs + 1) as pool:
        for run in range(args.runs):
            result = one_run(pool, rng, run, args.shards)
            print(json.dumps(result), flush=True)
            runs.append(result)
    ray.shutdown()
    passed = sum(r["ok"] for r in runs)
    report = measure.Report("ray_kill", f"Kill an actor mid-job: {passed} of {len(runs)} runs lost nothing, duplicated "
                            "nothing", data={"env": env, "passed": passed, "runs": runs},
                            notes=[f"PoCL two pthread devices, two device actors, {args.shards} shards per job (20 ms "
                                   "each + a softmax)"])
    report.add_table(["run", "how", "batch", "actor", "after results", "shards rerun", "lost", "duplicated", "wrong",
                      "s", "ok"],
                     [[r["run"], r["how"], r["batch"], r["victim_slot"], r["killed_after_results"],
                       r["rerun_after_death"], len(r["lost"]), len(r["duplicated"]), len(r["wrong"]), r["seconds"],
                       "yes" if r["ok"] else "NO"] for r in runs])
    print(report.markdown())
    _results.write(report, args.out, args.tag, args.run)
    print(f"{passed}/{len(runs)} runs ok")
    return 0 if passed == len(runs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
