# The GPU calls of the 2026-12-03 06:00 session, as run (command: source .device/setup.sh && bash FILE)
# ---- call 1 (.xfer/gpu1.sh)
# GPU call 1 (2026-12-03): issue-12 host overhead before/after, GPU tests + Java JUnit, H200 CUDA tuning per shape class
set -u
T0=$(date +%s); el() { echo "=== $1 at +$(( $(date +%s) - T0 ))s"; }
export ISTHMUS_KERNEL_DIR=$PWD/opencl
find /tmp/icd -name '*.icd' ! -name nvidia.icd -delete
mkdir -p python/isthmus/java/lib target $OUT/oh
cp .device/jars/*.jar python/isthmus/java/lib/
cp -r .devjava/test-classes target/ && ls "$PWD"/.devjava/m2jars/*.jar | tr '\n' ':' | sed 's/:$//' > target/test-classpath.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $OUT/gpu.txt
python3 -c "import cupy, numpy, sys; print(sys.version.split()[0], 'cupy', cupy.__version__, 'numpy', numpy.__version__)" >> $OUT/gpu.txt
el overhead
OH='import sys, json, isthmus; from isthmus import bench; sys.path.insert(0, sys.argv[3]); import host_cpu_per_call as h
dev = isthmus.device(sys.argv[1]); tree = sys.argv[2]
rows = bench.overhead(dev, calls=1000, rounds=5)
import io, contextlib; buf = io.StringIO()
with contextlib.redirect_stdout(buf): h.main(["--device", sys.argv[1], "--calls", "300", "--rounds", "25"])
print(json.dumps({"tree": tree, "device": sys.argv[1], "table": rows, "cpu_us": json.loads(buf.getvalue().strip().splitlines()[-1])}))'
D=$PWD/benchmarks/diagnostics
for r in 1 2; do for tree in before now; do for d in cuda:0 opencl:0; do
  if [ $tree = before ]; then P=$PWD/.xfer/before; else P=$PWD; fi
  (cd /tmp && PYTHONPATH=/tmp/site:$P/python ISTHMUS_KERNEL_DIR=$P/opencl timeout 60 python3 -c "$OH" $d $tree $D >> $OUT/oh/overhead.jsonl 2>> $OUT/oh/err.log)
done; done; done
el tests
timeout 200 python3 -m pytest tests/core tests/backends -q -p no:cacheprovider -rfE -x > $OUT/pytest-core-backends.log 2>&1; tail -3 $OUT/pytest-core-backends.log
el junit
timeout 150 python3 -m pytest tests/crosslang tests/java -q -p no:cacheprovider -rfE > $OUT/pytest-java.log 2>&1; tail -3 $OUT/pytest-java.log
el tune
left=$(( 560 - ($(date +%s) - T0) )); secs=$(( left - 75 )); [ $secs -gt 220 ] && secs=220
echo "tuning for $secs s"
timeout $(( left - 5 )) python3 -m benchmarks tune_gpu --device cuda:0 --out $OUT/tune --seconds $secs > $OUT/tune.log 2>&1; tail -40 $OUT/tune.log
el done

# ---- call 2 (.xfer/gpu2.sh)
# GPU call 2 (2026-12-03): NVIDIA OpenCL tuning per shape class, the shape sweep on both with the new bundles, GPU tests
set -u
T0=$(date +%s); el() { echo "=== $1 at +$(( $(date +%s) - T0 ))s"; }
export ISTHMUS_KERNEL_DIR=$PWD/opencl
find /tmp/icd -name '*.icd' ! -name nvidia.icd -delete
mkdir -p python/isthmus/java/lib target $OUT/tune
cp .device/jars/*.jar python/isthmus/java/lib/
el tuneocl
timeout 260 python3 -m benchmarks tune_gpu --device opencl:0 --out $OUT/tune --seconds 170 \
  --merge-into python/isthmus/tune/bundled/opencl-nvidia-h200.json > $OUT/tuneocl.log 2>&1; tail -32 $OUT/tuneocl.log
rm -f $OUT/tune/*.sqlite*
el shapes
for d in cuda:0 opencl:0; do timeout 200 python3 -m benchmarks shapes --device $d --out $OUT > $OUT/shapes-${d%%:*}.log 2>&1; tail -45 $OUT/shapes-${d%%:*}.log; el "shapes $d done"; done
el tests
left=$(( 585 - ($(date +%s) - T0) ))
timeout $left python3 -m pytest tests/core tests/backends tests/ops -q -p no:cacheprovider -rfE > $OUT/pytest-gpu.log 2>&1; tail -5 $OUT/pytest-gpu.log
el done

# ---- call 3 (.xfer/gpu3.sh; carry .device .devjava .xfer/rayg)
# GPU call 3 (2026-12-03): the merged tree's GPU tests (Python and Java JUnit), softmax with warp shuffles
# (sweep rows, then a softmax re-tune of the narrow classes), Ray on cuda:0 (issue 14)
set -u
T0=$(date +%s); el() { echo "=== $1 at +$(( $(date +%s) - T0 ))s"; }
R=/tmp/r; mkdir -p $R
pack() { tar czf $OUT/r.tgz -C $R . ; }
export ISTHMUS_KERNEL_DIR=$PWD/opencl
find /tmp/icd -name '*.icd' ! -name nvidia.icd -delete
mkdir -p python/isthmus/java/lib target
cp .device/jars/*.jar python/isthmus/java/lib/
cp -r .devjava/test-classes target/ && ls "$PWD"/.devjava/m2jars/*.jar | tr '\n' ':' | sed 's/:$//' > target/test-classpath.txt
el tests
timeout 220 python3 -m pytest tests/core tests/backends tests/ops -q -p no:cacheprovider -rfE > $R/pytest-gpu.log 2>&1; tail -4 $R/pytest-gpu.log
el junit
timeout 100 python3 -m pytest tests/crosslang tests/java -q -p no:cacheprovider -rfE > $R/pytest-java.log 2>&1; tail -3 $R/pytest-java.log
pack
el softmax
for d in cuda:0 opencl:0; do timeout 60 python3 -m benchmarks shapes --device $d --ops softmax --out $R > $R/shapes-softmax-${d%%:*}.log 2>&1; grep "^| softmax" $R/shapes-softmax-${d%%:*}.log; done
pack
el ray
left=$(( 570 - ($(date +%s) - T0) ))
if [ $left -gt 150 ]; then
  RAYG_BUNDLE=.xfer/rayg RAYG_BUDGET_S=$(( left > 280 ? 280 : left - 20 )) OUT=$R/ray bash benchmarks/tools/ray_gpu.sh > /dev/null 2>&1; tail -30 $R/ray/ray_gpu.log
fi
pack
el done

# ---- call 4 (.xfer/gpu4.sh)
# GPU call 4 (2026-12-03): softmax re-tuned on cuda:0 for the narrow classes now that teams merge by warp shuffles
export ISTHMUS_KERNEL_DIR=$PWD/opencl
find /tmp/icd -name '*.icd' ! -name nvidia.icd -delete
timeout 150 python3 -m benchmarks tune_gpu --device cuda:0 --kernels softmax --problem rows=65521,cols=257 \
  --problem rows=262144,cols=128 --evals 66 --seconds 110 --out $OUT --tag narrow > $OUT/tune.log 2>&1
rm -f $OUT/*.sqlite*; tail -8 $OUT/tune.log
