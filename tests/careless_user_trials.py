#!/usr/bin/env python3
"""Issue 35's trials: cnnbench run as a demanding and careless user would run it.

Each trial runs real command lines, each in a fresh temporary folder of its own, under a
wall-clock limit (the process group is killed on timeout: verdict "hang"), and checks what a
user would: the exit code, a phrase in the output (case-insensitive, loose), that files are
byte-identical afterwards (sha256), that files exist or do not, counts of files, peak memory
and elapsed time. It writes a Markdown table and a CSV (trial, command, exit, last line,
verdict) and prints "N passed, M failed"; it exits 1 if any trial failed.

  tests/careless_user_trials.py --binary build/cnnbench \
      [--mpiexec "mpiexec --allow-run-as-root --oversubscribe"] [--out results/careless_user/] \
      [--only PATTERN] [--jobs 1] [--keep]

--only takes comma-separated patterns: an item number (`2`: 2a, 2b, ...), a glob on the trial
id (`1?`, `1[0-2]*`) or a regular expression matched against the whole id (`2a|3b`).

Commands are shown as a user types them: `cnnbench` is the binary, `$IDX` the small
Fashion-MNIST run below (its data folder is made by this script from Debian's
dataset-fashion-mnist), `$SYN` a tiny synthetic run, `$CIFAR` a tiny CIFAR-10 binary folder run,
`$MPIEXEC` the --mpiexec launcher, `$PWD` the trial's own folder. Python 3.11 standard library
only.
"""

import argparse
import csv
import fnmatch
import gzip
import hashlib
import io
import json
import os
import random
import re
import shlex
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor

SYN = ["--model=trivial", "--num_batches=2", "--num_warmup_batches=1", "--num_intra_threads=1"]
FMNIST = "/usr/share/datasets/fashion-mnist"
TRAIN_IMAGES, TEST_IMAGES = 512, 128  # the idx folder: 16 steps of 32 an epoch
CIFAR_RECORDS = 40  # per CIFAR-10 batch file (3073 bytes a record)
DEFAULT_LIMIT = 90.0  # seconds a command may run unless the trial says otherwise
OUTPUT_KEEP = 200_000  # bytes of each command's output kept for the log

STEP_LINE = re.compile(r"^\s*\d+\s+images/sec:", re.M)
EPOCH_LINE = re.compile(r"^\s*Epoch \d+/\d+:", re.M)
NONFINITE = re.compile(r"(?<![A-Za-z_])[-+]?(nan|inf|infinity)(?![A-Za-z_])", re.I)


# ---------------------------------------------------------------------------------------------
# fixtures: the data folders every trial shares (read-only for the trials; checked at the end)

def idx_bytes(path, count):
    """The first `count` items of a gzipped idx file, as an uncompressed idx file."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack(">I", data[:4])[0]
    dims = magic & 0xFF
    shape = list(struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims]))
    if magic >> 8 != 0x08 or shape[0] < count:
        raise SystemExit(f"careless_user_trials: {path} is not an idx file of unsigned bytes with {count} items")
    item = 1
    for d in shape[1:]:
        item *= d
    body = data[4 + 4 * dims:4 + 4 * dims + count * item]
    shape[0] = count
    return struct.pack(">I", magic) + struct.pack(">" + "I" * dims, *shape) + body


def make_idx_folder(folder):
    os.makedirs(folder)
    for split, count in (("train", TRAIN_IMAGES), ("t10k", TEST_IMAGES)):
        for kind in ("images-idx3-ubyte", "labels-idx1-ubyte"):
            src = os.path.join(FMNIST, f"{split}-{kind}.gz")
            if not os.path.isfile(src):
                raise SystemExit(f"careless_user_trials: {src} is missing (apt-get install dataset-fashion-mnist; "
                                 "`dpkg -L dataset-fashion-mnist` lists its files)")
            with open(os.path.join(folder, f"{split}-{kind}"), "wb") as f:
                f.write(idx_bytes(src, count))


def make_cifar_folder(folder, records=CIFAR_RECORDS, seed=0):
    """A tiny CIFAR-10 binary folder in the published format: label byte + 3072 pixel bytes."""
    os.makedirs(folder)
    rnd = random.Random(seed)
    for name in [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]:
        with open(os.path.join(folder, name), "wb") as f:
            for r in range(records):
                f.write(bytes([r % 10]) + rnd.randbytes(3072))


# ---------------------------------------------------------------------------------------------
# files on disk

def snapshot(root):
    """Every entry under root: relative path -> (kind, sha256 or link target). Never opens
    anything but regular files (a FIFO would block)."""
    out = {}
    if not os.path.lexists(root):
        return out
    if not os.path.isdir(root) or os.path.islink(root):
        return {".": entry_id(root)}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            out[os.path.relpath(p, root)] = entry_id(p)
    return out


def entry_id(p):
    st = os.lstat(p)
    if stat.S_ISLNK(st.st_mode):
        return ("link", os.readlink(p))
    if stat.S_ISDIR(st.st_mode):
        return ("dir", "")
    if stat.S_ISFIFO(st.st_mode):
        return ("fifo", "")
    if stat.S_ISREG(st.st_mode):
        h = hashlib.sha256()
        with open(p, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        return ("file", h.hexdigest())
    return ("other", str(st.st_mode))


def snapshot_diff(before, after):
    """'' when identical, else a short description of what changed."""
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    changed = sorted(k for k in set(before) & set(after) if before[k] != after[k])
    parts = []
    for what, names in (("added", added), ("removed", removed), ("changed", changed)):
        if names:
            parts.append(what + " " + ", ".join(names[:3]) + (f" (+{len(names) - 3} more)" if len(names) > 3 else ""))
    return "; ".join(parts)


def read_csv_rows(path):
    """(header, rows) of a CSV file, or raises ValueError saying why it does not parse."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f, strict=True))
    if not rows:
        raise ValueError("empty")
    header, body = rows[0], rows[1:]
    for i, r in enumerate(body, 2):
        if len(r) != len(header):
            raise ValueError(f"row {i} has {len(r)} fields, the header {len(header)}")
    return header, body


def data_rows(path):
    """Rows of a results.csv (0 when it does not exist)."""
    if not os.path.isfile(path):
        return 0
    return len(read_csv_rows(path)[1])


def last_line(text):
    for line in reversed(text.splitlines()):
        if line.strip():
            return line.strip()
    return ""


def lines(text):
    return [l for l in text.splitlines() if l.strip()]


def has(text, *phrases):
    """Any of the phrases, case-insensitive."""
    low = text.lower()
    return any(p.lower() in low for p in phrases)


def walk_json(doc, path=""):
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from walk_json(v, f"{path}.{k}" if path else k)
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from walk_json(v, f"{path}[{i}]")
    else:
        yield path, doc


# ---------------------------------------------------------------------------------------------
# running commands

class Result:
    aux = False  # a preparing step (shell or file edit), not a cnnbench command
    exits = None  # several runs shown as one command: their exit codes

    def __init__(self, display, rc, out, seconds, maxrss_kb, hung, killed_for_memory):
        self.display, self.rc, self.out, self.seconds = display, rc, out, seconds
        self.maxrss_kb, self.hung, self.killed_for_memory = maxrss_kb, hung, killed_for_memory

    @property
    def last(self):
        return last_line(self.out)

    @property
    def exit_text(self):
        if self.exits:
            return self.exits
        if self.hung:
            return "killed (timeout)"
        if self.killed_for_memory:
            return "killed (memory)"
        return str(self.rc)


class SetupFailed(Exception):
    pass


class Trial:
    """One trial: its folder, its commands, its checks."""

    def __init__(self, spec, ctx, root):
        self.id, self.desc, self.fn = spec
        self.ctx = ctx
        self.dir = os.path.join(root, self.id, "work")  # the user's folder: the commands' cwd
        self.aux = os.path.join(root, self.id, "aux")   # the trial's own scratch, never checked
        os.makedirs(self.dir)
        os.makedirs(self.aux)
        self.results = []
        self.key = None
        self.failures = []
        self.log = []
        self.hang = None

    # -- paths and files
    def p(self, *parts):
        return os.path.join(self.dir, *parts)

    def write(self, rel, data):
        path = self.p(rel)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "wb" if isinstance(data, bytes) else "w") as f:
            f.write(data)
        return path

    def read(self, rel):
        with open(self.p(rel), "rb") as f:
            return f.read()

    def glob(self, folder, pattern):
        d = self.p(folder)
        return sorted(n for n in os.listdir(d) if fnmatch.fnmatch(n, pattern)) if os.path.isdir(d) else []

    def snap(self, rel="."):
        return snapshot(self.p(rel))

    # -- commands
    def expand(self, display):
        argv = []
        for tok in shlex.split(display):
            tok = tok.replace("$PWD", self.dir)
            if tok == "cnnbench":
                argv.append(self.ctx.binary)
            elif tok == "$IDX":
                argv += self.ctx.idx_flags
            elif tok == "$SYN":
                argv += SYN
            elif tok == "$CIFAR":
                argv += self.ctx.cifar_flags
            elif tok == "$MPIEXEC":
                argv += shlex.split(self.ctx.mpiexec)
            else:
                argv.append(tok)
        return argv

    def start(self, display, env=None):
        argv = self.expand(display)
        log = tempfile.TemporaryFile(dir=self.aux)
        full_env = dict(os.environ)
        full_env.update(env or {})
        proc = subprocess.Popen(argv, cwd=self.dir, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, env=full_env)
        LIVE.add(proc.pid)
        return (display, proc, log, time.monotonic())

    def finish(self, handle, limit=DEFAULT_LIMIT, rss_limit_mb=4000):
        display, proc, log, t0 = handle
        hung = killed_for_memory = False
        status = rusage = None
        while True:
            pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - t0 > limit:
                hung = True
            elif rss_mb(proc.pid) > rss_limit_mb:
                killed_for_memory = True
            if hung or killed_for_memory:
                kill_group(proc.pid)
                _, status, rusage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.02)
        seconds = time.monotonic() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        kill_group(proc.pid)  # whatever it left behind (mpiexec's ranks)
        LIVE.discard(proc.pid)
        log.seek(0, os.SEEK_END)
        size = log.tell()
        log.seek(max(0, size - OUTPUT_KEEP))
        out = log.read().decode("utf-8", "replace")
        log.close()
        r = Result(display, proc.returncode, out, seconds, rusage.ru_maxrss, hung, killed_for_memory)
        self.results.append(r)
        self.log.append(f"$ {display}\n[exit {r.exit_text}, {seconds:.1f} s, peak RSS {r.maxrss_kb // 1024} MB]\n{out}")
        if hung:
            self.hang = self.hang or f"`{display}` still running after {limit:g} s"
        return r

    def run(self, display, limit=DEFAULT_LIMIT, env=None, rss_limit_mb=4000):
        return self.finish(self.start(display, env), limit, rss_limit_mb)

    def run_parallel(self, displays, limit=DEFAULT_LIMIT, shown=None):
        """Commands started at once (shown as `a & b & wait`, or as `shown`)."""
        handles = [self.start(d) for d in displays]
        rs = [self.finish(h, limit) for h in handles]
        self.merge(len(rs), shown or " & ".join(displays) + " & wait")
        return rs

    def sh(self, display):
        """A shell step a user types to prepare the trial (mkfifo, truncate, ln -s, printf ... >):
        run by bash in the trial's folder ($IDX_DIR, $CIFAR_DIR: the shared data folders); it
        must succeed."""
        env = dict(os.environ, IDX_DIR=self.ctx.idx, CIFAR_DIR=self.ctx.cifar)
        p = subprocess.run(["bash", "-c", display], cwd=self.dir, env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
        out = p.stdout.decode("utf-8", "replace")
        r = Result(display, p.returncode, out, 0.0, 0, False, False)
        r.aux = True
        self.results.append(r)
        self.log.append(f"$ {display}\n[exit {p.returncode}]\n{out}")
        if p.returncode != 0:
            raise SetupFailed(f"setup `{display}` exit {p.returncode}: {last_line(out)[:200]}")
        return r

    def step(self, display):
        """A step done by this script on the user's behalf (a file edited as a user would),
        shown in the commands."""
        r = Result(display, 0, "", 0.0, 0, False, False)
        r.aux = True
        r.exits = "-"
        self.results.append(r)
        self.log.append(f"$ {display}\n")

    def setup(self, display, limit=DEFAULT_LIMIT, env=None):
        """A command the trial needs to succeed before it can test anything."""
        r = self.run(display, limit, env)
        if r.rc != 0 or r.hung:
            raise SetupFailed(f"setup `{display}` exit {r.exit_text}: {r.last[:200]}")
        return r

    # -- checks
    def check(self, ok, why):
        if not ok:
            self.failures.append(why)
        return ok

    def exit_is(self, r, *codes):
        return self.check(r.hung or r.rc in codes,
                          f"exit {r.exit_text}, not {' or '.join(map(str, codes))} ({r.last[:160]!r})")

    def says(self, r, *phrases, what=None):
        return self.check(has(r.out, *phrases), f"output does not {what or 'say ' + ' or '.join(map(repr, phrases))}")

    def not_says(self, r, *phrases):
        found = [p for p in phrases if has(r.out, p)]
        return self.check(not found, f"output says {found[0]!r}" if found else "")

    def unchanged(self, before, after, what="the folder"):
        d = snapshot_diff(before, after)
        return self.check(not d, f"{what} changed: {d}")

    def no_step_ran(self, r):
        return self.check(not STEP_LINE.search(r.out) and not EPOCH_LINE.search(r.out),
                          "a step or epoch ran before the refusal")

    def not_crashed(self, r):
        """Ended by itself with an exit code (not a signal), without an uncaught exception."""
        return self.check(r.hung or (0 <= r.rc < 128 and not has(r.out, "terminate called", "bad_alloc",
                                                                  "Segmentation fault", "core dumped")),
                          f"crashed: exit {r.exit_text} ({r.last[:160]!r})")

    def refused(self, r, before=None, after=None, names=(), must_name=()):
        """Exit 2 and one line starting `cnnbench:` or naming the flag/file; that line names
        one of must_name (when given); nothing on disk changed (when snapshots are given)."""
        if r.hung:
            return False
        if r.rc != 2:  # not refused: the exit and what it did to the files are the news
            self.check(False, f"exit {r.rc}, not 2 ({r.last[:160]!r})")
            if before is not None:
                self.unchanged(before, after)
            return False
        ok = True
        ls = lines(r.out)
        ok &= self.check(len(ls) == 1, f"{len(ls)} lines of output, not one (last: {r.last[:160]!r})")
        if ls:
            ok &= self.check(ls[0].startswith("cnnbench:") or has(ls[0], *names) if names else
                             ls[0].startswith("cnnbench:"), f"the line neither starts with 'cnnbench:' nor names "
                             f"{' or '.join(names) or 'the flag'}: {ls[0][:160]!r}")
        if must_name:
            ok &= self.check(has(r.out, *must_name), f"the message does not name {' or '.join(map(repr, must_name))}")
        if before is not None:
            ok &= self.unchanged(before, after)
        return ok

    def merge(self, n, display):
        """Show the last n commands as the one line a user typed (a loop); exits: each run's."""
        runs = self.results[-n:]
        self.results[-n:] = [Result(display, runs[-1].rc, runs[-1].out, sum(r.seconds for r in runs),
                                    max(r.maxrss_kb for r in runs), any(r.hung for r in runs), False)]
        self.results[-1].exits = " ".join(r.exit_text for r in runs)
        return self.results[-1]

    def show(self, r):
        """The command whose exit and last line the table shows (default: the last one)."""
        self.key = r

    def verdict(self):
        if self.hang:
            return "hang: " + self.hang
        return "clean" if not self.failures else "FAIL: " + "; ".join(self.failures)


LIVE = set()  # process groups of commands still running: killed if this script is interrupted


def rss_mb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        pass
    return 0


def kill_group(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


# ---------------------------------------------------------------------------------------------
# the trials

TRIALS = []


def trial(tid, desc):
    def register(fn):
        TRIALS.append((tid, desc, fn))
        return fn
    return register


def json_files(t, folder):
    return [n for n in t.glob(folder, "*.json")]


def run_loop_and_count(t, results_folder, runs):
    """Rows in results.csv, JSON files and *_epochs.csv files of one results folder."""
    rows = data_rows(t.p(results_folder, "results.csv"))
    jsons = json_files(t, results_folder)
    epochs = t.glob(results_folder, "*_epochs.csv")
    t.check(rows == runs, f"{rows} rows in results.csv after {runs} runs")
    t.check(len(jsons) == rows, f"{len(jsons)} JSON files for {rows} rows")
    t.check(len(epochs) == rows, f"{len(epochs)} *_epochs.csv files for {rows} rows")
    seeds = set()
    for n in jsons:
        try:
            with open(t.p(results_folder, n)) as f:
                seeds.add(str(json.load(f).get("config", {}).get("seed")))
        except (OSError, ValueError):
            pass
    t.check(len(seeds) == runs, f"the JSON files hold {len(seeds)} distinct seeds of {runs} runs")


@trial("1a", "four convergence runs in a row into one log dir: a JSON and an _epochs.csv per results.csv row")
def t1a(t):
    for s in (1, 2, 3, 4):
        r = t.run(f"cnnbench $IDX --num_batches=1 --benchmark_log_dir=L --seed={s}")
        t.exit_is(r, 0)
    t.merge(4, "for s in 1 2 3 4; do cnnbench $IDX --num_batches=1 --benchmark_log_dir=L --seed=$s; done")
    run_loop_and_count(t, "L", 4)


@trial("1b", "two convergence runs at once into one log dir: a JSON and an _epochs.csv per row")
def t1b(t):
    rs = t.run_parallel(["cnnbench $IDX --num_batches=1 --benchmark_log_dir=L --seed=1",
                         "cnnbench $IDX --num_batches=1 --benchmark_log_dir=L --seed=2"])
    for r in rs:
        t.exit_is(r, 0)
    run_loop_and_count(t, "L", 2)


@trial("2a", "--resume in a train_dir holding another model's checkpoints is refused, naming the model")
def t2a(t):
    t.setup("cnnbench $IDX --num_epochs=1 --train_dir=T")
    before = t.snap("T")
    r = t.run("cnnbench $IDX --model=resnet20_fmnist --num_epochs=2 --train_dir=T --resume")
    t.refused(r, names=("--resume", "--train_dir", "checkpoint", "T/"), must_name=("small_cnn", "resnet20_fmnist"))
    t.not_says(r, "damaged")
    t.unchanged(before, t.snap("T"), "T")


@trial("2b", "--resume past a truncated newest checkpoint: named as damaged, resumes from the one before")
def t2b(t):
    t.setup("cnnbench $IDX --num_epochs=2 --train_dir=T")
    newest = t.p("T", "checkpoint-epoch-0002.ckpt")
    if not t.check(os.path.isfile(newest), "no T/checkpoint-epoch-0002.ckpt after a 2-epoch run"):
        return
    t.sh("truncate -s -1000 T/checkpoint-epoch-0002.ckpt")
    r = t.run("cnnbench $IDX --num_epochs=3 --train_dir=T --resume")
    t.exit_is(r, 0)
    t.says(r, "damaged")
    t.says(r, "checkpoint-epoch-0002", what="name the damaged checkpoint")
    t.check(re.search(r"\b1 epochs? done|checkpoint-epoch-0001", r.out) is not None,
            "does not say it resumed from epoch 1")


@trial("3a", "a new run (another --seed) in a train_dir holding an earlier run is refused, saying how to go on")
def t3a(t):
    t.setup("cnnbench $IDX --num_epochs=3 --seed=1 --train_dir=T")
    before = t.snap()
    r = t.run("cnnbench $IDX --num_epochs=1 --seed=2 --train_dir=T")
    t.refused(r, before, t.snap(), names=("--train_dir", "T/", "checkpoint"))
    t.says(r, "--resume", what="say how to continue (--resume)")
    t.says(r, "overwrite", "afresh", "another --train_dir", "new --train_dir", "remove", "delete",
           what="say how to start afresh")


@trial("3b", "--overwrite_train_dir: the new run replaces the old run's checkpoints; --resume then continues it")
def t3b(t):
    t.setup("cnnbench $IDX --num_epochs=3 --seed=1 --train_dir=T")
    r = t.run("cnnbench $IDX --num_epochs=1 --seed=2 --train_dir=T --overwrite_train_dir")
    if t.exit_is(r, 0):
        left = t.glob("T", "checkpoint-epoch-*.ckpt")
        t.check(left == ["checkpoint-epoch-0001.ckpt"], f"T holds {left or 'no checkpoints'}, not only epoch 1's")
        r2 = t.run("cnnbench $IDX --num_epochs=2 --seed=2 --train_dir=T --resume")
        t.exit_is(r2, 0)
        t.check(re.search(r"\b1 epochs? done|from epoch 1\b|checkpoint-epoch-0001", r2.out) is not None,
                "the resume does not say it continues from epoch 1")
        t.not_says(r2, "3 epochs done", "checkpoint-epoch-0003")
        t.show(r)


@trial("4a", "--result_json naming an existing results.csv with rows (synthetic run): refused, file unchanged")
def t4a(t):
    t.setup("cnnbench $SYN --benchmark_log_dir=old")
    before = t.snap()
    r = t.run("cnnbench $SYN --result_json=old/results.csv")
    t.refused(r, before, t.snap(), names=("--result_json", "results.csv"))


@trial("4b", "--result_json naming a checkpoint (synthetic run): refused, file unchanged")
def t4b(t):
    t.setup("cnnbench $IDX --num_epochs=1 --train_dir=T")
    before = t.snap()
    r = t.run("cnnbench $SYN --result_json=T/checkpoint-epoch-0001.ckpt")
    t.refused(r, before, t.snap(), names=("--result_json", "checkpoint-epoch-0001.ckpt"))


@trial("4c", "--result_json naming a text file (synthetic run): refused, file unchanged")
def t4c(t):
    t.sh("echo 'my notes: resnet50 was 13.4 img/s' > notes.txt")
    before = t.snap()
    r = t.run("cnnbench $SYN --result_json=notes.txt")
    t.refused(r, before, t.snap(), names=("--result_json", "notes.txt"))


@trial("4d", "--result_json naming an earlier cnnbench result JSON (synthetic run): replaced, exit 0")
def t4d(t):
    t.setup("cnnbench $SYN --result_json=r.json")
    old = t.read("r.json")
    r = t.run("cnnbench $SYN --seed=2 --result_json=r.json")
    t.exit_is(r, 0)
    new = t.read("r.json")
    t.check(new != old, "r.json was not replaced")
    try:
        t.check(json.loads(new).get("schema") == "cnnbench.result/1", "r.json is not a cnnbench result afterwards")
    except ValueError:
        t.check(False, "r.json is not JSON afterwards")


@trial("4e", "--result_json naming an existing results.csv with rows (convergence run): refused, file unchanged")
def t4e(t):
    t.setup("cnnbench $IDX --num_batches=1 --benchmark_log_dir=old")
    before = t.snap()
    r = t.run("cnnbench $IDX --num_batches=1 --result_json=old/results.csv")
    t.refused(r, before, t.snap(), names=("--result_json", "results.csv"))


@trial("4f", "--result_json naming a checkpoint (convergence run): refused, file unchanged")
def t4f(t):
    t.setup("cnnbench $IDX --num_epochs=1 --train_dir=T")
    before = t.snap()
    r = t.run("cnnbench $IDX --num_batches=1 --result_json=T/checkpoint-epoch-0001.ckpt")
    t.refused(r, before, t.snap(), names=("--result_json", "checkpoint-epoch-0001.ckpt"))


@trial("4g", "--result_json naming a text file (convergence run): refused, file unchanged")
def t4g(t):
    t.sh("echo 'my notes: resnet50 was 13.4 img/s' > notes.txt")
    before = t.snap()
    r = t.run("cnnbench $IDX --num_batches=1 --result_json=notes.txt")
    t.refused(r, before, t.snap(), names=("--result_json", "notes.txt"))


@trial("4h", "--result_json naming an earlier cnnbench convergence JSON (convergence run): replaced, exit 0")
def t4h(t):
    t.setup("cnnbench $IDX --num_batches=1 --result_json=r.json")
    old = t.read("r.json")
    r = t.run("cnnbench $IDX --num_batches=1 --seed=2 --result_json=r.json")
    t.exit_is(r, 0)
    new = t.read("r.json")
    t.check(new != old, "r.json was not replaced")
    try:
        t.check(str(json.loads(new).get("schema", "")).startswith("cnnbench."), "r.json is not a cnnbench result")
    except ValueError:
        t.check(False, "r.json is not JSON afterwards")


@trial("5a", "--num_intra_threads=1024 (the documented maximum) on a 2-step trivial run ends within 30 s")
def t5a(t):
    r = t.run("cnnbench --model=trivial --num_batches=2 --num_intra_threads=1024", limit=30)
    if r.hung:
        return
    if r.rc == 2:
        t.refused(r, names=("--num_intra_threads",), must_name=("num_intra_threads",))
        t.says(r, "cpu", "core", what="name the CPUs")
    else:
        t.exit_is(r, 0, 2)


@trial("5b", "--num_intra_threads=64 on 2 cores: ends within 30 s; a completed run does not blame a neighbour")
def t5b(t):
    r = t.run("cnnbench --model=trivial --num_batches=2 --num_intra_threads=64", limit=30)
    if r.hung:
        return
    if r.rc == 2:
        t.refused(r, names=("--num_intra_threads",), must_name=("num_intra_threads",))
    elif t.exit_is(r, 0, 2):
        wait = [l for l in r.out.splitlines() if "CPU wait" in l]
        t.check(not any(has(l, "neighbour", "neighbor", "another process") for l in wait),
                f"the CPU-wait line blames another process for the run's own threads: {wait[:1]}")


@trial("6a", "compare /dev/zero with a real result folder: exit 2 within 5 s, under 200 MB more than a refusal")
def t6a(t):
    t.setup("cnnbench $SYN --benchmark_log_dir=new")
    # the binary alone (its libraries: CUDA's, where built with them) takes ~230 MB here before
    # it reads anything: the bound is on what reading /dev/zero adds to a plain refusal's peak
    ref = t.run("cnnbench compare no_such_result.json new", limit=20)
    r = t.run("cnnbench compare /dev/zero new", limit=5, rss_limit_mb=1000)
    if r.killed_for_memory:
        t.check(False, "grew past 1 GB (killed)")
        return
    if r.hung:
        t.hang = None
        t.check(False, f"still running after 5 s, at {r.maxrss_kb // 1024} MB (killed)")
        return
    t.exit_is(r, 2)
    t.says(r, "/dev/zero", what="name /dev/zero")
    t.check(r.maxrss_kb - ref.maxrss_kb < 200 * 1024, f"peak memory {r.maxrss_kb // 1024} MB against "
            f"{ref.maxrss_kb // 1024} MB refusing a missing file")


@trial("6b", "a FIFO as --config: does not block, exit 2")
def t6b(t):
    t.sh("mkfifo c.toml")
    before = t.snap()
    r = t.run("cnnbench --config=c.toml $SYN", limit=20)
    t.refused(r, before, t.snap(), names=("--config", "c.toml"))


@trial("6c", "a FIFO as a compare input: does not block, exit 2")
def t6c(t):
    t.setup("cnnbench $SYN --benchmark_log_dir=new")
    t.sh("mkfifo base.json")
    r = t.run("cnnbench compare base.json new", limit=20)
    if not r.hung:
        t.exit_is(r, 2)
        t.says(r, "base.json", what="name the FIFO")


@trial("6d", "a FIFO as a checkpoint in a train_dir with --resume: skipped or refused naming it, no block")
def t6d(t):
    t.setup("cnnbench $IDX --num_epochs=1 --train_dir=T")
    t.sh("mkfifo T/checkpoint-epoch-0002.ckpt")
    r = t.run("cnnbench $IDX --num_epochs=3 --train_dir=T --resume", limit=20)
    if not r.hung:
        t.exit_is(r, 0, 2)
        t.says(r, "checkpoint-epoch-0002.ckpt", what="name the FIFO checkpoint")
        t.not_crashed(r)


@trial("7a", "cnnbench --peak: prints a GFLOP/s figure and writes no results")
def t7a(t):
    r = t.run("cnnbench --peak", limit=60)
    t.exit_is(r, 0)
    t.says(r, "GFLOP/s")
    t.check(not STEP_LINE.search(r.out), "it ran a benchmark (step lines)")
    t.check(not os.path.exists(t.p("cnnbench_results")), "cnnbench_results/ was created")
    t.check(not os.listdir(t.dir), f"it wrote {os.listdir(t.dir)}")


@trial("8a", "--forward_only on a data run: refused with one line")
def t8a(t):
    before = t.snap()
    r = t.run("cnnbench $IDX --num_batches=2 --forward_only")
    t.refused(r, before, t.snap(), names=("--forward_only",))


@trial("8b", "--resume without --train_dir on a data run: refused")
def t8b(t):
    before = t.snap()
    r = t.run("cnnbench $IDX --num_batches=2 --resume")
    t.refused(r, before, t.snap(), names=("--resume", "--train_dir"))


def step_losses(out):
    """The total_loss field of every step line."""
    losses = []
    for line in out.splitlines():
        if STEP_LINE.match(line):
            fields = line.split("\t")
            if len(fields) >= 3:
                losses.append(fields[2].strip())
    return losses


@trial("9a", "cnnbench with no flags: exit 0, every printed loss finite")
def t9a(t):
    r = t.run("cnnbench", limit=120)
    t.exit_is(r, 0)
    losses = step_losses(r.out)
    t.check(losses, "no step lines")
    bad = [l for l in losses if NONFINITE.search(l) or not re.fullmatch(r"[-+]?[0-9.]+(e[-+]?\d+)?", l)]
    t.check(not bad, f"non-finite losses printed: {bad[:3]}")


DIVERGE = "cnnbench --model=lenet --batch_size=8 --init_learning_rate=1000 --num_batches=20 --num_intra_threads=1"


@trial("9b", "a diverging run: ends non-zero naming the step, no row appended to results.csv")
def t9b(t):
    r = t.run(DIVERGE)
    t.check(r.rc not in (0,) and not r.hung, f"exit {r.exit_text} ({r.last[:160]!r})")
    t.not_crashed(r)
    t.check(re.search(r"step\s*#?\d+", r.out, re.I) is not None, "the message does not name the step")
    t.says(r, "nan", "inf", "non-finite", "nonfinite", "not finite", "diverge", what="say the loss is not finite")
    rows = data_rows(t.p("cnnbench_results", "results.csv"))
    t.check(rows == 0, f"{rows} row(s) appended to results.csv")


@trial("9c", "a diverging run with --allow_nonfinite_loss: exit 0; empty CSV cells, JSON null, no nan/inf text")
def t9c(t):
    r = t.run(DIVERGE + " --allow_nonfinite_loss")
    if not t.exit_is(r, 0):
        return
    csv_path = t.p("cnnbench_results", "results.csv")
    if not t.check(os.path.isfile(csv_path), "no results.csv"):
        return
    text = open(csv_path, encoding="utf-8").read()
    m = NONFINITE.search(text)
    t.check(m is None, f"results.csv holds the text {m.group(0) if m else ''!r}")
    header, rows = read_csv_rows(csv_path)
    if t.check(len(rows) == 1, f"{len(rows)} rows in results.csv") and "final_loss" in header:
        t.check(rows[0][header.index("final_loss")] == "",
                f"final_loss cell is {rows[0][header.index('final_loss')]!r}, not empty")
    for name in json_files(t, "cnnbench_results"):
        raw = open(t.p("cnnbench_results", name), encoding="utf-8").read()
        m = NONFINITE.search(raw)
        t.check(m is None, f"{name} holds the text {m.group(0) if m else ''!r}")
        try:
            doc = json.loads(raw)
            t.check(doc.get("summary", {}).get("final_loss", 0) is None, "the JSON's summary.final_loss is not null")
        except ValueError:
            t.check(False, f"{name} is not JSON")


BAD_SCHEDULES = [("a", "abc"), ("b", "nan"), ("c", "0.1;5"), ("d", "0.1;-5;0.01")]
for letter, value in BAD_SCHEDULES:
    for base, what, offset in (("$SYN", "synthetic", 0), ("$IDX --num_batches=2", "data", 4)):
        tid = "10" + chr(ord(letter) + offset)

        def fn(t, base=base, value=value):
            before = t.snap()
            r = t.run(f"cnnbench {base} {shlex.quote('--piecewise_learning_rate_schedule=' + value)}")
            t.refused(r, before, t.snap(), names=("--piecewise_learning_rate_schedule",))
        trial(tid, f"--piecewise_learning_rate_schedule={value} on a {what} run: refused")(fn)

for tid, value in (("10i", "1e-300"), ("10j", "0.5")):
    def fn(t, value=value):
        before = t.snap()
        r = t.run(f"cnnbench $SYN --collective_timeout_sec={value}")
        t.refused(r, before, t.snap(), names=("--collective_timeout_sec",))
    trial(tid, f"--collective_timeout_sec={value}: refused (at least 1 s)")(fn)


NOTE_FLAGS = [("11a", "--stop_at_top_1_accuracy=0.5", "stop_at_top_1_accuracy"),
              ("11b", "--target_top_1_accuracy=0.5", "target_top_1_accuracy"),
              ("11c", "--eval_during_training_every_n_epochs=1", "eval_during_training_every_n_epochs"),
              ("11d", "--train_augmentation=none", "train_augmentation"),
              ("11h", "--optimizer=sgd --nesterov", "nesterov"),
              ("11i", "--optimizer=sgd --momentum=0.5", "momentum"),
              ("11j", "--fp16_loss_scale=128", "fp16_loss_scale"),
              ("11k", "--cuda_graphs", "cuda_graphs")]
for tid, flags, name in NOTE_FLAGS:
    def fn(t, flags=flags, name=name):
        r = t.run(f"cnnbench $SYN {flags}")
        t.exit_is(r, 0)
        noted = [l for l in r.out.splitlines() if name in l]
        t.check(noted, f"no line names {name}")
    trial(tid, f"{flags} on a synthetic run: runs, with a one-line note naming the flag")(fn)


def learning_rate_fields(doc):
    """Every learning-rate value the result records, outside the echo of the flags (config)."""
    return {k: v for k, v in walk_json(doc) if "learning_rate" in k.lower() and not k.startswith("config.")}


LR_FLAGS = [("11e", "--cosine_learning_rate"), ("11f", "--num_learning_rate_warmup_epochs=1"),
            ("11g", "--learning_rate_base_batch=64")]
for tid, flag in LR_FLAGS:
    def fn(t, flag=flag):
        a = t.run("cnnbench --model=trivial --num_batches=3 --num_warmup_batches=1 --num_intra_threads=1 "
                  "--result_json=without.json")
        b = t.run(f"cnnbench --model=trivial --num_batches=3 --num_warmup_batches=1 --num_intra_threads=1 {flag} "
                  "--result_json=with.json")
        t.show(b)
        if not (t.exit_is(a, 0) & t.exit_is(b, 0)):
            return
        with open(t.p("without.json")) as f:
            da = json.load(f)
        with open(t.p("with.json")) as f:
            db = json.load(f)
        la, lb = learning_rate_fields(da), learning_rate_fields(db)
        t.check(la, "the result JSON records no learning rate outside config")
        differs = la != lb
        if not differs:  # the rate may not be recorded per step: did training change?
            differs = da.get("steps", {}).get("loss") != db.get("steps", {}).get("loss")
        t.check(differs, f"no effect: the JSON's learning rate ({la}) and step losses are the same without and with")
    trial(tid, f"{flag} on a synthetic run takes effect (the result JSON differs from the run without)")(fn)


@trial("11l", "--use_fp16 --precision=fp32: a contradiction, refused")
def t11l(t):
    before = t.snap()
    r = t.run("cnnbench $SYN --use_fp16 --precision=fp32")
    t.refused(r, before, t.snap(), names=("--use_fp16", "--precision"))


# -- 12: compare on results.csv rows whose JSON is gone

def make_csv_pair(t, edit):
    """base.csv and new.csv: the fixture run's results.csv row without its JSON; edit(header, row)
    changes base.csv's."""
    header, rows = read_csv_rows(t.ctx.fixture_csv)
    row = list(rows[0])
    if "json_file" in header:
        row[header.index("json_file")] = ""

    def dump(h, r):
        s = io.StringIO()
        w = csv.writer(s, lineterminator="\n")
        w.writerow(h)
        w.writerow(r)
        return s.getvalue()
    t.write("new.csv", dump(header, row))
    h2, r2 = list(header), list(row)
    edit(h2, r2)
    t.write("base.csv", dump(h2, r2))
    t.step(f"cp results.csv new.csv; cp results.csv base.csv; edit base.csv: {edit.what}   "
           "# results.csv: one row of `cnnbench $SYN`, json_file emptied (the JSON gone)")


def set_cell(name, value):
    def edit(h, r):
        r[h.index(name)] = value
    edit.what = f"{name} = {value!r}"
    return edit


def rename(name, to):
    def edit(h, r):
        h[h.index(name)] = to
    edit.what = f"header {name} -> {to}"
    return edit


CSV_EDITS = [("12a", "a header with images_per_sec renamed", rename("images_per_sec", "images_per_second"))]
for letter, value in zip("bcdefgh", ["nan", "inf", "-100", "0", "1e309", "abc", ""]):
    CSV_EDITS.append(("12" + letter, f"images_per_sec of {value!r}", set_cell("images_per_sec", value)))
CSV_EDITS.append(("12i", "a negative images_per_sec_stderr", set_cell("images_per_sec_stderr", "-5")))
CSV_EDITS.append(("12k", "images_per_sec_mean of 'nan'", set_cell("images_per_sec_mean", "nan")))
for tid, what, edit in CSV_EDITS:
    def fn(t, edit=edit):
        make_csv_pair(t, edit)
        before = t.snap()
        r = t.run("cnnbench compare base.csv new.csv", limit=20)
        t.refused(r, before, t.snap(), names=("base.csv",), must_name=("base.csv",))
    trial(tid, f"compare on a results.csv row with {what}: exit 2 naming the file")(fn)


@trial("12j", "compare on a results.csv row with images_per_sec (and _mean) 1e300: no printed cell over 40 chars")
def t12j(t):
    def edit(h, r):
        r[h.index("images_per_sec")] = "1e300"
        r[h.index("images_per_sec_mean")] = "1e300"
    edit.what = "images_per_sec = images_per_sec_mean = '1e300'"
    make_csv_pair(t, edit)
    r = t.run("cnnbench compare base.csv new.csv", limit=20)
    if r.hung:
        return
    t.not_crashed(r)
    wide = [tok for tok in r.out.split() if len(tok) > 40 and "/" not in tok]
    t.check(not wide, f"a printed cell of {len(wide[0]) if wide else 0} characters")


TOML_TEXT = 'model = """triv\\\n\u3000 ial"""\n'


@trial("13a", "TOML: a line-ending backslash then U+3000: read as tomllib reads it, an unknown model")
def t13a(t):
    want = "triv\u3000 ial"
    got = tomllib.loads(TOML_TEXT)["model"]
    if got != want:
        raise RuntimeError(f"tomllib reads {got!r}, this trial expects {want!r}")
    t.write("c.toml", TOML_TEXT.encode("utf-8"))
    t.step("printf 'model = \"\"\"triv\\\\\\n\\u3000 ial\"\"\"\\n' > c.toml   # U+3000 as UTF-8")
    with open(t.p("c.toml"), "rb") as f:
        if tomllib.load(f)["model"] != want:
            raise RuntimeError("c.toml does not read back as intended")
    before = t.snap()
    r = t.run("cnnbench --config=c.toml --num_batches=2 --num_warmup_batches=1 --num_intra_threads=1")
    t.refused(r, before, t.snap(), names=("--model", "model", "c.toml"))
    t.check("triv\u3000 ial" in r.out or "triv\\u3000 ial" in r.out or
            re.search(r"triv.{1,12}ial", r.out) is not None, "the message does not show the name as tomllib reads it")


@trial("14a", "--resume of a run that is already complete: exit 0, says so, train_dir unchanged")
def t14a(t):
    t.setup("cnnbench $IDX --num_epochs=1 --train_dir=T")
    before = t.snap("T")
    r = t.run("cnnbench $IDX --num_epochs=1 --train_dir=T --resume")
    t.exit_is(r, 0)
    t.says(r, "complete", "already")
    t.unchanged(before, t.snap("T"), "T")


@trial("15a", "a CIFAR-10 folder whose data_batch_1.bin is a folder: exit 2 naming data_batch_1.bin")
def t15a(t):
    t.sh("cp -r $CIFAR_DIR cifar && rm cifar/data_batch_1.bin && mkdir cifar/data_batch_1.bin")
    before = t.snap()
    r = t.run("cnnbench --model=resnet20 --data_name=cifar10 --data_dir=cifar --batch_size=8 --num_batches=1 "
              "--num_intra_threads=1")
    t.refused(r, before, t.snap(), names=("data_batch_1.bin", "--data_dir"), must_name=("data_batch_1.bin",))


@trial("15b", "a checkpoint linked to /dev/zero, with --resume: its path named, no crash, no bad_alloc")
def t15b(t):
    t.setup("cnnbench $IDX --num_epochs=1 --train_dir=T")
    t.sh("ln -s /dev/zero T/checkpoint-epoch-0002.ckpt")
    r = t.run("cnnbench $IDX --num_epochs=3 --train_dir=T --resume", limit=30, rss_limit_mb=1500)
    if r.killed_for_memory:
        t.check(False, "grew past 1.5 GB reading /dev/zero (killed)")
        return
    if r.hung:
        return
    t.not_crashed(r)
    t.check(r.rc in (0, 2), f"exit {r.rc}")
    t.says(r, "checkpoint-epoch-0002.ckpt", what="name the checkpoint's path")
    t.not_says(r, "bad_alloc")


@trial("15c", "--init_learning_rate=1e-320: accepted, or refused as too small, never 'is not a number'")
def t15c(t):
    r = t.run("cnnbench $SYN --init_learning_rate=1e-320")
    t.exit_is(r, 0, 2)
    t.not_says(r, "is not a number", "not a number")


@trial("15d", "a missing --baseline=missing.json on a synthetic run: exit 2 before the first step")
def t15d(t):
    before = t.snap()
    r = t.run("cnnbench $SYN --baseline=missing.json")
    t.refused(r, before, t.snap(), names=("--baseline", "missing.json"), must_name=("missing.json",))
    t.no_step_ran(r)


@trial("15e", "a stale checkpoint temporary of a dead process is gone after the next run that checkpoints there")
def t15e(t):
    t.setup("cnnbench $IDX --num_epochs=1 --train_dir=T")
    stale = "checkpoint-epoch-0001.ckpt.tmp.99999999"
    t.sh(f"echo 'half a checkpoint' > T/{stale}")
    r = t.run("cnnbench $IDX --num_epochs=2 --train_dir=T --resume")
    t.exit_is(r, 0)
    t.check(not os.path.lexists(t.p("T", stale)), f"T/{stale} is still there")


@trial("15f", "--benchmark_log_dir naming a regular file (synthetic run): exit 2 before any step")
def t15f(t):
    t.sh("echo 'not a folder' > F")
    before = t.snap()
    r = t.run("cnnbench $SYN --benchmark_log_dir=F")
    t.refused(r, before, t.snap(), names=("--benchmark_log_dir", "F"))
    t.no_step_ran(r)


@trial("15g", "--train_dir naming a regular file (data run): exit 2 before any step")
def t15g(t):
    t.sh("echo 'not a folder' > F")
    before = t.snap()
    r = t.run("cnnbench $IDX --num_epochs=1 --train_dir=F")
    t.refused(r, before, t.snap(), names=("--train_dir", "F"))
    t.no_step_ran(r)


@trial("15h", "--benchmark_log_dir naming a regular file (data run): exit 2 before any step")
def t15h(t):
    t.sh("echo 'not a folder' > F")
    before = t.snap()
    r = t.run("cnnbench $IDX --num_batches=2 --benchmark_log_dir=F")
    t.refused(r, before, t.snap(), names=("--benchmark_log_dir", "F"))
    t.no_step_ran(r)


# -- 16: more of the same, a careless user's

@trial("16a", "(own) resume with the paths spelled otherwise (absolute, trailing slash): the same run, resumed")
def t16a(t):
    t.sh("ln -s $IDX_DIR idx")
    base = ("cnnbench --model=small_cnn --data_name=fashion_mnist --batch_size=32 --num_intra_threads=1")
    t.setup(f"{base} --data_dir=idx --num_epochs=1 --train_dir=T")
    r = t.run(f"{base} --data_dir=$PWD/idx/ --num_epochs=2 --train_dir=$PWD/T/ --resume")
    t.exit_is(r, 0)
    t.check(re.search(r"\b1 epochs? done|checkpoint-epoch-0001", r.out) is not None,
            "does not say it resumed from epoch 1")
    t.check(os.path.isfile(t.p("T", "checkpoint-epoch-0002.ckpt")), "no epoch-2 checkpoint in T")


@trial("16b", "(own) --benchmark_log_dir under a regular file: exit 2 before any step, nothing written")
def t16b(t):
    t.sh("echo 'not a folder' > F")
    before = t.snap()
    r = t.run("cnnbench $SYN --benchmark_log_dir=F/logs")
    t.refused(r, before, t.snap(), names=("--benchmark_log_dir", "F/logs"))
    t.no_step_ran(r)


@trial("16c", "(own) --result_json under a regular file: exit 2 before any step, nothing written")
def t16c(t):
    t.sh("echo 'not a folder' > F")
    before = t.snap()
    r = t.run("cnnbench $SYN --result_json=F/r.json")
    t.refused(r, before, t.snap(), names=("--result_json", "F/r.json"))
    t.no_step_ran(r)


@trial("16d", "(own) --train_dir under a regular file (data run): exit 2 before any step, nothing written")
def t16d(t):
    t.sh("echo 'not a folder' > F")
    before = t.snap()
    r = t.run("cnnbench $IDX --num_epochs=1 --train_dir=F/T")
    t.refused(r, before, t.snap(), names=("--train_dir", "F/T"))
    t.no_step_ran(r)


@trial("16e", "(own) 2 ranks under mpiexec, one given a bad flag: the job ends within 60 s naming it, writes nothing")
def t16e(t):
    if not shutil.which(shlex.split(t.ctx.mpiexec)[0]):
        t.check(False, f"no {shlex.split(t.ctx.mpiexec)[0]} here")
        return
    before = t.snap()
    r = t.run("$MPIEXEC -np 1 cnnbench $SYN : -np 1 cnnbench $SYN --bogus_flag=1", limit=60)
    if r.hung:
        return
    t.check(r.rc != 0, "exit 0")
    t.says(r, "bogus_flag", what="name the bad flag")
    t.unchanged(before, t.snap())


@trial("16f", "(own) 8 concurrent runs appending to one results.csv: 8 rows, parseable, 8 JSON files")
def t16f(t):
    rs = t.run_parallel([f"cnnbench $SYN --seed={i}" for i in range(1, 9)], limit=120,
                        shown="for i in 1 2 3 4 5 6 7 8; do cnnbench $SYN --seed=$i & done; wait")
    for r in rs:
        t.exit_is(r, 0)
    path = t.p("cnnbench_results", "results.csv")
    try:
        header, rows = read_csv_rows(path)
        t.check(len(rows) == 8, f"{len(rows)} rows, not 8")
        if "json_file" in header:
            named = {r[header.index("json_file")] for r in rows}
            t.check(len(named) == 8, f"the rows name {len(named)} distinct JSON files")
    except (OSError, ValueError, csv.Error) as e:
        t.check(False, f"results.csv does not parse: {e}")
    n = len(json_files(t, "cnnbench_results"))
    t.check(n == 8, f"{n} JSON files, not 8")


@trial("16g", "(own) --result_json naming a JSON file that is not a cnnbench result: refused, file unchanged")
def t16g(t):
    t.sh("""echo '{"name": "my-app", "version": "1.0.0"}' > package.json""")
    before = t.snap()
    r = t.run("cnnbench $SYN --result_json=package.json")
    t.refused(r, before, t.snap(), names=("--result_json", "package.json"))


@trial("16h", "(own) compare a result folder that holds a FIFO named like a result: does not block")
def t16h(t):
    t.setup("cnnbench $SYN --benchmark_log_dir=base")
    t.setup("cnnbench $SYN --benchmark_log_dir=new")
    t.sh("mkfifo base/zz_pipe.json")
    r = t.run("cnnbench compare base new --check_only", limit=20)
    if not r.hung:
        t.not_crashed(r)
        t.exit_is(r, 0, 2)
        if r.rc == 2:
            t.says(r, "zz_pipe.json", what="name the FIFO")


@trial("16i", "(own) --resume with another --seed than the train_dir's run: refused naming the seed")
def t16i(t):
    t.setup("cnnbench $IDX --num_epochs=1 --seed=1 --train_dir=T")
    before = t.snap()
    r = t.run("cnnbench $IDX --num_epochs=2 --seed=2 --train_dir=T --resume")
    t.refused(r, before, t.snap(), names=("--seed", "--resume", "--train_dir", "checkpoint", "T/"), must_name=("seed",))


@trial("16j", "(own) results.csv is a FIFO in --benchmark_log_dir: no block (20 s), exit 2 naming it before any step")
def t16j(t):
    t.sh("mkdir L && mkfifo L/results.csv")
    before = t.snap()
    r = t.run("cnnbench $SYN --benchmark_log_dir=L", limit=20)
    if not r.hung:
        t.refused(r, before, t.snap(), names=("results.csv", "--benchmark_log_dir"), must_name=("results.csv",))
        t.no_step_ran(r)


@trial("16k", "(own) --overwrite_train_dir removes the old run's checkpoints, never the user's own files there")
def t16k(t):
    t.setup("cnnbench $IDX --num_epochs=2 --seed=1 --train_dir=T")
    t.sh("echo '# run 1: lr 0.1, looked fine' > T/NOTES.md && mkdir T/keep && echo 'a plot' > T/keep/plot.png")
    mine = {k: v for k, v in t.snap("T").items() if k in ("NOTES.md", "keep", os.path.join("keep", "plot.png"))}
    r = t.run("cnnbench $IDX --num_epochs=1 --seed=2 --train_dir=T --overwrite_train_dir")
    t.exit_is(r, 0)
    after = t.snap("T")
    t.unchanged(mine, {k: v for k, v in after.items() if k in mine}, "the user's files in T")


@trial("16l", "(own) compare --tolerance=nan: refused")
def t16l(t):
    t.setup("cnnbench $SYN --benchmark_log_dir=base")
    before = t.snap()
    r = t.run("cnnbench compare base base --tolerance=nan", limit=20)
    t.refused(r, before, t.snap(), names=("--tolerance",))


@trial("16m", "(own) --data_dir naming a missing folder with --resume and --train_dir: exit 2, train_dir untouched")
def t16m(t):
    t.setup("cnnbench $IDX --num_epochs=1 --train_dir=T")
    before = t.snap()
    r = t.run("cnnbench --model=small_cnn --data_name=fashion_mnist --data_dir=no_such_idx --batch_size=32 "
              "--num_intra_threads=1 --num_epochs=2 --train_dir=T --resume")
    t.refused(r, before, t.snap(), names=("--data_dir", "no_such_idx"), must_name=("no_such_idx",))


# ---------------------------------------------------------------------------------------------
# the table

class Context:
    pass


def selected(tid, patterns):
    if not patterns:
        return True
    for p in patterns.split(","):
        p = p.strip()
        if not p:
            continue
        if p.isdigit():
            if re.fullmatch(p + r"[a-z]+", tid):
                return True
            continue
        if fnmatch.fnmatchcase(tid, p):
            return True
        try:
            if re.fullmatch(p, tid):
                return True
        except re.error:
            pass
    return False


def run_trial(spec, ctx, root):
    t = Trial(spec, ctx, root)
    t0 = time.monotonic()
    try:
        t.fn(t)
    except SetupFailed as e:
        t.failures.append(str(e))
    except Exception as e:  # a bug in this script, not in cnnbench: say so
        t.failures.append(f"ERROR in the trial script: {type(e).__name__}: {e}")
    t.seconds = time.monotonic() - t0
    # a setup command that hung is the trial's hang too; Result.hung of a refusal check is
    # reported by the checks themselves
    if not ctx.keep:
        shutil.rmtree(os.path.join(root, t.id), ignore_errors=True)
    return t


def md_cell(s):
    return s.replace("\\", "\\\\").replace("|", "\\|").replace("\n", "<br>").replace("`", "'") if s else ""


def write_outputs(out, trials, ctx, wall):
    os.makedirs(os.path.join(out, "logs"), exist_ok=True)
    rows = []
    for t in trials:
        runs = [r for r in t.results if not r.aux]
        key = t.key or (runs[-1] if runs else None)
        commands = "\n".join(r.display for r in t.results)
        exits = ", ".join(r.exit_text for r in t.results)
        rows.append((t.id, t.desc, commands, exits, key.last if key else "", t.verdict(), f"{t.seconds:.1f}"))
        with open(os.path.join(out, "logs", f"{t.id}.log"), "w", encoding="utf-8") as f:
            f.write(f"# {t.id}: {t.desc}\n# verdict: {t.verdict()}\n\n" + "\n".join(t.log))
    with open(os.path.join(out, "trials.csv"), "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["trial", "description", "command", "exit", "last_line", "verdict", "seconds"])
        w.writerows(rows)
    passed = sum(1 for r in rows if r[5] == "clean")
    with open(os.path.join(out, "trials.md"), "w", encoding="utf-8") as f:
        f.write("# cnnbench as a careless user runs it (issue 35)\n\n")
        f.write(f"`tests/careless_user_trials.py`: {len(rows)} trials, {passed} clean, {len(rows) - passed} not "
                f"({wall:.0f} s on {os.cpu_count()} CPUs; binary {ctx.binary_label}).\n\n")
        f.write("Commands as typed in each trial's own fresh folder: `cnnbench` is the binary; "
                f"`$IDX` = `{' '.join(ctx.idx_flags_label)}` (idx: {TRAIN_IMAGES} training and {TEST_IMAGES} test "
                "images cut from Debian's dataset-fashion-mnist); "
                f"`$SYN` = `{' '.join(SYN)}`; `$CIFAR` = a CIFAR-10 binary folder of {CIFAR_RECORDS} records "
                f"a file; `$MPIEXEC` = `{ctx.mpiexec}`; `$PWD` = the trial's folder. Exit: each command's "
                "exit code in order; last line: the last non-empty line of the output (stderr and stdout) of the "
                "command that the trial is about. Full output: `logs/<trial>.log`.\n\n")
        f.write("| trial | command | exit | last line | verdict |\n|---|---|---|---|---|\n")
        for tid, desc, commands, exits, last, verdict, _ in rows:
            cmd = "<br>".join(f"<code>{html_escape(c)}</code>" for c in commands.splitlines())
            f.write(f"| {tid}: {md_cell(desc)} | {cmd} | {md_cell(exits)} | {md_cell(last[:200])} | "
                    f"{md_cell(verdict)} |\n")
        f.write(f"\n{passed} passed, {len(rows) - passed} failed\n")
    return passed, len(rows) - passed


def html_escape(s):
    return (s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "&#124;")
            .replace("\\", "&#92;"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", required=True, help="the cnnbench binary")
    ap.add_argument("--mpiexec", default="mpiexec --allow-run-as-root --oversubscribe",
                    help="the MPI launcher and its options (default: %(default)s)")
    ap.add_argument("--out", default="results/careless_user/", help="folder for trials.md, trials.csv and logs/")
    ap.add_argument("--only", default="", help="comma-separated: item numbers, globs or regexes on the trial id")
    ap.add_argument("--jobs", type=int, default=1, help="trials run at once (default 1)")
    ap.add_argument("--keep", action="store_true", help="keep the trials' folders (printed) for a look")
    args = ap.parse_args()

    binary = os.path.abspath(args.binary)
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        print(f"careless_user_trials: --binary {args.binary}: not an executable file", file=sys.stderr)
        return 2
    TRIALS.sort(key=lambda s: (int(re.match(r"\d+", s[0]).group()), s[0]))
    specs = [s for s in TRIALS if selected(s[0], args.only)]
    if not specs:
        print(f"careless_user_trials: --only {args.only!r} selects no trial", file=sys.stderr)
        return 2

    root = tempfile.mkdtemp(prefix="careless_user_")
    ctx = Context()
    ctx.binary, ctx.mpiexec, ctx.keep = binary, args.mpiexec, args.keep
    ctx.binary_label = args.binary
    ctx.idx = os.path.join(root, "fixtures", "idx")
    ctx.cifar = os.path.join(root, "fixtures", "cifar")
    make_idx_folder(ctx.idx)
    make_cifar_folder(ctx.cifar)
    common = ["--model=small_cnn", "--data_name=fashion_mnist", "--batch_size=32", "--num_intra_threads=1"]
    ctx.idx_flags = common[:2] + [f"--data_dir={ctx.idx}"] + common[2:]
    ctx.idx_flags_label = common[:2] + ["--data_dir=<idx folder>"] + common[2:]
    ctx.cifar_flags = ["--data_name=cifar10", f"--data_dir={ctx.cifar}"]
    fixtures_before = snapshot(os.path.join(root, "fixtures"))

    # a real results.csv row for the compare trials (item 12)
    if any(s[0].startswith("12") for s in specs):
        fdir = os.path.join(root, "fixtures_run")
        os.makedirs(fdir)
        p = subprocess.run([binary, *SYN, "--benchmark_log_dir=res"], cwd=fdir, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=120)
        ctx.fixture_csv = os.path.join(fdir, "res", "results.csv")
        if p.returncode != 0 or not os.path.isfile(ctx.fixture_csv):
            print(f"careless_user_trials: the fixture run `cnnbench $SYN` failed (exit {p.returncode}): "
                  f"{last_line(p.stdout.decode('utf-8', 'replace'))}", file=sys.stderr)
            specs = [s for s in specs if not s[0].startswith("12")]

    t0 = time.monotonic()
    done = []
    lock = threading.Lock()
    trials_root = os.path.join(root, "trials")

    def one(spec):
        t = run_trial(spec, ctx, trials_root)
        with lock:
            print(f"{t.id:>4}  {t.seconds:5.1f} s  {t.verdict()}", flush=True)
        return t

    pool = ThreadPoolExecutor(max_workers=max(1, args.jobs))
    try:
        done = list(pool.map(one, specs))
    except KeyboardInterrupt:
        pool.shutdown(wait=False, cancel_futures=True)
        for pgid in list(LIVE):
            kill_group(pgid)
        raise
    pool.shutdown()
    wall = time.monotonic() - t0

    d = snapshot_diff(fixtures_before, snapshot(os.path.join(root, "fixtures")))
    if d:
        print(f"careless_user_trials: the shared data folders changed during the trials: {d}", file=sys.stderr)
    passed, failed = write_outputs(args.out, done, ctx, wall)
    if args.keep:
        print(f"trial folders kept under {trials_root}")
    else:
        shutil.rmtree(root, ignore_errors=True)
    print(f"tables: {os.path.join(args.out, 'trials.md')}, {os.path.join(args.out, 'trials.csv')} ({wall:.0f} s)")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or d else 0


if __name__ == "__main__":
    sys.exit(main())
