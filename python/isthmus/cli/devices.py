"""``isthmus devices [--json]``: every device of every backend, and why a backend is unavailable."""
from __future__ import annotations

import json
import sys

from ..device import _problems, devices


def show(as_json: bool = False) -> int:
    """Print the devices (a table, or JSON); exit status 1 when there are none."""
    found = devices()
    if as_json:
        print(json.dumps([d.info() for d in found], indent=2))
        return 0
    from rich.console import Console
    from rich.markup import escape

    console = Console(width=None if sys.stdout.isatty() else 140)
    console.print(table(found))
    for name, why in sorted(_problems.items()):
        console.print(f"[dim]{escape(name)}: {escape(why)}[/dim]")
    return 0 if found else 1


def table(found):
    """The devices as a rich table. The id (what users copy into ``--device`` and ISTHMUS_DEVICE)
    is never cut or wrapped; every other cell folds onto more lines in a narrow terminal, never
    ending in an ellipsis."""
    from rich.table import Table

    table = Table(title="isthmus devices")
    ids = [d.id for d in found]
    table.add_column("id", no_wrap=True, min_width=max(map(len, ids), default=2))
    for col in ("name", "vendor", "kind", "memory", "CUs", "max WG", "driver", "dtypes"):  # (never 0 wide: min_width)
        table.add_column(col, overflow="fold", min_width=3,
                         justify="right" if col in ("memory", "CUs", "max WG") else "left")
    for d in found:
        table.add_row(d.id, d.name, d.vendor, d.kind, f"{d.memory / 2**30:.1f} GiB", str(d.compute_units),
                      str(d.max_work_group_size), d.driver_version, " ".join(d.dtypes))
    return table
