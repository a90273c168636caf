"""Why is gemm_mma slower on NVIDIA OpenCL than on CUDA with the same config? A 2x2 matrix:
the PTX (NVIDIA OpenCL's compiler vs NVRTC, same source, same defines, static local memory)
run under each runtime (OpenCL queue vs CUDA stream), 4096^3 f16, plus an occupancy probe."""
import json, os, sys, time
import numpy as np
import isthmus
from isthmus import measure
from isthmus.dtypes import lookup
from isthmus.ops.specs import gemm_mma as G
from isthmus.program import _options
from isthmus.backends.cuda.compiler import defines_as_source
from isthmus.library.family import forced

OUT = os.environ.get("OUT", "/tmp/out")
os.makedirs(OUT, exist_ok=True)
LOG = open(os.path.join(OUT, "mma_diag.log"), "a")


def log(s):
    print(s, flush=True)
    LOG.write(s + "\n"); LOG.flush()


cu = isthmus.device("cuda:0")
ocl = next(d for d in isthmus.devices() if d.backend == "opencl" and "NVIDIA" in d.vendor)
import cupy as cp
import pyopencl as cl
import torch
from cupy_backends.cuda.libs import nvrtc

torch.backends.cuda.matmul.allow_tf32 = False
dt = lookup("float16")
S = int(os.environ.get("SIZE", "4096"))
M = N = K = S
shape = G._Shape(1, M, N, K, 0, 0, (M, N))
base = G.FAMILY.defaults(ocl, {"m": M, "n": N, "k": K}, dt)
CONFIGS = json.loads(os.environ.get("CONFIGS", "null")) or {
    "p2pad": dict(G._NV_OPENCL),
    "s3swz": dict(G._MID_CUDA, PIPE=1),
    "s3swz_p0": dict(G._MID_CUDA, PIPE=0),
}
rng = np.random.default_rng(1)
a = rng.standard_normal((M, K), dtype=np.float32).astype(np.float16)
b = rng.standard_normal((K, N), dtype=np.float32).astype(np.float16)
ta = torch.from_numpy(a).cuda(); tb = torch.from_numpy(b).cuda(); tc = torch.empty((M, N), dtype=torch.float16, device="cuda")
flops = 2.0 * M * N * K
reps = 20
t_ms = measure.device_ms(measure.TorchClock(torch), lambda: torch.mm(ta, tb, out=tc), repeat=5, warmup=1, batch=reps)
ref = (ta.float() @ tb.float())[::64].cpu().numpy()
log(f"torch.mm {S}^3 f16: {flops / t_ms / 1e9:.1f} TFLOP/s")
res = {"torch_tflops": flops / t_ms / 1e9, "size": S}


def rel(out):
    out = out[::64].astype(np.float64)
    if np.isnan(out).any():
        return float("nan")
    return float(np.linalg.norm(out - ref) / np.linalg.norm(ref))


def nvrtc_ptx(kern, arch="compute_90"):
    src = defines_as_source(_options(kern.program.defines)) + cu._prepare_source(kern.program.source)
    prog = nvrtc.createProgram(src, "g.cu", [], [])
    try:
        nvrtc.compileProgram(prog, [f"-arch={arch}", "-std=c++17", "-default-device",
                                    *(f"-I{d}" for d in cu._include_dirs())])
        return nvrtc.getPTX(prog)
    finally:
        nvrtc.destroyProgram(prog)


# OpenCL raw buffers
ctx, q = ocl.context, ocl.queue
mf = cl.mem_flags
oa = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)
ob = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=b)
oc = cl.Buffer(ctx, mf.READ_WRITE, size=M * N * 2 + 4096)
ca, cb = cp.asarray(a), cp.asarray(b)
cc_big = cp.zeros(M * N + 2048, cp.float16)
cc = cc_big[:M * N].reshape(M, N)
args_scalar = (np.int32(M), np.int32(N), np.int32(K), np.float32(1.0), np.float32(0.0))


def time_ocl(ptx_or_prog, params, label):
    if isinstance(ptx_or_prog, (bytes, bytearray)):
        prg = cl.Program(ctx, [ocl._dev], [bytes(ptx_or_prog)]).build()
    else:
        prg = ptx_or_prog
    k = cl.Kernel(prg, "gemm_mma")
    k.set_args(*args_scalar, oa, np.int64(0), ob, np.int64(0), oc, np.int64(0))
    g, l = G.grid(M, N, 1, params)
    cl.enqueue_fill_buffer(q, oc, np.uint16(0x7e00), 0, M * N * 2)
    fn = lambda: cl.enqueue_nd_range_kernel(q, k, g, l)
    ms = measure.device_ms(ocl, fn, repeat=5, warmup=1, batch=reps)
    q.finish()
    out = np.empty((M, N), np.float16); cl.enqueue_copy(q, out, oc); q.finish()
    e = rel(out)
    log(f"  {label:32s} OpenCL runtime: {flops / ms / 1e9:7.1f} TFLOP/s ({t_ms / ms:.3f} of torch) err {e:.2e}")
    return flops / ms / 1e9


def time_cuda(ptx, params, label, smem=0):
    mod = cp.cuda.function.Module()
    mod.load(bytes(ptx) + b"\0")
    f = mod.get_function("gemm_mma")
    if smem > 48 * 1024:
        f.max_dynamic_shared_size_bytes = smem
    g, l = G.grid(M, N, 1, params)
    grid = tuple(x // y for x, y in zip(g, l))
    cc.fill(cp.float16("nan"))
    args = (*args_scalar, ca, np.int64(0), cb, np.int64(0), cc_big, np.int64(0))
    fn = lambda: f(grid, l, args, shared_mem=smem, stream=cu.stream)
    ms = measure.device_ms(cu, fn, repeat=5, warmup=1, batch=reps)
    cu.synchronize()
    e = rel(cp.asnumpy(cc))
    log(f"  {label:32s} CUDA runtime:   {flops / ms / 1e9:7.1f} TFLOP/s ({t_ms / ms:.3f} of torch) err {e:.2e}")
    return flops / ms / 1e9


MODE = sys.argv[1] if len(sys.argv) > 1 else "gemm"
ONLY = sys.argv[2] if len(sys.argv) > 2 else None
for name, cfg in CONFIGS.items():
    if MODE.startswith("probe") or (ONLY and name != ONLY):
        continue
    params = {**base, **cfg, "WGMMA": 0, "SPLITK": 1}
    log(f"config {name}: {params}")
    row = res.setdefault(name, {})
    try:
        v_ocl = G._variant(ocl, dt, False, False, shape, dt)
        k_ocl = G.FAMILY.kernels(ocl, dt, {**params, **dict(v_ocl)})["gemm_mma"]
        ptx_ocl = ocl._binary(k_ocl.program.native)
        open(os.path.join(OUT, f"{name}{os.environ.get('TAG', '')}-opencl.ptx"), "wb").write(ptx_ocl)
        v_cu = dict(G._variant(cu, dt, False, False, shape, dt), DYN_SMEM=0)
        k_cu = G.FAMILY.kernels(cu, dt, {**params, **v_cu})["gemm_mma"]
        ptx_nv = nvrtc_ptx(k_cu)
        open(os.path.join(OUT, f"{name}{os.environ.get('TAG', '')}-nvrtc.ptx"), "wb").write(ptx_nv)
        with (forced(G.FAMILY, params) if MODE not in ("verbose", "occ") else open(os.devnull)):
          if MODE not in ("verbose", "occ"):
            dcc = cu.asarray(np.zeros((M, N), np.float16)); da, db = cu.asarray(a), cu.asarray(b)
            ms = measure.device_ms(cu, lambda: G.run(da, db, dcc), repeat=5, warmup=1, batch=reps)
            log(f"  {'isthmus cuda (dyn smem)':32s} CUDA runtime:   {flops / ms / 1e9:7.1f} TFLOP/s ({t_ms / ms:.3f}) err {rel(dcc.to_numpy()):.2e}")
            row["isthmus_cuda"] = flops / ms / 1e9
            oca = ocl.asarray(np.zeros((M, N), np.float16)); oaa, obb = ocl.asarray(a), ocl.asarray(b)
            ms = measure.device_ms(ocl, lambda: G.run(oaa, obb, oca), repeat=5, warmup=1, batch=reps)
            log(f"  {'isthmus opencl':32s} OpenCL runtime: {flops / ms / 1e9:7.1f} TFLOP/s ({t_ms / ms:.3f}) err {rel(oca.to_numpy()):.2e}")
            row["isthmus_opencl"] = flops / ms / 1e9
            del dcc, da, db, oca, oaa, obb
    except Exception as exc:  # noqa: BLE001
        import traceback
        log(f"  FAILED: {traceback.format_exc()[-2000:]}")
        continue
    if MODE == "occ":  # work-groups resident on one SM (the kernel built with RESIDENCY counts them)
        try:
            cl.enqueue_fill_buffer(q, oc, np.int32(0), M * N * 2, 2048)
            time_ocl(k_ocl.program.native, params, "OpenCL, counting residency")
            occ = np.empty(512, np.int32); cl.enqueue_copy(q, occ, oc, src_offset=M * N * 2); q.finish()
            log(f"  OpenCL: most work-groups on one SM {occ[256:].max()} (SMs {(occ[256:] > 0).sum()}), left {occ[:256].sum()}")
            cc_big[M * N:] = 0
            time_cuda(ptx_nv, params, "NVRTC PTX, counting residency")
            occ = cp.asnumpy(cc_big[M * N:].view(cp.int32))
            log(f"  CUDA:   most work-groups on one SM {occ[256:].max()} (SMs {(occ[256:] > 0).sum()}), left {occ[:256].sum()}")
        except Exception as exc:  # noqa: BLE001
            log(f"  FAILED {str(exc)[:600]}")
        continue
    if MODE == "verbose":  # NVIDIA's JIT report (registers, spills) and timing, with extra build options
        for extra in json.loads(os.environ.get("OPTS", '[""]')):
            try:
                opts = _options(k_ocl.program.defines) + ["-cl-nv-verbose"] + extra.split()
                prg = cl.Program(ctx, k_ocl.program.source).build(options=opts)
                blog = prg.get_build_info(ocl._dev, cl.program_build_info.LOG)
                kk = cl.Kernel(prg, "gemm_mma")
                priv = kk.get_work_group_info(cl.kernel_work_group_info.PRIVATE_MEM_SIZE, ocl._dev)
                info = " | ".join(l.strip() for l in blog.splitlines() if "regist" in l or "spill" in l or "stack" in l)
                log(f"  [{extra}] private {priv} B; {info}")
                time_ocl(prg, params, f"opts [{extra}]")
            except Exception as exc:  # noqa: BLE001
                log(f"  [{extra}] FAILED {str(exc)[:600]}")
        continue
    if MODE == "gemm":
        try:
            row["nvptx_cuda"] = time_cuda(ptx_nv, params, "NVRTC PTX (static smem)")
        except Exception as exc:  # noqa: BLE001
            log(f"  FAILED: {str(exc)[-500:]}")
        continue
    for key, fn in (("oclptx_ocl", lambda: time_ocl(k_ocl.program.native, params, "OpenCL compiler's program")),
                    ("oclptx_ocl_reload", lambda: time_ocl(ptx_ocl, params, "OpenCL PTX reloaded")),
                    ("nvptx_ocl", lambda: time_ocl(ptx_nv, params, "NVRTC PTX")),
                    ("nvptx_cuda", lambda: time_cuda(ptx_nv, params, "NVRTC PTX")),
                    ("oclptx_cuda", lambda: time_cuda(ptx_ocl, params, "OpenCL PTX"))):
      try:
        row[key] = fn()
      except Exception as exc:  # noqa: BLE001
        import traceback
        log(f"  FAILED: {traceback.format_exc()[-2000:]}")

# occupancy probe: the most groups of 128 items resident at once on one SM, by local memory size
PROBE = r"""
__kernel void probe(__global int* cnt, __global int* most, __global int* sink, const long spin)
{
    __local int buf[LOCALN];
    uint sm;
    __asm__ __volatile__("mov.u32 %0, %%smid;" : "=r"(sm));
    const int lid = (int)get_local_id(0);
    for (int i = lid; i < LOCALN; i += (int)get_local_size(0)) buf[i] = i;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
        int c = atomic_add(&cnt[sm], 1) + 1;
        atomic_max(&most[sm], c);
        ulong t0, t;
        __asm__ __volatile__("mov.u64 %0, %%clock64;" : "=l"(t0));
        do { __asm__ __volatile__("mov.u64 %0, %%clock64;" : "=l"(t)); } while ((long)(t - t0) < spin);
        atomic_sub(&cnt[sm], 1);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (buf[(lid * 7) % LOCALN] == -5) sink[0] = 1;
}
"""
PWG = int(os.environ.get('PWG', '128'))
for nbytes in ((json.loads(os.environ.get('PSIZES', '[16384, 24576, 37888, 49152]'))) if MODE.startswith("probe") else ()):
    n = nbytes // 4
    if MODE == "probe_ocl":
      try:
        prg = cl.Program(ctx, PROBE).build(f"-DLOCALN={n}")
        k = cl.Kernel(prg, "probe")
        cnt = cl.Buffer(ctx, mf.READ_WRITE, 4 * 256); most = cl.Buffer(ctx, mf.READ_WRITE, 4 * 256)
        sink = cl.Buffer(ctx, mf.READ_WRITE, 4)
        cl.enqueue_fill_buffer(q, cnt, np.int32(0), 0, 1024); cl.enqueue_fill_buffer(q, most, np.int32(0), 0, 1024)
        k.set_args(cnt, most, sink, np.int64(200000))
        cl.enqueue_nd_range_kernel(q, k, (132 * 8 * PWG,), (PWG,)); q.finish()
        m = np.empty(256, np.int32); cl.enqueue_copy(q, m, most); q.finish()
        log(f"probe OpenCL groups of {PWG}, local {nbytes} B: most groups on one SM {m.max()}, SMs used {(m > 0).sum()}")
        res.setdefault("probe_opencl", {})[nbytes] = int(m.max())
      except Exception as exc:  # noqa: BLE001
        log(f"probe OpenCL {nbytes}: {exc}")
    if MODE == "probe_cuda":
      try:
        src = f"#define LOCALN {n}\n" + cu._prepare_source(PROBE.replace("atomic_add", "atomicAdd")
            .replace("atomic_max", "atomicMax").replace("atomic_sub", "atomicSub"))
        mod = cp.RawModule(code=src, options=("-std=c++17",))
        f = mod.get_function("probe")
        cnt = cp.zeros(256, cp.int32); most = cp.zeros(256, cp.int32); sink = cp.zeros(1, cp.int32)
        f((132 * 8,), (PWG,), (cnt, most, sink, np.int64(200000)))
        cp.cuda.runtime.deviceSynchronize()
        m = cp.asnumpy(most)
        log(f"probe CUDA   groups of {PWG}, local {nbytes} B: most groups on one SM {m.max()}, SMs used {(m > 0).sum()}")
        res.setdefault("probe_cuda", {})[nbytes] = int(m.max())
      except Exception as exc:  # noqa: BLE001
        log(f"probe CUDA {nbytes}: {str(exc)[:500]}")

open(os.path.join(OUT, "mma_diag.json"), "a").write(json.dumps(res) + "\n")
