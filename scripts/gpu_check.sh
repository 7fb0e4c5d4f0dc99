#!/usr/bin/env bash
# Checks cnnbench on a lent GPU machine in short, resumable stages: the GPU tests, the
# benchmark table against PyTorch eager and torch.compile, and an ncu profile. That machine has
# PyTorch with its CUDA libraries but none of our Debian ones, so the build happens here and
# `pack` bundles the binaries with every library they need except glibc, the driver and the CUDA
# wheels' (cuDNN, cuBLAS, NCCL: about 1.3 GB, far over the carry limit), which come from the remote
# python's site-packages/nvidia/*/lib.
#   scripts/gpu_check.sh pack                      here: build/ -> build-gpu-carry/ (bundle, manifest)
#   scripts/gpu_check.sh test|converge|bench [--quick]|maxbatch|profile|all [--deadline S] [--reps N] [--sides "cnnbench eager compile"]
#                        [--configs "resnet50_b256 resnet50_b32 vgg16_b256"] [--tests GTEST_FILTER] [--epochs N]   there
#   scripts/gpu_check.sh exec BINARY ARGS...       there: a carried binary with its libraries
#   scripts/gpu_check.sh unpack FILES_AT           here: what a call brought back -> results/gpu_<device>/check/
# The device tool's run (command, carry, timeout_s), then `unpack` with the reply's files_at:
#   command:   set -o pipefail; scripts/gpu_check.sh all --deadline 480 2>&1 | tee $OUT/gpu_check.log
#   carry:     ["build-gpu-carry"]
#   timeout_s: 560
# A stage resumes from /tmp/cnnbench_gpu/state on a warm machine, else from results/gpu_<device>/check
# in the tree, where either holds this bundle's results (a new pack runs every stage afresh); it writes $OUT/gpu_check/<device>/{summary.md,bench.csv,tests_summary.tsv,state.tar.gz}.
# Exit 0: done or stopped at the deadline (the rest left for the next call); 1: error; 2: usage;
# 77: no GPU here. Env: GPU_CHECK_WORK (/tmp/cnnbench_gpu), GPU_CHECK_NVIDIA_LIBS (skip the lookup),
# GPU_CHECK_FMNIST (pack: Fashion-MNIST's idx files, /usr/share/datasets/fashion-mnist).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$ROOT/build
CARRY=$ROOT/build-gpu-carry
WORK=${GPU_CHECK_WORK:-/tmp/cnnbench_gpu}
FMNIST=${GPU_CHECK_FMNIST:-/usr/share/datasets/fashion-mnist}
OUT=${OUT:-$BUILD/gpu_check_out}
LIMIT=$((64 * 1024 * 1024))  # the device tool's: working tree plus carried paths
START=$(date +%s)

say() { echo "gpu_check: $*"; }
die() { echo "gpu_check: $*" >&2; exit 1; }
usage() { sed -n '8,13p' "$0" >&2; exit 2; }
left() { echo $((DEADLINE - $(date +%s))); }
upto() { local t=$(($(left) - $1)); echo $((t > 1 ? t : 1)); }  # a timeout ending $1 s before the deadline (never 0: none)
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
bytes() { local n=0 s; while IFS= read -r -d '' f; do s=$(stat -c %s "$f" 2>/dev/null) && n=$((n + s)); done; echo "$n"; }

# ---- pack (here) ---------------------------------------------------------------------------
gpu_tests() {  # "binary filter" for each test source with GPU cases, the two long ones (about 3 minutes) last
  local src
  for src in "$ROOT"/tests/test_*.cc; do
    case $(basename "$src") in test_cuda_memory.cc | test_cuda_vs_ref.cc) ;; *) gpu_test_line "$src" ;; esac
  done
  for src in "$ROOT"/tests/test_cuda_memory.cc "$ROOT"/tests/test_cuda_vs_ref.cc; do gpu_test_line "$src"; done
}

gpu_test_line() {  # CUDA/NCCL suites whole, else their SKIP_WITHOUT_GPU tests
  local src=$1 name
  grep -q 'SKIP_WITHOUT_GPU' "$src" || return 0
  name=$(basename "$src" .cc)
  case $name in
    test_cuda* | test_nccl* | test_dropout) echo "$name *" ;;  # whole: their GPU cases skip in SetUp or a fixture
    *) echo "$name $(sed -nE 's/^TEST(_F|_P)?\(([A-Za-z0-9_]+), *([A-Za-z0-9_]+)\).*/T \2.\3/p; /SKIP_WITHOUT_GPU\(\)/s/.*/S/p' "$src" |
      awk '$1 == "T" { t = $2 } $1 == "S" && t { printf "%s%s", n++ ? ":" : "", t; t = "" }')" ;;
  esac
}

needed_libs() {  # "soname path" of what the files need, less glibc, the driver and the CUDA wheels' libraries
  ldd "$@" | awk '$2 == "=>" && $3 == "not" { print "MISSING", $1 } $2 == "=>" && $3 ~ /^\// { print $1, $3 }' | sort -u |
    grep -Ev '^(libc|libm|libdl|librt|libpthread|libresolv|libutil|libanl|libmvec)\.so|^ld-linux|^libcuda\.so|^libnvidia-|^lib(cudnn|cublas|cublasLt|nccl|cudart|nvrtc|nvJitLink)[._]' || true
}

stage_pack() {
  local tests names=(cnnbench) n f bin stage=$BUILD/gpu-carry-stage
  shopt -s nullglob
  tests=$(gpu_tests)
  while read -r n _; do names+=("$n"); done <<<"$tests"
  [ -f "$BUILD/CMakeCache.txt" ] || cmake -S "$ROOT" -B "$BUILD"
  # every binary packed brought up to date (seconds where it is): what the GPU runs is this tree
  say "building ${names[*]} (up to date: nothing to do)"
  cmake --build "$BUILD" -j2 --target "${names[@]}" >/dev/null
  rm -rf "$stage" && mkdir -p "$stage/bin" "$stage/lib/openmpi" "$stage/lib/pmix" "$CARRY"
  for n in "${names[@]}"; do
    bin=$BUILD/$n; [ -x "$bin" ] || bin=$BUILD/tests/$n
    [ -x "$bin" ] || die "no $n in $BUILD (built without CUDA? cmake must find nvcc, cuDNN and NCCL)"
    strip --strip-debug -o "$stage/bin/$n" "$bin"
  done
  # Open MPI opens its components (and PMIx its plugins) at MPI_Init: cnnbench runs as a singleton
  local ompi pmix
  ompi=$(ompi_info --path pkglibdir | awk '{ print $2 }')
  cp "$ompi"/*.so "$stage/lib/openmpi/"
  pmix=$(ldd "$ompi/mca_pmix_ext3x.so" 2>/dev/null | awk '$1 ~ /^libpmix/ { print $3 }')
  [ -z "$pmix" ] || cp "$(dirname "$pmix")"/pmix/*.so "$stage/lib/pmix/" 2>/dev/null || true
  needed_libs "$stage"/bin/* "$stage"/lib/openmpi/*.so "$stage"/lib/pmix/*.so >"$stage/libs.txt"
  ! grep '^MISSING' "$stage/libs.txt" || die "ldd finds no library above here"
  while read -r n f; do cp -L "$f" "$stage/lib/$n"; done <"$stage/libs.txt"
  echo "$tests" >"$stage/tests.txt"
  write_manifest "$stage" >"$stage/manifest.txt"
  tar -C "$stage" -czf "$CARRY/bundle.tar.gz" . && cp "$stage/manifest.txt" "$CARRY/"
  # real data for the converge stage: Fashion-MNIST's test set and its first 30,000 training images
  rm -rf "$CARRY/fmnist"
  if [ -f "$FMNIST/train-images-idx3-ubyte.gz" ]; then python3 "$ROOT/scripts/fashion_mnist_subset.py" "$FMNIST" "$CARRY/fmnist" 30000
  else say "no $FMNIST (Debian's dataset-fashion-mnist): the converge stage will have no data"; fi
  local raw carry tree
  raw=$(du -sb "$stage" | cut -f1) carry=$(find "$CARRY" -type f -print0 | bytes)
  rm -rf "$stage"
  tree=$(git -C "$ROOT" ls-files -co --exclude-standard -z | (cd "$ROOT" && bytes))
  say "carried: ${names[*]}, $(grep -c '^  lib/[^/]*$' "$CARRY/manifest.txt") libraries, $(grep -c '^  lib/openmpi/' "$CARRY/manifest.txt") Open MPI components ($(mib "$raw") unpacked)"
  say "build-gpu-carry: $(mib "$carry") + working tree $(mib "$tree") = $(mib $((carry + tree))) of the 64 MiB a call may carry"
  ((carry + tree <= LIMIT)) || die "over the device tool's 64 MiB: trim the working tree or the bundle"
}

write_manifest() {  # what the bundle was built from and what it needs there
  local cudnn=/usr/local/cuda/include/cudnn_version.h nccl=/usr/local/cuda/include/nccl.h
  echo "packed $(date -u +%FT%TZ) on $(hostname) from $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD || echo ' + uncommitted changes')"
  echo "compiler: $(head -1 < <(c++ --version)); $(nvcc --version | tail -2 | head -1)"
  echo "built against: cuDNN $(awk '/define CUDNN_(MAJOR|MINOR|PATCHLEVEL) /{ printf "%s%s", n++ ? "." : "", $3 }' "$cudnn" 2>/dev/null), NCCL $(awk '/define NCCL_(MAJOR|MINOR|PATCH) /{ printf "%s%s", n++ ? "." : "", $3 }' "$nccl" 2>/dev/null), $(ompi_info --version | head -1), oneDNN $(readlink -f "$(grep '^libdnnl' "$1/libs.txt" | cut -d' ' -f2)" | sed 's/.*\.so\.//')"
  echo "needs there: glibc >= $(objdump -T "$1"/bin/* "$1"/lib/*.so* 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1 | cut -d_ -f2), the driver's libcuda, and libcudnn.so.9, libcublas(Lt).so.13, libnccl.so.2 from site-packages/nvidia/*/lib"
  echo "tests' cnnbench: $BUILD/cnnbench"  # the path compiled into the tests that launch the binary
  echo "GPU tests:"; sed 's/^/  /' "$1/tests.txt"
  echo "files:"; (cd "$1" && find bin lib -type f -printf '  %p %s\n' | sort)
}

# ---- there ---------------------------------------------------------------------------------
find_gpu() {  # DEV: h100, h200, a100, rtx4090...
  GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1) || true
  [ -n "$GPU" ] || { echo "gpu_check: no GPU: $(command -v nvidia-smi >/dev/null && echo 'nvidia-smi lists none' || echo 'nvidia-smi not found')" >&2; exit 77; }
  DEV=$(tr '[:upper:]' '[:lower:]' <<<"$GPU" | sed -E 's/^nvidia +//; s/^(tesla|geforce|quadro) +//; s/^rtx +/rtx/; s/^([a-z0-9]+).*/\1/')
}

setup() {  # the bundle unpacked once per machine, the libraries' environment, the resumable state
  [ -f "$CARRY/bundle.tar.gz" ] || die "no build-gpu-carry/bundle.tar.gz: run scripts/gpu_check.sh pack first and carry build-gpu-carry"
  local sum; sum=$(sha256sum <"$CARRY/bundle.tar.gz")
  BUNDLE=${sum%% *}
  C=$WORK/carry
  if [ "$(cat "$C/.sum" 2>/dev/null)" != "$sum" ]; then
    rm -rf "$C" && mkdir -p "$C" && tar -C "$C" -xzf "$CARRY/bundle.tar.gz" && echo "$sum" >"$C/.sum"
  fi
  local nv=${GPU_CHECK_NVIDIA_LIBS-$(env -u LD_LIBRARY_PATH python3 -c 'import glob, nvidia
print(":".join(sorted({d for p in nvidia.__path__ for d in glob.glob(p + "/*/lib")})))' 2>/dev/null || true)}
  [ -n "$nv" ] || say "warning: no site-packages/nvidia/*/lib found: cuDNN, cuBLAS and NCCL must come from the system"
  # only our binaries get the carried libraries: PyTorch runs with LD_LIBRARY_PATH unset (else it
  # loads another cuDNN), nvidia-smi and ncu with the machine's own (not our older libstdc++)
  CENV=(env "LD_LIBRARY_PATH=$C/lib${nv:+:$nv}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
  PY=(env -u LD_LIBRARY_PATH python3)
  export OMPI_MCA_mca_base_component_path=$C/lib/openmpi PMIX_MCA_mca_base_component_path=$C/lib/pmix \
    OMPI_MCA_ess_singleton_isolated=1 OMPI_MCA_mca_base_component_show_load_errors=0 OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader
  local t; t=$(sed -n 's/^tests. cnnbench: //p' "$C/manifest.txt")  # tests launch cnnbench by its path here
  [ -e "$t" ] || { mkdir -p "$(dirname "$t")" && ln -sfn "$C/bin/cnnbench" "$t"; } || say "warning: no $t: test_timeline's GPU test will fail"
}

state() {  # S: this device's results for this bundle, kept on the machine between calls, else seeded
  # from the tree's when those are of the same bundle: a new build runs every stage afresh
  S=$WORK/state/gpu_$DEV/check
  local tree=$ROOT/results/gpu_$DEV/check
  if [ -d "$S" ] && [ "$(cat "$S/bundle.sum" 2>/dev/null)" != "$BUNDLE" ]; then rm -rf "$S"; fi
  if [ ! -d "$S" ]; then
    mkdir -p "$S"
    if [ "$(cat "$tree/bundle.sum" 2>/dev/null)" = "$BUNDLE" ]; then
      cp -r "$tree/." "$S/"
      say "state: resuming this bundle's results from results/gpu_$DEV/check"
    else
      say "state: a bundle not run here before: every stage from the start"
    fi
    echo "$BUNDLE" >"$S/bundle.sum"
    head -1 "$C/manifest.txt" >"$S/bundle.txt" 2>/dev/null || true
  fi
  mkdir -p "$S/tests" "$S/bench" "$S/profile"
}

tried() {  # done: a row for the key that did not time out, or two that did
  awk -F'\t' -v k="$2" '$1 == k { if ($2 == "timeout") t++; else d = 1 } END { exit !(d || t >= 2) }' "$1" 2>/dev/null
}

stage_test() {
  { date -u +%FT%TZ; nvidia-smi; "${PY[@]}" -m pip list 2>/dev/null | grep -Ei '^(torch|nvidia-(cudnn|nccl|cublas))'; } >"$S/tests/machine.txt" 2>&1 || true
  ! "${CENV[@]}" ldd "$C"/bin/* | grep 'not found' || die "the carried binaries miss libraries there (above)"
  local name filter rc st sec log t0 sum=$S/tests/summary.tsv
  count() { sed -nE "s/^\[  $1 *\] ([0-9]+) tests?.*/\1/p" "$log" | tail -1 | grep . || echo 0; }
  while read -r name filter; do
    # --tests: those alone, in every binary, keyed by the filter (another filter runs afresh)
    if [ -n "$TESTS" ]; then filter=$TESTS name=$name@$(printf %s "$TESTS" | md5sum | cut -c1-8); fi
    tried "$sum" "$name" && continue
    (($(left) > 60)) || { say "test: deadline: $name and after left for the next call"; return 0; }
    log=$S/tests/$name.log t0=$(date +%s) rc=0
    timeout -k 5 "$(upto 10)" "${CENV[@]}" "$C/bin/${name%@*}" --gtest_filter="$filter" --gtest_color=no >"$log" 2>&1 || rc=$?
    sec=$(($(date +%s) - t0))
    case $rc in 0) st=pass ;; 124 | 137) st=timeout ;; *) st=fail ;; esac
    [ "$st$(count PASSED)" != pass0 ] || st=skipped  # all skipped: the binary saw no GPU (the log says why)
    ! grep -q '^\[==========\] Running 0 tests' "$log" || st=none  # --tests matched none of this binary's
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$st" "$(count PASSED)" "$(count FAILED)" "$(count SKIPPED)" "$sec" >>"$sum"
    say "test: $name $st (passed $(count PASSED), failed $(count FAILED), skipped $(count SKIPPED); $sec s)"
    grep -m1 '^CUDA runtime' "$log" | sed 's/^/gpu_check:   /' || true  # test_cuda_ops: the versions loaded
  done <"$C/tests.txt"
}

bench_run() {  # config model batch impl rep: one row of bench.csv
  local cfg=$1 model=$2 batch=$3 impl=$4 rep=$5 key="$MODE/$1/$4/$5" csv=$S/bench.csv
  local f=$S/bench/${MODE}_${cfg}_${impl}_$rep rc=0 t0 cmd est sampler st fig mem
  tried "$csv" "$key" && return 0
  # the time it needs: this run's last wall time, else the slowest of its side, else a guess (compile: a cold cache)
  est=$([ "$impl" = compile ] && echo 150 || echo 45)
  [ ! -f "$csv" ] || est=$(awk -F'\t' -v c="$cfg" -v i="$impl" -v e="$est" '$4 == i && $8 > m { m = $8 }
    $3 == c && $4 == i { w = $8 } END { print w ? w : m ? m : e }' "$csv")
  (($(left) > est + 15)) || { LEFT+=("$key (~$est s)"); return 0; }
  if [ "$impl" = cnnbench ] || [ "$impl" = unfused ] || [ "$impl" = graphs ]; then
    cmd=("${CENV[@]}" "$C/bin/cnnbench" --model="$model" --batch_size="$batch" --use_fp16 --device=gpu --num_batches="$STEPS"
      --num_warmup_batches="$WARMUP" --benchmark_log_dir="$S/bench/cnnbench_results" --result_json="$f.json"
      --algorithm_cache="$S/algorithm_cache.txt"  # a shape's first run searches, later runs read its choices
      --optimizer=momentum --nesterov=false --weight_decay_on_batch_norm  # torch.optim.SGD's update, as the peer
      --fp16_enable_auto_loss_scale --fp16_inc_loss_scale_every_n=2000)  # as the peer's GradScaler (65536, x2 per 2000)
    [ "$impl" != unfused ] || cmd+=(--fuse_ops=false)  # every op alone, to compare
    [ "$impl" != graphs ] || cmd+=(--cuda_graphs)      # forward and backward replayed as CUDA graphs
  else
    cmd=("${PY[@]}" "$ROOT/scripts/pytorch_gpu_reference.py" --model "$model" --batch_size "$batch"
      --precision fp16 --warmup "$WARMUP" --steps "$STEPS" --json "$f.json")
    [ "$impl" = eager ] || cmd+=(--compile)
  fi
  # the GPU's memory in use, sampled every 200 ms: the same measure for both sides
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 >"$f.mem" 2>/dev/null &
  sampler=$! t0=$(date +%s)
  rm -f "$f.json"
  timeout -k 5 "$(upto 10)" "${cmd[@]}" >"$f.log" 2>&1 || rc=$?
  kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null || true
  [ ! -s "$f.json" ] || "${PY[@]}" - "$f.json" "$impl" "$batch" >"$f.fig" <<'EOF' || true
import json, sys
d, impl, batch = json.load(open(sys.argv[1])), sys.argv[2], int(sys.argv[3])
if impl in ("cnnbench", "unfused", "graphs"):  # median step as PyTorch's median; throughput as its mean
    s = d["summary"]; print(batch / s["step_time_p50_sec"], s["images_per_sec"], "", "", sep="\t")
else:
    print(d["images_per_sec_median"], d["images_per_sec_mean"], d["peak_memory_gib"], d.get("peak_memory_reserved_gib", ""), sep="\t")
EOF
  st=ok; [ "$rc" = 0 ] || st=fail; [ "$rc" != 124 ] && [ "$rc" != 137 ] || st=timeout
  fig=$(cat "$f.fig" 2>/dev/null || true); [ -n "$fig" ] || { [ "$st" != ok ] || st=fail; fig=$'\t\t\t'; }
  mem=$(sort -n "$f.mem" | tail -1)
  [ -f "$csv" ] || printf 'key\tstatus\tconfig\timpl\trep\tmode\tsteps\twall_s\tgpu_mem_peak_mib\timg_s_median\timg_s_mean\ttorch_allocated_gib\ttorch_reserved_gib\n' >"$csv"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$key" "$st" "$cfg" "$impl" "$rep" "$MODE" "$STEPS" "$(($(date +%s) - t0))" "$mem" "$fig" >>"$csv"
  say "bench: $key $st, $(awk -F'\t' '{ printf $1 == "" ? "no figure" : "%.0f img/s", $1 }' <<<"$fig"), GPU memory ${mem:-?} MiB, $(($(date +%s) - t0)) s"
  [ "$st" = ok ] || say "  $(grep -v '^\s*$' "$f.log" | tail -1 | cut -c1-160)"
}

stage_bench() {  # the GPU table against PyTorch, the three sides alternating run by run
  local rep c
  for ((rep = 1; rep <= REPS; rep++)); do
    for c in $CONFIGS; do  # in the order --configs gives them: the first has the time first
      for impl in $SIDES; do bench_run "$c" "${c%_b*}" "${c##*_b}" "$impl" "$rep"; done
    done
  done
  ((${#LEFT[@]} == 0)) || say "bench: deadline: ${#LEFT[@]} runs left for the next call: ${LEFT[*]}"
}

stage_maxbatch() {  # the largest resnet50 fp16 batch cnnbench trains, from 1536 (PyTorch eager's on an 80 GB H100) down
  local m=$S/maxbatch b=1536 rc log about
  [ ! -f "$m/done" ] || return 0
  mkdir -p "$m"
  while :; do
    (($(left) > 100)) || { say "maxbatch: left for the next call"; return 0; }
    log=$m/resnet50_b$b.log rc=0
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 >"$m/resnet50_b$b.mem" 2>/dev/null &
    local sampler=$!
    timeout -k 5 "$(upto 10)" "${CENV[@]}" "$C/bin/cnnbench" --model=resnet50 --batch_size=$b --use_fp16 --device=gpu \
      --num_batches=5 --num_warmup_batches=2 --benchmark_log_dir="$m/cnnbench_results" >"$log" 2>&1 || rc=$?
    kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null || true
    printf '%s\t%s\t%s\t%s\n' "$b" "$rc" "$(sort -n "$m/resnet50_b$b.mem" | tail -1)" \
      "$(grep -m1 -oE 'GPU out of memory[^"]*|total images/sec: [0-9.]+' "$log" | head -1)" >>"$m/runs.tsv"
    say "maxbatch: resnet50 fp16 b$b rc $rc: $(tail -1 "$m/runs.tsv" | cut -f3-)"
    [ "$rc" != 0 ] || break
    about=$(grep -m1 -oE 'largest batch that fits is about [0-9]+' "$log" | grep -oE '[0-9]+$' || true)
    [ -n "$about" ] && ((about < b)) || break
    b=$((about * 9 / 10 / 32 * 32)); ((b >= 32)) || break
  done
  touch "$m/done"
}

stage_converge() {  # resnet20_fmnist fp16 on the carried Fashion-MNIST, its conv-BN-ReLU-conv chains folded and not
  local c=$S/converge d=$CARRY/fmnist side log rc fuse folded
  [ ! -f "$c/done" ] || return 0
  [ -f "$d/t10k-images-idx3-ubyte.gz" ] || { say "converge: no $d (pack carries it where dataset-fashion-mnist is installed)"; return 0; }
  mkdir -p "$c"
  for side in folded unfused; do
    ! grep -q "^$side"$'\t' "$c/runs.tsv" 2>/dev/null || continue
    (($(left) > 60)) || { say "converge: $side left for the next call"; return 0; }
    log=$c/$side.log rc=0 fuse=$([ "$side" = folded ] && echo true || echo false)
    # how many batch norms this plan folds (--layer_timing's kernels column), from two steps
    folded=$(timeout -k 5 "$(upto 10)" "${CENV[@]}" "$C/bin/cnnbench" --model=resnet20_fmnist --batch_size=128 --use_fp16 \
      --device=gpu --num_warmup_batches=1 --num_batches=2 --layer_timing "--fuse_ops=$fuse" 2>&1 | grep -c ' folded: ' || true)
    timeout -k 5 "$(upto 10)" "${CENV[@]}" "$C/bin/cnnbench" --config="$ROOT/configs/fashion_mnist_resnet.toml" --data_dir="$d" \
      --use_fp16 --device=gpu --num_epochs="$EPOCHS" --benchmark_log_dir="$c/cnnbench_results" "--fuse_ops=$fuse" >"$log" 2>&1 || rc=$?
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then say "converge: $side stopped at the deadline: left for the next call"; return 0; fi
    # side, batch norms folded, exit, final test top-1, test top-1 after each epoch, seconds of training
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$side" "$folded" "$rc" "$(sed -nE 's/^final test top-1 accuracy: ([0-9.]+).*/\1/p' "$log")" \
      "$(grep -oE 'test top-1 [0-9.]+%' "$log" | sed -E 's/test top-1 ([0-9.]+)%/\1/' | paste -sd' ')" \
      "$(grep -oE '\| [0-9.]+ s$' "$log" | awk '{ t += $2 } END { printf "%.1f", t }')" >>"$c/runs.tsv"
    say "converge: $side ($folded batch norms folded) rc $rc: final test top-1 $(tail -1 "$c/runs.tsv" | cut -f4)"
  done
  touch "$c/done"
}

stage_profile() {  # ncu on resnet50 b32 steps past the warm-up; per-layer times (b32, and resnet50 and vgg16 at b256)
  [ ! -f "$S/profile/done" ] || return 0
  (($(left) > 120)) || { say "profile: left for the next call"; return 0; }
  local p=$S/profile ncu run rc=0
  run=("${CENV[@]}" "$C/bin/cnnbench" --model=resnet50 --batch_size=32 --use_fp16 --device=gpu --num_warmup_batches=2
    --num_batches=60 --benchmark_log_dir="$p/cnnbench_results")
  ncu=$(command -v ncu || find /opt/nvidia/nsight-compute /usr/local/cuda/bin -name ncu -type f 2>/dev/null | sort | tail -1 || true)
  if [ -n "$ncu" ]; then  # the skip passes the algorithm search and the warm-up (some 800 launches a step)
    timeout -k 5 "$(upto 30)" "$ncu" --clock-control none --section SpeedOfLight "${NCU_OPTS[@]}" \
      -f -o "$p/resnet50_b32" "${run[@]}" >"$p/ncu.log" 2>&1 || rc=$?
    [ ! -f "$p/resnet50_b32.ncu-rep" ] || "$ncu" --import "$p/resnet50_b32.ncu-rep" --csv --page details \
      --print-units base >"$p/details.csv" 2>>"$p/ncu.log" || true
  fi
  if [ -s "$p/details.csv" ] && "${PY[@]}" - "$p/details.csv" >"$p/summary.md" <<'EOF'; then
import collections, csv, sys
to_us = {"ns": 1e-3, "nsecond": 1e-3, "us": 1, "usecond": 1, "ms": 1e3, "msecond": 1e3, "s": 1e6, "second": 1e6}
k = collections.defaultdict(dict)  # launch ID -> kernel name and its metrics (durations in us)
for r in csv.DictReader(open(sys.argv[1])):
    k[r["ID"]]["name"] = r["Kernel Name"][:90]
    unit = r["Metric Unit"]
    if r["Metric Name"] == "Duration" and unit not in to_us: sys.exit(f"ncu's duration unit {unit!r} is not known here")
    try: k[r["ID"]][r["Metric Name"]] = float(r["Metric Value"].replace(",", "")) * to_us.get(unit, 1)
    except ValueError: pass
assert k, "no kernels profiled"
g = collections.defaultdict(lambda: [0, 0.0, 0.0, 0.0])  # per name: launches, us, SM %, memory %
for m in k.values():
    e = g[m["name"]]; e[0] += 1; e[1] += m.get("Duration", 0)
    e[2] += m.get("Compute (SM) Throughput", 0); e[3] += m.get("Memory Throughput", 0)
total = sum(e[1] for e in g.values()) or 1
print(f"# ncu, resnet50 fp16 b32: {len(k)} kernels profiled, {total / 1e3:.2f} ms, "
      f"{sum(e[0] for n, e in g.items() if 'loss_kernel' in n)} loss kernels (one a step)\n")
print("| kernel | launches | total ms | share | SM throughput % | memory throughput % |\n|---|---|---|---|---|---|")
for n, e in sorted(g.items(), key=lambda x: -x[1][1])[:25]:
    print(f"| `{n}` | {e[0]} | {e[1] / 1e3:.2f} | {100 * e[1] / total:.1f}% | {e[2] / e[0]:.0f} | {e[3] / e[0]:.0f} |")
EOF
    say "profile: ncu summary in profile/summary.md"
  else
    say "profile: ncu ${ncu:+read no counters (rc $rc, $(grep -m1 -E '==ERROR==|ERR_' "$p/ncu.log" || true))}${ncu:-not found}"
    echo "# resnet50 fp16 b32: ncu gave no counters (see ncu.log)" >"$p/summary.md"
  fi
  # Per-layer times without ncu as well: ncu intercepts every launch (which may skew cuDNN's timed
  # algorithm search) and replays each profiled kernel on a flushed cache (on an H100 its kernels
  # summed to some 47 ms a step where the benchmark ran 20)
  timeout -k 5 "$(upto 10)" "${run[@]}" --layer_timing >"$p/layer_timing.log" 2>&1 || true
  { echo; echo "# resnet50 fp16 b32 --layer_timing, no profiler attached"; echo '```'; tail -n 80 "$p/layer_timing.log"; echo '```'; } >>"$p/summary.md"
  # the two batch-256 targets layer by layer (which kernels, which fusions, where the time goes),
  # where the time left allows
  local m
  for m in resnet50 vgg16; do
    (($(left) > 100)) || { say "profile: $m b256 layer timing left for the next call"; continue; }
    timeout -k 5 "$(upto 10)" "${CENV[@]}" "$C/bin/cnnbench" --model="$m" --batch_size=256 --use_fp16 --device=gpu \
      --num_warmup_batches=2 --num_batches=20 --layer_timing --algorithm_cache="$S/algorithm_cache.txt" \
      >"$p/layer_timing_${m}_b256.log" 2>&1 || true
    { echo; echo "# $m fp16 b256 --layer_timing"; echo '```'; tail -n 200 "$p/layer_timing_${m}_b256.log"; echo '```'; } >>"$p/summary.md"
  done
  touch "$p/done"
}

summarize() {  # summary.md: tests, the benchmark medians and ranges, the largest batch, convergence, the profile's head
  "${PY[@]}" "$ROOT/scripts/gpu_check_summary.py" "$S" "$GPU" "$C/manifest.txt" >"$S/summary.md"
}

publish() {  # what comes back: $OUT/gpu_check/<device>/ (at most 2 folders down, 8 files)
  local o=$OUT/gpu_check/$DEV
  mkdir -p "$o"
  summarize || say "warning: no summary.md (python3 failed)"
  cp "$S/summary.md" "$o/" 2>/dev/null || true
  [ ! -f "$S/bench.csv" ] || cp "$S/bench.csv" "$o/"
  [ ! -f "$S/tests/summary.tsv" ] || cp "$S/tests/summary.tsv" "$o/tests_summary.tsv"
  tar -C "$WORK/state" --exclude='*.ncu-rep' -czf "$o/state.tar.gz" "gpu_$DEV/check"
  find "$S/profile" -name '*.ncu-rep' -size -16M -exec cp {} "$o/" \;
}

stage_unpack() {  # here: a reply's files_at -> results/gpu_<device>/check/ (the next call starts from it);
  # a check/ of another bundle there moves aside to check_<its date>/ first
  local t found=0 tmp dev old kept
  for t in "${1:?unpack FILES_AT}"/gpu_check/*/state.tar.gz; do
    [ -f "$t" ] || continue
    tmp=$(mktemp -d)
    tar -C "$tmp" -xzf "$t" || die "cannot read $t"
    for dev in "$tmp"/gpu_*; do
      old=$ROOT/results/$(basename "$dev")/check
      if [ -d "$old" ] && [ "$(cat "$old/bundle.sum" 2>/dev/null)" != "$(cat "$dev/check/bundle.sum" 2>/dev/null)" ]; then
        kept=${old}_$(date -r "$old" +%Y-%m-%d_%H%M)
        mv "$old" "$kept" && say "an earlier bundle's results/$(basename "$dev")/check moved to $(basename "$kept")/"
      fi
      mkdir -p "$old" && cp -r "$dev/check/." "$old/" && found=1 && say "unpacked $t into results/$(basename "$dev")/check"
    done
    rm -rf "$tmp"
  done
  ((found)) || die "no gpu_check/*/state.tar.gz under $1"
}

# ---- main ----------------------------------------------------------------------------------
stage=${1:-}; [ -n "$stage" ] || usage; shift
DEADLINE=$((START + 480)) REPS='' MODE=full NCU_OPTS=() LEFT=() skip=12000 count=1000 SIDES="cnnbench eager compile" CONFIGS="resnet50_b256 resnet50_b32 vgg16_b256" TESTS='' EPOCHS=10
case $stage in
  pack) stage_pack; exit ;;
  unpack) stage_unpack "$@"; exit ;;
  exec) [ $# -gt 0 ] || usage; setup; b=$1; shift; [ -x "$C/bin/$b" ] && b=$C/bin/$b; exec "${CENV[@]}" "$b" "$@" ;;
  test | converge | bench | maxbatch | profile | all) ;;
  *) usage ;;
esac
while (($#)); do
  case $1 in
    --deadline) DEADLINE=$((START + ${2:?})); shift ;;
    --quick) MODE=quick ;;
    --reps) REPS=${2:?}; shift ;;
    --sides) SIDES=${2:?}; shift ;;
    --configs) CONFIGS=${2:?}; shift  # bench: which of resnet50_b256 resnet50_b32 vgg16_b256
      for c in $CONFIGS; do [[ " resnet50_b256 resnet50_b32 vgg16_b256 " == *" $c "* ]] || usage; done ;;
    --epochs) EPOCHS=${2:?}; shift ;;    # converge: epochs a side (default 10)
    --tests) TESTS=${2:?}; shift ;;      # test: one gtest filter for every binary (rows keyed NAME@<its hash>)
    --kernels) NCU_OPTS+=(--kernel-name "regex:${2:?}"); shift ;;  # --ncu-skip then counts its matches only
    --ncu-skip) skip=${2:?}; shift ;;
    --ncu-count) count=${2:?}; shift ;;
    *) usage ;;
  esac
  shift
done
NCU_OPTS+=(--launch-skip "$skip" --launch-count "$count")
if [ "$MODE" = full ]; then STEPS=60 WARMUP=10 REPS=${REPS:-3}; else STEPS=20 WARMUP=5 REPS=${REPS:-1}; fi
find_gpu
setup
state
say "$GPU ($DEV): $stage until $(date -d "@$DEADLINE" +%T), state in $S"
case $stage in
  test | all) stage_test; publish ;;&
  converge | all) stage_converge; publish ;;&
  maxbatch | all) stage_maxbatch; publish ;;&
  bench | all) stage_bench; publish ;;&
  profile | all) stage_profile; publish ;;
esac
cat "$S/summary.md"
