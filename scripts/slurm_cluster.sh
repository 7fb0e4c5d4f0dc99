#!/usr/bin/env bash
# A Slurm cluster of N nodes on one machine, for running cnnbench's Slurm recipe
# (configs/launch/slurm_resnet50.sbatch) without a cluster. Debian's Slurm (22.05) is built with
# multiple-slurmd support, so one controller (slurmctld) and N slurmd daemons run side by side on
# this host: nodes node1..nodeN, all with NodeHostname=localhost and a port each. Each slurmd runs
# in its own UTS namespace whose host name is its node name (where unshare --uts works), so a
# job's tasks on node2 see host name node2 and MPI and cnnbench count each node as a host, as on
# real nodes; ranks on different nodes talk over TCP. Authentication is munge, with a private
# munged, key and socket in the state directory (Slurm 22.05 also runs with auth/none and no
# munged, but then anyone on the machine could submit jobs as root while the cluster is up).
# The daemons run in their own daemon mode, no systemd; nothing in /etc is touched.
#
#   scripts/slurm_cluster.sh run [--nodes 2] [--dir DIR] [--port 16817] -- CMD...
#       brings the cluster up, runs CMD with SLURM_CONF set (sbatch, srun, sinfo use it), takes it down
#   scripts/slurm_cluster.sh start [--nodes N] [--cpus C] [--dir DIR] [--port P]
#       then: export SLURM_CONF=DIR/slurm.conf; sbatch ...; scripts/slurm_cluster.sh stop --dir DIR
#   scripts/slurm_cluster.sh stop [--dir DIR]       cancels the jobs, ends every daemon and job
#                                                   process it started, removes DIR; safe twice
#   scripts/slurm_cluster.sh status [--dir DIR]     sinfo and squeue of the cluster
#   scripts/slurm_cluster.sh check                  exit 0 if this machine can run it, 77 (with why) if not
# --dir: the state directory (default /tmp/cnnbench-slurm): slurm.conf, the munge key, the logs
# (slurmctld.log, slurmd-nodeI.log, munged.log), spool directories. --port P: slurmctld listens on
# P, node I's slurmd on P+I (all on localhost). --cpus C: CPUs each node declares (default: this
# machine's CPUs divided among the nodes, at least 1). Where the machine has that many, each node
# gets cores of its own: its slurmd runs under taskset, and its tasks inherit them (Slurm itself
# binds nothing: each slurmd sees the whole machine, and all would bind to the same first cores).
# Needs root and Debian's slurmctld, slurmd, slurm-client and munge (scripts/install_deps.sh);
# srun --mpi=pmix also needs libpmix-dev, whose libpmix.so Debian's mpi_pmix plugin loads.
set -euo pipefail

dir=/tmp/cnnbench-slurm nodes=2 cpus='' port=16817
marker=.cnnbench-slurm-cluster  # a state directory has it: stop removes no other directory

die() { echo "slurm_cluster: $*" >&2; exit 2; }
say() { echo "slurm_cluster: $*"; }
alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }
none_alive() { local p; for p in "$@"; do alive "$p" && return 1; done; return 0; }
pid_of() { cat "$dir/$1.pid" 2>/dev/null || true; }  # slurmctld, munged, slurmd-nodeI, anchor-nodeI
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
pmix_library() {  # the libpmix.so Debian's mpi_pmix plugin opens (libpmix-dev), if that plugin is there
  local plugin
  for plugin in /usr/lib/*/slurm-wlm/mpi_pmix.so; do
    [ -e "$plugin" ] || continue
    ls "$(dirname "$(dirname "$plugin")")"/pmix2/lib/libpmix.so 2>/dev/null || echo missing
    return
  done
  echo "no mpi_pmix plugin"
}

# Can this machine run the cluster? Root, the daemons and commands, munge, the PMIx plugin and the
# library it loads. Prints the reason and exits 77 (ctest's skip code) if one is missing.
check() {
  local why='' cmd lib
  if [ "$(id -u)" != 0 ]; then why="needs root (slurmd starts job steps as their users)"; fi
  for cmd in slurmctld slurmd sinfo sbatch srun squeue scancel munged; do
    [ -n "$why" ] && break
    command -v "$cmd" >/dev/null || why="$cmd is not installed (Debian: slurmctld slurmd slurm-client munge; scripts/install_deps.sh)"
  done
  if [ -z "$why" ]; then
    lib=$(pmix_library)
    case $lib in
      "no mpi_pmix plugin") why="Slurm's mpi_pmix plugin is missing (Debian: slurm-wlm-basic-plugins)" ;;
      missing) why="srun --mpi=pmix cannot work: the mpi_pmix plugin loads libpmix.so, which is not installed (Debian: libpmix-dev)" ;;
    esac
  fi
  if [ -n "$why" ]; then echo "slurm_cluster: $why" >&2; exit 77; fi
}

write_conf() {
  local layout=$1
  cat > "$dir/slurm.conf" <<EOF
# Written by cnnbench's scripts/slurm_cluster.sh: $nodes node(s) on this host, $layout.
ClusterName=cnnbench
MailProg=/bin/true
# Addresses, not names: a bare Debian root has no /etc/hosts, and each look-up of localhost would wait for DNS.
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge.sock
StateSaveLocation=$dir/slurmctld
SlurmdSpoolDir=$dir/%n
# Per node: the mpi_pmix plugin puts its directories under TmpFS (else all nodes share /tmp's).
TmpFS=$dir/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd-%n.log
ProctrackType=proctrack/pgid
# No binding by Slurm: every slurmd sees the whole machine and would bind its tasks to the same
# first cores. A node's tasks inherit its slurmd's cores instead (taskset), where there are enough.
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
SlurmdParameters=config_overrides
# A cancelled step is killed 5 s after SIGTERM (default 30); finished jobs leave squeue after 4 s,
# which keeps sbatch --wait polling every 2 s (it polls more slowly when MinJobAge is long).
KillWait=5
MinJobAge=4
NodeName=node[1-$nodes] NodeHostname=localhost NodeAddr=127.0.0.1 Port=[$((port + 1))-$((port + nodes))] CPUs=$cpus Sockets=1 CoresPerSocket=$cpus ThreadsPerCore=1 State=UNKNOWN
PartitionName=debug Nodes=node[1-$nodes] Default=YES MaxTime=INFINITE State=UP
EOF
  # Nothing here uses cgroups (proctrack/pgid, task/none), but slurmd initialises its cgroup plugin
  # all the same, and the default (autodetect) fails where /sys/fs/cgroup is not mounted (a chroot
  # with /sys bound in alone): the v1 plugin starts without looking.
  echo "CgroupPlugin=cgroup/v1" > "$dir/cgroup.conf"
}

wait_for() {  # seconds what command...
  local seconds=$1 what=$2; shift 2
  local deadline=$((SECONDS + seconds))
  while ((SECONDS < deadline)); do
    "$@" && return 0
    sleep 0.1
  done
  echo "slurm_cluster: timed out after $seconds s waiting for $what" >&2
  return 1
}

nodes_idle() { [ "$(sinfo -h -N -o '%T' 2>/dev/null | grep -c '^idle$')" = "$nodes" ]; }

# The CPUs this process may run on, one a line (Cpus_allowed_list: 0-3,8,10-11).
allowed_cpus() {
  local range
  for range in $(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status | tr ',' ' '); do
    seq "${range%-*}" "${range#*-}"
  done
}

start() {
  check
  if ! [[ $nodes =~ ^[1-9][0-9]*$ ]] || (( nodes > 64 )); then die "--nodes: '$nodes' is not a node count from 1 to 64"; fi
  if ! [[ $port =~ ^[1-9][0-9]*$ ]] || (( port < 1024 || port + nodes > 65535 )); then
    die "--port: '$port' is not a port from 1024 to $((65535 - nodes))"
  fi
  local cores=()
  mapfile -t cores < <(allowed_cpus)
  ((${#cores[@]} > 0)) || cores=(0)
  if [ -z "$cpus" ]; then cpus=$(( ${#cores[@]} / nodes )); (( cpus >= 1 )) || cpus=1; fi
  [[ $cpus =~ ^[1-9][0-9]*$ ]] || die "--cpus: '$cpus' is not a positive count"
  [ -e "$dir" ] && die "$dir exists: a cluster is up there (stop it: $0 stop --dir $dir) or it is not ours"
  local p
  for ((p = port; p <= port + nodes; p++)); do
    if port_in_use "$p"; then die "port $p on localhost is in use (another cluster? pick others with --port)"; fi
  done
  mkdir -m 711 "$dir"  # fails if someone made it meanwhile; munged wants its socket's directory searchable
  touch "$dir/$marker"
  trap 'stop >/dev/null 2>&1' EXIT  # a step failing half way takes the half-built cluster down again

  # Each node its own host name (a UTS namespace) and its own cores (slurmd started under taskset:
  # its job steps and tasks inherit them), where this machine allows.
  local own_names=1 own_cores=1 layout
  unshare --uts true 2>/dev/null || own_names=0
  if (( nodes * cpus > ${#cores[@]} )) || ! command -v taskset >/dev/null; then own_cores=0; fi
  if [ "$own_names" = 1 ]; then layout="each slurmd in a UTS namespace named after its node"
  else layout="all nodes with this host's name (unshare --uts is not allowed here)"; fi
  if [ "$own_cores" = 1 ]; then layout+=", on cores of its own"
  else layout+=", all on all ${#cores[@]} cores, tasks unbound (more CPUs declared than there are)"; fi
  write_conf "$layout"
  export SLURM_CONF=$dir/slurm.conf

  dd if=/dev/urandom of="$dir/munge.key" bs=1024 count=1 status=none
  chmod 400 "$dir/munge.key"
  munged --origin=127.0.0.1 --socket="$dir/munge.sock" --key-file="$dir/munge.key" --pid-file="$dir/munged.pid" \
    --log-file="$dir/munged.log" --seed-file="$dir/munged.seed" ||
    { cat "$dir/munged.log" >&2; die "munged did not start (log above)"; }
  slurmctld -f "$dir/slurm.conf" || { tail -20 "$dir/slurmctld.log" >&2; die "slurmctld did not start (log above)"; }
  local i f node pin own
  for ((i = 1; i <= nodes; i++)); do
    node=node$i
    mkdir -p "$dir/$node"
    pin=()
    if [ "$own_cores" = 1 ]; then
      own=("${cores[@]:$(( (i - 1) * cpus )):$cpus}")
      pin=(taskset -c "$(IFS=,; echo "${own[*]}")")
    fi
    if [ "$own_names" = 1 ]; then
      # slurmd daemonizes inside the namespace; a sleep (the anchor) stays there, so that stop can
      # find every process of the node by its namespace, and the namespace lives until stop ends.
      # shellcheck disable=SC2016  # $1, $2 and $$ are the inner shell's
      "${pin[@]}" setsid unshare --uts sh -c 'echo $$ > "$1/anchor-$2.pid"; hostname "$2" && slurmd -f "$1/slurm.conf" -N "$2" && exec sleep infinity' \
        sh "$dir" "$node" </dev/null >>"$dir/anchor-$node.log" 2>&1 &
      disown  # not this shell's job: its end at stop is no news
    else
      "${pin[@]}" slurmd -f "$dir/slurm.conf" -N "$node" </dev/null || true  # its end is seen below
    fi
  done
  # Up when sinfo shows every node idle; failed at once when a slurmd has ended (its anchor with it).
  local deadline=$((SECONDS + 30)) why=''
  until nodes_idle; do
    if ((SECONDS >= deadline)); then why="the nodes were not idle within 30 s"; fi
    for ((i = 1; i <= nodes; i++)); do
      for f in "anchor-node$i" "slurmd-node$i"; do
        if [ -s "$dir/$f.pid" ] && ! alive "$(pid_of "$f")"; then why="slurmd of node$i ended"; fi
      done
    done
    if [ -n "$why" ]; then
      sinfo -N >&2 || true
      for ((i = 1; i <= nodes; i++)); do tail -4 "$dir/slurmd-node$i.log" >&2 2>/dev/null || true; done
      tail -5 "$dir/slurmctld.log" >&2
      die "the nodes did not come up: $why (logs above, from $dir)"
    fi
    sleep 0.1
  done
  trap - EXIT
  say "$nodes node(s) up, node[1-$nodes], $cpus CPU(s) each, $layout; state in $dir"
  say "export SLURM_CONF=$dir/slurm.conf"
}

# Every process in the UTS namespace of a node's anchor other than the anchor: slurmd, slurmstepd
# and the job processes they started there.
node_processes() {  # anchor pid
  local ns
  ns=$(readlink "/proc/$1/ns/uts" 2>/dev/null) || return 0
  [ "$ns" = "$(readlink /proc/$$/ns/uts)" ] && return 0  # not a namespace of its own: nothing to sweep
  # shellcheck disable=SC2010  # ls -l of /proc's links: one process for all, not one per process
  ls -l /proc/[0-9]*/ns/uts 2>/dev/null | grep -F -- "-> $ns" | sed -E 's|.* /proc/([0-9]+)/ns/uts .*|\1|' | grep -vx "$1" || true
}

# Slurm's processes holding a file under the state directory open: the daemons, and slurmstepd
# (it logs to its node's slurmd log) where the nodes have no namespaces of their own.
slurm_processes() {
  local p comm
  for p in /proc/[0-9]*; do
    { read -r comm < "$p/comm"; } 2>/dev/null || continue
    [[ $comm == slurm* ]] || continue
    find "$p/fd" -mindepth 1 -maxdepth 1 -lname "$dir/*" -print -quit 2>/dev/null | grep -q . && echo "${p#/proc/}"
  done
  return 0
}

stop() {
  [ -e "$dir" ] || return 0
  # only a directory that start made (its marker), made by this user (so nobody else wrote its pid files)
  if ! [ -f "$dir/$marker" ] || ! [ -O "$dir" ] || ! [ -O "$dir/$marker" ]; then
    die "$dir is not a state directory this user's start made: not touching it"
  fi
  export SLURM_CONF=$dir/slurm.conf
  local ctld i f pids anchors=() daemons=()
  ctld=$(pid_of slurmctld)
  if alive "$ctld"; then  # cancel the jobs, so that their steps end the way Slurm ends them
    pids=$(timeout 10 squeue -h -o %A 2>/dev/null || true)
    if [ -n "$pids" ]; then
      # shellcheck disable=SC2086
      timeout 10 scancel $pids 2>/dev/null || true
      # shellcheck disable=SC2016
      wait_for 15 "the jobs to end" sh -c '[ -z "$(squeue -h -o %A 2>/dev/null | head -1)" ]' 2>/dev/null || true
    fi
  fi
  for f in "$dir"/slurmd-node*.pid; do [ -e "$f" ] && daemons+=("$(cat "$f")"); done
  daemons+=("$ctld")
  for f in "$dir"/anchor-node*.pid; do [ -e "$f" ] && anchors+=("$(cat "$f")"); done
  local munged; munged=$(pid_of munged)  # last: slurmd and slurmctld may still want it while they end
  for i in "${daemons[@]}"; do alive "$i" && kill -TERM "$i" 2>/dev/null; done
  wait_for 10 "slurmd and slurmctld to end" none_alive "${daemons[@]}" || true
  # What is left: TERM, then KILL. The anchors go last, so that their namespaces (and so their
  # identities) outlive every process swept by them.
  local round a left=()
  for round in TERM KILL; do
    left=()
    for a in "${anchors[@]}"; do alive "$a" && mapfile -t -O "${#left[@]}" left < <(node_processes "$a"); done
    mapfile -t -O "${#left[@]}" left < <(slurm_processes)
    ((${#left[@]} == 0)) && break
    kill -"$round" "${left[@]}" 2>/dev/null || true
    wait_for 5 "${left[*]} to end" none_alive "${left[@]}" 2>/dev/null || true
  done
  for a in "${anchors[@]}"; do alive "$a" && kill -KILL "$a" 2>/dev/null; done
  if alive "$munged"; then
    kill -TERM "$munged" 2>/dev/null || true
    wait_for 5 munged none_alive "$munged" || kill -KILL "$munged" 2>/dev/null || true
  fi
  rm -rf "$dir"
}

status() {
  [ -f "$dir/$marker" ] || { say "no cluster in $dir"; return 1; }
  export SLURM_CONF=$dir/slurm.conf
  sinfo -N -o '%N %T %c %E'
  squeue
}

run() {
  [ $# -gt 0 ] || die "run: give the command after --"
  start >&2
  trap 'stop' EXIT
  trap 'exit 143' TERM INT HUP
  local rc=0
  SLURM_CONF=$dir/slurm.conf "$@" || rc=$?
  return $rc
}

cmd=${1:-}; [ $# -gt 0 ] && shift
args=()
while [ $# -gt 0 ]; do
  case $1 in
    --nodes) nodes=$2; shift 2 ;;
    --nodes=*) nodes=${1#*=}; shift ;;
    --cpus) cpus=$2; shift 2 ;;
    --cpus=*) cpus=${1#*=}; shift ;;
    --dir) dir=$2; shift 2 ;;
    --dir=*) dir=${1#*=}; shift ;;
    --port) port=$2; shift 2 ;;
    --port=*) port=${1#*=}; shift ;;
    --) shift; args+=("$@"); break ;;
    *) die "unknown option '$1'" ;;
  esac
done
[[ $dir == /* ]] || dir=$PWD/$dir
dir=${dir%/}
if [ -z "$dir" ] || [ "$dir" = / ]; then die "--dir: not the root directory"; fi

case $cmd in
  run) run "${args[@]}" ;;
  start) start ;;
  stop) stop ;;
  status) status ;;
  check) check; say "root, Slurm $(slurmd -V | awk '{print $2}'), munge and the PMIx plugin are here" ;;
  *) die "usage: $0 run|start|stop|status|check [--nodes N] [--cpus C] [--dir DIR] [--port P] [-- CMD...]" ;;
esac
