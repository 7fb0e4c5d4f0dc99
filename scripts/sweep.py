#!/usr/bin/python3
"""Runs a grid of cnnbench points described by a TOML sweep file and appends one CSV row per
point to <output>/sweep.csv.

  scripts/sweep.py configs/sweep_scaling.toml --plot   # run every point not yet done, then draw
  scripts/sweep.py configs/sweep_scaling.toml --dry-run  # print the commands, write nothing
  scripts/sweep.py configs/sweep_smoke.toml --out /tmp/smoke --retry-failed
  scripts/sweep.py configs/sweep_fashion_mnist_ranks.toml --adopt 1a2b3c4d5e6f=run.json  # a run by hand

Each point runs as `<launch command> <binary> <flags> --result_json=<output>/points/<id>.json
--benchmark_log_dir=<output>/runs` from the repository root, its output saved to
<output>/logs/<id>.log. A point that exits non-zero, runs past --timeout or leaves no JSON is
recorded as failed and the sweep goes on; the exit code is 1 when any point of the sweep has
failed, 2 for a bad sweep file or option. When sweep.csv exists the sweep resumes: points with
an ok row are skipped, failed ones re-run only with --retry-failed; --fresh moves everything the
previous sweep wrote into <output>/previous-<UTC time>/ and starts over. An output folder that
holds another sweep (its sweep.toml) is refused. --adopt takes a point's result measured outside
the sweep, once its recorded settings are checked to be the point's (scripts/sweep_adopt.py). The sweep file format is
described at the top of configs/sweep_smoke.toml.
Standard library only (Python 3.11: tomllib); --plot runs scripts/plot.py (matplotlib).
"""
import argparse
import datetime
import fcntl
import importlib.util
import itertools
import os
import shlex
import signal
import subprocess
import sys
import time

try:
    import tomllib
except ImportError:  # Python < 3.11, before the sweep_*.py modules (which import it too) fail on it
    sys.exit("sweep.py: needs Python 3.11 or later (tomllib); run it with /usr/bin/python3 on Debian 12")

if __package__:  # python3 -m scripts.sweep, or imported as scripts.sweep
    from .sweep_adopt import adopted_row, binary_defaults, check_adopted, parse_adoptions
    from .sweep_csv import add_result_columns, append_line, read_csv, read_csv_readonly, rewrite_csv, write_atomically
    from .sweep_file import ROOT, SweepError, check_flags, check_same_sweep, load_sweep, rel
    from .sweep_point import (ACCURACY_FIELDS, RUN_FIELDS, SUMMARY_FIELDS, baseline_for, check_result_fields,
                              command, describe, json_path, run_point)
else:  # scripts/sweep.py: scripts/ is first on sys.path
    from sweep_adopt import adopted_row, binary_defaults, check_adopted, parse_adoptions
    from sweep_csv import add_result_columns, append_line, read_csv, read_csv_readonly, rewrite_csv, write_atomically
    from sweep_file import ROOT, SweepError, check_flags, check_same_sweep, load_sweep, rel
    from sweep_point import (ACCURACY_FIELDS, RUN_FIELDS, SUMMARY_FIELDS, baseline_for, check_result_fields,
                             command, describe, json_path, run_point)


# CSV layout: point, repeat, the parameter columns (the standard ones, then any other swept key),
# then the rest. A parameter column holds the value the sweep file set, blank where it set none
# (the binary's default) or where the key means nothing (a multi-rank key on one rank).
PARAM_COLUMNS = ["ranks", "hosts", "model", "batch_size", "precision", "allreduce", "fusion_threshold_mb",
                 "compression", "variable_update", "num_intra_threads", "data_name", "data_dir"]
HEAD_COLUMNS = ["point", "repeat"]
RESULT_COLUMNS = ["status", "exit_code", "wall_sec", "other_cpus"] + SUMMARY_FIELDS + RUN_FIELDS + ["time_utc", "json", "log", "error"]
NON_PARAM_COLUMNS = set(HEAD_COLUMNS) | set(RESULT_COLUMNS) | set(ACCURACY_FIELDS)
# What a sweep writes in its output folder (the PNGs: plot.py's, drawn there by --plot); --fresh
# moves them together into <out>/previous-<UTC time>/.
SWEEP_OUTPUTS = ["sweep.csv", "sweep.toml", "points", "logs", "runs",
                 "scaling.png", "fusion.png", "precision.png", "accuracy.png"]


def cell(value):
    """A CSV cell: measured floats to 6 significant digits, as cnnbench's results.csv has them."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


# ---------------------------------------------------------------------------------------------
# The CSV

def trains_to_accuracy(s):
    """Whether the sweep's points are convergence runs (real data, from a flag or from the
    config file a point names): their rows get ACCURACY_FIELDS too; synthetic sweeps keep the
    columns their CSVs already have."""
    for p in s.points:
        if "data_dir" in p.flags:
            return True
        config = p.flags.get("config")
        if config:
            try:
                with open(config if os.path.isabs(config) else os.path.join(ROOT, config), "rb") as f:
                    if "data_dir" in tomllib.load(f):
                        return True
            except (OSError, tomllib.TOMLDecodeError):
                pass  # cnnbench names a bad config file itself
    return False


def header_for(s):
    extra = []
    for p in s.points:
        for k in p.params:
            if k not in PARAM_COLUMNS and k not in extra:
                extra.append(k)
    return HEAD_COLUMNS + PARAM_COLUMNS + extra + RESULT_COLUMNS + (ACCURACY_FIELDS if trains_to_accuracy(s) else [])


# ---------------------------------------------------------------------------------------------
# What earlier sweeps and attempts left

def move_aside(s):
    """--fresh: moves what the previous sweep wrote (SWEEP_OUTPUTS) into a new folder
    <out>/previous-<UTC time>[-N]/, never one that exists, and points the moved CSVs' json, log
    and json_file cells at the moved files. Returns the folder, or None when there was nothing."""
    present = [n for n in SWEEP_OUTPUTS if os.path.lexists(os.path.join(s.out, n))]
    if not present:
        return None
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    for n in itertools.count(1):
        aside = os.path.join(s.out, f"previous-{stamp}" + (f"-{n}" if n > 1 else ""))
        try:
            os.mkdir(aside)  # fails where it exists: an earlier --fresh in the same second
            break
        except FileExistsError:
            continue
    for name in present:
        os.rename(os.path.join(s.out, name), os.path.join(aside, name))

    def retarget(columns):
        return lambda row: {**row, **{c: rel(moved_path(s, aside, row[c])) for c in columns if row.get(c)}}
    if "sweep.csv" in present:
        rewrite_csv(os.path.join(aside, "sweep.csv"), retarget(["json", "log"]))
    if os.path.isfile(os.path.join(aside, "runs", "results.csv")):
        rewrite_csv(os.path.join(aside, "runs", "results.csv"), retarget(["json_file"]))
    return aside


def moved_path(s, aside, path):
    """Where move_aside took a file, path relative to the repository root or absolute: in
    `aside` where it was one of the previous sweep's outputs, else where it was."""
    path = os.path.normpath(os.path.join(ROOT, path))
    inside = os.path.relpath(path, s.out)
    if inside.split(os.sep)[0] in SWEEP_OUTPUTS and os.path.lexists(os.path.join(aside, inside)):
        return os.path.join(aside, inside)
    return path


def forget_attempts(s, point):
    """Drops the rows earlier attempts of the point left in <out>/runs/results.csv (a run ended
    after cnnbench wrote its row, one the sweep recorded as failed): `cnnbench compare <out>/runs`
    would take them beside the new attempt's. Only points without an ok row are run, so no
    row of a recorded result is dropped."""
    path = os.path.join(s.out, "runs", "results.csv")
    if not os.path.isfile(path):
        return
    mine = json_path(s, point)
    lock_fd = os.open(os.path.join(s.out, "runs", ".results.csv.lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX)  # cnnbench's lock on results.csv
        rewrite_csv(path, lambda row: None if row.get("json_file") and
                    os.path.normpath(os.path.join(ROOT, row["json_file"])) == mine else row)
    finally:
        os.close(lock_fd)


# ---------------------------------------------------------------------------------------------

class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP (a `kill`, a job scheduler's end, a closed terminal): the running point's
    processes are ended as on Ctrl-C, instead of the sweep dying and leaving them running."""

    def __init__(self, signum):
        super().__init__()
        self.signum = signum


def stop_on_signal(signum, _frame):
    raise Stopped(signum)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sweep_file", help="TOML sweep file (e.g. configs/sweep_scaling.toml)")
    parser.add_argument("--dry-run", action="store_true", help="print each point's command; run and write nothing")
    parser.add_argument("--resume", action="store_true", help="skip points with an ok row (the default when sweep.csv exists)")
    parser.add_argument("--retry-failed", action="store_true", help="re-run points whose last row is failed or timeout")
    parser.add_argument("--fresh", action="store_true", help="move what the previous sweep wrote into "
                        "<out>/previous-<UTC time>/ and run every point")
    parser.add_argument("--timeout", type=float, help="seconds per point before it is ended and recorded as timeout")
    parser.add_argument("--out", help="output folder (default: sweep.output, or results/sweeps/<name>)")
    parser.add_argument("--binary", help="cnnbench binary (default: sweep.binary, or build/cnnbench)")
    parser.add_argument("--plot", action="store_true", help="run scripts/plot.py on sweep.csv at the end")
    parser.add_argument("--adopt", action="append", default=[], metavar="POINT=RESULT_JSON",
                        help="record this result JSON, run outside the sweep with the same settings, as the "
                             "point's ok row instead of running it (repeatable; point ids: --dry-run)")
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
    if have_binary:
        check_result_fields(s.binary)
    for note in s.notes:
        print(f"sweep.py: {note}", file=sys.stderr)

    if not args.fresh:
        check_same_sweep(s)
    csv_path = os.path.join(s.out, "sweep.csv")
    header = header_for(s)
    rows = []
    if os.path.exists(csv_path) and not args.fresh:
        old_header, rows = read_csv(csv_path) if not args.dry_run else read_csv_readonly(csv_path)
        if old_header and old_header != header:
            added = add_result_columns(csv_path, old_header, header, rows, args.dry_run,
                                       RESULT_COLUMNS + ACCURACY_FIELDS)
            if not added:
                raise SweepError(f"{rel(csv_path)} has other columns than this sweep file gives "
                                 "(the grid changed?): use --fresh to start a new one")
            print(f"sweep.py: {rel(csv_path)}: {'would add' if args.dry_run else 'added'} the result column(s) "
                  f"{', '.join(added)} of this cnnbench, empty for the {len(rows)} row(s) written before",
                  file=sys.stderr)
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
    adoptions = []  # (point, path, doc), checked before anything is written
    if args.adopt:
        if not have_binary:
            raise SweepError(f"--adopt needs the binary's defaults: no cnnbench binary at {rel(s.binary)}")
        defaults = binary_defaults(s.binary)
        adoptions = [(p, path, check_adopted(p, path, defaults)) for p, path in parse_adoptions(args.adopt, s, last)]
    adopting = {p.id: path for p, path, _ in adoptions}
    todo = [p for p in todo if p.id not in adopting]

    if args.dry_run:
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `--dry-run | head` ends quietly
        print(f"# sweep '{s.name}': {len(s.points)} points, {len(todo)} to run, output {rel(s.out)}, "
              f"run from {ROOT}" + ("" if checked else " (flags not checked: no binary)"))
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in s.env.items())
        planned = set(done_json) | {p.id for p in todo} | set(adopting)
        todo_ids = {p.id for p in todo}
        planned_json = {pid: os.path.join(s.out, "points", pid + ".json") for pid in planned}
        for i, p in enumerate(s.points, 1):
            state = last.get(p.id, {}).get("status")
            if p.id in adopting:
                print(f"# [{i}/{len(s.points)}] {p.id} {describe(s, p)}: adopt {rel(adopting[p.id])}")
                continue
            if p.id not in todo_ids:
                print(f"# [{i}/{len(s.points)}] {p.id} {describe(s, p)}: skip ({state})")
                continue
            base = baseline_for(s, p, planned_json)
            print(f"# [{i}/{len(s.points)}] {p.id} {describe(s, p)}")
            print((env + " " if env else "") + shlex.join(command(s, p, base)))
        return 0

    os.makedirs(s.out, exist_ok=True)
    lock_fd = os.open(os.path.join(s.out, ".sweep.lock"), os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise SweepError(f"another sweep is running in {rel(s.out)}")
    if args.fresh:
        aside = move_aside(s)
        if aside:
            print(f"sweep.py: moved the previous sweep's files to {rel(aside)}")
            # an adopted JSON may be one of the files just moved
            adoptions = [(p, moved_path(s, aside, path), doc) for p, path, doc in adoptions]
    for d in ("points", "logs", "runs"):
        os.makedirs(os.path.join(s.out, d), exist_ok=True)
    write_atomically(os.path.join(s.out, "sweep.toml"), s.source)  # what produced the CSV, as read
    if not os.path.exists(csv_path) or os.path.getsize(csv_path) == 0:
        append_line(csv_path, header)
    for p, path, doc in adoptions:
        row = adopted_row(s, p, path, doc)
        append_line(csv_path, [cell(row.get(c)) for c in header])
        done_json[p.id] = os.path.join(ROOT, row["json"])
        skipped_ok += 1
        print(f"adopted {p.id} {describe(s, p)}: {rel(path)}", flush=True)

    print(f"sweep '{s.name}': {len(s.points)} points, {len(todo)} to run"
          + (f", {skipped_ok} done" if skipped_ok else "")
          + (f", {skipped_failed} failed before (skipped; --retry-failed re-runs them)" if skipped_failed else "")
          + f"; output {rel(s.out)}", flush=True)
    t0 = time.monotonic()
    failed = {pid for pid, r in last.items() if pid in ids and r.get("status") in ("failed", "timeout")}
    ran_ok = ran_failed = busy_points = 0
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop_on_signal)
    for i, p in enumerate(todo, 1):
        print(f"[{i}/{len(todo)}] {p.id} {describe(s, p)} ...", end=" ", flush=True)
        try:
            forget_attempts(s, p)
            row = run_point(s, p, baseline_for(s, p, done_json))
        except KeyboardInterrupt as e:
            print("interrupted; this point is not recorded (run the sweep again to resume)", flush=True)
            return 128 + getattr(e, "signum", signal.SIGINT)
        append_line(csv_path, [cell(row.get(c)) for c in header])
        if row["status"] == "ok":
            failed.discard(p.id)
            done_json[p.id] = os.path.join(ROOT, row["json"])
            ran_ok += 1
            eff = row.get("scaling_efficiency") or 0
            busy = float(row.get("other_cpus") or 0)
            accuracy = ""
            if row.get("test_top1") is not None:
                accuracy = f", test top-1 {100 * row['test_top1']:.2f}%"
                if row.get("target_top_1_accuracy"):
                    tta = row.get("time_to_accuracy_sec")
                    accuracy += (f", {100 * row['target_top_1_accuracy']:g}% after {tta:.1f} s"
                                 if tta is not None else f", {100 * row['target_top_1_accuracy']:g}% not reached")
            print(f"ok {float(row['images_per_sec']):.2f} img/s" + (f", efficiency {100 * eff:.1f}%" if eff else "")
                  + accuracy
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


if __name__ == "__main__":
    sys.exit(main())
