"""The main job: show the devices, run every library kernel on one device, check each against
NumPy and print time and throughput next to NumPy's."""
from __future__ import annotations

import sys

import numpy as np

from .devices import show as show_devices
from ..device import device
from ..measure import WallClock, interleaved, round_of, settled
from ..ops.workloads import host_result, sizes_for, standard


def main(device_id: str | None = None, quick: bool = False) -> int:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=None if sys.stdout.isatty() else 140)
    show_devices()
    dev = device(device_id)
    console.print(f"\nRunning the kernel library on [bold]{dev.id}[/bold] ({dev.name})")
    table = Table(title=f"isthmus on {dev.id} vs NumPy on the host (float32)")
    for col in ("kernel", "check (rel. err)", "isthmus ms", "isthmus", "NumPy ms", "NumPy", "speedup"):
        table.add_column(col, justify="right" if col != "kernel" else "left")
    failed = 0
    for w in standard(sizes_for(dev, quick)):
        args = w.make(dev)
        result = host_result(w.call(*args))
        err = w.error(result)
        ok = err <= w.tolerance(np.float32)
        failed += not ok
        # isthmus (device events) and NumPy (the wall clock) in alternating rounds, so that the
        # machine's drift touches both alike; on a CPU device each round after a pause (the other
        # side's threads go idle first)
        w.numpy()
        rounds = {"isthmus": round_of(dev, lambda: w.call(*args)), "numpy": round_of(WallClock(), w.numpy)}
        if dev.kind == "cpu":
            rounds = {name: settled(one) for name, one in rounds.items()}
        times = interleaved(rounds, 5 if quick else 7)
        ms, np_ms = times["isthmus"].median, times["numpy"].median
        value, unit = w.metric(ms)
        np_value, _ = w.metric(np_ms)
        table.add_row(w.label, f"{'[green]ok' if ok else '[red]FAIL'} {err:.1e}", f"{ms:.3f}", f"{value:.1f} {unit}",
                      f"{np_ms:.3f}", f"{np_value:.1f} {unit}", f"{np_ms / ms:.2f}x")
        for a in args:
            a.close()
    console.print(table)
    if failed:
        console.print(f"[red]{failed} kernel(s) disagreed with NumPy[/red]")
    return 1 if failed else 0
