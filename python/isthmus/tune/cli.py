"""``isthmus tune KERNEL --device ID --size NAME=VALUE ... --strategy S --budget N [--plot FILE.png]``"""
from __future__ import annotations

import argparse
import json
import math
import sys


def _size(text: str) -> tuple[str, int]:
    name, sep, value = text.partition("=")
    if not sep or not value.strip().lstrip("-").isdigit():
        raise argparse.ArgumentTypeError(f"--size takes NAME=VALUE with an integer value, got {text!r}")
    return name.strip(), int(value)


def parser() -> argparse.ArgumentParser:
    from .strategies import NAMES

    p = argparse.ArgumentParser(prog="isthmus tune", description="tune a kernel's launch parameters on a device "
                                "and store the best in the tuning database")
    p.add_argument("kernel", help="library kernel: axpy, sum, max, softmax, transpose, gemm")
    p.add_argument("--device", default=None, help="device id (default: ISTHMUS_DEVICE or the best)")
    p.add_argument("--size", type=_size, nargs="+", action="extend", default=[], metavar="NAME=VALUE",
                   help="problem sizes: n (axpy, sum, max); rows, cols (softmax, transpose); m, n, k (gemm)")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--strategy", default="anneal", choices=sorted(NAMES))
    p.add_argument("--budget", type=int, default=None, help="configs to evaluate (default: a fifth of the space)")
    p.add_argument("--seconds", type=float, default=None, help="time limit for the search")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeat", type=int, default=7, help="timed launches per config (median)")
    p.add_argument("--plot", default=None, metavar="FILE.png", help="plot time per config and the best so far")
    p.add_argument("--json", default=None, metavar="FILE", help="write the result (every evaluation) as JSON")
    p.add_argument("--no-db", action="store_true", help="do not store anything in the tuning database")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from ..errors import IsthmusError

    try:
        return _run(args)
    except (IsthmusError, ValueError) as exc:
        print(f"isthmus tune: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2


def _run(args) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ..device import device as get_device
    from . import tune
    from .runner import Budget, Measure

    console = Console(stderr=True)
    dev = get_device(args.device)
    problem = dict(args.size)
    state = {"best": math.inf, "failed": 0}
    total = args.budget
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("best {task.fields[best]}  failed {task.fields[failed]}"), TimeElapsedColumn(),
                  console=console, transient=False) as progress:
        task = progress.add_task(f"tune {args.kernel} on {dev.id}", total=total, best="-", failed=0)

        def on_evaluation(ev):
            if ev.status == "ok":
                state["best"] = min(state["best"], ev.time_ms)
            else:
                state["failed"] += 1
            progress.update(task, advance=1, best=f"{state['best']:.4g} ms" if math.isfinite(state["best"]) else "-",
                            failed=state["failed"])

        result = tune(args.kernel, device=dev, problem=problem, strategy=args.strategy,
                      budget=Budget(args.budget, args.seconds) if args.budget or args.seconds else None,
                      seed=args.seed, dtype=args.dtype, measure=Measure(repeat=args.repeat),
                      database=not args.no_db, on_evaluation=on_evaluation)
        progress.update(task, total=len(result.evaluations), completed=len(result.evaluations))
    Console().print(table(result))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result.to_json(), f, indent=1)
    if args.plot:
        plot(result, args.plot)
        console.print(f"plot written to {args.plot}")
    return 0 if math.isfinite(result.best_ms) else 1


def table(result):
    from rich.table import Table

    t = Table(title=f"{result.kernel} {result.dtype} {result.problem} on {result.device}: "
                    f"{len(result.evaluations)} of {result.space_size} configs ({result.strategy}, seed {result.seed}), "
                    f"{result.seconds:.1f} s")
    t.add_column("config")
    t.add_column("params")
    t.add_column("time (ms)", justify="right")
    t.add_column("vs default", justify="right")
    ranked = sorted((e for e in result.evaluations if e.status == "ok"), key=lambda e: e.time_ms)[:5]
    for i, e in enumerate(ranked):
        t.add_row("best" if i == 0 else f"#{i + 1}", _params(e.params), f"{e.time_ms:.4g}",
                  f"{result.default_ms / e.time_ms:.2f}x" if result.default_ms else "-")
    t.add_row("default", _params(result.default), f"{result.default_ms:.4g}" if result.default_ms else "failed",
              "1.00x")
    statuses = ", ".join(f"{k} {v}" for k, v in sorted(result.by_status.items()))
    t.caption = f"evaluations by status: {statuses}; speedup over default {result.speedup:.2f}x"
    return t


def _params(p: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in p.items())


def plot(result, path: str) -> None:
    """Time per evaluated config (failures marked at the top) and the best-so-far curve."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = list(range(1, len(result.evaluations) + 1))
    ok = [(i, e.time_ms) for i, e in zip(xs, result.evaluations) if e.status == "ok"]
    bad = [i for i, e in zip(xs, result.evaluations) if e.status != "ok"]
    best, curve = math.inf, []
    for e in result.evaluations:
        best = min(best, e.cost)
        curve.append(best if math.isfinite(best) else float("nan"))
    fig, ax = plt.subplots(figsize=(8, 4.5))
    if ok:
        ax.scatter([i for i, _ in ok], [t for _, t in ok], s=14, alpha=0.6, label="time per config")
    if bad:
        top = max((t for _, t in ok), default=1.0)
        ax.scatter(bad, [top] * len(bad), marker="x", color="red", label="failed")
    ax.step(xs, curve, where="post", color="black", label="best so far")
    if result.default_ms:
        ax.axhline(result.default_ms, color="gray", linestyle="--", label="default")
    ax.set_xlabel("evaluation")
    ax.set_ylabel("median time (ms)")
    ax.set_yscale("log")
    ax.set_title(f"{result.kernel} {result.problem} on {result.device} ({result.strategy})")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
