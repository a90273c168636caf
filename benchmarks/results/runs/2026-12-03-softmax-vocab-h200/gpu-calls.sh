# GPU calls of session 2026-12-03c (run as: source .device/setup.sh && bash <script>)
# ---- call 8 (.xfer/gpu8.sh) ----
# GPU call 8 (session 2026-12-03c): softmax split rows as thread-block clusters (CUDA); NVIDIA OpenCL:
# wgmma/cluster probe, narrow softmax re-tune, gemm 512^3 re-tune
set -u
T0=$(date +%s); el() { echo "=== $1 at +$(( $(date +%s) - T0 ))s"; }
export ISTHMUS_KERNEL_DIR=$PWD/opencl
find /tmp/icd -name '*.icd' ! -name nvidia.icd -delete
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/gpu.txt
python3 -c "import cupy, numpy, torch, sys; print(sys.version.split()[0], 'cupy', cupy.__version__, 'numpy', numpy.__version__, 'torch', torch.__version__)" >> $OUT/gpu.txt
el tests
timeout 150 python3 -m pytest tests/ops/test_ops_softmax.py -q -p no:cacheprovider -rfE -x > $OUT/pytest-softmax.log 2>&1; tail -4 $OUT/pytest-softmax.log | cut -c1-300
el variants
timeout 100 python3 -m benchmarks softmax_variants --device cuda:0 --sizes 4096x32000,1024x128256 --out $OUT/var > $OUT/var.log 2>&1; grep "softmax\|Error" $OUT/var.log | cut -c1-200 | head -40
el probe
timeout 40 python3 .xfer/cl_probe.py > $OUT/probe.log 2>&1; cat $OUT/probe.log | cut -c1-300
el tune
mkdir -p $OUT/tune
timeout 110 python3 -m benchmarks tune_gpu --device opencl:0 --kernels softmax --problem rows=65521,cols=257 --problem rows=262144,cols=128 --evals 66 --seconds 80 --out $OUT/tune --tag softmax > $OUT/tune.log 2>&1; tail -12 $OUT/tune.log | cut -c1-200
timeout 80 python3 -m benchmarks tune_gpu --device opencl:0 --kernels gemm --problem m=512,n=512,k=512 --evals 80 --seconds 55 --out $OUT/tune --tag gemm512 > $OUT/tune2.log 2>&1; tail -8 $OUT/tune2.log | cut -c1-200
(cd $OUT && tar czf tune.tgz --exclude="*.sqlite" tune var && rm -rf tune var)
el done

# ---- .xfer/cl_probe.py ----
# """Does NVIDIA's OpenCL compiler take sm_90a-only PTX (wgmma) or cluster PTX in inline asm?"""
# import pyopencl as cl
# plat = [p for p in cl.get_platforms() if "NVIDIA" in p.name][0]
# dev = plat.get_devices()[0]
# ctx = cl.Context([dev])
# print(dev.name, dev.version, dev.driver_version, "local mem", dev.local_mem_size)
# for name, body in [("plain", ""), ("wgmma.fence", 'asm volatile("wgmma.fence.sync.aligned;");'),
#                    ("cluster_ctarank", 'uint r; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); y[1] = r;'),
#                    ("barrier.cluster", 'asm volatile("barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;");')]:
#     src = "__kernel void k(__global float* y) { %s y[0] = 1.0f; }" % body
#     try:
#         prg = cl.Program(ctx, src).build()
#         ptx = prg.binaries[0].decode(errors="replace")
#         tgt = [l for l in ptx.splitlines() if l.startswith(".target") or l.startswith(".version")]
#         print(name, "built", tgt)
#     except Exception as e:
#         print(name, "FAILED", str(e)[:400].replace("\n", " | "))
# ---- call 9 (.xfer/gpu9.sh) ----
# GPU call 9 (session 2026-12-03c): vocabulary softmax with small groups and more splits (CUDA + NVIDIA OpenCL);
# main's gemm_mma (REFILL, split cap) on the GPU; the sweep's gemm/softmax/transpose rows on NVIDIA OpenCL (CLBlast)
set -u
T0=$(date +%s); el() { echo "=== $1 at +$(( $(date +%s) - T0 ))s"; }
export ISTHMUS_KERNEL_DIR=$PWD/opencl
find /tmp/icd -name '*.icd' ! -name nvidia.icd -delete
mkdir -p $OUT/r
el variants
timeout 80 python3 -m benchmarks softmax_variants --device cuda:0 --sizes 4096x32000,1024x128256 --out $OUT/r > $OUT/var-cuda.log 2>&1; grep "softmax\|transpose | 12345\|Error" $OUT/var-cuda.log | cut -c1-170 | head -40
timeout 80 python3 -m benchmarks softmax_variants --device opencl:0 --sizes 4096x32000,1024x128256 --out $OUT/r > $OUT/var-ocl.log 2>&1; grep "softmax\|transpose | 12345\|Error" $OUT/var-ocl.log | cut -c1-170 | head -40
el tests
timeout 120 python3 -m pytest tests/ops/test_ops_gemm_mma.py -q -p no:cacheprovider -rfE > $OUT/pytest-gemm.log 2>&1; tail -3 $OUT/pytest-gemm.log
el time
timeout 90 python3 benchmarks/gemm_mma_gpu.py --device cuda:0 --precompile 14 --time 4096 8192 --configs final_wgmma --shapes-resolved > $OUT/time.log 2>&1; grep "^time" $OUT/time.log | awk '!seen[$0]++' | sed 's/time cuda:0 //' | cut -c1-160
el sweep
timeout 150 python3 -m benchmarks shapes --device opencl:0 --ops gemm,softmax,transpose --dtypes float32 --out $OUT/r --tag c9 > $OUT/shapes.log 2>&1; grep "^| " $OUT/shapes.log | cut -c1-170
(cd $OUT && tar czf r.tgz r && rm -rf r)
el done
# ---- call 10 (.xfer/gpu10.sh; .xfer/old = git archive 4902824 python opencl) ----
# GPU call 10 (session 2026-12-03c): split rows' pairs merged by halves (softmax.cl) and ldmatrix lane
# addresses set up once for padded tiles (gemm_mma.cl, SWZ=0: NVIDIA OpenCL's config): tests and timing
set -u
T0=$(date +%s); el() { echo "=== $1 at +$(( $(date +%s) - T0 ))s"; }
find /tmp/icd -name '*.icd' ! -name nvidia.icd -delete
mkdir -p $OUT/r
export ISTHMUS_KERNEL_DIR=$PWD/opencl
el tests
timeout 100 python3 -m pytest tests/ops/test_ops_softmax.py tests/ops/test_ops_gemm_mma.py -q -p no:cacheprovider -rfE > $OUT/pytest.log 2>&1; tail -3 $OUT/pytest.log | cut -c1-300
el variants
timeout 75 python3 -m benchmarks softmax_variants --device cuda:0 --sizes 4096x32000,1024x128256 --out $OUT/r > $OUT/var-cuda.log 2>&1; grep "| softmax\|Error" $OUT/var-cuda.log | cut -c1-150 | head -40
timeout 75 python3 -m benchmarks softmax_variants --device opencl:0 --sizes 4096x32000,1024x128256 --out $OUT/r > $OUT/var-ocl.log 2>&1; grep "| softmax\|Error" $OUT/var-ocl.log | cut -c1-150 | head -40
el gemm-ocl
for round in 1 2; do for tree in old new; do
  if [ $tree = old ]; then P=$PWD/.xfer/old; else P=$PWD; fi
  PYTHONPATH=$P/python:${PYTHONPATH:-} ISTHMUS_KERNEL_DIR=$P/opencl timeout 70 python3 benchmarks/gemm_mma_gpu.py --device opencl:nvidia --time 4096 8192 --configs resolved --json $OUT/gemm-ocl.jsonl > $OUT/gemm-$tree-$round.log 2>&1
  echo "$tree round $round"; grep "^time" $OUT/gemm-$tree-$round.log | sed 's/time opencl:[^ ]* //' | cut -c1-120
done; done
rm -f $OUT/gemm-*-2.log
(cd $OUT && tar czf r.tgz r && rm -rf r)
el done
# ---- call 11 (.xfer/gpu11.sh; .xfer/old = git archive 4902824 python opencl) ----
# GPU call 11 (session 2026-12-03c): the merged main on the GPU (helpers' CUDA-only cuts: graphs, launch,
# compiler, memory); host time per library call, session start (4902824, .xfer/old) vs now; softmax sweep rows
set -u
T0=$(date +%s); el() { echo "=== $1 at +$(( $(date +%s) - T0 ))s"; }
find /tmp/icd -name '*.icd' ! -name nvidia.icd -delete
export ISTHMUS_KERNEL_DIR=$PWD/opencl
mkdir -p $OUT/r
el tests
timeout 90 python3 -m pytest tests/core tests/backends -q -p no:cacheprovider -rfE -x > $OUT/pytest.log 2>&1; tail -3 $OUT/pytest.log | cut -c1-300
el overhead
for dev in cuda:0 opencl:0; do for tree in old new; do
  if [ $tree = old ]; then P=$PWD/.xfer/old; else P=$PWD; fi
  timeout 25 python3 .xfer/oh.py $dev $P $tree >> $OUT/overhead.jsonl 2>> $OUT/overhead.err
done; done
python3 - $OUT/overhead.jsonl <<'PY'
import json, sys, collections
rows = [json.loads(l) for l in open(sys.argv[1])]
t = collections.defaultdict(list)
for r in rows:
    t[(r["device"], r["op"], r["tree"])].append((r["ratio"], r.get("ratio_out"), r["isthmus_us"]))
for (dev, op, tree), v in sorted(t.items()):
    print(dev, op, tree, " ".join(f"{a:.2f}/{b:.2f} ({u:.1f}us)" if b else f"{a:.2f}/- ({u:.1f}us)" for a, b, u in v))
PY


(cd $OUT && tar czf r.tgz r && rm -rf r)
el done
# ---- .xfer/oh.py ----
# """Host time per library call of one tree on one device: python3 oh.py DEV TREE LABEL (JSON line per op)."""
# import json, os, sys
# dev_spec, tree, label = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3]
# sys.path.insert(0, os.path.join(tree, "python"))
# os.environ["ISTHMUS_KERNEL_DIR"] = os.path.join(tree, "opencl")
# import isthmus
# from isthmus import bench
# assert isthmus.__file__.startswith(tree), isthmus.__file__
# dev = isthmus.device(dev_spec)
# for row in bench.overhead(dev, calls=600, rounds=5):
#     print(json.dumps({"tree": label, "device": dev_spec, **row}))
# ---- calls 12, 13 (warm machine) ----
# timeout 110 python3 -m pytest tests/ops/test_ops_softmax.py tests/ops/test_ops_library.py -q   -> 536 passed
# timeout 85 python3 -m pytest tests/ops/test_ops_gemm.py tests/ops/test_ops_scale.py tests/ops/test_ops_reduce.py -q   -> 255 passed, 38 skipped
