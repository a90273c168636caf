"""``isthmus tune KERNEL --device ID --size NAME=VALUE ... [--dtype D] [--trans-a] [--trans-b] --strategy S
--budget N [--seconds S] [--plot FILE.png] [--declare FILE.py|MODULE]``

``--trans-a``/``--trans-b`` (an op's variant flags: gemm's) and ``--dtype`` pick the kernel that the
op's call with them launches (``gemm --dtype bfloat16 --trans-b`` tunes what ``gemm(x, w,
trans_b=True)`` runs on bfloat16). A kernel of your own is declared by Python code
(``isthmus.tune.declare``: its grid, inputs and reference are functions), so the command runs that
code first: ``--declare my_kernels.py`` (a file, run as a module is imported) or ``--declare
mypkg.kernels`` (an importable module), then ``KERNEL`` names a kernel it declared.
"""
from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import math
import sys
from pathlib import Path

from .. import tune as tuning  # prepare() checks a run, run() measures it
from ..errors import InvalidArgumentError, IsthmusError
from ..ops.registry import OPS
from ..tune.arguments import CLI, DEFAULT_BUDGET
from ..tune.runner import Measure
from ..tune.strategies import NAMES
from . import reported


def _size(text: str) -> tuple[str, int]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip() or not value.strip().lstrip("-").isdigit():
        raise argparse.ArgumentTypeError(f"--size takes NAME=VALUE with an integer value (e.g. --size m=1024), "
                                         f"got {text!r}")
    return name.strip(), int(value)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="isthmus tune", description="tune a kernel's launch parameters on a device "
                                "and store the best in the tuning database; every evaluation is stored as it is "
                                "made, so Ctrl-C keeps what was measured and the same command again goes on from there")
    by_problem: dict = {}
    for spec in OPS.values():
        by_problem.setdefault(", ".join(spec.problem), []).append(spec.name)
    p.add_argument("kernel", help=f"library kernel: {', '.join(OPS)}, or a kernel that --declare declares")
    p.add_argument("--device", default=None, help="device id (default: ISTHMUS_DEVICE or the best)")
    p.add_argument("--size", type=_size, nargs="+", action="extend", default=[], metavar="NAME=VALUE",
                   help="problem sizes: " + "; ".join(f"{sizes} ({', '.join(ops)})" for sizes, ops in by_problem.items()))
    p.add_argument("--dtype", default="float32", help="element type (default float32)" + "".join(
        f"; {spec.name}'s {' and '.join(dt for dt, _ in spec.families)} tune its family "
        f"{', '.join(sorted({f.name for _, f in spec.families}))}" for spec in OPS.values() if spec.families))
    flags: dict = {}  # the ops' variant flags: --trans-b for trans_b
    for spec in OPS.values():
        for f in spec.variants:
            flags.setdefault(f.name, []).append(spec.name)
    for name, ops in flags.items():
        p.add_argument("--" + name.replace("_", "-"), dest=f"flag_{name}", action="store_true",
                       help=f"tune the {name} variant ({', '.join(ops)}): what the call with {name}=True launches")
    p.add_argument("--declare", action="append", default=[], metavar="FILE.py|MODULE",
                   help="run this Python file (or import this module) first: the kernels it declares with "
                        "isthmus.tune.declare can be tuned")
    p.add_argument("--strategy", default="anneal", choices=sorted(NAMES))
    p.add_argument("--budget", type=int, default=None,
                   help=f"configs to evaluate, at least 1 (default: {DEFAULT_BUDGET}, or the whole space when smaller; "
                        "with --seconds alone: as many as fit in the time)")
    p.add_argument("--seconds", type=float, default=None, help="time limit for the search (above 0)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeat", type=int, default=7, help="timed launches per config (median)")
    p.add_argument("--plot", default=None, metavar="FILE.png", help="plot time per config and the best so far")
    p.add_argument("--json", default=None, metavar="FILE", help="write the result (every evaluation) as JSON")
    p.add_argument("--no-db", action="store_true", help="do not store anything in the tuning database")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return reported("isthmus tune", (IsthmusError, ValueError), _run, args)
    except KeyboardInterrupt:  # (during the search, _run prints the best so far itself)
        print("isthmus tune: interrupted before the search started; nothing was measured", file=sys.stderr)
        return 130


def _problem(sizes: list[tuple[str, int]]) -> dict:
    seen: dict = {}
    for name, value in sizes:
        if name in seen and seen[name] != value:
            raise InvalidArgumentError(f"--size {name} given twice ({name}={seen[name]} and {name}={value}): give it once")
        seen[name] = value
    return seen


def _run(args) -> int:
    from rich.console import Console

    console = Console(stderr=True)
    if args.plot:
        check_plot(args.plot)
    if args.repeat < 1:
        raise InvalidArgumentError(f"--repeat {args.repeat}: timed launches per config must be at least 1 "
                                   f"(e.g. --repeat 7)")
    for what in args.declare:
        run_declarations(what)
    # everything is checked (arguments, space, database) before the progress bar: nothing has run yet
    job = tuning.prepare(args.kernel, device=args.device, problem=_problem(args.size), strategy=args.strategy,
                         budget=args.budget, seconds=args.seconds, seed=args.seed, dtype=args.dtype,
                         database=not args.no_db, syntax=CLI, **variant_flags(args))
    say = functools.partial(console.print, markup=False, highlight=False, soft_wrap=True)  # never cut, no markup
    say(_plan(job))
    try:
        result = _measured(job, Measure(repeat=args.repeat), console)
    except tuning.TuneInterrupted as stop:
        result = stop.result
        if not result.evaluations and result.default_ms is None:
            say("interrupted before any config was measured; nothing stored")
            return 130
        Console().print(table(result))
        where = "the tuning database" if job.store is not None else "nowhere (--no-db)"
        say(f"interrupted after {len(result.evaluations)} evaluations: the best so far is above; every "
                      f"evaluation is stored in {where}" + ("; run the same command again to go on (configs "
                                                            "measured are skipped)" if job.store is not None else ""))
        return 130
    Console().print(table(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result.to_json(), indent=1))
    if args.plot:
        fig = figure(result, device_name=job.device.name)
        fig.savefig(args.plot, dpi=110)  # PNG, SVG, PDF: by its suffix
        say(f"plot written to {args.plot}")
    return 0 if math.isfinite(result.best_ms) else 1


def _plan(job) -> str:
    """What the run will do: the space, the budget, what earlier runs measured."""
    fam, problem = job.family, " ".join(f"{k}={v}" for k, v in job.problem.items())
    limits = []
    if job.evaluations is not None:
        limits.append(f"{job.evaluations} configs")
    if job.seconds is not None:
        limits.append(f"{job.seconds:g} s")
    flags = "".join(" --" + f.replace("_", "-") for f in fam.flags)
    text = (f"tune {fam.name}{flags} {job.dtype.name} {problem} on {job.device.id} ({job.device.name}): "
            f"{len(job.space):,} configs in the space; budget {' or '.join(limits)} ({job.strategy}, seed {job.seed})")
    if job.evaluations is not None and job.evaluations < len(job.space):
        text += "; --budget N to change"
    earlier = len({tuple(sorted(e.params.items())) for e in job.earlier})
    if earlier:
        text += f"; {earlier} configs measured by earlier runs are reused, not measured again"
    return text


def _measured(job, measure, console):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    state = {"best": math.inf, "failed": 0}
    # the bar's end: the budget, else (a time limit alone) every config not measured yet
    total = job.evaluations if job.evaluations is not None else len(job.space) - len(job.earlier)
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("best {task.fields[best]}  failed {task.fields[failed]}"), TimeElapsedColumn(),
                  console=console, transient=False) as progress:
        task = progress.add_task(f"tune {job.family.name} on {job.device.id}", total=max(total, 1), best="-",
                                 failed=0)

        def on_evaluation(ev):
            if ev.status == "ok":
                state["best"] = min(state["best"], ev.time_ms)
            else:
                state["failed"] += 1
            progress.update(task, advance=1, best=f"{state['best']:.4g} ms" if math.isfinite(state["best"]) else "-",
                            failed=state["failed"])

        try:
            result = tuning.run(job, measure=measure, on_evaluation=on_evaluation)
        finally:
            progress.stop()
        progress.update(task, total=max(len(result.evaluations), 1), completed=len(result.evaluations))
    return result


def variant_flags(args) -> dict:
    """The variant flags given (``--trans-b``: ``{"trans_b": True}``)."""
    return {name[5:]: True for name, on in vars(args).items() if name.startswith("flag_") and on}


def run_declarations(what: str) -> None:
    """Run the Python file ``what`` (as an import runs a module: its ``if __name__ == "__main__"``
    part does not run) or import the module ``what``, so that its ``isthmus.tune.declare`` calls
    register its kernels in this process."""
    import importlib
    import runpy

    path = Path(what).expanduser()
    if what.endswith(".py") or path.is_file():
        if not path.is_file():
            raise InvalidArgumentError(f"--declare {what}: no such file")
        sys.path.insert(0, str(path.resolve().parent))  # (its own imports of modules beside it)
        try:
            runpy.run_path(str(path), run_name="__isthmus_declare__")
        finally:
            sys.path.remove(str(path.resolve().parent))
        return
    try:
        importlib.import_module(what)
    except ImportError as exc:
        raise InvalidArgumentError(f"--declare {what}: not a file and not an importable module ({exc}); give the path "
                                   f"of the .py file that declares the kernel") from None


def table(result):
    """The five fastest configs and the default; the winner is the fastest of all, the default
    included (a search that found nothing faster shows the default as the best)."""
    from rich.table import Table

    problem = " ".join(f"{k}={v}" for k, v in result.problem.items())
    reused = f" (+{len(result.earlier)} from earlier runs)" if result.earlier else ""
    t = Table(title=f"{' '.join([result.kernel, *result.flags])} {result.dtype} {problem} on {result.device}: "
                    f"{len(result.evaluations)}{reused} of {result.space_size:,} configs "
                    f"({result.strategy}, seed {result.seed}), {result.seconds:.1f} s")
    for col, justify in (("config", "left"), ("params", "left"), ("time (ms)", "right"), ("vs default", "right")):
        t.add_column(col, justify=justify)
    ranked = ranking(result)
    default = dict(result.default)
    for i, (params, ms) in enumerate(ranked[:5]):
        label = ("best" if i == 0 else f"#{i + 1}") + (" (default)" if params == default else "")
        t.add_row(label, _params(params), f"{ms:.4g}", f"{result.default_ms / ms:.2f}x" if result.default_ms else "-")
    if default not in [p for p, _ in ranked[:5]]:
        t.add_row("default", _params(default), f"{result.default_ms:.4g}" if result.default_ms else "failed",
                  "1.00x" if result.default_ms else "-")
    statuses = ", ".join(f"{k} {v}" for k, v in sorted(result.by_status.items()))
    t.caption = f"evaluations by status: {statuses}; speedup over default {result.speedup:.2f}x"
    return t


def ranking(result) -> list[tuple[dict, float]]:
    """(params, median ms) of every correct config, the default's own measurement and the earlier
    runs' reused ones included, fastest first, one row per config."""
    best: dict = {}
    measured = [(dict(e.params), e.time_ms) for e in result.evaluations + result.earlier if e.status == "ok"]
    if result.default_ms is not None:
        measured.append((dict(result.default), result.default_ms))
    for params, ms in sorted(measured, key=lambda pm: pm[1]):  # (a config's fastest time is its first)
        best.setdefault(tuple(sorted(params.items())), (params, ms))
    return list(best.values())


def _params(p: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in p.items())


def check_plot(path: str) -> None:
    """Fail before the search, not after it: matplotlib importable, the folder there."""
    if importlib.util.find_spec("matplotlib") is None:
        raise InvalidArgumentError("--plot needs matplotlib, which is not installed: pip install matplotlib "
                                   "(isthmus' plot extra), or leave out --plot")
    folder = Path(path).expanduser().resolve().parent
    if not folder.is_dir():
        raise InvalidArgumentError(f"--plot {path}: the folder {folder} does not exist")


def _time_unit(values_ms: list[float]) -> tuple[str, float]:
    """µs below a millisecond, ms up to ten seconds, else s: (unit, factor from ms)."""
    typical = sorted(values_ms)[len(values_ms) // 2] if values_ms else 1.0
    if typical < 1.0:
        return "µs", 1e3
    if typical < 1e4:
        return "ms", 1.0
    return "s", 1e-3


def figure(result, device_name: str | None = None):
    """Time of each evaluated config in search order (failures marked at the top), the best so
    far, the default's time as a line, and the best config's parameters written on the figure."""
    from matplotlib.figure import Figure  # not pyplot: no global figure to close, the user's backend untouched
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    xs = list(range(1, len(result.evaluations) + 1))
    ok = [(i, e.time_ms) for i, e in zip(xs, result.evaluations) if e.status == "ok"]
    bad = [i for i, e in zip(xs, result.evaluations) if e.status != "ok"]
    everything = [t for _, t in ok] + ([result.default_ms] if result.default_ms else [])
    unit, k = _time_unit(everything)
    best, curve = result.default_ms or math.inf, []  # the default was measured first: the baseline
    for e in result.evaluations:
        best = min(best, e.cost)
        curve.append(best * k if math.isfinite(best) else float("nan"))
    fig = Figure(figsize=(9, 5))
    ax = fig.subplots()
    if ok:
        ax.scatter([i for i, _ in ok], [t * k for _, t in ok], s=16, alpha=0.55, label="median time of a config")
    ax.step(xs, curve, where="post", color="black", linewidth=1.4, label="best so far")
    if result.default_ms:
        ax.axhline(result.default_ms * k, color="tab:orange", linestyle="--", linewidth=1.4,
                   label=f"default: {result.default_ms * k:.3g} {unit}")
    if bad:
        top = max(everything, default=1.0) * k * 1.15
        ax.scatter(bad, [top] * len(bad), marker="x", color="red", label=f"failed ({len(bad)})")
    spread = max(everything) / min(everything) if everything and min(everything) > 0 else 1.0
    if spread > 8:  # a log axis for wide ranges, with plain numbers as tick labels (not 10^x)
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlabel("evaluation (search order)")
    ax.set_ylabel(f"median time ({unit}), lower is better")
    problem = " ".join(f"{n}={v}" for n, v in result.problem.items())
    device = f"{result.device} ({device_name})" if device_name else result.device
    ax.set_title(f"{result.kernel} {result.dtype} {problem} on {device}\n"
                 f"{result.strategy}, {len(result.evaluations)} of {result.space_size} configs, "
                 f"speedup over default {result.speedup:.2f}x", fontsize=10)
    if math.isfinite(result.best_ms):
        params = "\n".join(f"{n} = {v}" for n, v in result.best.items())
        ax.text(0.99, 0.97, f"best: {result.best_ms * k:.3g} {unit}\n{params}", transform=ax.transAxes,
                ha="right", va="top", fontsize=9, family="monospace",
                bbox={"boxstyle": "round", "facecolor": "white", "alpha": 0.85, "edgecolor": "0.6"})
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=4, fontsize=9, frameon=False)
    fig.tight_layout()
    return fig
