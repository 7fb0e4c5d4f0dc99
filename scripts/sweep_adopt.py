"""sweep.py --adopt POINT=RESULT_JSON: a point measured outside the sweep (the same run started
by hand, or on another day) taken into sweep.csv as that point's ok row, so that an hour-long
convergence point need not run twice. It is taken only when the settings the run recorded in
its JSON are the point's: its ranks and hosts, every flag the point sets (the keys of a config
file it names included), and the binary's default for every other flag that has one. Only the
keys that name where output goes (OUTPUT_KEYS) may differ. The sweep's [env] is not recorded in
a result JSON and so is not checked."""

import json
import math
import os
import re
import shutil
import tomllib

if __package__:  # loaded as scripts.sweep_adopt (python3 -m scripts.sweep)
    from .sweep_file import ROOT, SweepError, binary_help, canon, rel
    from .sweep_point import SCHEMAS, json_path, log_path, placement_mismatch, result_fields
else:  # imported by a script run as a file (scripts/ first on sys.path)
    from sweep_file import ROOT, SweepError, binary_help, canon, rel
    from sweep_point import SCHEMAS, json_path, log_path, placement_mismatch, result_fields

# Where a run writes, not what it measures: a run by hand may have set them otherwise. (help and
# list_models end the binary before any run, so a result never records them.)
OUTPUT_KEYS = {"config", "result_json", "benchmark_log_dir", "train_dir", "resume", "summary_dir",
               "summary_verbosity", "save_summaries_steps", "timeline", "display_every", "baseline",
               "help", "list_models", "list_result_fields"}


def parse_adoptions(specs, s, last):
    """[(point, path)] of the --adopt arguments, each checked to name a point of this sweep that
    has no ok row yet."""
    points = {p.id: p for p in s.points}
    chosen = {}
    for spec in specs:
        pid, sep, path = spec.partition("=")
        if not sep or not path:
            raise SweepError(f"--adopt {spec}: expected POINT=RESULT_JSON (point ids: --dry-run)")
        if pid not in points:
            raise SweepError(f"--adopt {spec}: this sweep has no point {pid} (point ids: --dry-run)")
        if pid in chosen:
            raise SweepError(f"--adopt names point {pid} twice")
        if last.get(pid, {}).get("status") == "ok":
            raise SweepError(f"--adopt {spec}: point {pid} already has an ok row (--fresh starts over)")
        chosen[pid] = (points[pid], os.path.abspath(path))
    return list(chosen.values())


def binary_defaults(binary):
    """flag -> default, from `cnnbench --help` lines ending in [default]; flags whose default
    is computed (data_name: the model's) show none and are left out."""
    out = binary_help(binary)
    if out is None:
        raise SweepError(f"--adopt needs the defaults of {rel(binary)} --help, which did not run")
    return dict(re.findall(r"^\s+--([a-z0-9_]+)\s.*\[([^\]\n]*)\]\s*$", out, re.M))


def expected_settings(point, defaults):
    """flag -> the value a run of `point` has: its own flags over its config file's keys over
    the defaults; OUTPUT_KEYS left out."""
    want = dict(defaults)
    given = set(point.flags)  # set by the point or its config file, not defaults
    config = point.flags.get("config")
    if config:
        path = config if os.path.isabs(config) else os.path.join(ROOT, config)
        try:
            with open(path, "rb") as f:
                keys = tomllib.load(f)
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise SweepError(f"--adopt: the point's config file {config}: {e}")
        want.update({k: canon(v) for k, v in keys.items()})
        given |= set(keys)
    want.update(point.flags)
    # cnnbench resolves --nesterov where it is not given: on with --optimizer=momentum (tf_cnn_benchmarks')
    if "nesterov" not in given:
        want["nesterov"] = "true" if want.get("optimizer") == "momentum" else "false"
    return {k: v for k, v in want.items() if k not in OUTPUT_KEYS}


def same_setting(a, b):
    """'0.0005' is '5e-04', '16' is '16.0'; other values as strings."""
    if a == b:
        return True
    try:
        return math.isclose(float(a), float(b), rel_tol=1e-9)
    except ValueError:
        return False


def check_adopted(point, path, defaults):
    """The result JSON at `path`, if it is a run of `point`; else SweepError naming the first
    setting that differs."""
    where = f"--adopt {point.id}={rel(path)}"
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise SweepError(f"{where}: {e}")
    if not isinstance(doc, dict) or doc.get("schema") not in SCHEMAS:
        raise SweepError(f"{where}: not a cnnbench result (schema is not {' or '.join(SCHEMAS)})")
    why = placement_mismatch(point, doc.get("run"))
    if why:
        raise SweepError(f"{where}: {why}")
    config = doc.get("config", {})
    for key, value in expected_settings(point, defaults).items():
        if key not in config:
            raise SweepError(f"{where}: the run records no {key} (the point needs {key}={value})")
        if not same_setting(str(config[key]), value):
            raise SweepError(f"{where}: the run had {key}={config[key]}, the point {key}={value}")
    return doc


def adopted_row(s, point, path, doc):
    """Copies the JSON into the sweep's points/ and its log (the .log beside it, when there is
    one) into logs/ under a line that says where both came from; returns the point's CSV row."""
    target = json_path(s, point)
    if os.path.abspath(target) != path:
        shutil.copyfile(path, target)
    source_log = os.path.splitext(path)[0] + ".log"
    with open(log_path(s, point), "w") as out:
        out.write(f"# adopted by sweep.py --adopt from {rel(path)}: run outside the sweep with this "
                  f"point's settings" + (f"; its log was {rel(source_log)}" if os.path.exists(source_log) else "")
                  + "\n")
        if os.path.exists(source_log):
            with open(source_log, errors="replace") as f:
                shutil.copyfileobj(f, out)
    row = {"point": point.id, "repeat": point.repeat, "status": "ok", "exit_code": 0,
           "time_utc": doc.get("context", {}).get("time_utc", ""), "log": rel(log_path(s, point)),
           "json": rel(target)}
    row.update(point.params)
    row.update(result_fields(doc))
    return row
