# GPU call 6 (session 2026-12-03b): wgmma path correctness + timing; pocl13 reduce/scale tests on the GPU backends
set -u
T0=$(date +%s); el() { echo "=== $1 at +$(( $(date +%s) - T0 ))s"; }
export ISTHMUS_KERNEL_DIR=$PWD/opencl
find /tmp/icd -name '*.icd' ! -name nvidia.icd -delete
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $OUT/gpu.txt
python3 -c "import cupy, numpy, torch, sys; print(sys.version.split()[0], 'cupy', cupy.__version__, 'numpy', numpy.__version__, 'torch', torch.__version__)" >> $OUT/gpu.txt
el diag
timeout 120 python3 .xfer/wg_diag.py > $OUT/diag.log 2>&1; grep -c "e-0[5-9] " $OUT/diag.log; grep -v "e-0[5-9] " $OUT/diag.log | head -30
el time
timeout 200 python3 benchmarks/gemm_mma_gpu.py --device cuda:0 --precompile 14 --time 4096 8192 --configs wgmma --json $OUT/wg.jsonl > $OUT/time.log 2>&1; grep -i "tflop\|error\|Trace" $OUT/time.log | head -60
el shapes
timeout 110 python3 benchmarks/gemm_mma_gpu.py --device cuda:0 --precompile 14 --shapes --json $OUT/wg.jsonl > $OUT/shapes.log 2>&1; grep -ci "tflop" $OUT/shapes.log
el tests
timeout 200 python3 -m pytest tests/ops -q -p no:cacheprovider -rfE > $OUT/pytest-ops.log 2>&1; tail -5 $OUT/pytest-ops.log
el tests2
timeout 100 python3 -m pytest tests/core tests/backends -q -p no:cacheprovider -rfE > $OUT/pytest-core.log 2>&1; tail -5 $OUT/pytest-core.log
el bench
timeout 60 python3 -m isthmus bench --device cuda:0 --quick --out $OUT/bench > $OUT/bench.log 2>&1; tail -3 $OUT/bench.log
el ray
timeout 60 python3 -m pytest tests/ray -q -p no:cacheprovider -rfE -x > $OUT/pytest-ray.log 2>&1; tail -3 $OUT/pytest-ray.log
el done

# ---- call 7
# GPU call 7 (session 2026-12-03b): split-K and wgmma rule on the GPU backends; final gemm_mma numbers (resolved configs)
set -u
T0=$(date +%s); el() { echo "=== $1 at +$(( $(date +%s) - T0 ))s"; }
export ISTHMUS_KERNEL_DIR=$PWD/opencl
find /tmp/icd -name '*.icd' ! -name nvidia.icd -delete
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/gpu.txt
python3 -c "import cupy, numpy, torch, sys; print(sys.version.split()[0], 'cupy', cupy.__version__, 'numpy', numpy.__version__, 'torch', torch.__version__)" >> $OUT/gpu.txt
el tests
timeout 120 python3 -m pytest tests/ops/test_ops_gemm_mma.py tests/ops/test_ops_gemm.py tests/ops/test_ops_scale.py tests/ops/test_ops_bfloat16.py -q -p no:cacheprovider -rfE > $OUT/pytest-gemm.log 2>&1; tail -4 $OUT/pytest-gemm.log
el time
timeout 120 python3 benchmarks/gemm_mma_gpu.py --device cuda:0 --precompile 14 --time 4096 8192 --configs final_wgmma --shapes --shapes-resolved > $OUT/time.log 2>&1; grep "^time" $OUT/time.log | awk '!seen[$0]++' | sed 's/time cuda:0 //'
el core
timeout 75 python3 -m pytest tests/core tests/backends -q -p no:cacheprovider -rfE > $OUT/pytest-core.log 2>&1; tail -3 $OUT/pytest-core.log
el done
