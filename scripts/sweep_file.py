"""The sweep file of scripts/sweep.py: loading and checking it (one line and exit code 2 for
anything wrong, as SweepError), and expanding its grid into the points to run."""

import hashlib
import itertools
import json
import math
import os
import re
import shlex
import subprocess
import tomllib  # Python 3.11: scripts/sweep.py says so before it gets here

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_LAUNCH = "mpiexec {allow_root} --oversubscribe --bind-to none --mca btl self,vader -np {ranks}"
DEFAULT_TIMEOUT = 3600.0
# A sweep's runs at most (grid points times sweep.repeat), and sweep.repeat at most (as --repeats)
MAX_POINTS = 100_000
MAX_REPEAT = 1000
# Swept keys that mean nothing on one rank: a 1-rank point leaves them out, so it runs once and
# is the baseline of every backend's series.
DEFAULT_MULTI_RANK_KEYS = ["allreduce", "fusion_threshold_mb", "compression", "variable_update"]
RESERVED_FLAGS = {"result_json", "benchmark_log_dir"}  # sweep.py sets them per point
LAUNCH_PLACEHOLDERS = {"ranks", "hosts", "ranks_per_host", "allow_root"}
PLACING_PLACEHOLDERS = {"hosts", "ranks_per_host"}  # those that can put ranks on several hosts
# What a resume may change in [sweep] without it becoming another sweep (check_same_sweep)
RESUMABLE_SWEEP_KEYS = {"name", "output", "binary", "repeat", "timeout"}


class SweepError(Exception):
    """A bad sweep file or option: one line, exit code 2."""


def canon(value):
    """The flag-value string of a TOML scalar (true, 16, 0.25, fp32)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
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
            source = f.read()
        doc = tomllib.loads(source.decode())
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
    s.source, s.doc = source, doc  # sweep.py keeps a copy as <out>/sweep.toml
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
    if not isinstance(s.repeat, int) or isinstance(s.repeat, bool) or not 1 <= s.repeat <= MAX_REPEAT:
        raise SweepError(f"{path}: sweep.repeat must be a whole number from 1 to {MAX_REPEAT}")
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
    check_placement(s)
    return s


def check_placement(s):
    """Refuses points on several hosts when launch.command has no placeholder that could place
    ranks on hosts: the default mpiexec runs every rank here, and the rows would claim hosts the
    points never ran on."""
    if PLACING_PLACEHOLDERS & set(re.findall(r"\{([^{}]*)\}", s.launch)):
        return
    many = next((p for p in s.points if p.hosts > 1), None)
    if many:
        raise SweepError(f"{s.path}: a point has hosts = {many.hosts}, but launch.command has no {{hosts}} or "
                         f"{{ranks_per_host}} to place its ranks on hosts (e.g. srun -N {{hosts}}, "
                         f"scripts/netns_cluster.sh run --hosts {{hosts}} --ranks-per-host {{ranks_per_host}} --)")


def sweep_identity(doc):
    """What makes a sweep file without a name the same sweep as another: everything but what a
    resume may change ([sweep] RESUMABLE_SWEEP_KEYS, the values of the grid: points added or
    dropped, and [[exclude]])."""
    def table(k):
        v = doc.get(k, {})
        return v if isinstance(v, dict) else {"": v}
    return {"sweep": {k: v for k, v in table("sweep").items() if k not in RESUMABLE_SWEEP_KEYS},
            "launch": table("launch"), "env": table("env"), "fixed": table("fixed"), "grid": sorted(table("grid"))}


def own_name(doc):
    """A sweep file's own [sweep] name; None where it sets none."""
    sec = doc.get("sweep")
    return sec.get("name") if isinstance(sec, dict) else None


def check_same_sweep(s):
    """Refuses to run into an output folder that holds another sweep (its <out>/sweep.toml): by
    name where both files set [sweep] name, else by sweep_identity. Its rows would share one
    sweep.csv with this sweep's, and its sweep.toml would be replaced."""
    stored = os.path.join(s.out, "sweep.toml")
    if not os.path.exists(stored):
        return
    advice = "use --fresh to move it aside, or another --out"
    try:
        with open(stored, "rb") as f:
            old = tomllib.loads(f.read().decode())
    except (OSError, ValueError) as e:  # TOMLDecodeError and UnicodeDecodeError are ValueErrors
        raise SweepError(f"cannot tell which sweep {rel(s.out)} holds ({rel(stored)}: {e}): {advice}")
    if own_name(old) is not None and own_name(s.doc) is not None:
        if own_name(old) != own_name(s.doc):
            raise SweepError(f"{rel(s.out)} holds sweep '{own_name(old)}' ({rel(stored)}), not '{own_name(s.doc)}' of "
                             f"{s.path}: {advice}")
        return
    a, b = sweep_identity(old), sweep_identity(s.doc)
    if a != b:
        section = next(k for k in a if a[k] != b[k])
        raise SweepError(f"{rel(s.out)} holds another sweep: its {rel(stored)} differs from {s.path} in "
                         f"[{section}]: {advice}")


def same(a, b):
    """TOML values equal as settings: 16 == 16.0, but true is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return a == b


def expand(s, axes, fixed, excludes):
    """The sweep's points: the product of the grid lists (last key fastest), excluded ones left
    out, multi-rank keys dropped on one rank (duplicates merged), fewest ranks first."""
    notes = []
    # counted before any is built: a grid of millions took minutes and gigabytes before the first ran
    size = math.prod(len(items) for _, items in axes) * s.repeat
    if size > MAX_POINTS:
        raise SweepError(f"{s.path}: the grid and sweep.repeat make {size} runs, more than the {MAX_POINTS} "
                         "a sweep holds: split it into several sweeps")
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
    # stable: grid order within a rank count, in rounds (every point's first run, then every
    # point's second...), so that repeated points alternate and a noisy minute hits them alike
    points.sort(key=lambda p: (p.ranks, p.hosts, p.repeat))
    return points, notes


def binary_help(binary, _cache={}):
    """The text of `binary --help`, read once per binary; None when it cannot be run."""
    if binary not in _cache:
        try:
            _cache[binary] = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.TimeoutExpired):
            _cache[binary] = None
    return _cache[binary]


def check_flags(s):
    """Refuses flag names the binary does not know (from its --help)."""
    out = binary_help(s.binary)
    if out is None:
        return False
    known = set(re.findall(r"^\s+--([a-z0-9_]+)", out, re.M))
    if not known:
        return False
    unknown = sorted(s.flag_names - known)
    if unknown:
        raise SweepError(f"{s.path}: {rel(s.binary)} has no flag --{unknown[0]} (see {rel(s.binary)} --help)")
    return True
