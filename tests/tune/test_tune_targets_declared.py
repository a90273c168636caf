"""A kernel of your own (isthmus.tune.declare) through every tool: the CLI tunes it (--declare), a
process that has not declared it shows, exports and imports its configs (stored, not refused), and
a process that declares it again launches the imported config, with its problem sizes in their
declared order (rows, cols: not the alphabetical one)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import isthmus
from isthmus.errors import InvalidArgumentError
from isthmus.tune import db as dbmod
from isthmus.tune.exchange import export, import_document

DECLARATION = textwrap.dedent('''
    import numpy as np
    import isthmus

    SOURCE = """
    __kernel void twice_rows(const int rows, const int cols, __global const float* x, __global float* y) {
        const int i = get_global_id(0);
        if (i < rows * cols) y[i] = 2.0f * x[i];
    }
    """

    def grid(p, c):
        n = p["rows"] * p["cols"]
        return ((-(-n // c["WG"])) * c["WG"],), (c["WG"],)

    KERNEL = isthmus.tune.declare(
        "twice_rows", SOURCE, tunables={"WG": ((8, 16, 32, 64), 32)}, problem=("rows", "cols"), grid=grid,
        inputs=lambda p, dt, rng: (rng.standard_normal(p["rows"] * p["cols"]).astype(dt),
                                   np.zeros(p["rows"] * p["cols"], dt)),
        scalars=lambda p: (p["rows"], p["cols"]), output=1, reference=lambda x, y: 2 * x)

    if __name__ == "__main__":
        raise SystemExit("run as a script: --declare must not run this part")
''')


def _cli(*args, env):
    return subprocess.run([sys.executable, "-m", "isthmus.cli", *args], capture_output=True, text=True, env=env,
                          timeout=300)


def test_a_declared_kernel_is_tuned_shown_exported_and_imported_by_the_cli(dev, tuning_db, tmp_path, rng):
    decl = tmp_path / "my_kernels.py"
    decl.write_text(DECLARATION)
    env = dict(os.environ, ISTHMUS_TUNING_DB=str(tuning_db), ISTHMUS_DEVICE=dev.id, COLUMNS="200")
    p = _cli("tune", "twice_rows", "--declare", str(decl), "--size", "rows=30", "cols=5", "--strategy",
             "exhaustive", "--repeat", "2", "--json", str(tmp_path / "r.json"), env=env)
    assert p.returncode == 0, p.stderr
    best = json.loads((tmp_path / "r.json").read_text())["best"]

    # A process that has not declared it: show, export, clear, import, show.
    shown = _cli("db", "show", env=env)
    assert shown.returncode == 0 and "Traceback" not in shown.stderr, shown.stderr
    assert "twice_rows" in shown.stdout and "32x8" in shown.stdout and "declared kernel" in shown.stdout
    exported = tmp_path / "export.json"
    assert _cli("db", "export", str(exported), env=env).returncode == 0
    (entry,) = json.loads(exported.read_text())["entries"]
    assert entry["kernel"] == "twice_rows" and entry["bucket"] == [32, 8] and entry["params"] == best
    assert _cli("db", "clear", "--yes", env=env).returncode == 0
    p = _cli("db", "import", str(exported), env=env)
    assert p.returncode == 0, p.stderr
    assert "imported 1 configs" in p.stderr and "twice_rows is a kernel declared with isthmus.tune.declare" in p.stderr
    again = json.loads(_cli("db", "show", "--json", env=env).stdout)["entries"]
    assert again == [entry]

    # This process declares it (same source): its launch takes the imported config, at the bucket
    # of rows=30 cols=5 (32 x 8), not of the sizes swapped.
    dbmod.reset()
    namespace: dict = {}
    exec(compile(DECLARATION, str(decl), "exec"), namespace)  # (not as __main__: the guard stays off)
    kernel = namespace["KERNEL"]
    assert kernel.config(dev, {"rows": 29, "cols": 6}) == best
    x = rng.standard_normal(29 * 6).astype(np.float32)
    y = dev.zeros(29 * 6, np.float32)
    kernel.launch(dev, {"rows": 29, "cols": 6}, 29, 6, dev.asarray(x), y)
    np.testing.assert_array_equal(y.to_numpy(), 2 * x)
    # and the entry, now of a known kernel, exports with its tunables checked
    assert export(dbmod.user())["entries"] == [entry]


def test_an_import_of_an_undeclared_kernel_still_checks_what_it_can(dev, tuning_db, tmp_path):
    entry = {"kernel": "not_declared_here", "source_hash": "ab" * 32, "options": '{"defines":{},"storage":""}',
             "dtype": "float32", "device": {"backend": "opencl", "vendor": "v", "name": "d", "driver": "1"},
             "bucket": [64, 8], "params": {"WG": 64}, "time_ms": 0.5, "default_ms": 1.0}
    doc = {"format": "isthmus-tuning", "schema": 1, "entries": [entry]}
    assert import_document(dbmod.user(), doc) == 1
    assert export(dbmod.user())["entries"] == [entry]
    for bad, match in ((dict(entry, bucket=[64, 7]), "power of two"), (dict(entry, params={"WG": [1]}), "params"),
                       (dict(entry, time_ms=-1), "time_ms"), (dict(entry, bucket=[]), "bucket")):
        with pytest.raises(isthmus.DatabaseError, match=match):
            import_document(dbmod.user(), dict(doc, entries=[bad]))


def test_the_cli_says_what_declare_could_not_find(dev, tuning_db, tmp_path):
    env = dict(os.environ, ISTHMUS_TUNING_DB=str(tuning_db), ISTHMUS_DEVICE=dev.id, COLUMNS="200")
    p = _cli("tune", "twice_rows", "--size", "rows=4", "cols=4", env=env)
    assert p.returncode == 2 and "no kernel 'twice_rows' to tune" in p.stderr and "isthmus.tune.declare" in p.stderr
    p = _cli("tune", "twice_rows", "--declare", str(tmp_path / "missing.py"), "--size", "rows=4", "cols=4", env=env)
    assert p.returncode == 2 and "no such file" in p.stderr
    p = _cli("tune", "twice_rows", "--declare", "no_such_module_here", "--size", "rows=4", "cols=4", env=env)
    assert p.returncode == 2 and "not an importable module" in p.stderr
    with pytest.raises(InvalidArgumentError, match="gemm's family for float16 and bfloat16"):
        isthmus.tune("gemm_mma", device=dev, problem={"m": 8, "n": 8, "k": 8}, dtype="float16")
