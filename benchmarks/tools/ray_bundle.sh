#!/usr/bin/env bash
# A Ray that fits the GPU machine's carry limit (64 MiB a call; Ray's cp312 wheel alone is 79 MB).
#
#   bash benchmarks/tools/ray_bundle.sh [PYVER [OUTDIR]]      # defaults: 3.12, .xfer/rayg of this checkout
#
# Downloads (pip, pinned versions, --no-deps) Ray and every wheel `pip install ray` pulls for
# CPython PYVER on manylinux x86_64, plus platformdirs (isthmus needs it; the GPU image lacks it).
# Ray's wheel is unpacked and cut down to what a local `ray.init()`, actors and the object store
# use; what goes (see PRUNE) is Ray's Java worker jar, the dashboard's web client, the libraries
# on top of Ray Core (rllib, tune, train, serve, data, llm, air) and the cloud providers of the
# autoscaler. Its three large binaries (the raylet, the GCS server, the _raylet extension) lose
# their symbol tables (strip --strip-unneeded: the dynamic symbols stay). The other wheels stay
# wheels: the GPU side installs only those its image lacks (benchmarks/tools/ray_deps.py).
# Result: OUTDIR/ray-<version>-cp<XY>-lean.tar.xz (xz -9e, one thread, sorted names, zero
# mtimes, so the same inputs give the same bytes) and its .sha256. Layout inside:
#   rayg/site/ray, rayg/site/ray-<version>.dist-info   (PYTHONPATH=.../rayg/site)
#   rayg/whl/*.whl                                      (Ray's dependencies and platformdirs)
#   rayg/BUNDLE.txt                                     (versions, what was pruned, sizes)
# The cp311 variant (same procedure) is what tests/ray was run against on the 3.11 CPU machine.
set -euo pipefail
PYVER=${1:-3.12}
ROOT=$(git rev-parse --show-toplevel)
OUTDIR=${2:-$ROOT/.xfer/rayg}
PIP=${PIP:-python3 -m pip}
RAY_VERSION=2.60.0
# What `pip install ray==2.60.0` resolved on 2026-12-03 (pinned so a rebuild is the same bundle).
DEPS="click==8.5.1 filelock==4.3.1 jsonschema==4.26.0 attrs==26.1.0 jsonschema-specifications==2025.9.1
      referencing==0.37.0 rpds-py==2026.9.1 typing-extensions==4.16.0 msgpack==1.2.4 packaging==26.4
      protobuf==7.36.2 pyyaml==6.0.4 requests==2.34.2 charset-normalizer==3.5.3 idna==3.20 urllib3==2.8.0
      certifi==2026.10.19.post1 platformdirs==4.14.9"
PRUNE="ray/jars ray/dashboard/client ray/rllib ray/tune ray/train ray/serve ray/data ray/llm ray/air
       ray/autoscaler/aws ray/autoscaler/gcp ray/autoscaler/azure ray/autoscaler/aliyun ray/autoscaler/vsphere
       ray/autoscaler/_private/aws ray/autoscaler/_private/gcp ray/autoscaler/_private/_azure
       ray/autoscaler/_private/aliyun ray/autoscaler/_private/vsphere"
STRIP="ray/_raylet.so ray/core/src/ray/raylet/raylet ray/core/src/ray/gcs/gcs_server"

tag=cp${PYVER/./}
work=${TMPDIR:-/tmp}/ray_bundle-$tag
cache=$work/download
stage=$work/rayg
mkdir -p "$cache" "$OUTDIR"
rm -rf "$stage" && mkdir -p "$stage/site" "$stage/whl"
echo "$(date +%T) download ($tag)"
# shellcheck disable=SC2086
$PIP download -q --no-deps --only-binary=:all: --python-version "$PYVER" --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform manylinux_2_5_x86_64 --platform manylinux1_x86_64 \
  -d "$cache" "ray==$RAY_VERSION" $DEPS
for d in $DEPS; do  # exactly the pinned wheels, whatever else the cache holds
  name=${d%%==*}; version=${d#*==}
  found=$(ls "$cache" | grep -iE "^${name//-/[-_]}-${version}-" | grep -E "py3-none|$tag|abi3" | head -1)
  [ -n "$found" ] || { echo "no wheel of $d for $tag in $cache" >&2; exit 1; }
  cp "$cache/$found" "$stage/whl/"
done
wheel=$(ls "$cache"/ray-$RAY_VERSION-$tag-$tag-*.whl)
echo "$(date +%T) unpack and prune $(basename "$wheel")"
unzip -q "$wheel" -d "$stage/site"  # unzip keeps the executables' mode bits (python -m zipfile does not)
before=$(du -sb "$stage/site" | cut -f1)
for p in $PRUNE; do
  [ -e "$stage/site/$p" ] || { echo "nothing to prune at $p (another Ray layout?)" >&2; exit 1; }
  rm -rf "${stage:?}/site/$p"
done
for f in $STRIP; do strip --strip-unneeded "$stage/site/$f"; done
# RECORD lists the pruned files; pip is never run on this tree, but a stale RECORD should not claim them
rm -f "$stage"/site/ray-*.dist-info/RECORD
after=$(du -sb "$stage/site" | cut -f1)
{
  echo "ray $RAY_VERSION for CPython $PYVER manylinux x86_64, from $(basename "$wheel") ($(stat -c %s "$wheel") bytes)"
  echo "built by benchmarks/tools/ray_bundle.sh (no date: the same inputs give the same archive)"
  echo "unpacked: $before bytes; pruned and stripped: $after bytes"
  echo "pruned: $PRUNE" | tr -s ' \n' ' '; echo
  echo "stripped (--strip-unneeded): $STRIP"
  echo "wheels:"; ls -l "$stage/whl" | awk 'NR>1 {print "  " $9, $5}'
} > "$stage/BUNDLE.txt"
cat "$stage/BUNDLE.txt"
archive=$OUTDIR/ray-$RAY_VERSION-$tag-lean.tar.xz
echo "$(date +%T) compress (xz -9e, one thread: a few minutes)"
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$work" -cf - rayg \
  | nice xz -9e -T1 > "$archive.part"
mv "$archive.part" "$archive"
(cd "$OUTDIR" && sha256sum "$(basename "$archive")" > "$(basename "$archive").sha256")
echo "$(date +%T) wrote $archive ($(stat -c %s "$archive") bytes)"
