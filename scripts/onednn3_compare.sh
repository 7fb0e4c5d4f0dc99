#!/usr/bin/env bash
# scripts/onednn3_compare.sh — is oneDNN 3.x worth porting cnnbench's CPU backend to? Builds bench/onednn_layers.cc against Debian's oneDNN 2.6 (CMake target
# onednn_layers) and against each oneDNN 3.x prefix given (default /tmp/onednn3), runs them
# alternating for R rounds (2.6, 3.x, 2.6, 3.x, ...), and writes each run's JSON and log and a
# summary.md (scripts/onednn3_summary.py: per layer and direction, step-weighted totals per
# model and precision, the ratio 3.x/2.6 with its range over rounds, go or no-go).
#
#   scripts/onednn3_compare.sh [PREFIX ...] [--rounds 3] [--iterations 10] [--warmup 2]
#                              [--threads 2] [--out results/onednn3] [--build build] [-- HARNESS FLAGS]
#   scripts/onednn3_compare.sh --smoke     # 2 resnet50 layers, 3 iterations, 1 round, into /tmp
#
# A prefix holds include/oneapi/dnnl/ and lib/libdnnl.so. Intel's wheels install so into a
# virtual environment (pip install --target leaves the libraries out):
#   python3 -m venv /tmp/onednn3 && /tmp/onednn3/bin/pip install onednn-devel==2026.1.0
# That build (oneDNN 3.13) runs its CPU engine on SYCL with TBB threads: it needs the OpenCL
# CPU runtime the wheels bring (this script points OCL_ICD_FILENAMES at it). oneDNN 3.2 built
# on OpenMP/libgomp, as Debian's 2.6 is, comes from onednn-devel-cpu-gomp==2023.2.0.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
COMMAND="scripts/onednn3_compare.sh $*"
PREFIXES=() EXTRA=()
ROUNDS=3 ITERATIONS=10 WARMUP=2 THREADS=${OMP_NUM_THREADS:-2} OUT="" SMOKE=0 BUILD=$ROOT/build

usage() { sed -n '9,11p' "$0" | sed 's/^# \{0,1\}//'; }
while (($#)); do
  case $1 in
    --smoke) SMOKE=1 ;;
    --rounds) ROUNDS=$2; shift ;;
    --iterations) ITERATIONS=$2; shift ;;
    --warmup) WARMUP=$2; shift ;;
    --threads) THREADS=$2; shift ;;
    --out) OUT=$2; shift ;;
    --build) BUILD=$2; shift ;;
    --) shift; EXTRA=("$@"); break ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "onednn3_compare.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) PREFIXES+=("$(cd "$1" && pwd)") ;;
  esac
  shift
done
((${#PREFIXES[@]})) || PREFIXES=(/tmp/onednn3)
if ((SMOKE)); then
  ROUNDS=1 ITERATIONS=3 WARMUP=1
  EXTRA=(--models resnet50 --layers "conv_64x56x56_k3s1p1_to64,linear_2048_to1000" "${EXTRA[@]}")
  OUT=${OUT:-${TMPDIR:-/tmp}/onednn3_smoke}
fi
OUT=${OUT:-$ROOT/results/onednn3}
mkdir -p "$OUT"

# "3.13.2" from a dnnl_version.h
version_of() {
  awk '/#define DNNL_VERSION_(MAJOR|MINOR|PATCH)/ { v = v sep $3; sep = "." } END { print v }' "$1/oneapi/dnnl/dnnl_version.h"
}

# Debian's 2.6, in the normal build (configured here if it is not yet)
[[ -f $BUILD/CMakeCache.txt ]] || cmake -S "$ROOT" -B "$BUILD" > /dev/null
cmake --build "$BUILD" --target onednn_layers -j "$(nproc)" | grep -v "^\[" || true
BINS=("$BUILD/onednn_layers") VERSIONS=("$(version_of /usr/include)") ENVS=("")

# each 3.x prefix: the same source, with the flags CMake's Release build uses
mkdir -p "$BUILD/onednn3"
for prefix in "${PREFIXES[@]}"; do
  if [[ ! -f $prefix/include/oneapi/dnnl/dnnl.hpp || ! -e $prefix/lib/libdnnl.so ]]; then
    echo "onednn3_compare.sh: no oneDNN headers and library in $prefix; install one with" >&2
    echo "  python3 -m venv $prefix && $prefix/bin/pip install onednn-devel==2026.1.0" >&2
    exit 1
  fi
  version=$(version_of "$prefix/include")
  bin=$BUILD/onednn3/onednn_layers_$version
  if [[ ! -x $bin || $ROOT/bench/onednn_layers.cc -nt $bin || $BUILD/libcnnbench_models.a -nt $bin ]]; then
    echo "building $bin against $prefix"
    "${CXX:-g++}" -std=c++20 -O3 -DNDEBUG -Wall -Wextra -fopenmp -I"$ROOT" -I"$prefix/include" \
      "$ROOT/bench/onednn_layers.cc" "$BUILD/libcnnbench_models.a" -o "$bin" \
      -L"$prefix/lib" -ldnnl -Wl,--disable-new-dtags,-rpath,"$prefix/lib"
  fi
  run_env=""
  if grep -q 'define DNNL_CPU_RUNTIME DNNL_RUNTIME_SYCL' "$prefix/include/oneapi/dnnl/dnnl_config.h"; then
    # the wheel's OpenCL ICD file names a path that does not exist: name the CPU runtime itself
    run_env=OCL_ICD_FILENAMES=$prefix/lib/libintelocl.so
  fi
  BINS+=("$bin") VERSIONS+=("$version") ENVS+=("$run_env")
done

rm -f "$OUT"/round*_onednn*.json "$OUT"/round*_onednn*.log
load=$(cut -d' ' -f1 /proc/loadavg)
if awk -v l="$load" 'BEGIN { exit !(l > 0.5) }'; then
  echo "onednn3_compare.sh: warning: load average $load: other work on these CPUs slows OpenMP's" \
    "barriers (2.6) more than TBB's work stealing (the 3.13 wheel); take figures on a quiet machine" >&2
fi
START="$(date -u +%Y-%m-%dT%H:%M:%SZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"
for ((round = 1; round <= ROUNDS; round++)); do
  for i in "${!BINS[@]}"; do
    name=round${round}_onednn${VERSIONS[i]}
    echo "== round $round of $ROUNDS: oneDNN ${VERSIONS[i]} ($name)"
    # shellcheck disable=SC2086  # ENVS[i] is empty or one NAME=value word
    env ${ENVS[i]} "${BINS[i]}" --threads "$THREADS" --iterations "$ITERATIONS" --warmup "$WARMUP" \
      --out "$OUT/$name.json" "${EXTRA[@]}" 2>&1 | tee "$OUT/$name.log"
  done
done
END="$(date -u +%Y-%m-%dT%H:%M:%SZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"

python3 "$ROOT/scripts/onednn3_summary.py" "$OUT"/round*_onednn*.json -o "$OUT/summary.md" \
  --note "command: \`$COMMAND\`" \
  --note "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs; started $START; ended $END"
cat "$OUT/summary.md"
echo "wrote $OUT/summary.md"
