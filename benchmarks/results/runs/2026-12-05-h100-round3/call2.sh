# benchmarks of issues 25-31 next to torch, each a process of its own; args: LIMIT START (seconds)
LIMIT=${1:-560}; START=${2:-$(date +%s)}
export PYTHONUNBUFFERED=1 ISTHMUS_KERNEL_DIR=$PWD/opencl B=/tmp/b
mkdir -p $B python/isthmus/java/lib target; cp .device/jars/*.jar python/isthmus/java/lib/
cp -r .devjava/test-classes target/ && ls "$PWD"/.devjava/m2jars/*.jar | tr '\n' ':' | sed 's/:$//' > target/test-classpath.txt
b() {  # b SECONDS NAME CMD...: runs CMD with at most SECONDS, less if less is left
  local s=$1 name=$2; shift 2; local left=$(( LIMIT - ($(date +%s) - START) - 8 ))
  [ $left -lt 15 ] && { echo "=== $name: skipped (no time left)"; return; }
  [ $s -gt $left ] && s=$left
  echo "=== $name ($s s) $(date +%T)"; timeout $s "$@" 2>&1 | tail -45 | tee -a $B/stdout.txt
  (cd $B && tar czf $OUT/b.tgz --exclude=stdout.txt . ) }
b 80 attention python3 -m benchmarks attention_gpu --device cuda:0 --only prefill,decode --rounds 3 --out $B
b 90 gemm python3 -m benchmarks gemm_llama --device cuda:0 --sections squares,skinny,llama --rounds 3 --out $B
b 60 llm-correct python3 tests/llm/gpu_check_llm.py correctness --device cuda:0 --out $B/llm_correct.jsonl
b 110 llama python3 -m benchmarks llama --device cuda:0 --shapes 1b --quick --contexts 512 --batches 1,8,32 --peers graph,eager --budget 95 --dir /tmp --out $B
b 80 overhead python3 -m benchmarks host_overhead_trees .overhead-base/old $PWD --backend cuda opencl --kind gpu --rounds 2 --reps 3 --calls 4000 --out $B
b 30 norms python3 -m benchmarks norms --device cuda:0 --rounds 3 --out $B
b 25 sampling python3 -m benchmarks sampling --device cuda:0 --out $B
b 40 hosted python3 -m benchmarks hosted_overhead --quick --device cuda:0 --java-home /tmp/jre --out $B
echo "=== end $(date +%T)"; ls $B
