# GPU calls of session 2026-12-03d (run as: source .device/setup.sh && bash <script>); the python scripts they
# call are in this folder (.xfer/ in the calls), the source variants as diffs there
# ---- call 12 (.xfer/gpu12.sh) ----
# GPU call 12 (session 2026-12-03d): gemm_mma OpenCL-vs-CUDA diagnosis (PTX x runtime matrix, occupancy
# probe); the vocabulary softmax rows in the shape sweep on cuda:0
set -u
T0=$(date +%s); el() { echo "=== $1 at +$(( $(date +%s) - T0 ))s"; }
find /tmp/icd -name '*.icd' ! -name nvidia.icd -delete
export ISTHMUS_KERNEL_DIR=$PWD/opencl
mkdir -p $OUT/r
el diag
OUT=$OUT/r timeout 240 python3 .xfer/mma_diag.py > $OUT/r/diag.out 2>&1; grep -v "^config" $OUT/r/diag.out | tail -40 | cut -c1-250
el softmax-sweep
timeout 200 python3 -m benchmarks shapes --device cuda:0 --ops softmax --out $OUT/r > $OUT/r/sm.out 2>&1; tail -15 $OUT/r/sm.out | cut -c1-200
(cd $OUT && tar czf r.tgz r && rm -rf r)
el done
# ---- call 13 (.xfer/gpu13.sh) ----
# GPU call 13 (session 2026-12-03d): gemm_mma s3swz on OpenCL vs CUDA (static smem too), occupancy probe
set -u
T0=$(date +%s); el() { echo "=== $1 at +$(( $(date +%s) - T0 ))s"; }
find /tmp/icd -name '*.icd' ! -name nvidia.icd -delete
export ISTHMUS_KERNEL_DIR=$PWD/opencl
mkdir -p $OUT/r
for m in probe_ocl probe_cuda; do OUT=$OUT/r timeout 60 python3 .xfer/mma_diag.py $m > $OUT/r/$m.out 2>&1; grep "^probe" $OUT/r/$m.out | cut -c1-200; done
el gemm
for c in p2pad s3swz s3swz_p0; do OUT=$OUT/r timeout 100 python3 .xfer/mma_diag.py gemm $c > $OUT/r/gemm-$c.out 2>&1; grep "TFLOP\|FAIL\|Error" $OUT/r/gemm-$c.out | cut -c1-200; done
(cd $OUT && tar czf r.tgz r && rm -rf r)
el done
# ---- call 14 (.xfer/gpu14.sh) ----
# GPU call 14 (session 2026-12-03d): gemm_mma K16_STEP orderings (fragment loads before/after the refill) on OpenCL and CUDA
set -u
T0=$(date +%s); el() { echo "=== $1 at +$(( $(date +%s) - T0 ))s"; }
find /tmp/icd -name '*.icd' ! -name nvidia.icd -delete
mkdir -p $OUT/r
for kd in main v1 v6; do
  if [ $kd = main ]; then D=$PWD/opencl; else D=$PWD/.xfer/$kd; fi
  for c in s3swz; do
    echo "--- $kd $c"
    TAG=-$kd ISTHMUS_KERNEL_DIR=$D OUT=$OUT/r timeout 100 python3 .xfer/mma_diag.py gemm $c > $OUT/r/gemm-$kd-$c.out 2>&1; grep "TFLOP\|FAIL\|Error" $OUT/r/gemm-$kd-$c.out | cut -c1-200
  done
done
(cd $OUT && tar czf r.tgz r && rm -rf r)
el done
# ---- call 15 (.xfer/gpu15.sh) ----
# GPU call 15 (session 2026-12-03d): NVIDIA OpenCL JIT report (-cl-nv-verbose: registers, spills) and timing of
# gemm_mma configs at 4096^3 f16, with extra build options
set -u
T0=$(date +%s); el() { echo "=== $1 at +$(( $(date +%s) - T0 ))s"; }
find /tmp/icd -name '*.icd' ! -name nvidia.icd -delete
export ISTHMUS_KERNEL_DIR=$PWD/opencl
mkdir -p $OUT/r
export CONFIGS='{"p2pad": {"BM":128,"BN":128,"BK":32,"WM":2,"WN":2,"STAGES":2,"GM":8,"SWZ":0,"PIPE":0},
 "s3swz": {"BM":128,"BN":128,"BK":32,"WM":2,"WN":2,"STAGES":3,"GM":8,"SWZ":1,"PIPE":1},
 "s2swz": {"BM":128,"BN":128,"BK":32,"WM":2,"WN":2,"STAGES":2,"GM":8,"SWZ":1,"PIPE":0},
 "p4pad16": {"BM":128,"BN":128,"BK":16,"WM":2,"WN":2,"STAGES":4,"GM":8,"SWZ":0,"PIPE":1},
 "s4swz16": {"BM":128,"BN":128,"BK":16,"WM":2,"WN":2,"STAGES":4,"GM":8,"SWZ":1,"PIPE":1},
 "s2swz256": {"BM":128,"BN":256,"BK":32,"WM":2,"WN":4,"STAGES":2,"GM":8,"SWZ":1,"PIPE":1}}'
export OPTS='["", "-cl-nv-maxrregcount=232", "-cl-nv-opt-level=2"]'
for c in p2pad s3swz s2swz p4pad16 s4swz16 s2swz256; do
  echo "--- $c"
  OUT=$OUT/r timeout 100 python3 .xfer/mma_diag.py verbose $c > $OUT/r/v-$c.out 2>&1; grep "TFLOP\|FAIL\|Error\|private" $OUT/r/v-$c.out | cut -c1-400
done
(cd $OUT && tar czf r.tgz r && rm -rf r)
el done
# ---- call 16 (.xfer/gpu16.sh) ----
# GPU call 16 (session 2026-12-03d): NVRTC's PTX of gemm_mma (s3swz, p2pad) loaded as NVIDIA OpenCL program binaries
set -u
find /tmp/icd -name '*.icd' ! -name nvidia.icd -delete
S3='{"BM":128,"BN":128,"BK":32,"WM":2,"WN":2,"STAGES":3}'
for f in O A B C; do timeout 60 python3 .xfer/ptx_in_ocl.py .xfer/ptx/$f.ptx "$S3" 2>&1 | tail -2 | cut -c1-400; done
timeout 60 python3 .xfer/ptx_in_ocl.py .xfer/ptx/P.ptx '{"BM":128,"BN":128,"BK":32,"WM":2,"WN":2}' 2>&1 | tail -2 | cut -c1-400
# ---- call 17 (.xfer/gpu17.sh) ----
# GPU call 17 (session 2026-12-03d): NVIDIA OpenCL's PTX of gemm_mma run under CUDA (envregs replaced), NVRTC's as control;
# an unconditional-refill variant of the source (v7) on both backends
set -u
find /tmp/icd -name '*.icd' ! -name nvidia.icd -delete
S3='{"BM":128,"BN":128,"BK":32,"WM":2,"WN":2,"STAGES":3}'
for f in A Ocu; do timeout 60 python3 .xfer/ptx_in_cuda.py .xfer/ptx/$f.ptx "$S3" 2>&1 | tail -1 | cut -c1-300; done
for f in P Pcu; do timeout 60 python3 .xfer/ptx_in_cuda.py .xfer/ptx/$f.ptx '{"BM":128,"BN":128,"BK":32,"WM":2,"WN":2}' 2>&1 | tail -1 | cut -c1-300; done
mkdir -p $OUT/r
echo "--- v7 s3swz"
TAG=-v7 ISTHMUS_KERNEL_DIR=$PWD/.xfer/v7 OUT=$OUT/r timeout 100 python3 .xfer/mma_diag.py gemm s3swz > $OUT/r/gemm-v7.out 2>&1; grep "TFLOP\|FAIL\|Error" $OUT/r/gemm-v7.out | cut -c1-200
(cd $OUT && tar czf r.tgz r && rm -rf r)
# ---- call 18 (.xfer/gpu18.sh) ----
# GPU call 18 (session 2026-12-03d): the shared-memory cliff: gemm_mma s3swz (48 KiB static) under CUDA with extra dynamic bytes
set -u
S3='{"BM":128,"BN":128,"BK":32,"WM":2,"WN":2,"STAGES":3}'
timeout 90 python3 .xfer/ptx_in_cuda.py .xfer/ptx/Ocu.ptx "$S3" 0,16,256,512,1024,1040,2048,4096,8192 2>&1 | tail -9 | cut -c1-300
timeout 60 python3 .xfer/ptx_in_cuda.py .xfer/ptx/Pcu.ptx '{"BM":128,"BN":128,"BK":32,"WM":2,"WN":2}' 0,4096,8192,10240,11264,12288 2>&1 | tail -6 | cut -c1-300
find /tmp/icd -name '*.icd' ! -name nvidia.icd -delete
export ISTHMUS_KERNEL_DIR=$PWD/opencl OPTS='[""]'
export CONFIGS='{"s3swz64": {"BM":128,"BN":64,"BK":32,"WM":2,"WN":2,"STAGES":3,"GM":8,"SWZ":1,"PIPE":1},
 "s4swz64": {"BM":128,"BN":64,"BK":32,"WM":2,"WN":2,"STAGES":4,"GM":8,"SWZ":1,"PIPE":1},
 "s5swz16": {"BM":128,"BN":128,"BK":16,"WM":2,"WN":2,"STAGES":5,"GM":8,"SWZ":1,"PIPE":1},
 "s3swz6464": {"BM":64,"BN":128,"BK":32,"WM":2,"WN":2,"STAGES":3,"GM":8,"SWZ":1,"PIPE":1}}'
mkdir -p $OUT/r
for c in s3swz64 s4swz64 s5swz16 s3swz6464; do
  echo "--- $c"
  OUT=$OUT/r timeout 60 python3 .xfer/mma_diag.py verbose $c > $OUT/r/v-$c.out 2>&1; grep "TFLOP\|FAIL\|Error\|private" $OUT/r/v-$c.out | cut -c1-300
done
# ---- call 19 (.xfer/gpu19.sh) ----
# GPU call 19 (session 2026-12-03d): the shared-memory cliff: gemm_mma s3swz (48 KiB static) under CUDA with extra dynamic bytes
set -u
S3='{"BM":128,"BN":128,"BK":32,"WM":2,"WN":2,"STAGES":3}'
timeout 90 python3 .xfer/ptx_in_cuda.py .xfer/ptx/Ocu.ptx "$S3" 0,16,256,512,1024,1040,2048,4096,8192 2>&1 | tail -9 | cut -c1-300
timeout 60 python3 .xfer/ptx_in_cuda.py .xfer/ptx/Pcu.ptx '{"BM":128,"BN":128,"BK":32,"WM":2,"WN":2}' 0,4096,8192,10240,11264,12288 2>&1 | tail -6 | cut -c1-300
# ---- call 20 (.xfer/gpu20.sh) ----
# GPU call 20 (session 2026-12-03d): gemm_mma s3swz under CUDA at one block per SM (large dynamic smem, small carveouts)
S3='{"BM":128,"BN":128,"BK":32,"WM":2,"WN":2,"STAGES":3}'
timeout 30 python3 .xfer/ptx_in_cuda.py .xfer/ptx/Ocu.ptx "$S3" 0,70000 2>&1 | tail -2
for c in 25 44 50 100; do CARVEOUT=$c timeout 30 python3 .xfer/ptx_in_cuda.py .xfer/ptx/Ocu.ptx "$S3" 0 2>&1 | tail -1; done
# ---- call 21 (.xfer/gpu21.sh) ----
# GPU call 21 (session 2026-12-03d): 8-warp work-groups on NVIDIA OpenCL (one group an SM: the 48 KiB ring there allows only one)
set -u
find /tmp/icd -name '*.icd' ! -name nvidia.icd -delete
export ISTHMUS_KERNEL_DIR=$PWD/opencl OPTS='[""]'
export CONFIGS='{"w24s3": {"BM":128,"BN":128,"BK":32,"WM":2,"WN":4,"STAGES":3,"GM":8,"SWZ":1,"PIPE":1},
 "w42s3": {"BM":128,"BN":128,"BK":32,"WM":4,"WN":2,"STAGES":3,"GM":8,"SWZ":1,"PIPE":1},
 "w24s2p": {"BM":128,"BN":128,"BK":32,"WM":2,"WN":4,"STAGES":2,"GM":8,"SWZ":0,"PIPE":1},
 "w42s3p0": {"BM":128,"BN":128,"BK":32,"WM":4,"WN":2,"STAGES":3,"GM":8,"SWZ":1,"PIPE":0}}'
mkdir -p $OUT/r
for c in w24s3 w42s3 w24s2p w42s3p0; do
  OUT=$OUT/r timeout 60 python3 .xfer/mma_diag.py verbose $c > $OUT/r/v-$c.out 2>&1; echo "--- $c"; grep "TFLOP\|FAIL\|Error\|private" $OUT/r/v-$c.out | cut -c1-300
done
rm -rf $OUT/r
# ---- call 22 (.xfer/gpu22.sh) ----
# GPU call 22 (session 2026-12-03d): groups resident on one SM by local memory size when threads allow two (1024-item groups)
find /tmp/icd -name '*.icd' ! -name nvidia.icd -delete
export PWG=1024 PSIZES='[36864, 40960, 43008, 45056, 46080, 47104, 48128, 49152]'
for m in probe_ocl probe_cuda; do OUT=/tmp/r timeout 60 python3 .xfer/mma_diag.py $m 2>&1 | grep "^probe" | cut -c1-200; done
# ---- call 23 (.xfer/gpu23.sh) ----
# GPU call 23 (session 2026-12-03d): gemm_mma work-groups resident on one SM, NVIDIA OpenCL vs CUDA (same source, counted in-kernel)
find /tmp/icd -name '*.icd' ! -name nvidia.icd -delete
export ISTHMUS_KERNEL_DIR=$PWD/.xfer/v8
export CONFIGS='{"s3swz": {"BM":128,"BN":128,"BK":32,"WM":2,"WN":2,"STAGES":3,"GM":8,"SWZ":1,"PIPE":1,"RESIDENCY":1},
 "p2pad": {"BM":128,"BN":128,"BK":32,"WM":2,"WN":2,"STAGES":2,"GM":8,"SWZ":0,"PIPE":0,"RESIDENCY":1}}'
for c in s3swz p2pad; do echo "--- $c"; OUT=/tmp/r timeout 80 python3 .xfer/mma_diag.py occ $c 2>&1 | grep "TFLOP\|most\|FAIL" | cut -c1-300; done
# ---- call 25 (inline, right after call 24 on the same machine): NVIDIA's JIT cache of call 24's processes ----
# find /tmp/icd -name '*.icd' ! -name nvidia.icd -delete; mkdir -p $OUT; (cd ~ && tar czf $OUT/cc.tgz .nv)
