# GPU calls of session 2026-12-03f (each run as: source .device/setup.sh && bash .xfer/gpuNN.sh; carry .device, .xfer)

# GPU call 25 (session 2026-12-03f): gemm 512^3 f32 on NVIDIA OpenCL, host time per call layer by layer
find /tmp/icd -name '*.icd' ! -name nvidia.icd -delete
export ISTHMUS_KERNEL_DIR=$PWD/opencl
nproc; cat /proc/cpuinfo | grep "model name" | head -1
for i in 1 2; do
  SIZE=512 python3 .xfer/g512enq.py 2>&1 | tail -12
  sleep 5
done

# GPU call 26 (session 2026-12-03f): event-less ctypes enqueue + argument memo + trimmed gemm call path:
# host time layer by layer, 512^3 configs by kernel time (replayed) and call ratio vs CLBlast, the f32 gemm sweep
set -u
T0=$(date +%s); el() { echo "=== $1 at +$(( $(date +%s) - T0 ))s"; }
export ISTHMUS_KERNEL_DIR=$PWD/opencl
find /tmp/icd -name '*.icd' ! -name nvidia.icd -delete
el "layers"
SIZE=512 timeout 120 python3 .xfer/g512enq.py 2>&1 | tail -11 | tee $OUT/layers.log
el "gemm 512 configs"
CANDS='[{"TM":32,"TN":32,"WPTM":4,"WPTN":4},{"TM":32,"TN":32,"WPTM":2,"WPTN":4},{"TM":16,"TN":64,"WPTM":2,"WPTN":4},
 {"TM":64,"TN":64,"WPTM":4,"WPTN":4},{"TK":32},{"TK":8},{"TM":32,"TN":64,"WPTM":2,"WPTN":4},{"TM":32,"TN":64,"WPTM":2,"WPTN":2},
 {"TM":16,"TN":32,"WPTM":2,"WPTN":2},{"TM":32,"TN":32,"WPTM":2,"WPTN":2},{"TM":16,"TN":64,"WPTM":1,"WPTN":4},{"VLD":0}]' SIZES='[512]' ROUNDS=9 \
  timeout 200 python3 .xfer/g512.py 2>&1 | grep "\^3\|valid" | tee $OUT/g512.log
el "shapes gemm opencl f32"
timeout 240 python3 -m benchmarks shapes --device opencl:0 --ops gemm --dtypes float32 --out $OUT --tag gemm-f > $OUT/shapes-ocl.log 2>&1; grep "^| gemm" $OUT/shapes-ocl.log | cut -c1-220; tail -3 $OUT/shapes-ocl.log
el "layers again"
SIZE=512 timeout 120 python3 .xfer/g512enq.py 2>&1 | tail -11 | tee $OUT/layers2.log
el end

# GPU call 27 (session 2026-12-03f): a second machine start: 512^3 layers and call ratio again; CUDA f32 gemm sweep
# (the shared gemm call path); the GPU test suite (core, backends, ops) with the event-less enqueue on NVIDIA OpenCL
set -u
T0=$(date +%s); el() { echo "=== $1 at +$(( $(date +%s) - T0 ))s"; }
export ISTHMUS_KERNEL_DIR=$PWD/opencl
find /tmp/icd -name '*.icd' ! -name nvidia.icd -delete
el "layers"
SIZE=512 timeout 120 python3 .xfer/g512enq.py 2>&1 | tail -11 | tee $OUT/layers.log
el "gemm 512 resolved x3"
CANDS='[]' SIZES='[512, 512, 512]' ROUNDS=9 timeout 100 python3 .xfer/g512.py 2>&1 | grep "\^3" | tee $OUT/g512.log
el "shapes gemm cuda f32"
timeout 200 python3 -m benchmarks shapes --device cuda:0 --ops gemm --dtypes float32 --out $OUT --tag gemm-f > $OUT/shapes-cuda.log 2>&1; grep "^| gemm" $OUT/shapes-cuda.log | cut -c1-200
el "pytest"
timeout 420 python3 -m pytest tests/core tests/backends tests/ops -q -p no:cacheprovider -rfE > $OUT/pytest-gpu.log 2>&1; tail -8 $OUT/pytest-gpu.log
el end

# GPU call 28 (session 2026-12-03f): tune gemm f32 at 512^3 and 1024^3 on both backends (the preset had no square below
# 2048, so 1024^3 on CUDA took the 2048 bucket's 128x128 tiles: 64 work-groups, 0.50x torch); the f32 gemm sweeps with them
set -u
T0=$(date +%s); el() { echo "=== $1 at +$(( $(date +%s) - T0 ))s"; }
export ISTHMUS_KERNEL_DIR=$PWD/opencl
find /tmp/icd -name '*.icd' ! -name nvidia.icd -delete
for d in cuda:0 opencl:0; do
  el "tune $d"
  timeout 200 python3 -m benchmarks tune_gpu --device $d --kernels gemm --problem m=512,n=512,k=512 --problem m=1024,n=1024,k=1024 \
    --seconds 90 --out $OUT --tag sq > $OUT/tune-${d%%:*}.log 2>&1; tail -4 $OUT/tune-${d%%:*}.log
done
for d in cuda:0 opencl:0; do
  el "shapes $d with the tuned db"
  db=$(ls $OUT/tuning-${d%%:*}-*sq.sqlite)
  ISTHMUS_TUNING_DB=$db timeout 200 python3 -m benchmarks shapes --device $d --ops gemm --dtypes float32 --out $OUT --tag gemm-sq > $OUT/shapes-${d%%:*}.log 2>&1
  grep "^| gemm" $OUT/shapes-${d%%:*}.log | grep "\^3" | cut -c1-160
done
el end

# GPU call 29 (session 2026-12-03f): the shipped configs after the merge (CUDA 512^3/1024^3, NVIDIA OpenCL 1024^3):
# f32 gemm sweeps on both backends, 512^3 vs CLBlast x3, and the memory-bound sweep on NVIDIA OpenCL (event-less launches)
set -u
T0=$(date +%s); el() { echo "=== $1 at +$(( $(date +%s) - T0 ))s"; }
export ISTHMUS_KERNEL_DIR=$PWD/opencl
find /tmp/icd -name '*.icd' ! -name nvidia.icd -delete
el "gemm 512 resolved x3"
CANDS='[]' SIZES='[512, 512, 512]' ROUNDS=9 timeout 100 python3 .xfer/g512.py 2>&1 | grep "\^3" | tee $OUT/g512.log
for d in cuda:0 opencl:0; do
  el "shapes gemm $d"
  timeout 200 python3 -m benchmarks shapes --device $d --ops gemm --dtypes float32 --out $OUT --tag gemm-g > $OUT/shapes-${d%%:*}.log 2>&1
  grep "^| gemm" $OUT/shapes-${d%%:*}.log | cut -c1-160
done
el "shapes memory-bound opencl"
timeout 240 python3 -m benchmarks shapes --device opencl:0 --ops softmax,transpose,sum,max,axpy --out $OUT --tag membound-g > $OUT/shapes-mem.log 2>&1
grep "^| " $OUT/shapes-mem.log | cut -c1-170; tail -2 $OUT/shapes-mem.log
el end
