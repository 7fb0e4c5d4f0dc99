#!/usr/bin/python3
"""Runs a grid of cnnbench points described by a TOML sweep file and appends one CSV row per
point to <output>/sweep.csv.

  scripts/sweep.py configs/sweep_scaling.toml --plot   # run every point not yet done, then draw
  scripts/sweep.py configs/sweep_scaling.toml --dry-run  # print the commands, write nothing
  scripts/sweep.py configs/sweep_smoke.toml --out /tmp/smoke --retry-failed

Each point runs as `<launch command> <binary> <flags> --result_json=<output>/points/<id>.json
--benchmark_log_dir=<output>/runs` from the repository root, its output saved to
<output>/logs/<id>.log. A point that exits non-zero, runs past --timeout or leaves no JSON is
recorded as failed and the sweep goes on; the exit code is 1 when any point of the sweep has
failed, 2 for a bad sweep file or option. When sweep.csv exists the sweep resumes: points with
an ok row are skipped, failed ones re-run only with --retry-failed; --fresh moves the CSV aside
and starts over. The sweep file format is described at the top of configs/sweep_smoke.toml.
Standard library only (Python 3.11: tomllib); --plot runs scripts/plot.py (matplotlib).
"""
import argparse
import csv
import datetime
import fcntl
import hashlib
import importlib.util
import io
import itertools
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

try:
    import tomllib
except ImportError:  # Python < 3.11
    sys.exit("sweep.py: needs Python 3.11 or later (tomllib); run it with /usr/bin/python3 on Debian 12")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_LAUNCH = "mpiexec {allow_root} --oversubscribe --bind-to none --mca btl self,vader -np {ranks}"
DEFAULT_TIMEOUT = 3600.0
# Swept keys that mean nothing on one rank: a 1-rank point leaves them out, so it runs once and
# is the baseline of every backend's series.
DEFAULT_MULTI_RANK_KEYS = ["allreduce", "fusion_threshold_mb", "compression", "variable_update"]
RESERVED_FLAGS = {"result_json", "benchmark_log_dir"}  # sweep.py sets them per point
LAUNCH_PLACEHOLDERS = {"ranks", "hosts", "ranks_per_host", "allow_root"}

# CSV layout: point, repeat, the parameter columns (the standard ones, then any other swept key),
# then the rest. A parameter column holds the value the sweep file set, blank where it set none
# (the binary's default) or where the key means nothing (a multi-rank key on one rank).
PARAM_COLUMNS = ["ranks", "hosts", "model", "batch_size", "precision", "allreduce", "fusion_threshold_mb",
                 "compression", "variable_update", "num_intra_threads", "data_name", "data_dir"]
SUMMARY_FIELDS = ["images_per_sec", "images_per_sec_mean", "images_per_sec_stderr", "images_per_sec_jitter",
                  "step_time_mean_sec", "step_time_p50_sec", "step_time_p90_sec", "step_time_p99_sec",
                  "forward_mean_sec", "backward_mean_sec", "update_mean_sec", "achieved_gflops",
                  "fraction_of_peak", "comm_mean_sec", "exposed_comm_mean_sec", "rank_skew",
                  "scaling_efficiency", "peak_rss_bytes", "final_loss"]
RUN_FIELDS = ["threads_per_rank", "global_batch", "timed_steps", "buckets"]
HEAD_COLUMNS = ["point", "repeat"]
RESULT_COLUMNS = ["status", "exit_code", "wall_sec", "other_cpus"] + SUMMARY_FIELDS + RUN_FIELDS + ["time_utc", "json", "log", "error"]
NON_PARAM_COLUMNS = set(HEAD_COLUMNS) | set(RESULT_COLUMNS)


class SweepError(Exception):
    """A bad sweep file or option: one line, exit code 2."""


def canon(value):
    """The flag-value string of a TOML scalar (true, 16, 0.25, fp32)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    return str(value)


def cell(value):
    """A CSV cell: measured floats to 6 significant digits, as cnnbench's results.csv has them."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def rel(path):
    """path relative to the repository root when inside it (shorter commands), else absolute."""
    path = os.path.abspath(path)
    r = os.path.relpath(path, ROOT)
    return path if r == ".." or r.startswith(".." + os.sep) else r


# ---------------------------------------------------------------------------------------------
# The sweep file

class Point:
    def __init__(self, params, flags, repeat, pid):
        self.params = params  # ordered: ranks, hosts, then the point's keys (grid and fixed flags)
        self.flags = flags    # flag -> string, fixed and swept
        self.repeat = repeat
        self.id = pid

    @property
    def ranks(self):
        return int(self.params["ranks"])

    @property
    def hosts(self):
        return int(self.params["hosts"])


class Sweep:
    pass


def _scalar(value, where):
    if isinstance(value, (str, int, float, bool)):
        return value
    raise SweepError(f"{where}: expected a string, number or boolean, got {type(value).__name__}")


def _check_key(key, where):
    if not re.fullmatch(r"[a-z][a-z0-9_]*", key):
        raise SweepError(f"{where}: '{key}' is not a flag name")
    if key in RESERVED_FLAGS:
        raise SweepError(f"{where}: '{key}' is set by sweep.py for each point")


def load_sweep(path, out_override=None, binary_override=None, timeout_override=None):
    try:
        with open(path, "rb") as f:
            doc = tomllib.load(f)
    except OSError as e:
        raise SweepError(f"cannot read {path}: {e.strerror}")
    except tomllib.TOMLDecodeError as e:
        raise SweepError(f"{path}: {e}")
    except UnicodeDecodeError as e:  # tomllib decodes the whole file first
        raise SweepError(f"{path}: not UTF-8 text (byte {e.start} is 0x{e.object[e.start]:02x})")
    known = {"sweep", "launch", "env", "fixed", "grid", "exclude"}
    for k in doc:
        if k not in known:
            raise SweepError(f"{path}: unknown section '{k}' (known: {', '.join(sorted(known))})")
    for k in ("sweep", "launch", "env", "fixed", "grid"):
        if not isinstance(doc.get(k, {}), dict):
            raise SweepError(f"{path}: '{k}' must be a table ([{k}])")

    s = Sweep()
    s.path = path
    sec = doc.get("sweep", {})
    for k in sec:
        if k not in {"name", "output", "binary", "repeat", "timeout", "multi_rank_keys"}:
            raise SweepError(f"{path}: unknown key sweep.{k} (known: name, output, binary, repeat, timeout, multi_rank_keys)")
    stem = os.path.splitext(os.path.basename(path))[0]
    s.name = sec.get("name", stem[len("sweep_"):] if stem.startswith("sweep_") else stem)
    if not isinstance(s.name, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+", s.name):
        raise SweepError(f"{path}: sweep.name must be a plain name (letters, digits, _ . -)")
    out = out_override or os.path.join(ROOT, sec.get("output", os.path.join("results", "sweeps", s.name)))
    s.out = os.path.abspath(out)
    binary = binary_override or os.path.join(ROOT, sec.get("binary", os.path.join("build", "cnnbench")))
    s.binary = os.path.abspath(binary)
    s.repeat = sec.get("repeat", 1)
    if not isinstance(s.repeat, int) or isinstance(s.repeat, bool) or s.repeat < 1:
        raise SweepError(f"{path}: sweep.repeat must be a whole number >= 1")
    s.timeout = timeout_override if timeout_override is not None else sec.get("timeout", DEFAULT_TIMEOUT)
    if not isinstance(s.timeout, (int, float)) or isinstance(s.timeout, bool) or s.timeout <= 0:
        raise SweepError(f"{path}: sweep.timeout must be a number of seconds > 0")
    s.multi_rank_keys = sec.get("multi_rank_keys", DEFAULT_MULTI_RANK_KEYS)
    if not isinstance(s.multi_rank_keys, list) or not all(isinstance(k, str) for k in s.multi_rank_keys):
        raise SweepError(f"{path}: sweep.multi_rank_keys must be a list of flag names")

    launch = doc.get("launch", {})
    for k in launch:
        if k != "command":
            raise SweepError(f"{path}: unknown key launch.{k} (known: command)")
    s.launch = launch.get("command", DEFAULT_LAUNCH)
    if not isinstance(s.launch, str) or not s.launch.strip():
        raise SweepError(f"{path}: launch.command must be a non-empty string")
    try:
        for field in re.findall(r"\{([^{}]*)\}", s.launch):
            if field not in LAUNCH_PLACEHOLDERS:
                raise SweepError(f"{path}: launch.command: unknown placeholder {{{field}}} "
                                 f"(known: {', '.join('{' + p + '}' for p in sorted(LAUNCH_PLACEHOLDERS))})")
        shlex.split(s.launch.format(ranks=1, hosts=1, ranks_per_host=1, allow_root=""))
    except (ValueError, IndexError) as e:
        raise SweepError(f"{path}: launch.command: {e}")

    s.env = {}
    for k, v in doc.get("env", {}).items():
        s.env[k] = canon(_scalar(v, f"{path}: env.{k}"))

    fixed = {}
    for k, v in doc.get("fixed", {}).items():
        if k not in ("ranks", "hosts"):
            _check_key(k, f"{path}: fixed")
        fixed[k] = _scalar(v, f"{path}: fixed.{k}")

    grid = doc.get("grid", {})
    axes = []  # (grid key, [dict of key -> value]) in file order
    point_keys = {"ranks", "hosts"} | set(fixed)
    swept = set()
    for k, values in grid.items():
        if not isinstance(values, list) or not values:
            raise SweepError(f"{path}: grid.{k} must be a non-empty list")
        if k in fixed:
            raise SweepError(f"{path}: '{k}' is both in [fixed] and in [grid]")
        items = []
        if all(isinstance(v, dict) for v in values):  # linked values: each item sets several keys
            for i, table in enumerate(values):
                if not table:
                    raise SweepError(f"{path}: grid.{k}[{i}] is an empty table")
                for kk, vv in table.items():
                    if kk not in ("ranks", "hosts"):
                        _check_key(kk, f"{path}: grid.{k}[{i}]")
                    if kk in fixed or (kk in grid and kk != k):
                        raise SweepError(f"{path}: grid.{k}[{i}] sets '{kk}', which is set elsewhere too")
                    _scalar(vv, f"{path}: grid.{k}[{i}].{kk}")
                items.append(dict(table))
                swept |= set(table)
        elif any(isinstance(v, dict) for v in values):
            raise SweepError(f"{path}: grid.{k} mixes tables and plain values")
        else:
            if k not in ("ranks", "hosts"):
                _check_key(k, f"{path}: grid")
            for v in values:
                items.append({k: _scalar(v, f"{path}: grid.{k}")})
            swept.add(k)
        point_keys |= {kk for item in items for kk in item}
        axes.append((k, items))
    s.swept = swept
    for key in ("ranks", "hosts"):
        for item in [i for _, items in axes for i in items] + [fixed]:
            v = item.get(key)
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
                raise SweepError(f"{path}: {key} must be a whole number >= 1, got {v!r}")

    excludes = doc.get("exclude", [])
    if not isinstance(excludes, list) or not all(isinstance(e, dict) and e for e in excludes):
        raise SweepError(f"{path}: exclude must be a list of tables ([[exclude]] with key = value)")
    for e in excludes:
        for k, v in e.items():
            if k not in point_keys:
                raise SweepError(f"{path}: exclude names '{k}', which no point sets")
            _scalar(v, f"{path}: exclude.{k}")

    s.fixed = {k: v for k, v in fixed.items() if k not in ("ranks", "hosts")}
    s.flag_names = (set(s.fixed) | point_keys) - {"ranks", "hosts"}
    s.points, s.notes = expand(s, axes, fixed, excludes)
    if not s.points:
        raise SweepError(f"{path}: the grid has no points")
    return s


def same(a, b):
    """TOML values equal as settings: 16 == 16.0, but true is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return a == b


def expand(s, axes, fixed, excludes):
    """The sweep's points: the product of the grid lists (last key fastest), excluded ones left
    out, multi-rank keys dropped on one rank (duplicates merged), fewest ranks first."""
    notes = []
    points, seen, not_divisible = [], set(), 0
    for combo in itertools.product(*[items for _, items in axes]):
        params = {"ranks": fixed.get("ranks", 1), "hosts": fixed.get("hosts", 1)}
        for item in combo:
            params.update(item)
        if any(all(k in params and same(params[k], v) for k, v in e.items()) for e in excludes):
            continue
        if params["ranks"] % params["hosts"]:
            not_divisible += 1
            continue
        if params["ranks"] == 1:
            for k in s.multi_rank_keys:
                if k in s.swept:
                    params.pop(k, None)
        flags = {k: canon(v) for k, v in s.fixed.items()}
        flags.update({k: canon(v) for k, v in params.items() if k not in ("ranks", "hosts")})
        key = json.dumps({"ranks": params["ranks"], "hosts": params["hosts"], "flags": flags, "env": s.env},
                         sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        for r in range(1, s.repeat + 1):
            ident = key if r == 1 else json.dumps({"point": json.loads(key), "repeat": r}, sort_keys=True)
            pid = hashlib.sha1(ident.encode()).hexdigest()[:12]
            shown = dict(params)
            for k, v in fixed.items():
                shown.setdefault(k, v)
            points.append(Point({k: canon(v) for k, v in shown.items()}, flags, r, pid))
    if not_divisible:
        notes.append(f"left out {not_divisible} grid point(s) whose ranks are not a multiple of hosts")
    points.sort(key=lambda p: (p.ranks, p.hosts))  # stable: grid order within a rank count
    return points, notes


def check_flags(s):
    """Refuses flag names the binary does not know (from its --help)."""
    try:
        out = subprocess.run([s.binary, "--help"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    known = set(re.findall(r"^\s+--([a-z0-9_]+)", out, re.M))
    if not known:
        return False
    unknown = sorted(s.flag_names - known)
    if unknown:
        raise SweepError(f"{s.path}: {rel(s.binary)} has no flag --{unknown[0]} (see {rel(s.binary)} --help)")
    return True


# ---------------------------------------------------------------------------------------------
# Commands and CSV

def command(s, point, baseline=None):
    fmt = {"ranks": point.ranks, "hosts": point.hosts, "ranks_per_host": point.ranks // point.hosts,
           "allow_root": "--allow-run-as-root" if os.geteuid() == 0 else ""}
    cmd = shlex.split(s.launch.format(**fmt))
    cmd.append(rel(s.binary))
    cmd += [f"--{k}={v}" for k, v in point.flags.items()]
    if baseline and "baseline" not in point.flags:
        cmd.append(f"--baseline={rel(baseline)}")
    cmd += [f"--result_json={rel(json_path(s, point))}", f"--benchmark_log_dir={rel(os.path.join(s.out, 'runs'))}"]
    return cmd


def json_path(s, point):
    return os.path.join(s.out, "points", point.id + ".json")


def log_path(s, point):
    return os.path.join(s.out, "logs", point.id + ".log")


def header_for(s):
    extra = []
    for p in s.points:
        for k in p.params:
            if k not in PARAM_COLUMNS and k not in extra:
                extra.append(k)
    return HEAD_COLUMNS + PARAM_COLUMNS + extra + RESULT_COLUMNS


def read_csv(path):
    """(header, rows) of an existing sweep.csv; a torn last line (a kill mid-write) is dropped."""
    with open(path, newline="") as f:
        text = f.read()
    if text and not text.endswith("\n"):
        cut = text.rfind("\n") + 1
        print(f"sweep.py: {rel(path)}: dropping an incomplete last line", file=sys.stderr)
        text = text[:cut]
        tmp = path + ".tmp"
        with open(tmp, "w", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    rows = [dict(zip(header, r)) for r in reader if r] if header else []
    return header, rows


def append_line(path, values):
    """Appends one complete CSV line with a single write, then fsyncs: a kill leaves whole rows."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(values)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, buf.getvalue().encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def error_line(log):
    """The line that says why a point failed: cnnbench's own message, else the last line."""
    try:
        with open(log, errors="replace") as f:
            lines = [l.strip() for l in f if l.strip() and not l.startswith("# ")]
    except OSError:
        return ""
    for prefix in ("cnnbench:", "mpiexec ", "mpirun ", "srun: error"):
        for l in lines:
            if l.startswith(prefix):
                return l[:300]
    lines = [l for l in lines if not set(l) <= set("-=")]
    return lines[-1][:300] if lines else ""


def cpu_busy_sec():
    """Seconds of CPU time the whole machine has been busy (Linux /proc/stat), or None."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
        user, nice, system, idle, iowait, irq, softirq, steal = (int(x) for x in fields[1:9])
        return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError):
        return None


def children_cpu_sec():
    import resource
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def ranks_cpu_sec(marker, seen):
    """Updates seen[pid] with the CPU seconds of every process whose command line names `marker`
    (the point's result JSON): its ranks, also where a launcher started them outside this
    process tree (daemonized orted, network namespaces); returns their sum."""
    tick = os.sysconf("SC_CLK_TCK")
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if marker not in f.read():
                    continue
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            seen[pid] = max(seen.get(pid, 0.0), (int(fields[11]) + int(fields[12])) / tick)
        except (OSError, IndexError, ValueError):
            continue
    return sum(seen.values())


def wait_sampling(proc, timeout, marker, seen):
    """proc.wait(timeout), sampling the ranks' CPU time every half second meanwhile."""
    deadline = time.monotonic() + timeout
    while True:
        ranks_cpu_sec(marker, seen)
        try:
            return proc.wait(timeout=max(0.0, min(0.5, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            if time.monotonic() >= deadline:
                raise


def run_point(s, point, baseline):
    cmd = command(s, point, baseline)
    log = log_path(s, point)
    result = json_path(s, point)
    if os.path.exists(result):
        os.remove(result)  # left by an earlier attempt: only this run's JSON counts
    env = dict(os.environ, **s.env)
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    t0 = time.monotonic()
    busy0, own0 = cpu_busy_sec(), children_cpu_sec()
    ranks_seen = {}
    status, code = "ok", 0
    with open(log, "w") as f:
        f.write("# " + " ".join(f"{k}={shlex.quote(v)}" for k, v in s.env.items()) + (" " if s.env else "")
                + shlex.join(cmd) + "\n")
        f.flush()
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=f,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            code = wait_sampling(proc, s.timeout, os.fsencode(rel(result)), ranks_seen)
        except subprocess.TimeoutExpired:
            stop(proc)
            status, code = "timeout", ""
        except BaseException:
            stop(proc)
            raise
    wall = time.monotonic() - t0
    busy1, own1 = cpu_busy_sec(), children_cpu_sec()
    row = {"point": point.id, "repeat": point.repeat, "status": status, "exit_code": code,
           "wall_sec": f"{wall:.2f}", "time_utc": started, "log": rel(log)}
    if busy0 is not None and busy1 is not None and wall > 0:
        # CPUs kept busy by anything but this point (a build, another benchmark): a measurement
        # taken beside other work is not this machine's figure
        own = max(own1 - own0, sum(ranks_seen.values()))
        row["other_cpus"] = f"{max(0.0, (busy1 - busy0) - own) / wall:.2f}"
    row.update(point.params)
    doc = None
    if status == "ok":
        if code != 0:
            status = "failed"
        else:
            try:
                with open(result) as f:
                    doc = json.load(f)
                if doc.get("schema") != "cnnbench.result/1":
                    raise ValueError("schema is not cnnbench.result/1")
            except (OSError, ValueError) as e:
                status = "failed"
                row["error"] = f"no result JSON ({e})"[:300]
                doc = None
    row["status"] = status
    if status == "timeout":
        row["error"] = f"ran past the timeout of {canon(float(s.timeout))} s"
    elif status == "failed" and "error" not in row:
        row["error"] = error_line(log)
    if doc:
        row["json"] = rel(result)
        summary, run = doc.get("summary", {}), doc.get("run", {})
        for k in SUMMARY_FIELDS:
            if k in summary:
                row[k] = summary[k]
        for k in RUN_FIELDS:
            if k in run:
                row[k] = run[k]
    return row


def stop(proc):
    """Ends the point's process group (the launcher and the ranks it started)."""
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def baseline_for(s, point, done_json):
    """The JSON of the ok 1-rank point with the same settings apart from multi-rank keys."""
    if point.ranks == 1 or "baseline" in point.flags:
        return None
    want = {k: v for k, v in point.flags.items() if not (k in s.multi_rank_keys and k in s.swept)}
    if not hasattr(s, "baseline_ids"):  # indexed once: a scan per point made big sweeps quadratic
        s.baseline_ids = {}
        for p in s.points:
            if p.ranks == 1 and p.hosts == 1 and p.repeat == 1:
                s.baseline_ids.setdefault(json.dumps(p.flags, sort_keys=True), p.id)
    return done_json.get(s.baseline_ids.get(json.dumps(want, sort_keys=True)))


def describe(s, point):
    shown = [f"ranks={point.ranks}"] + [f"{k}={v}" for k, v in point.params.items()
                                         if k in s.swept and k != "ranks"]
    if point.repeat > 1:
        shown.append(f"repeat={point.repeat}")
    return " ".join(shown)


# ---------------------------------------------------------------------------------------------

def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sweep_file", help="TOML sweep file (e.g. configs/sweep_scaling.toml)")
    parser.add_argument("--dry-run", action="store_true", help="print each point's command; run and write nothing")
    parser.add_argument("--resume", action="store_true", help="skip points with an ok row (the default when sweep.csv exists)")
    parser.add_argument("--retry-failed", action="store_true", help="re-run points whose last row is failed or timeout")
    parser.add_argument("--fresh", action="store_true", help="move sweep.csv aside (sweep-<time>.csv) and run every point")
    parser.add_argument("--timeout", type=float, help="seconds per point before it is ended and recorded as timeout")
    parser.add_argument("--out", help="output folder (default: sweep.output, or results/sweeps/<name>)")
    parser.add_argument("--binary", help="cnnbench binary (default: sweep.binary, or build/cnnbench)")
    parser.add_argument("--plot", action="store_true", help="run scripts/plot.py on sweep.csv at the end")
    args = parser.parse_args(argv)
    try:
        if args.fresh and args.resume:
            raise SweepError("--fresh and --resume contradict each other")
        if args.timeout is not None and args.timeout <= 0:
            raise SweepError("--timeout must be > 0")
        s = load_sweep(args.sweep_file, args.out, args.binary, args.timeout)
        return run_sweep(s, args)
    except SweepError as e:
        print(f"sweep.py: {e}", file=sys.stderr)
        return 2


def run_sweep(s, args):
    have_binary = os.path.isfile(s.binary) and os.access(s.binary, os.X_OK)
    if not have_binary and not args.dry_run:
        raise SweepError(f"no cnnbench binary at {rel(s.binary)} (build it: cmake --build build, or pass --binary)")
    checked = have_binary and check_flags(s)
    for note in s.notes:
        print(f"sweep.py: {note}", file=sys.stderr)

    csv_path = os.path.join(s.out, "sweep.csv")
    header = header_for(s)
    rows = []
    if os.path.exists(csv_path) and not args.fresh:
        old_header, rows = read_csv(csv_path) if not args.dry_run else read_csv_readonly(csv_path)
        if old_header and old_header != header:
            raise SweepError(f"{rel(csv_path)} has other columns than this sweep file gives "
                             "(the grid changed?): use --fresh to start a new one")
    last = {}
    for r in rows:
        last[r.get("point")] = r
    ids = {p.id for p in s.points}
    stray = [pid for pid in last if pid not in ids]
    if stray:
        print(f"sweep.py: {len(stray)} row(s) in {rel(csv_path)} match no point of this sweep file "
              "(settings changed?); plot.py draws them too; --fresh starts over", file=sys.stderr)
    done_json = {pid: os.path.join(ROOT, r["json"]) for pid, r in last.items()
                 if r.get("status") == "ok" and r.get("json")}

    todo, skipped_ok, skipped_failed = [], 0, 0
    for p in s.points:
        state = last.get(p.id, {}).get("status")
        if state == "ok":
            skipped_ok += 1
        elif state in ("failed", "timeout") and not args.retry_failed:
            skipped_failed += 1
        else:
            todo.append(p)

    if args.dry_run:
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `--dry-run | head` ends quietly
        print(f"# sweep '{s.name}': {len(s.points)} points, {len(todo)} to run, output {rel(s.out)}, "
              f"run from {ROOT}" + ("" if checked else " (flags not checked: no binary)"))
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in s.env.items())
        planned = set(done_json) | {p.id for p in todo}
        todo_ids = {p.id for p in todo}
        planned_json = {pid: os.path.join(s.out, "points", pid + ".json") for pid in planned}
        for i, p in enumerate(s.points, 1):
            state = last.get(p.id, {}).get("status")
            if p.id not in todo_ids:
                print(f"# [{i}/{len(s.points)}] {p.id} {describe(s, p)}: skip ({state})")
                continue
            base = baseline_for(s, p, planned_json)
            print(f"# [{i}/{len(s.points)}] {p.id} {describe(s, p)}")
            print((env + " " if env else "") + shlex.join(command(s, p, base)))
        return 0

    for d in ("points", "logs", "runs"):
        os.makedirs(os.path.join(s.out, d), exist_ok=True)
    lock_fd = os.open(os.path.join(s.out, ".sweep.lock"), os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise SweepError(f"another sweep is running in {rel(s.out)}")
    if args.fresh and os.path.exists(csv_path):
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        aside = os.path.join(s.out, f"sweep-{stamp}.csv")
        os.replace(csv_path, aside)
        print(f"sweep.py: moved the old {rel(csv_path)} to {rel(aside)}")
    try:
        shutil.copyfile(s.path, os.path.join(s.out, "sweep.toml"))  # what produced the CSV
    except shutil.SameFileError:
        pass
    if not os.path.exists(csv_path) or os.path.getsize(csv_path) == 0:
        append_line(csv_path, header)

    print(f"sweep '{s.name}': {len(s.points)} points, {len(todo)} to run"
          + (f", {skipped_ok} done" if skipped_ok else "")
          + (f", {skipped_failed} failed before (skipped; --retry-failed re-runs them)" if skipped_failed else "")
          + f"; output {rel(s.out)}", flush=True)
    t0 = time.monotonic()
    failed = {pid for pid, r in last.items() if pid in ids and r.get("status") in ("failed", "timeout")}
    ran_ok = ran_failed = busy_points = 0
    for i, p in enumerate(todo, 1):
        print(f"[{i}/{len(todo)}] {p.id} {describe(s, p)} ...", end=" ", flush=True)
        try:
            row = run_point(s, p, baseline_for(s, p, done_json))
        except KeyboardInterrupt:
            print("interrupted; this point is not recorded (run the sweep again to resume)")
            return 130
        append_line(csv_path, [cell(row.get(c)) for c in header])
        if row["status"] == "ok":
            failed.discard(p.id)
            done_json[p.id] = os.path.join(ROOT, row["json"])
            ran_ok += 1
            eff = row.get("scaling_efficiency") or 0
            busy = float(row.get("other_cpus") or 0)
            print(f"ok {float(row['images_per_sec']):.2f} img/s" + (f", efficiency {100 * eff:.1f}%" if eff else "")
                  + f" ({row['wall_sec']} s)"
                  + (f"; other work kept {busy:.2f} CPUs busy meanwhile" if busy >= 0.25 else ""), flush=True)
            if busy >= 0.25:
                busy_points += 1
        else:
            failed.add(p.id)
            ran_failed += 1
            why = f"exit code {row['exit_code']}" if row["status"] == "failed" and row["exit_code"] != 0 else row["status"]
            print(f"{row['status'].upper()} ({why}, {row['wall_sec']} s): {row.get('error', '')}; log {row['log']}",
                  flush=True)
    wall = time.monotonic() - t0
    print(f"sweep '{s.name}': ran {len(todo)} point(s) in {wall:.1f} s: {ran_ok} ok, {ran_failed} failed"
          + (f"; {skipped_ok} skipped as done" if skipped_ok else "")
          + (f"; {len(failed)} point(s) of this sweep have failed" if failed else "")
          + (f"; {busy_points} ran beside other work (other_cpus >= 0.25)" if busy_points else "")
          + f"; results in {rel(csv_path)}", flush=True)
    os.close(lock_fd)

    if args.plot:
        plot = os.path.join(ROOT, "scripts", "plot.py")
        python = sys.executable if importlib.util.find_spec("matplotlib") else "/usr/bin/python3"
        rc = subprocess.call([python, plot, csv_path, "--out", s.out])
        if rc != 0:
            print(f"sweep.py: plot.py exited with {rc}", file=sys.stderr)
            return rc if not failed else 1
    return 1 if failed else 0


def read_csv_readonly(path):
    """read_csv without repairing anything (for --dry-run)."""
    with open(path, newline="") as f:
        text = f.read()
    if text and not text.endswith("\n"):
        text = text[:text.rfind("\n") + 1]
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    return header, ([dict(zip(header, r)) for r in reader if r] if header else [])


if __name__ == "__main__":
    sys.exit(main())
