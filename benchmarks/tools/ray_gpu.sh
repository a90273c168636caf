#!/usr/bin/env bash
# isthmus on Ray on the one-GPU machine (issue 14: shards of >= 10 ms of device work at >= 90% of the
# single-process throughput). That machine has no Ray and no network: the bundle of
# benchmarks/tools/ray_bundle.sh travels with the call. From the repository root there:
#   run(carry=[".xfer/rayg"], command="bash benchmarks/tools/ray_gpu.sh")
# Steps (each line starts with a timestamp): unpack the bundle to /tmp, install the Ray
# dependencies the image lacks (ray_deps.py), check `import ray` (one line saying what is missing
# if it fails), then benchmarks/ray_overhead.py on cuda:0 with shards of about 5, 10, 20 and 40 ms
# of direct-loop time: one actor, and two actors sharing the GPU. Everything stays under 5 minutes.
# Files under $OUT: ray_overhead-cuda-<gpu>.md/.json (the results), ray_gpu.log (this script's
# output), env.txt (GPU, CPUs, memory, /dev/shm, versions); ray-logs.tgz if the benchmark failed.
# Knobs (environment): RAYG_BUNDLE (folder of the archive, .xfer/rayg), RAYG_DEVICE (cuda:0),
# RAYG_MS (5,10,20,40), RAYG_ARGS (more ray_overhead arguments; default: the GPU catalog shape),
# RAYG_BUDGET_S (300: the benchmark is cut off so that the whole script ends within it),
# RAYG_CHECK_ONLY=1 (stop after the import check), PYTHON (python3).
set -u -o pipefail
t0=$(date +%s)
OUT=${OUT:-/tmp/rayg-out}
mkdir -p "$OUT"
exec > >(tee "$OUT/ray_gpu.log") 2>&1
stamp() { echo "=== $(date +%T) (+$(( $(date +%s) - t0 )) s) $*"; }
fail() { echo "RAYG FAILED: $*"; exit 2; }
py=${PYTHON:-python3}
bundle=${RAYG_BUNDLE:-.xfer/rayg}
dest=${RAYG_DEST:-/tmp/rayg}
budget=${RAYG_BUDGET_S:-300}

stamp "unpack"
tag=cp$($py -c 'import sys; print(f"{sys.version_info[0]}{sys.version_info[1]}")')
archive=$(ls "$bundle"/ray-*-"$tag"-lean.tar.xz 2>/dev/null | head -1)
[ -n "$archive" ] || fail "no ray-*-$tag-lean.tar.xz in $bundle: build it here with benchmarks/tools/ray_bundle.sh" \
  "(Python $($py -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')) into $bundle of the checkout the run sends, and carry it"
(cd "$(dirname "$archive")" && sha256sum -c --quiet "$(basename "$archive").sha256") || fail "$archive does not match its .sha256"
rm -rf "$dest" && mkdir -p "$dest" && tar xJf "$archive" -C "$dest" || fail "could not unpack $archive into $dest"
head -3 "$dest/rayg/BUNDLE.txt"

stamp "dependencies"
$py benchmarks/tools/ray_deps.py "$dest/rayg" "$dest/deps" 'platformdirs>=3' || fail "ray_deps.py (above) could not install Ray's dependencies"
export PYTHONPATH=$dest/rayg/site:$dest/deps:$PWD/python${PYTHONPATH:+:$PYTHONPATH}
export ISTHMUS_KERNEL_DIR=${ISTHMUS_KERNEL_DIR:-$PWD/opencl} PYTHONUNBUFFERED=1

stamp "import check"
$py - <<'EOF' || fail "import ray / isthmus (the line above says what)"
import sys
try:
    import ray
    import isthmus
    import isthmus.ray  # noqa: F401
except ModuleNotFoundError as exc:
    print(f"IMPORT FAILED: module {exc.name!r} is missing ({exc}): pruned from the bundle (ray_bundle.sh PRUNE) "
          "or a dependency not in it (DEPS)")
    sys.exit(3)
except Exception as exc:  # noqa: BLE001 - one line that says what broke
    print(f"IMPORT FAILED: {type(exc).__name__}: {exc}")
    sys.exit(3)
print(f"ray {ray.__version__} from {ray.__file__}; isthmus from {isthmus.__file__}; "
      f"devices {[d.id for d in isthmus.devices()]}")
EOF
{
  nvidia-smi -L 2>&1; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv 2>&1
  echo "cpus: $(nproc)"; free -g; df -h /dev/shm /tmp; uname -r
  $py -c 'import sys, numpy, cupy; print(sys.version); print("numpy", numpy.__version__, "cupy", cupy.__version__)' 2>&1
} > "$OUT/env.txt"
cat "$OUT/env.txt"
[ "${RAYG_CHECK_ONLY:-0}" = 1 ] && { stamp "check only: done"; exit 0; }

left=$(( budget - ($(date +%s) - t0) - 15 ))  # 15 s for packing the logs
stamp "ray_overhead on ${RAYG_DEVICE:-cuda:0} (cut off after $left s)"
# GPU catalog: 4096 items of 256 floats (4 MB); a query row is 1 KB and about 2 MFLOP of gemm, so
# device work, not the copy of the queries, sets a shard's time
# shellcheck disable=SC2086
timeout "$left" $py -m benchmarks ray_overhead --device "${RAYG_DEVICE:-cuda:0}" --ms "${RAYG_MS:-5,10,20,40}" \
  ${RAYG_ARGS:---items 4096 --dim 256 --rounds 3 --pass-ms 600 --shards 40} --out "$OUT"
rc=$?
if [ $rc -ne 0 ]; then
  echo "RAYG FAILED: ray_overhead exited with $rc (124: cut off by the time budget); Ray's logs in ray-logs.tgz"
  tar czf "$OUT/ray-logs.tgz" -C /tmp/ray session_latest/logs 2>/dev/null
fi
stamp "done (rc $rc)"
exit $rc
