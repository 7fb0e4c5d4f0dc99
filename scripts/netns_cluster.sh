#!/usr/bin/env bash
# A cluster of N "hosts" on one machine, for running cnnbench across hosts without a cluster.
# Each host is a network namespace (its own address, its own interface eth0) plus its own UTS
# namespace (its own host name, so MPI and cnnbench count it as a host), joined by veth pairs
# to a bridge; each host's outgoing link can be shaped with tc (bandwidth: tbf; latency: netem
# where the kernel has it). mpiexec runs in the root namespace and starts its daemons in each
# host through this script's `agent`, Open MPI's rsh launch agent, so ranks on different hosts
# talk over TCP through the shaped links, as on real nodes.
#
#   scripts/netns_cluster.sh run --hosts 2 [--ranks-per-host 1] [--rate 1gbit] [--delay 50us] -- CMD...
#       brings the cluster up, runs `mpiexec ... CMD` across it, takes it down again
#       (--ranks N: N ranks in all, filling each host's R slots in turn; default hosts x R)
#   scripts/netns_cluster.sh up --hosts 2 [--rate R] [--delay D]    (and `down`, `status`)
#   scripts/netns_cluster.sh check     exit 0 if this machine can do what `run` does, 77 (with why) if not
#   --name PREFIX (default cnb) and --subnet A.B.C (default 10.213.0) keep clusters apart.
# Needs root (or CAP_NET_ADMIN + CAP_SYS_ADMIN), iproute2 and util-linux's unshare.
set -euo pipefail

me=$(readlink -f "$0")
name=cnb subnet=10.213.0 hosts=2 ranks_per_host=1 ranks= rate= delay= keep=0

die() { echo "netns_cluster: $*" >&2; exit 2; }
host_ns() { echo "${name}h$1"; }          # namespace of host i (1-based)
host_ip() { echo "$subnet.$1"; }
bridge() { echo "${name}br0"; }

# Can this machine build the cluster? Tries, on a throw-away host, each step that `up` and `agent`
# take: a network namespace, a veth pair into it, a bridge, and entering the namespace with its
# own host name (`ip netns exec` makes / a slave mount, so it fails in a chroot whose / is not a
# mount point; `unshare --uts`). Prints the reason and exits 77 (ctest's skip code) if one fails.
check() {
  local why= err ns="${name}p$$" br="${name}b$$"  # interface names: at most 15 characters
  if ! command -v ip >/dev/null; then why="iproute2 (ip) is not installed"
  elif ! command -v unshare >/dev/null; then why="unshare (util-linux) is not installed"
  elif ! command -v hostname >/dev/null; then why="hostname is not installed"
  elif ! err=$(ip netns add "$ns" 2>&1); then why="cannot create network namespaces here (ip netns add: $err)"
  else
    if ! err=$(ip link add "${name}v$$" type veth peer name eth0 netns "$ns" 2>&1); then
      why="cannot create veth pairs here (ip link add type veth: $err)"
    elif ! err=$(ip link add "$br" type bridge 2>&1); then
      why="cannot create bridges here (ip link add type bridge: $err)"
    elif ip link del "$br" && ! err=$(ip netns exec "$ns" unshare --uts sh -c "hostname ${name}-probe" 2>&1); then
      why="cannot enter a network namespace with its own host name (ip netns exec + unshare --uts: ${err//$'\n'/; })"
      [[ $err == *make-rslave* ]] && why+="; / is not a mount point here (a chroot? bind-mount its root onto itself)"
    fi
    ip netns del "$ns"  # takes its end of the veth pair, and so the pair, with it
  fi
  if [ -n "$why" ]; then echo "netns_cluster: $why" >&2; exit 77; fi
}

# tbf needs a bucket of at least one GSO packet (64 KiB) and about 2 ms of traffic.
shape() {  # ns dev
  local ns=$1 dev=$2
  if [ -n "$rate" ]; then
    local bytes_per_sec burst
    bytes_per_sec=$(rate_bytes "$rate")
    burst=$(( bytes_per_sec / 500 )); (( burst < 262144 )) && burst=262144
    if [ -n "$delay" ]; then
      ip netns exec "$ns" tc qdisc add dev "$dev" root handle 1: netem delay "$delay" 2>/dev/null ||
        die "this kernel has no netem qdisc: --delay cannot be shaped (--rate can)"
      ip netns exec "$ns" tc qdisc add dev "$dev" parent 1:1 handle 10: tbf rate "$rate" burst "$burst" latency 100ms
    else
      ip netns exec "$ns" tc qdisc add dev "$dev" root tbf rate "$rate" burst "$burst" latency 100ms
    fi
  elif [ -n "$delay" ]; then
    ip netns exec "$ns" tc qdisc add dev "$dev" root netem delay "$delay" 2>/dev/null ||
      die "this kernel has no netem qdisc: --delay cannot be shaped (--rate can)"
  fi
}

rate_bytes() {  # 10gbit, 1gbit, 100mbit, 500kbit -> bytes per second
  local v=${1,,}
  case $v in
    *gbit) echo $(( ${v%gbit} * 125000000 )) ;;
    *mbit) echo $(( ${v%mbit} * 125000 )) ;;
    *kbit) echo $(( ${v%kbit} * 125 )) ;;
    *) die "--rate: '$1' is not a rate like 10gbit, 1gbit or 100mbit" ;;
  esac
}

up() {
  check
  ip link show "$(bridge)" >/dev/null 2>&1 && die "cluster '$name' is already up (run: $0 down --name $name)"
  [[ $hosts =~ ^[1-9][0-9]*$ ]] && (( hosts <= 200 )) || die "--hosts: '$hosts' is not a host count from 1 to 200"
  [ -n "$rate" ] && rate_bytes "$rate" >/dev/null
  if [ -n "$delay" ]; then  # ask the kernel first, so a refusal leaves nothing behind
    local probe="${name}probe$$" ok=0
    ip netns add "$probe"
    ip netns exec "$probe" tc qdisc add dev lo root netem delay "$delay" 2>/dev/null && ok=1
    ip netns del "$probe"
    [ "$ok" = 1 ] || die "this kernel has no netem qdisc (or '$delay' is not a delay): --delay cannot be shaped (--rate can)"
  fi
  trap 'down' EXIT  # a step failing half way takes the half-built cluster down again
  ip link add "$(bridge)" type bridge
  ip addr add "$subnet.254/24" dev "$(bridge)"
  ip link set "$(bridge)" up
  for ((i = 1; i <= hosts; i++)); do
    local ns; ns=$(host_ns "$i")
    ip netns add "$ns"
    ip link add "${name}v$i" type veth peer name eth0 netns "$ns"
    ip link set "${name}v$i" master "$(bridge)" up
    ip netns exec "$ns" ip link set lo up
    ip netns exec "$ns" ip addr add "$(host_ip "$i")/24" dev eth0
    ip netns exec "$ns" ip link set eth0 up
    shape "$ns" eth0
  done
  # Bridged traffic must not be filtered by the host's firewall rules.
  [ -w /proc/sys/net/bridge/bridge-nf-call-iptables ] && echo 0 > /proc/sys/net/bridge/bridge-nf-call-iptables || true
  trap - EXIT
  echo "netns_cluster: $hosts hosts up: $(for ((i = 1; i <= hosts; i++)); do printf '%s ' "$(host_ip "$i")"; done)(link: ${rate:-unshaped}${delay:+, +$delay})"
}

down() {
  local ns
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${name}h[0-9]+$" || true); do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    ip netns del "$ns"
  done
  # a namespace lives on while a process still holds it: remove its links from this side too
  local link
  for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E "^${name}v[0-9]+$" || true); do
    ip link del "$link" 2>/dev/null || true
  done
  ip link del "$(bridge)" 2>/dev/null || true
}

status() {
  ip netns list | grep -E "^${name}h[0-9]+" || echo "netns_cluster: no hosts of cluster '$name'"
  local ns
  for ns in $(ip netns list | awk '{print $1}' | grep -E "^${name}h[0-9]+$" || true); do
    echo "$ns: $(ip netns exec "$ns" ip -4 -o addr show dev eth0 | awk '{print $4}')  $(ip netns exec "$ns" tc qdisc show dev eth0 | head -2 | tr '\n' ' ')"
  done
}

# Open MPI's launch agent: `agent [ssh-style options] HOST COMMAND...`; HOST is a host's address.
agent() {
  while [[ ${1:-} == -* ]]; do shift; done
  local host=$1; shift
  local i=${host##*.}
  [[ $host == "$subnet".* && $i =~ ^[0-9]+$ ]] || die "agent: '$host' is not a host of subnet $subnet"
  exec ip netns exec "$(host_ns "$i")" unshare --uts sh -c "hostname ${name}-host$i && exec sh -c \"\$0\"" "$*"
}

run() {
  [ $# -gt 0 ] || die "run: give the command after --"
  up >&2
  [ "$keep" = 1 ] || { trap 'down' EXIT; trap 'exit 143' TERM INT HUP; }
  local hostlist=()
  for ((i = 1; i <= hosts; i++)); do hostlist+=("$(host_ip "$i"):$ranks_per_host"); done
  local mpi=(mpiexec --host "$(IFS=,; echo "${hostlist[*]}")" -np "${ranks:-$((hosts * ranks_per_host))}"
             --mca plm_rsh_agent "$me agent --name $name --subnet $subnet"
             --mca plm_rsh_no_tree_spawn 1 --mca btl self,vader,tcp
             --mca btl_tcp_if_include "$subnet.0/24" --mca oob_tcp_if_include "$subnet.0/24"
             --bind-to none -x CNNBENCH_GLOO_IFACE=eth0
             # Notice a host whose link is cut within about 4 s (Open MPI's default: 8 minutes). It
             # must come before cnnbench's collective watchdog aborts the job: once mpiexec has
             # sent the cut host's daemon its orders, TCP retransmits for many minutes instead.
             --mca oob_tcp_keepalive_time 1 --mca oob_tcp_keepalive_intvl 1 --mca oob_tcp_keepalive_probes 3)
  [ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)
  [ "$ranks_per_host" -gt 1 ] && mpi+=(--oversubscribe)
  local rc=0
  "${mpi[@]}" "$@" || rc=$?
  return $rc
}

cmd=${1:-}; [ $# -gt 0 ] && shift
args=()
while [ $# -gt 0 ]; do
  case $1 in
    --hosts) hosts=$2; shift 2 ;;
    --hosts=*) hosts=${1#*=}; shift ;;
    --ranks-per-host) ranks_per_host=$2; shift 2 ;;
    --ranks-per-host=*) ranks_per_host=${1#*=}; shift ;;
    --ranks) ranks=$2; shift 2 ;;
    --ranks=*) ranks=${1#*=}; shift ;;
    --rate) rate=$2; shift 2 ;;
    --rate=*) rate=${1#*=}; shift ;;
    --delay) delay=$2; shift 2 ;;
    --delay=*) delay=${1#*=}; shift ;;
    --name) name=$2; shift 2 ;;
    --name=*) name=${1#*=}; shift ;;
    --subnet) subnet=$2; shift 2 ;;
    --subnet=*) subnet=${1#*=}; shift ;;
    --keep) keep=1; shift ;;
    --) shift; args+=("$@"); break ;;
    *) [ "$cmd" = agent ] && { args+=("$@"); break; }; die "unknown option '$1'" ;;
  esac
done
[[ $ranks_per_host =~ ^[1-9][0-9]*$ ]] || die "--ranks-per-host: '$ranks_per_host' is not a positive count"
[ -z "$ranks" ] || { [[ $ranks =~ ^[1-9][0-9]*$ ]] && (( ranks <= hosts * ranks_per_host )); } ||
  die "--ranks: '$ranks' is not a count from 1 to hosts x ranks-per-host ($((hosts * ranks_per_host)))"
[[ $name =~ ^[a-z][a-z0-9]{0,5}$ ]] || die "--name: '$name' must be 1-6 lower-case letters/digits (interface names are short)"
[[ $subnet =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "--subnet: '$subnet' is not the first three parts of an IPv4 address"

case $cmd in
  run) run "${args[@]}" ;;
  up) up ;;
  down) down ;;
  status) status ;;
  check) check; echo "netns_cluster: namespaces, veth pairs, bridges and ip netns exec with its own host name work here" ;;
  agent) agent "${args[@]}" ;;
  *) die "usage: $0 run|up|down|status|check [--hosts N] [--ranks-per-host R] [--rate 1gbit] [--delay 50us] [-- CMD...]" ;;
esac
