#!/usr/bin/env bash
# Installs the Debian 12 packages cnnbench builds, tests and runs with. Idempotent: when every
# package is present it returns at once without touching apt.
#   scripts/install_deps.sh            build + test dependencies
#   scripts/install_deps.sh --pytorch  also PyTorch (the peer scripts/compare_pytorch.py runs)
#   scripts/install_deps.sh --checks   also clang with libFuzzer and libomp (tests/fuzz/) and
#                                      mmdebstrap (scripts/check_fresh_debian.sh); gcc's ASan,
#                                      UBSan and TSan come with g++
set -euo pipefail

packages=(
  g++ cmake make pkg-config
  libdnnl-dev                      # oneDNN: the CPU compute backend
  ocl-icd-opencl-dev               # OpenCL: dnnl-config.cmake finds it (only a Recommends of libdnnl-dev)
  libopenmpi-dev openmpi-bin       # ranks and MPI allreduce
  libgloo-dev                      # Gloo allreduce
  libfmt-dev libcli11-dev nlohmann-json3-dev libtomlplusplus-dev libcsv-dev
  libjpeg62-turbo-dev zlib1g-dev   # JPEG decoding, gzipped idx files
  libprotobuf-dev protobuf-compiler  # TFRecord shards (tf.train.Example) and TensorBoard event files
  python3-protobuf                 # the event-file test reads them back independently of the C++ writer
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-matplotlib     # scripts: sweep.py (tomllib), plot.py, plot_convergence.py
  iproute2                         # ip, tc: the namespace cluster (scripts/netns_cluster.sh)
  slurmctld slurmd slurm-client munge  # the one-machine Slurm cluster (scripts/slurm_cluster.sh);
                                   # installing starts no slurmd or slurmctld (no /etc/slurm/slurm.conf),
                                   # and the system munged only where an init runs (in a chroot or
                                   # container invoke-rc.d declines); the cluster runs its own
  libpmix-dev                      # srun --mpi=pmix: Debian's mpi_pmix plugin opens its libpmix.so
  procps mount                     # pgrep, mount: the fault tests (a bare Debian root has neither)
  dataset-fashion-mnist            # the real Fashion-MNIST, trained on in CI
)
for arg in "$@"; do
  case "$arg" in
    --pytorch) packages+=(python3-torch python3-torchvision) ;;
    --checks) packages+=(clang-14 libclang-rt-14-dev libomp-14-dev mmdebstrap) ;;
    *) echo "install_deps.sh: unknown option '$arg' (known: --pytorch, --checks)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "install_deps.sh: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
