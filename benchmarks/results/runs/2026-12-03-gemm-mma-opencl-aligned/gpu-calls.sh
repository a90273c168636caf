# ---- call 1 (.xfer/gpu1.sh)
# Next session's first GPU call: does a 128-byte-aligned ring bring NVIDIA OpenCL's swizzled gemm_mma to CUDA's speed?
# Copy first: mkdir -p .xfer/a128 .xfer/aman && cp /work/notes/opencl-align/a128/* .xfer/a128/ && cp /work/notes/opencl-align/aman/* .xfer/aman/
#             cp /work/notes/opencl-align/mma_diag.py .xfer/ && cp /work/notes/opencl-align/gpu-next.sh .xfer/gpu1.sh
# run with carry [".device", ".xfer/gpu1.sh", ".xfer/mma_diag.py", ".xfer/a128", ".xfer/aman"]
find /tmp/icd -name '*.icd' ! -name nvidia.icd -delete
export CONFIGS='{"p2pad": {"BM":128,"BN":128,"BK":32,"WM":2,"WN":2,"STAGES":2,"GM":8,"SWZ":0,"PIPE":0},
 "s2swz": {"BM":128,"BN":128,"BK":32,"WM":2,"WN":2,"STAGES":2,"GM":8,"SWZ":1,"PIPE":0},
 "s2swz_p1": {"BM":128,"BN":128,"BK":32,"WM":2,"WN":2,"STAGES":2,"GM":8,"SWZ":1,"PIPE":1},
 "s4swz16": {"BM":128,"BN":128,"BK":16,"WM":2,"WN":2,"STAGES":4,"GM":8,"SWZ":1,"PIPE":1},
 "s3swz": {"BM":128,"BN":128,"BK":32,"WM":2,"WN":2,"STAGES":3,"GM":8,"SWZ":1,"PIPE":1}}'
for v in main a128 aman; do
  if [ $v = main ]; then D=$PWD/opencl; else D=$PWD/.xfer/$v; fi
  echo "--- $v"
  ISTHMUS_KERNEL_DIR=$D OUT=/tmp/r-$v timeout 150 python3 .xfer/mma_diag.py gemm 2>&1 | grep "TFLOP\|^config\|FAIL\|Error" | cut -c1-160
done

# ---- call 2 (.xfer/gpu2.sh)
find /tmp/icd -name '*.icd' ! -name nvidia.icd -delete
echo "=== f32 gemm.cl aligned tiles"
for v in main g128 main g128; do
  if [ $v = main ]; then D=$PWD/opencl; else D=$PWD/.xfer/$v; fi
  ISTHMUS_KERNEL_DIR=$D TAG=$v timeout 200 python3 .xfer/f32_align.py 2>&1 | tail -6 | cut -c1-200
done
echo "=== static local memory limit on NVIDIA OpenCL"
PSIZES='[49152, 49280, 50176, 57344, 65536, 73728, 98304, 116736, 131072, 200704, 232448, 233472]' timeout 120 python3 .xfer/mma_diag.py probe_ocl 2>&1 | grep "probe\|Error" | cut -c1-300
echo "=== gemm_mma rings past 48 KiB on OpenCL (a128)"
export CONFIGS='{"s3swz": {"BM":128,"BN":128,"BK":32,"WM":2,"WN":2,"STAGES":3,"GM":8,"SWZ":1,"PIPE":1},
 "s3swz_g16": {"BM":128,"BN":128,"BK":32,"WM":2,"WN":2,"STAGES":3,"GM":16,"SWZ":1,"PIPE":1},
 "s4swz": {"BM":128,"BN":128,"BK":32,"WM":2,"WN":2,"STAGES":4,"GM":8,"SWZ":1,"PIPE":1},
 "b3_128x256": {"BM":128,"BN":256,"BK":32,"WM":2,"WN":4,"STAGES":3,"GM":8,"SWZ":1,"PIPE":1},
 "b3_256x128": {"BM":256,"BN":128,"BK":32,"WM":4,"WN":2,"STAGES":3,"GM":8,"SWZ":1,"PIPE":1},
 "b4_128x256": {"BM":128,"BN":256,"BK":32,"WM":2,"WN":4,"STAGES":4,"GM":8,"SWZ":1,"PIPE":1},
 "k64s3": {"BM":128,"BN":128,"BK":64,"WM":2,"WN":2,"STAGES":3,"GM":8,"SWZ":1,"PIPE":1}}'
ISTHMUS_KERNEL_DIR=$PWD/.xfer/a128 OUT=/tmp/r-big timeout 200 python3 .xfer/mma_diag.py ocl 2>&1 | grep "TFLOP\|^config\|FAIL\|Error\|error" | cut -c1-220
echo "=== 8192^3"
export CONFIGS='{"p2pad": {"BM":128,"BN":128,"BK":32,"WM":2,"WN":2,"STAGES":2,"GM":8,"SWZ":0,"PIPE":0},
 "s3swz": {"BM":128,"BN":128,"BK":32,"WM":2,"WN":2,"STAGES":3,"GM":8,"SWZ":1,"PIPE":1},
 "b3_128x256": {"BM":128,"BN":256,"BK":32,"WM":2,"WN":4,"STAGES":3,"GM":8,"SWZ":1,"PIPE":1}}'
SIZE=8192 ISTHMUS_KERNEL_DIR=$PWD/.xfer/a128 OUT=/tmp/r-8k timeout 200 python3 .xfer/mma_diag.py ocl 2>&1 | grep "TFLOP\|^config\|FAIL\|Error\|error" | cut -c1-220

# ---- call 3 (.xfer/gpu3.sh)
# GPU call 3 (2026-12-03e): NVIDIA OpenCL's gemm_mma with 128-byte-aligned static rings past 48 KiB
set -u
T0=$(date +%s); el() { echo "=== $1 at +$(( $(date +%s) - T0 ))s"; }
export ISTHMUS_KERNEL_DIR=$PWD/opencl
find /tmp/icd -name '*.icd' ! -name nvidia.icd -delete
el "gemm_mma opencl"
timeout 150 python3 benchmarks/gemm_mma_gpu.py --device opencl:nvidia --precompile 14 --time 4096 8192 --configs final_opencl --shapes --shapes-resolved --out $OUT --json $OUT/gemm-ocl.jsonl > $OUT/time-ocl.log 2>&1; grep "^time" $OUT/time-ocl.log | awk '!seen[$0]++' | sed 's/time opencl:0 //' | cut -c1-170; tail -2 $OUT/time-ocl.log
el "gemm_mma cuda"
timeout 120 python3 benchmarks/gemm_mma_gpu.py --device cuda:0 --precompile 14 --time 4096 8192 --configs resolved --shapes --shapes-resolved --json $OUT/gemm-cuda.jsonl > $OUT/time-cuda.log 2>&1; grep "^time" $OUT/time-cuda.log | awk '!seen[$0]++' | sed 's/time cuda:0 //' | cut -c1-170; tail -2 $OUT/time-cuda.log
el "check opencl"
timeout 120 python3 benchmarks/gemm_mma_gpu.py --device opencl:nvidia --precompile 14 --check > $OUT/check-ocl.log 2>&1; tail -4 $OUT/check-ocl.log
el tests
left=$(( 570 - ($(date +%s) - T0) ))
timeout $left python3 -m pytest tests/core tests/backends tests/ops -q -p no:cacheprovider -rfE > $OUT/pytest-gpu.log 2>&1; tail -6 $OUT/pytest-gpu.log
el done

# ---- call 4 (.xfer/gpu4.sh)
# GPU call 4 (2026-12-03e): vocabulary softmax configs after the halving merge (bigger groups, fewer splits);
# gemm f32 512^3 configs on NVIDIA OpenCL next to CLBlast (alternating rounds, as the sweep times them)
set -u
T0=$(date +%s); el() { echo "=== $1 at +$(( $(date +%s) - T0 ))s"; }
export ISTHMUS_KERNEL_DIR=$PWD/opencl
find /tmp/icd -name '*.icd' ! -name nvidia.icd -delete
el "gemm 512 opencl"
CANDS='[{"TM":32,"TN":32,"WPTM":4,"WPTN":4},{"TM":32,"TN":32,"WPTM":2,"WPTN":4},{"TM":16,"TN":64,"WPTM":2,"WPTN":4},
 {"TM":64,"TN":64,"WPTM":4,"WPTN":4},{"TK":32},{"TK":8},{"VARIANT":1,"KS":2},{"VARIANT":1,"KS":4},
 {"TM":64,"TN":64,"WPTM":4,"WPTN":4,"VARIANT":1,"KS":4},{"TM":32,"TN":32,"WPTM":4,"WPTN":4,"VARIANT":1,"KS":2},
 {"TM":32,"TN":64,"WPTM":2,"WPTN":4},{"TM":32,"TN":64,"WPTM":2,"WPTN":2}]' SIZES='[512]' ROUNDS=9 \
  timeout 200 python3 .xfer/g512.py 2>&1 | grep -v Warning | grep -v "prg.build" | tee $OUT/g512.log
CANDS='[]' SIZES='[512, 512, 512]' ROUNDS=9 timeout 60 python3 .xfer/g512.py 2>&1 | grep "\^3" | tee -a $OUT/g512.log
el "softmax variants"
for d in cuda:0 opencl:0; do timeout 150 python3 -m benchmarks softmax_variants --device $d --only softmax --sizes 4096x32000,1024x128256 --out $OUT/sv > $OUT/sv-${d%%:*}.log 2>&1; grep "^| softmax" $OUT/sv-${d%%:*}.log | cut -c1-200; done
el done

# ---- call 5 (.xfer/gpu5.sh)
# GPU call 5 (2026-12-03e): gemm f32 512^3 configs on NVIDIA OpenCL next to CLBlast (full params this time);
# the shape sweep's gemm rows on NVIDIA OpenCL (f32 vs CLBlast, f16/bf16 with the aligned tensor-core tiles)
set -u
T0=$(date +%s); el() { echo "=== $1 at +$(( $(date +%s) - T0 ))s"; }
export ISTHMUS_KERNEL_DIR=$PWD/opencl
find /tmp/icd -name '*.icd' ! -name nvidia.icd -delete
el "gemm 512 opencl"
CANDS='[{"TM":32,"TN":32,"WPTM":4,"WPTN":4},{"TM":32,"TN":32,"WPTM":2,"WPTN":4},{"TM":16,"TN":64,"WPTM":2,"WPTN":4},
 {"TM":64,"TN":64,"WPTM":4,"WPTN":4},{"TK":32},{"TK":8},{"VARIANT":1,"KS":2},{"VARIANT":1,"KS":4},
 {"TM":64,"TN":64,"WPTM":4,"WPTN":4,"VARIANT":1,"KS":4},{"TM":32,"TN":32,"WPTM":4,"WPTN":4,"VARIANT":1,"KS":2},
 {"TM":32,"TN":64,"WPTM":2,"WPTN":4},{"TM":32,"TN":64,"WPTM":2,"WPTN":2},{"VLD":0}]' SIZES='[512]' ROUNDS=9 \
  timeout 200 python3 .xfer/g512.py 2>&1 | grep "\^3\|valid" | tee $OUT/g512.log
el "shapes gemm opencl"
timeout 300 python3 -m benchmarks shapes --device opencl:0 --ops gemm --out $OUT --tag gemm-e > $OUT/shapes-ocl.log 2>&1; grep "^| gemm" $OUT/shapes-ocl.log | cut -c1-200; tail -3 $OUT/shapes-ocl.log
el done

# ---- call 6 (inline; carry .device .xfer/g512host.py)
source .device/setup.sh && export ISTHMUS_KERNEL_DIR=$PWD/opencl && find /tmp/icd -name '*.icd' ! -name nvidia.icd -delete; timeout 200 python3 .xfer/g512host.py 2>&1 | grep '\^3' | tee $OUT/g512host.log

# ---- call 7 (.xfer/gpu7.sh; .xfer/old = git archive HEAD python of 1267797)
# GPU call 7 (2026-12-03e): OpenCL launches that set only the arguments that changed: host time per gemm call
# and 512^3 against CLBlast, old tree (HEAD python/) and new alternating; the GPU tests of the launch path
set -u
T0=$(date +%s); el() { echo "=== $1 at +$(( $(date +%s) - T0 ))s"; }
export ISTHMUS_KERNEL_DIR=$PWD/opencl
find /tmp/icd -name '*.icd' ! -name nvidia.icd -delete
for r in 1 2; do
  for t in old new; do
    if [ $t = old ]; then P=$PWD/.xfer/old/python; else P=$PWD/python; fi
    echo "--- $t"; PYTHONPATH=$P:$PYTHONPATH timeout 100 python3 .xfer/g512host.py 2>&1 | grep "\^3"
    PYTHONPATH=$P:$PYTHONPATH CANDS='[]' SIZES='[512]' ROUNDS=9 timeout 60 python3 .xfer/g512.py 2>&1 | grep "\^3"
  done
done | tee $OUT/host.log
el tests
timeout 300 python3 -m pytest tests/core tests/ops/test_ops_gemm.py tests/ops/test_ops_softmax.py -q -p no:cacheprovider -rfE > $OUT/pytest.log 2>&1; tail -4 $OUT/pytest.log
el done

# ---- call 8 (.xfer/gpu8.sh)
# GPU call 8 (2026-12-03e): the launch check takes NVIDIA OpenCL's static local memory to the opt-in maximum
set -u
export ISTHMUS_KERNEL_DIR=$PWD/opencl
find /tmp/icd -name '*.icd' ! -name nvidia.icd -delete
timeout 240 python3 -m pytest tests/core/test_launch_limits.py tests/core/test_kernel.py tests/ops/test_ops_gemm_mma.py -q -p no:cacheprovider -rfEs > $OUT/pytest8.log 2>&1; tail -12 $OUT/pytest8.log
