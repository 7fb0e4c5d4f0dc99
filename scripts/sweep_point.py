"""One point of a sweep (scripts/sweep.py): its command line under the launcher, running it with
a timeout while sampling the CPU its ranks and other processes use, and its CSV row's values
read from the result JSON it wrote."""

import datetime
import json
import os
import shlex
import signal
import subprocess
import time

if __package__:  # loaded as scripts.sweep_point (python3 -m scripts.sweep)
    from .sweep_file import ROOT, SweepError, canon, rel
else:  # imported by a script run as a file (scripts/ first on sys.path)
    from sweep_file import ROOT, SweepError, canon, rel

# A point's CSV row takes these fields of its result JSON, each in the column named by its path's
# last part; the paths are fields of cnnbench's one result record (`cnnbench --list_result_fields`,
# checked by check_result_fields before a sweep runs).
SUMMARY_PATHS = ["summary." + k for k in (
    "images_per_sec", "images_per_sec_mean", "images_per_sec_stderr", "images_per_sec_jitter",
    "step_time_mean_sec", "step_time_p50_sec", "step_time_p90_sec", "step_time_p99_sec",
    "forward_mean_sec", "backward_mean_sec", "update_mean_sec", "achieved_gflops",
    "fraction_of_peak", "comm_mean_sec", "exposed_comm_mean_sec", "comm_hidden_by_forward_mean_sec",
    "rank_skew", "scaling_efficiency", "peak_rss_bytes", "final_loss")]
RUN_PATHS = ["run." + k for k in ("threads_per_rank", "global_batch", "timed_steps", "buckets", "sent_mib_per_step")]
# A convergence point's accuracy (cnnbench.convergence/1): the last evaluation's test top-1 and
# the target and the time, epochs and images to it (empty when missed) from its summary; the best
# test top-1 and the epochs trained read off its epochs.
ACCURACY_PATHS = ["summary.test_top1", "epochs[].test_top1", "epochs[].epoch", "summary.target_top_1_accuracy",
                  "summary.time_to_accuracy_sec", "summary.epochs_to_accuracy", "summary.images_to_accuracy"]
SUMMARY_FIELDS = [p.split(".")[-1] for p in SUMMARY_PATHS]
RUN_FIELDS = [p.split(".")[-1] for p in RUN_PATHS]
ACCURACY_FIELDS = ["test_top1", "best_test_top1", "epochs", "target_top_1_accuracy", "time_to_accuracy_sec",
                   "epochs_to_accuracy", "images_to_accuracy"]
SCHEMAS = ("cnnbench.result/1", "cnnbench.convergence/1")


def check_result_fields(binary):
    """Refuses a binary whose result record lacks a field the sweep reads (a renamed field would
    otherwise leave its column empty); False when the binary cannot list its fields."""
    try:
        out = subprocess.run([binary, "--list_result_fields"], capture_output=True, text=True, timeout=30).stdout
        known = {f["json_path"] for f in json.loads(out)}
    except (OSError, subprocess.TimeoutExpired, ValueError, TypeError, KeyError):
        return False
    missing = [p for p in SUMMARY_PATHS + RUN_PATHS + ACCURACY_PATHS if p not in known]
    if missing:
        raise SweepError(f"{rel(binary)} writes no result field {missing[0]} (see {rel(binary)} --list_result_fields)")
    return True


def convergence_fields(doc):
    """The sweep row's values of a convergence result: its summary (images/sec over its training
    epochs, the scaling efficiency against its baseline, the accuracy fields), the run fields it
    has, and the best test top-1 and the epochs from its epochs."""
    epochs, run, summary = doc.get("epochs", []), doc.get("run", {}), doc.get("summary", {})
    row = {k: run[k] for k in RUN_FIELDS if k in run}
    for k in SUMMARY_FIELDS + ACCURACY_FIELDS:
        if k in summary:
            row[k] = summary[k]
    tested = [e["test_top1"] for e in epochs if e.get("test_top1") is not None]
    if tested:  # the summary has the last epoch's; a run not evaluated at its end, the last evaluation's
        row.setdefault("test_top1", tested[-1])
        row["best_test_top1"] = max(tested)
    row["epochs"] = len(epochs)
    return row


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
                if doc.get("schema") not in SCHEMAS:
                    raise ValueError("schema is not " + " or ".join(SCHEMAS))
            except (OSError, ValueError) as e:
                status = "failed"
                row["error"] = f"no result JSON ({e})"[:300]
                doc = None
        if doc:
            why = placement_mismatch(point, doc.get("run"), require=False)
            if why:  # e.g. a launcher that ran every rank on this machine for a 2-host point
                status = "failed"
                row["error"] = f"{why}: the launcher did not place the ranks as the point says"
                doc = None
    row["status"] = status
    if status == "timeout":
        row["error"] = f"ran past the timeout of {canon(float(s.timeout))} s"
    elif status == "failed" and "error" not in row:
        row["error"] = error_line(log)
    if doc:
        row["json"] = rel(result)
        row.update(result_fields(doc))
    return row


def placement_mismatch(point, run, require=True):
    """'the run had hosts=1, the point hosts=2' where the ranks or hosts a result recorded (its
    run record) are not the point's, else None. A key the record lacks is a mismatch only when
    `require`."""
    run = run if isinstance(run, dict) else {}
    for key in ("ranks", "hosts"):
        if key not in run and not require:
            continue
        if str(run.get(key)) != str(getattr(point, key)):
            return f"the run had {key}={run.get(key)}, the point {key}={getattr(point, key)}"
    return None


def result_fields(doc):
    """A sweep row's measured values from a result JSON (cnnbench.result/1 or .convergence/1)."""
    if doc["schema"] == "cnnbench.convergence/1":
        return convergence_fields(doc)
    summary, run = doc.get("summary", {}), doc.get("run", {})
    row = {k: summary[k] for k in SUMMARY_FIELDS if k in summary}
    row.update({k: run[k] for k in RUN_FIELDS if k in run})
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
