"""``import isthmus`` is cheap: no backend library (PyOpenCL, CuPy), no JVM bridge (JPype) and no
ml_dtypes (about a second) until they are used; bfloat16 is made on its first lookup."""
import json
import subprocess
import sys

HEAVY = ("ml_dtypes", "pyopencl", "cupy", "jpype")


def _fresh(code: str) -> object:
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=300)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_isthmus_imports_no_backend_no_jvm_bridge_and_no_ml_dtypes():
    loaded = _fresh("import json, sys, isthmus, isthmus.ops, isthmus.tune\n"
                    f"print(json.dumps([m for m in sys.modules if m.split('.')[0] in {HEAVY!r}]))")
    assert loaded == []


def test_bfloat16_is_made_on_its_first_lookup_by_name_or_by_an_ml_dtypes_dtype():
    by_name = _fresh("import json, sys\nfrom isthmus.dtypes import lookup\n"
                     "before = 'ml_dtypes' in sys.modules\ndt = lookup('bfloat16')\n"
                     "print(json.dumps([before, dt.name, dt.ctype, str(dt.np), lookup(dt.np) is dt]))")
    assert by_name == [False, "bfloat16", "ushort", "bfloat16", True]
    by_dtype = _fresh("import json, ml_dtypes, numpy as np\nfrom isthmus.dtypes import lookup\n"
                      "a, b = lookup(ml_dtypes.bfloat16), lookup(np.dtype(ml_dtypes.bfloat16))\n"
                      "print(json.dumps([a.name, a is b]))")
    assert by_dtype == ["bfloat16", True]
