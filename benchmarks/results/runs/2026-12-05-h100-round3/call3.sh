# last-chance call: the CUDA tests of ops and llm (correctness of the new kernels), then the headline benchmarks
START=$(date +%s); LIMIT=${LIMIT:-470}
export PYTHONUNBUFFERED=1 ISTHMUS_KERNEL_DIR=$PWD/opencl R=$OUT/r
mkdir -p $R python/isthmus/java/lib target; cp .device/jars/*.jar python/isthmus/java/lib/
cp -r .devjava/test-classes target/ && ls "$PWD"/.devjava/m2jars/*.jar | tr '\n' ':' | sed 's/:$//' > target/test-classpath.txt
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee $OUT/nvsmi.txt
ISTHMUS_SKIP_PACKAGING="no network" timeout -s INT -k 15 ${TEST_S:-230} python3 -m pytest tests/ops tests/llm tests/core/test_plan.py -k "cuda" \
  -q -p no:cacheprovider -p no:benchmark -n 16 --timeout 120 -rfE --junitxml=$OUT/junit-cuda.xml 2>&1 | tee $OUT/pytest-cuda.log \
  | grep -v -E '^\[gw[0-9]+\]' | tail -40
echo "CUDA TESTS: $(grep -E '(passed|failed|errors?)\b.* in [0-9.]+s' $OUT/pytest-cuda.log | tail -1)"
rm -rf $R
bash gpu-scripts/call2.sh $LIMIT $START
