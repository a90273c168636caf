#!/usr/bin/env bash
# The whole GPU pass in one command on the lent GPU machine (see README "On the GPU machine"):
#   source .device/setup.sh && bash benchmarks/gpu_pass.sh STAGE...   (stages: test quicktest bench java launch tune tuneocl softmax strategies multi)
# Every stage writes into $R (default /tmp/r); the folder is packed into $OUT/r.tgz after each
# stage, so a stage cut off by the time limit still returns what the earlier ones wrote.
set -u
# isthmus runs from the source tree here (PYTHONPATH), not installed: the kernel sources are the
# checkout's opencl/ folder, which an installed isthmus finds as its package isthmus.opencl
export ISTHMUS_KERNEL_DIR=${ISTHMUS_KERNEL_DIR:-$PWD/opencl}
R=${R:-/tmp/r}
mkdir -p "$R" python/isthmus/java/lib target
cp .device/jars/*.jar python/isthmus/java/lib/ 2>/dev/null
if [ -d .devjava ]; then  # the JUnit classes and jars for tests/crosslang (no Maven on that machine)
  cp -r .devjava/test-classes target/ && ls "$PWD"/.devjava/m2jars/*.jar | tr '\n' ':' | sed 's/:$//' > target/test-classpath.txt
fi
pack() { [ -n "${OUT:-}" ] && tar czf "$OUT/r.tgz" -C "$R" . ; }
cuda=cuda:0
ocl=$(python3 -c "import isthmus; print(next(d.id for d in isthmus.devices() if d.backend=='opencl' and d.kind=='gpu'))")
for stage in "$@"; do
  echo "=== $stage $(date +%T)"
  case $stage in
    test) timeout 300 python3 -m pytest tests -q -p no:cacheprovider --timeout 240 -rfE 2>&1 | tee "$R/pytest-gpu.log" | tail -25 ;;
    bench) for d in $cuda $ocl; do timeout 150 python3 -m isthmus.cli bench --device $d --out "$R" 2>&1 | tail -30; done ;;
    java) for d in $cuda $ocl; do timeout 90 python3 benchmarks/java_overhead.py --device $d 2>&1 | tail -12
          timeout 60 python3 benchmarks/java_bandwidth.py --device $d 2>&1 | tail -10; done
          cp benchmarks/results/java_*-cuda* benchmarks/results/java_*-opencl* "$R/" 2>/dev/null ;;
    launch) timeout 150 python3 benchmarks/launch_overhead.py --device $cuda --java --out "$R" 2>&1 | tail -25
            timeout 120 python3 benchmarks/fusion.py --device $cuda --out "$R" 2>&1 | tail -15 ;;
    tune) timeout 260 python3 benchmarks/tune_gpu.py --device $cuda --out "$R" --seconds ${TUNE_S:-150} 2>&1 | tail -25 ;;
    tuneocl) timeout 150 python3 benchmarks/tune_gpu.py --device $ocl --out "$R" --seconds ${TUNEOCL_S:-45} 2>&1 | tail -25 ;;
    softmax) for d in $cuda $ocl; do timeout 90 python3 benchmarks/softmax_variants.py --device $d --out "$R" 2>&1 | tail -30; done
             timeout 170 python3 benchmarks/tune_gpu.py --device $cuda --kernels softmax --out "$R/sm-cuda" --seconds ${SM_S:-120} 2>&1 | tail -12
             timeout 100 python3 benchmarks/tune_gpu.py --device $ocl --kernels softmax --out "$R/sm-ocl" --seconds ${SMOCL_S:-60} 2>&1 | tail -12 ;;
    quicktest) timeout 200 python3 -m pytest tests/unit/test_plan.py tests/unit/test_graph.py tests/backends/test_cuda.py tests/backends/test_library.py \
                 tests/crosslang/test_junit_suite.py tests/crosslang/test_shared.py -q -p no:cacheprovider -rfE -x 2>&1 | tail -15 ;;
    strategies) timeout 120 python3 benchmarks/tune_strategies.py --record --device $cuda --kernel sum --size n=16777216 \
                  --seconds ${STRAT_S:-45} --out "$R" 2>&1 | tail -8 ;;
    multi) timeout 120 python3 benchmarks/multidevice.py --out "$R" 2>&1 | tail -30
           timeout 120 python3 -m isthmus.cli java -cp target/test-classes io.isthmus.bench.TwoDevices $cuda $ocl 200 2>&1 | tail -4 ;;
  esac
  pack
done
