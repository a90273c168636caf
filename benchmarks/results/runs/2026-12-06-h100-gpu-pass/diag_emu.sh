# (untracked) variants of the emulated attention on the GPU machine's PoCL, in parallel
B='{"WARPS":1,"MI":2,"BKV":32,"STAGES":3,"QREG":0}'; F='{"WARPS":1,"MI":1,"BKV":16,"STAGES":2,"QREG":1}'
export POCL_MAX_PTHREAD_COUNT=1
for v in "bfloat16 $B" "float16 $B" "bfloat16 $F" "bfloat16 {\"WARPS\":1,\"MI\":1,\"BKV\":32,\"STAGES\":3,\"QREG\":0}" \
         "bfloat16 {\"WARPS\":1,\"MI\":2,\"BKV\":16,\"STAGES\":2,\"QREG\":1}" "bfloat16 {\"WARPS\":1,\"MI\":2,\"BKV\":32,\"STAGES\":2,\"QREG\":0}" \
         "bfloat16 {\"WARPS\":1,\"MI\":2,\"BKV\":32,\"STAGES\":3,\"QREG\":1}"; do
  set -- $v; POCL_CACHE_DIR=$(mktemp -d) timeout 200 python3 diag_emu.py $1 "$2" 2>&1 | tail -1 &
done
POCL_CACHE_DIR=$(mktemp -d) POCL_EXTRA_BUILD_FLAGS=-cl-opt-disable timeout 200 python3 diag_emu.py bfloat16 "$B" 2>&1 | tail -1 &
POCL_CACHE_DIR=$(mktemp -d) POCL_WORK_GROUP_METHOD=loops timeout 200 python3 diag_emu.py bfloat16 "$B" 2>&1 | tail -1 &
POCL_CACHE_DIR=$(mktemp -d) POCL_WORK_GROUP_METHOD=cbs timeout 200 python3 diag_emu.py bfloat16 "$B" 2>&1 | tail -1 &
wait
