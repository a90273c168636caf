"""Host microseconds per call of gemm 512^3 f32 on OpenCL, layer by layer (each measured in the same
rounds, alternating): the op, the device launch, set_arg+enqueue, enqueue only (PyOpenCL), enqueue
through ctypes with and without an event, on a queue without profiling, CLBlast; and the kernels'
device time."""
import ctypes, os, sys, time, statistics
import numpy as np
import isthmus
from isthmus import measure
from isthmus.ops.specs import gemm as G
sys.path.insert(0, os.getcwd())
from benchmarks import shapes as S

VENDOR = os.environ.get("VENDOR", "NVIDIA")
SIZE = int(os.environ.get("SIZE", "512"))
CALLS = int(os.environ.get("CALLS", "200"))
ROUNDS = int(os.environ.get("ROUNDS", "9"))
dev = next(d for d in isthmus.devices() if d.backend == "opencl" and VENDOR in d.vendor)
cl = dev._cl
peers = S.Peers(dev)
rng = np.random.default_rng(5)
n = SIZE
a = dev.asarray(rng.standard_normal((n, n), dtype=np.float32))
b = dev.asarray(rng.standard_normal((n, n), dtype=np.float32))
c = dev.empty((n, n), np.float32)
isthmus.ops.gemm(a, b, c); dev.synchronize()
(first, combine, *_), = list(G.FAMILY._memo.values())[-1:]
kernel, g, loc, args0 = first
assert combine is None, "split-K resolved"
args = list(args0); args[3], args[4], args[5], args[6], args[7] = 1.0, 0.0, a, b, c
if len(args) > 12:
    args[14] = c
packed = list(args); dev._launch(kernel, g, loc, packed)  # packs in place
prep = dev._prepare(kernel, g, loc, packed)
native = prep._native
lsize = None if loc is None else tuple(loc)
print("kernel", kernel.name, "global", g, "local", loc, flush=True)

libpath = next(l.split()[-1] for l in open("/proc/self/maps") if "libOpenCL" in l)
ocl = ctypes.CDLL(libpath)
enq = ocl.clEnqueueNDRangeKernel
enq.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p,
                ctypes.c_void_p, ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p]
enq.restype = ctypes.c_int
rel = ocl.clReleaseEvent; rel.argtypes = [ctypes.c_void_p]
dims = len(g)
gs = (ctypes.c_size_t * dims)(*g); ls = None if loc is None else (ctypes.c_size_t * dims)(*loc)
qp, kp = dev.queue.int_ptr, native.int_ptr
ev = ctypes.c_void_p(); evp = ctypes.byref(ev)
def ct_noevent():
    if enq(qp, kp, dims, None, gs, ls, 0, None, None):
        raise RuntimeError("enqueue")
def ct_event():
    if enq(qp, kp, dims, None, gs, ls, 0, None, evp):
        raise RuntimeError("enqueue")
    rel(ev)
q2 = cl.CommandQueue(dev.context if hasattr(dev, "context") else dev._ctx)
nat2 = cl.Kernel(kernel.program.native, kernel.name); nat2.set_args(*[dev._native_arg(v) for v in packed])
g2 = tuple(g)
E = cl.enqueue_nd_range_kernel
cases = {
    "ops.gemm": (lambda: isthmus.ops.gemm(a, b, c), dev.synchronize),
    "gemm._launch": (lambda: G._launch(dev, first, None, 0, 1.0, 0.0, a, b, c), dev.synchronize),
    "dev._launch packed": (lambda: dev._launch(kernel, g, loc, list(packed)), dev.synchronize),
    "prepared enqueue": (prep.launch, dev.synchronize),
    "pyopencl enqueue, no-profiling queue": (lambda: E(q2, nat2, g2, lsize), q2.finish),
    "ctypes enqueue + event": (ct_event, dev.synchronize),
    "ctypes enqueue, no event": (ct_noevent, dev.synchronize),
}
if peers.clblast is not None:
    pc = peers.clblast
    ba, bb, bc = pc.buffer(a.to_numpy()), pc.buffer(b.to_numpy()), pc.buffer(np.zeros((n, n), np.float32))
    cases["CLBlast"] = (pc.gemm_call("float32", n, n, n, ba, bb, bc, False), pc.queue.finish)
res = {k: [] for k in cases}
cpu = {k: [] for k in cases}
for r in range(ROUNDS):
    for name, (fn, sync) in cases.items():
        fn(); sync()
        t0 = time.perf_counter(); c0 = time.thread_time()
        for _ in range(CALLS):
            fn()
        t1 = time.perf_counter(); c1 = time.thread_time()
        sync()
        res[name].append((t1 - t0) / CALLS * 1e6); cpu[name].append((c1 - c0) / CALLS * 1e6)
for name in cases:
    v = res[name]
    print(f"{name:40s} host us/call median {statistics.median(v):6.2f} min {min(v):6.2f} max {max(v):6.2f}"
          f" | thread cpu median {statistics.median(cpu[name]):6.2f}", flush=True)
print("device: isthmus op %.1f us" % (measure.device_ms(dev, lambda: isthmus.ops.gemm(a, b, c), repeat=7, warmup=2, batch=50) * 1e3))
if peers.clblast is not None:
    print("device: CLBlast %.1f us" % (measure.device_ms(peers.clock(), cases["CLBlast"][0], repeat=7, warmup=2, batch=50) * 1e3))
