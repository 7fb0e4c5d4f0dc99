# The cnnbench image for clusters that run containers (Kubernetes with the Kubeflow MPI operator:
# configs/launch/k8s_mpijob_resnet50.yaml): Debian 12, the same packages as a bare machine, the
# binary at /opt/cnnbench/build/cnnbench (and on every PATH: /usr/local/bin/cnnbench), and sshd,
# through which the MPI operator's launcher starts the workers' ranks.
#   docker build -t cnnbench --build-arg CNNBENCH_REVISION=$(git describe --always --dirty --abbrev=12) .
#   docker run --rm --cpus=2 cnnbench mpiexec --allow-run-as-root --oversubscribe -np 2 cnnbench --model=resnet50 --num_batches=20
FROM debian:12

ARG DEBIAN_FRONTEND=noninteractive
# The packages first, in a layer of their own: a change to the sources does not install them
# again. The MPI operator mounts the job's keys at /root/.ssh from a Secret (read-only, its own
# file modes) and names no host keys: ssh between the pods must not ask about host keys, nor
# sshd refuse the mounted files' modes.
COPY scripts/install_deps.sh /opt/cnnbench/scripts/install_deps.sh
RUN apt-get update -qq \
 && /opt/cnnbench/scripts/install_deps.sh \
 && apt-get install -y -qq --no-install-recommends openssh-server openssh-client ca-certificates >/dev/null \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /run/sshd \
 && printf 'Host *\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n' \
      > /etc/ssh/ssh_config.d/cnnbench-mpi.conf \
 && printf 'StrictModes no\nPermitRootLogin prohibit-password\n' > /etc/ssh/sshd_config.d/cnnbench-mpi.conf

# .git stays out of the image: the results' run.git_revision comes from this (else "unknown").
# Ranks started over ssh get sshd's PATH, not this image's ENV: the binary is linked onto that one.
ARG CNNBENCH_REVISION=
COPY . /opt/cnnbench
WORKDIR /opt/cnnbench
RUN rm -rf build \
 && cmake -S . -B build -DCMAKE_BUILD_TYPE=Release \
 && cmake --build build -j"$(nproc)" --target cnnbench \
 && ln -s /opt/cnnbench/build/cnnbench /usr/local/bin/cnnbench

ENV PATH=/opt/cnnbench/build:$PATH \
    OMPI_ALLOW_RUN_AS_ROOT=1 \
    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
CMD ["cnnbench", "--help"]
