# The cnnbench image for clusters (Slurm with containers, Kubernetes with the Kubeflow MPI operator):
# Debian 12, the same packages as a bare machine, the binary at /opt/cnnbench/build/cnnbench, and
# sshd, through which the MPI operator's launcher starts the workers' ranks.
#   docker build -t cnnbench --build-arg CNNBENCH_REVISION=$(git rev-parse --short=12 HEAD) .
#   docker run --rm cnnbench mpiexec --allow-run-as-root --oversubscribe -np 2 cnnbench --model=resnet50 --num_batches=20
FROM debian:12

# .git stays out of the image: the results' run.git_revision comes from this (else "unknown")
ARG CNNBENCH_REVISION=
ARG DEBIAN_FRONTEND=noninteractive
COPY . /opt/cnnbench
WORKDIR /opt/cnnbench
RUN rm -rf build \
 && scripts/install_deps.sh \
 && apt-get install -y -qq --no-install-recommends openssh-server openssh-client ca-certificates >/dev/null \
 && cmake -S . -B build -DCMAKE_BUILD_TYPE=Release \
 && cmake --build build -j"$(nproc)" --target cnnbench \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /run/sshd

ENV PATH=/opt/cnnbench/build:$PATH \
    OMPI_ALLOW_RUN_AS_ROOT=1 \
    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
CMD ["cnnbench", "--help"]
