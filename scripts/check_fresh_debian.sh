#!/usr/bin/env bash
# Tries the README as a new user on a fresh Debian 12 machine would: makes a bare Debian 12 root
# (mmdebstrap --variant=apt bookworm, from the mirrors this machine's apt uses), copies the
# committed tree into /cnnbench there (git archive HEAD), and runs, as root in a chroot, the
# README's two commands exactly as README.md writes them (the lines after `# main job` and
# `# tests` in its first ```sh block), one after the other. The root is bind-mounted onto itself,
# so that / is a mount point inside as on a real machine, with /proc, /sys, /dev, /dev/pts and
# /dev/shm bound in; all mounts live in a private mount namespace and the root is deleted on
# every exit. Prints each command's last lines, exit code and wall time.
#   scripts/check_fresh_debian.sh [--keep] [--only main|tests] [--verbose]
#       --keep     leave the root (and the logs) for inspection; its mounts are gone all the same
#       --only X   run only the main job or only the tests command (each in a fresh root)
#       --verbose  also stream the commands' output as they run
# Exit 0: both passed; 1: one failed; 2: usage or setup error; 77: skipped (with the reason)
# where this machine allows no chroot or mounts. Needs root and mmdebstrap. The bare root's
# tarball (about 165 MB, not the installed packages) is cached in $CNNBENCH_FRESH_CACHE (default
# ~/.cache/cnnbench; empty: no cache); the root goes under $TMPDIR (default /tmp).
set -euo pipefail

die() { echo "check_fresh_debian: $*" >&2; exit 2; }
skip() { echo "check_fresh_debian: skipped: $*" >&2; exit 77; }
say() { echo "check_fresh_debian: $*"; }

kill_inside() {  # every process still running in the root (a daemon a test left behind, or all after ^C)
  local p pids=()
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && pids+=("${p#/proc/}")
  done
  ((${#pids[@]} == 0)) || kill -9 "${pids[@]}" 2>/dev/null || true
}

# The part that runs inside a private mount namespace (see the end): mounts, chroot, commands.
if [ "${1:-}" = __inner ]; then
  root=$2 work=$3 verbose=$4; shift 4
  unmount() {
    kill_inside
    umount -R "$root" 2>/dev/null || umount -R -l "$root" 2>/dev/null || true
  }
  trap unmount EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM HUP
  mount --bind "$root" "$root"
  for d in proc sys dev dev/pts dev/shm; do
    mkdir -p "$root/$d"
    mount --bind "/$d" "$root/$d"
  done
  env=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 TERM=dumb)
  for v in http_proxy https_proxy no_proxy; do  # only what apt may need to reach the mirror
    [ -n "${!v:-}" ] && env+=("$v=${!v}")
  done
  status=0
  results=()
  while [ $# -gt 0 ]; do
    what=$1 cmd=$2; shift 2
    say "[$what] $cmd"
    start=$(date +%s)
    rc=0
    if [ "$verbose" = 1 ]; then
      env -i "${env[@]}" chroot "$root" bash -c "cd /cnnbench && $cmd" </dev/null 2>&1 | tee "$work/$what.log" || rc=${PIPESTATUS[0]}
    else
      env -i "${env[@]}" chroot "$root" bash -c "cd /cnnbench && $cmd" </dev/null > "$work/$what.log" 2>&1 || rc=$?
    fi
    secs=$(( $(date +%s) - start ))
    kill_inside
    echo "---- [$what] last 25 lines of $(wc -l < "$work/$what.log") ----"
    tail -n 25 "$work/$what.log"
    # ctest prints its verdict above the list of skipped tests: repeated here, where a reader of the tail looks
    grep -E '^[0-9]+% tests passed|^Total Test time' "$work/$what.log" | sed "s/^/[$what] /" || true
    echo "----"
    results+=("$(printf '[%s] exit %d, %dm%02ds' "$what" "$rc" $((secs / 60)) $((secs % 60)))")
    say "${results[-1]}"
    [ "$rc" = 0 ] || status=1
  done
  for r in "${results[@]}"; do say "$r"; done
  exit $status
fi

keep=0 only= verbose=0
while [ $# -gt 0 ]; do
  case $1 in
    --keep) keep=1; shift ;;
    --only) only=${2:-}; shift 2 || die "--only: give main or tests" ;;
    --only=*) only=${1#*=}; shift ;;
    --verbose|-v) verbose=1; shift ;;
    *) die "unknown option '$1' (known: --keep, --only main|tests, --verbose)" ;;
  esac
done
case $only in ''|main|tests) ;; *) die "--only: '$only' is neither main nor tests" ;; esac

me=$(readlink -f "$0")
repo=$(cd "$(dirname "$me")/.." && pwd)
t0=$(date +%s)

# The README's two commands, word for word.
main_cmd= tests_cmd=
while IFS=$'\t' read -r what cmd; do
  case $what in main) main_cmd=$cmd ;; tests) tests_cmd=$cmd ;; esac
done < <(awk '
  /^```sh[ \t]*$/ && !seen { inblock = 1; seen = 1; next }
  inblock && /^```/ { exit }
  inblock && /^# main job/ { want = "main"; next }
  inblock && /^# tests/ { want = "tests"; next }
  inblock && want != "" && NF && !/^#/ { print want "\t" $0; want = "" }' "$repo/README.md")
[ -n "$main_cmd" ] || die "README.md: no command after '# main job' in its first \`\`\`sh block"
[ -n "$tests_cmd" ] || die "README.md: no command after '# tests' in its first \`\`\`sh block"
cmds=()
[ "$only" = tests ] || cmds+=(main "$main_cmd")
[ "$only" = main ] || cmds+=(tests "$tests_cmd")

# What this check needs of the machine, each tried for real.
[ "$(id -u)" = 0 ] || skip "needs root (chroot, mounts)"
command -v git >/dev/null || die "git is not installed"
git -C "$repo" rev-parse --verify -q HEAD >/dev/null || die "$repo is not a git checkout with a commit"
[ -z "$(git -C "$repo" status --porcelain --untracked-files=no)" ] ||
  say "note: the check runs the committed tree (HEAD); the uncommitted changes here are not in it"
err=$(chroot / true 2>&1) || skip "chroot is not allowed here (chroot: $err)"
err=$(unshare --mount --propagation private true 2>&1) || skip "cannot make a mount namespace here (unshare --mount: $err)"
probe=$(mktemp -d "${TMPDIR:-/tmp}/cnnbench-fresh-probe.XXXXXX")
err=$(unshare --mount --propagation private sh -c 'mkdir "$1/proc" && mount --bind "$1" "$1" &&
        mount --bind /proc "$1/proc" && mount --make-rslave "$1"' sh "$probe" 2>&1) || {
  rm -rf "$probe"; skip "cannot bind-mount here (mount --bind: $err)"; }
rm -rf "$probe"
if ! command -v mmdebstrap >/dev/null; then
  say "installing mmdebstrap"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      mmdebstrap debian-archive-keyring >/dev/null; } || die "could not install mmdebstrap"
fi

# The mirrors this machine's apt uses for bookworm, bookworm-updates and bookworm-security.
mapfile -t sources < <(apt-get indextargets --format '$(TARGET_OF) $(REPO_URI) $(RELEASE) $(COMPONENT)' \
                         'Identifier: Packages' 2>/dev/null |
                       awk '$1 == "deb" && $3 ~ /^bookworm(-updates|-security)?$/ && $4 == "main"' | sort -u)
if ((${#sources[@]} == 0)); then
  sources=("deb http://deb.debian.org/debian bookworm main" "deb http://deb.debian.org/debian bookworm-updates main"
           "deb http://deb.debian.org/debian-security bookworm-security main")
  say "this machine's apt has no bookworm sources: using ${sources[0]#deb } and its updates and security"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/cnnbench-fresh.XXXXXX")
root=$work/root
cleanup() {
  local rc=$?
  trap - EXIT INT TERM HUP
  kill_inside
  rm -f "${partial:-}"
  # The mounts were in the inner mount namespace, gone with it; refuse to delete through one.
  if findmnt -rn -o TARGET | grep -qF "$work"; then
    echo "check_fresh_debian: something is still mounted under $work: not deleting it" >&2; exit 2
  fi
  if ((rc >= 128)); then
    rm -rf --one-file-system "$work"
    echo "check_fresh_debian: stopped by a signal: removed $work" >&2
  elif [ "$keep" = 1 ]; then
    say "kept the root and the logs in $work (rm -rf --one-file-system $work when done)"
  elif [ "$rc" != 0 ] && [ -n "$(ls "$work"/*.log 2>/dev/null)" ]; then
    rm -rf --one-file-system "$root"
    say "the full logs are in $work"
  else
    rm -rf --one-file-system "$work"
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

# The bare root: mmdebstrap's tarball, cached (by mirror list) when a cache is given.
cache=${CNNBENCH_FRESH_CACHE-$HOME/.cache/cnnbench}
key=$(printf '%s\n' "${sources[@]}" | sha256sum | cut -c1-12)
tarball=${cache:+$cache/bookworm-apt-$key.tar}
tarball=${tarball:-$work/bookworm-apt.tar}
t=$(date +%s)
if [ -s "$tarball" ]; then
  say "bare root: cached $tarball ($(date -r "$tarball" +%F))"
else
  say "bare root: mmdebstrap --variant=apt bookworm from ${sources[*]/#deb /}"
  mkdir -p "$(dirname "$tarball")"
  partial=$tarball.part$$
  unshare --mount --propagation private mmdebstrap --quiet --mode=root --format=tar --variant=apt bookworm \
    "$partial" "${sources[@]}" > "$work/mmdebstrap.log" 2>&1 ||
    { tail -n 25 "$work/mmdebstrap.log" >&2; die "mmdebstrap failed"; }
  mv "$partial" "$tarball"
  partial=
fi
mkdir "$root"
tar -C "$root" -xf "$tarball"
[ -n "$cache" ] || rm -f "$tarball"
# What every installed Debian machine (installer, cloud image, container runtime) has and a bare
# mmdebstrap root lacks: without it "localhost" goes to DNS, and Open MPI's mpiexec (its hwloc
# probing X displays) waited 5 s on a lost reply at every launch.
[ -e "$root/etc/hosts" ] || printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\tlocalhost ip6-localhost ip6-loopback\n' \
  "$(hostname)" > "$root/etc/hosts"
git -C "$repo" archive --prefix=cnnbench/ HEAD | tar -C "$root" -xf -
say "bare root ready in $(( $(date +%s) - t ))s: $root, with $(git -C "$repo" log -1 --format='%h %s' | cut -c1-60)"

rc=0
unshare --mount --propagation private "$me" __inner "$root" "$work" "$verbose" "${cmds[@]}" || rc=$?
secs=$(( $(date +%s) - t0 ))
say "$( ((rc == 0)) && echo passed || echo FAILED) in $((secs / 60))m$(printf %02d $((secs % 60)))s in all"
exit $rc
