"""Strategies compared: the learning ones (anneal, genetic) against random sampling and exhaustive search.

Two steps (Kernel Tuner's simulation runner idea): ``--record`` measures a whole space once on a
device (exhaustive, every config checked against the reference) and writes the times; the
replay (default) runs each strategy over those recorded times for many seeds at a budget of a
fraction of the space, so a comparison over 10 seeds costs seconds and no device.

    python -m benchmarks tune_strategies --record --device opencl:0 --kernel sum --size n=1048576
    python -m benchmarks tune_strategies --record --device opencl:0 --kernel gemm --size m=128 n=128 k=128
    python -m benchmarks tune_strategies --record --device cuda:0 --kernel gemm --size m=1024 n=1024 k=1024 \
        --seconds 400 --out $OUT       # a GPU: a uniform sample of the space if time runs out
    python -m benchmarks tune_strategies            # replay every recorded space under benchmarks/results/runs/

Replays read the recorded spaces (tune_space_*.json) anywhere under --spaces (default
benchmarks/results/runs/) and write the report tune_strategies.{json,md} into --out (none: print only).
Target: on spaces of >= 200 configs, anneal within 5% of the exhaustive best using <= 20% of the evaluations,
averaged over >= 5 seeds.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
import time
from pathlib import Path

from benchmarks import _results
from isthmus import measure

RESULTS = _results.RUNS  # the recorded spaces live in the run folders that recorded them
SMOKE = ["--seeds", "2", "--out", "{out}"]  # a replay of the recorded spaces: no device


def record(args) -> Path:
    import isthmus
    from isthmus.tune import runner

    dev = isthmus.device(args.device)
    problem = dict(_size(s) for s in args.size)
    t0 = time.time()
    done = [0]

    def progress(ev):
        done[0] += 1
        if done[0] % 20 == 0:
            print(f"  {done[0]} configs, {time.time() - t0:.0f} s", file=sys.stderr)

    # In random order: a recording cut short by --seconds is a uniform sample of the space (still a
    # fair space to replay strategies over when it holds >= 200 configs).
    r = isthmus.tune(args.kernel, device=dev, problem=problem, strategy="random",
                     budget=runner.Budget(None, args.seconds), seed=0, dtype=args.dtype, database=False,
                     on_evaluation=progress, measure=runner.Measure(warmup=1, repeat=args.repeat))
    doc = {"kernel": args.kernel, "problem": problem, "dtype": args.dtype, "device": dev.identity(),
           "device_id": dev.id, "space_size": r.space_size, "seconds": r.seconds, "default": r.default,
           "default_ms": r.default_ms,
           "configs": [{"params": e.params, "status": e.status, "time_ms": e.time_ms} for e in r.evaluations]}
    results = Path(args.out)
    results.mkdir(parents=True, exist_ok=True)
    tag = re.sub(r"[^A-Za-z0-9]+", "-", f"{args.kernel}-{dev.backend}-{dev.kind}-" + "-".join(map(str, problem.values())))
    out = results / f"tune_space_{tag}.json"
    out.write_text(json.dumps(doc, indent=1))
    print(f"recorded {len(doc['configs'])} configs of {args.kernel} in {r.seconds:.0f} s -> {out}")
    return out


def _size(text: str):
    name, value = text.split("=", 1)
    return name, int(value)


def replay_file(path: Path, seeds: int, fraction: float) -> dict:
    from isthmus.tune.runner import Budget, replay
    from isthmus.tune.space import Space, kernel_family

    doc = json.loads(path.read_text())
    family = kernel_family(doc["kernel"])
    values = {t.name: t.values for t in family.tunables}
    # Only configs still in the kernel's space (its tunable values may have changed since the recording).
    recorded = [c for c in doc["configs"] if set(c["params"]) == set(values)
                and all(v in values[k] for k, v in c["params"].items())]
    configs = [c["params"] for c in recorded]
    times = {Space.key(c["params"]): (c["time_ms"] if c["status"] == "ok" else math.inf) for c in recorded}
    space = Space(family, configs, {Space.key(c): i for i, c in enumerate(configs)})
    if not configs:
        print(f"{path.name}: no recorded config fits {doc['kernel']}'s tunables now; record it again", file=sys.stderr)
        return None
    best = min(times.values())
    budget = max(1, math.floor(fraction * len(space)))
    row = {"file": path.name, "kernel": doc["kernel"], "problem": doc["problem"], "device": doc["device"]["name"],
           "backend": doc["device"]["backend"], "space": len(space), "budget": budget, "exhaustive_best_ms": best,
           "default_ms": doc.get("default_ms"), "strategies": {}}
    for strategy in ("anneal", "genetic", "random"):
        ratios, hits, reach = [], 0, []
        for seed in range(seeds):
            hist = replay(space, times, strategy, Budget(budget), seed)
            curve = _best_so_far(hist)
            ratios.append(curve[-1] / best)
            hits += curve[-1] <= 1.05 * best
            reach.append(next((i + 1 for i, t in enumerate(curve) if t <= 1.05 * best), math.inf))
        row["strategies"][strategy] = {
            "mean_best_over_exhaustive": statistics.mean(ratios), "worst": max(ratios),
            "seeds_within_5pct": hits, "seeds": seeds,
            "median_evals_to_5pct": statistics.median(reach)}
    hist = replay(space, times, "exhaustive", Budget(len(space)), 0)
    row["strategies"]["exhaustive"] = {"mean_best_over_exhaustive": _best_so_far(hist)[-1] / best,
                                       "evaluations": len(hist)}
    return row


def _best_so_far(history) -> list[float]:
    out, best = [], math.inf
    for e in history:
        best = min(best, e.cost)
        out.append(best)
    return out


def report_of(rows: list[dict], fraction: float):
    report = measure.Report("tune_strategies", f"Tuning strategies (replayed over recorded spaces; budget "
                            f"{fraction:.0%} of the space)", data={"rows": rows, "fraction": fraction},
                            notes=["Spaces under 200 configs are shown but are not what the target is about."])
    table = []
    for r in rows:
        for s in ("anneal", "genetic", "random"):
            v = r["strategies"][s]
            table.append([r["kernel"], f"{r['backend']} {r['device']}", r["problem"], r["space"], r["budget"], s,
                          f"{v['mean_best_over_exhaustive']:.3f}", f"{v['worst']:.3f}",
                          f"{v['seeds_within_5pct']}/{v['seeds']}", v["median_evals_to_5pct"]])
        table.append([r["kernel"], f"{r['backend']} {r['device']}", r["problem"], r["space"], r["space"], "exhaustive",
                      f"1.000 (best {r['exhaustive_best_ms']:.4g} ms)", "", "", ""])
    report.add_table(["kernel", "device", "problem", "space", "budget", "strategy", "mean best / exhaustive", "worst",
                      "seeds within 5%", "median evals to 5%"], table)
    return report


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--record", action="store_true", help="measure a whole space on a device")
    p.add_argument("--device", default=None)
    p.add_argument("--kernel", default="sum")
    p.add_argument("--size", nargs="*", default=["n=1048576"])
    p.add_argument("--dtype", default="float32")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--seconds", type=float, default=None, help="--record: stop after this long")
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--fraction", type=float, default=0.2, help="budget as a share of the space")
    p.add_argument("--out", default=None, help="--record: folder of the recorded space (needed: a run folder, "
                   "benchmarks/results/runs/<date>-<question>); "
                   "replay: folder of the report (default: print only)")
    _results.add_run_option(p)
    p.add_argument("--spaces", default=str(RESULTS),
                   help="replay: the folder searched (with its subfolders) for recorded spaces")
    args = p.parse_args(argv)
    if args.record:
        if not args.out:
            p.error("--record needs --out: the run folder for the space (benchmarks/results/runs/<date>-<question>)")
        record(args)
        return 0
    rows = [replay_file(f, args.seeds, args.fraction) for f in sorted(Path(args.spaces).rglob("tune_space_*.json"))]
    rows = [r for r in rows if r is not None]
    if not any(r["space"] >= 200 for r in rows):
        print("no recorded spaces of >= 200 configs; run with --record first", file=sys.stderr)
        return 1
    report = report_of(rows, args.fraction)
    print(report.markdown())
    _results.write(report, args.out, args.run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
