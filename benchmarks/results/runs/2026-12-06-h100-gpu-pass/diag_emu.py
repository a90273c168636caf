"""(untracked diagnostic) the emulated tensor-core attention on this machine's PoCL, config by config."""
import os, sys, json, numpy as np
sys.path.insert(0, "tests/ops"); sys.path.insert(0, "tests")
import isthmus
from isthmus.ops.resolve import forced
from isthmus.ops.specs.attention import MMA, emulated_mma
from test_ops_attention import attend64, _draw
dev = next(d for d in isthmus.devices() if d.backend == "opencl" and d.kind == "cpu")
dtype, params = sys.argv[1], json.loads(sys.argv[2])
rng = np.random.default_rng(1)
res = []
for case in [(1, 37, 53, 4, 2), (2, 29, 11, 2, 2)]:
    b, sq, sk, h, kvh = case
    q, k, v = _draw(rng, (b, sq, h, 48), dtype), _draw(rng, (b, sk, kvh, 48), dtype), _draw(rng, (b, sk, kvh, 48), dtype)
    with emulated_mma(), forced(MMA, params):
        got = isthmus.ops.attention(dev.asarray(q), dev.asarray(k), dev.asarray(v)).to_numpy().astype(np.float64)
    ref = np.stack([attend64(q[i], k[i], v[i], True, None, None, None)[0] for i in range(b)])
    res.append(round(float(np.abs(got - ref).max()), 4))
print(f"EMU {dtype} {params} env={os.environ.get('POCL_WORK_GROUP_METHOD','')}/{os.environ.get('POCL_EXTRA_BUILD_FLAGS','')}"
      f"/{os.environ.get('POCL_MAX_PTHREAD_COUNT','')}: max err {res}")
