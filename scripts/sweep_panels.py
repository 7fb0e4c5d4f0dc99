"""What each of scripts/plot.py's pictures draws, from a sweep.csv's ok rows, without drawing it:
the panels, their lines and each line's points with its measure (median and spread of the rows
pooled there). Only repeats of one configuration are pooled: a setting with more than one value
at the same x becomes its own lines (split_keys)."""
import collections
import math
import statistics

REFERENCE = {"fusion_threshold_mb": "16", "allreduce": "mpi", "compression": "none",
             "variable_update": "horovod", "precision": "fp32"}
LINE_KEYS = ["allreduce", "compression", "variable_update", "hosts"]

def varying(rows, params):
    """Parameter columns with more than one value among rows (blank = not applicable)."""
    return [k for k in params if len({r[k] for r in rows if r[k] != ""}) > 1]


def num(v):
    try:
        return float(v)
    except ValueError:
        return math.inf


def values_of(rows, key):
    return sorted({r[key] for r in rows if r[key] != ""}, key=lambda v: (num(v), v))


def label(keys, values, short=False):
    parts = []
    for k, v in zip(keys, values):
        if v == "":
            continue
        if short and k in ("allreduce", "precision", "model"):
            parts.append(v)
        elif k == "fusion_threshold_mb":
            parts.append(f"fusion threshold {v} MiB")
        elif k == "batch_size":
            parts.append(f"batch {v}")
        elif k == "num_intra_threads":
            parts.append(f"{v} thread{'s' if v != '1' else ''} per rank")
        else:
            parts.append(f"{k} {v}")
    return ", ".join(parts) or "all points"


def pin(rows, keys, notes):
    """Holds each varying key of `keys` at its reference value (or its first one)."""
    for k in keys:
        vals = values_of(rows, k)
        if len(vals) > 1:
            v = REFERENCE.get(k) if REFERENCE.get(k) in vals else vals[0]
            rows = [r for r in rows if r[k] in (v, "")]
            notes.append(label([k], [v]))
    return rows


def measure(rows):
    """(mean images/sec, error) over the repeats in rows."""
    ips = [float(r["images_per_sec"]) for r in rows]
    if len(ips) > 1:
        return statistics.mean(ips), statistics.stdev(ips) / math.sqrt(len(ips))
    err = rows[0].get("images_per_sec_stderr") or "0"
    return ips[0], float(err)


def order(key, value):
    """Sort key: numbers by value, fp32 before the other precisions, the rest by name."""
    if key == "precision":
        return (value != "fp32", value)
    return (num(value), value)


def group(rows, keys):
    out = collections.OrderedDict()
    for r in sorted(rows, key=lambda r: [order(k, r[k]) for k in keys]):
        out.setdefault(tuple(r[k] for k in keys), []).append(r)
    return out


def split_keys(rows, at, keys):
    """Those of `keys` with more than one value among the rows at one place `at` (a panel's x
    position): drawn there as one point, different configurations would be averaged as repeats,
    so each such key must get lines (or ticks) of its own."""
    return [k for k in keys if any(len({r[k] for r in g}) > 1 for g in group(rows, at).values())]


def in_line(row, keys, values):
    """Whether a row belongs to the line of `values`: its own values, or blank on one rank (a key
    sweep.py leaves out there: the 1-rank point is the baseline of every line)."""
    return all(row[k] == v or (row[k] == "" and row["ranks"] == 1) for k, v in zip(keys, values))


def scaling_panels(rows, params):
    """What scaling.png draws: (rows, panels, line_keys, panel_keys, notes), each panel (its
    values, [(line values, {ranks: (images/sec, error)})]); or a string saying why nothing."""
    ranks = values_of(rows, "ranks")
    if len(ranks) < 2:
        return "ranks has one value"
    notes = []
    rows = pin(rows, ["fusion_threshold_mb"], notes)
    for r in rows:  # one rank is on one host: blank, so the 1-rank point starts every hosts line
        if r["ranks"] == 1 and "hosts" in r:
            r["hosts"] = ""
    var = varying(rows, params)
    line_keys = [k for k in LINE_KEYS if k in var and k != "hosts"]
    panel_keys = [k for k in var if k not in line_keys and k not in ("ranks", "hosts")]
    # hosts that grow with ranks (1 x 1 against 2 hosts x 1 rank) are part of the x axis; several
    # host counts at one rank count are lines of their own
    rest = [k for k in var if k not in line_keys + panel_keys + ["ranks"]]
    line_keys += split_keys(rows, panel_keys + ["ranks"], rest)
    panels = []
    for pvals, prow in group(rows, panel_keys).items():
        multi = [r for r in prow if r["ranks"] > min(r2["ranks"] for r2 in prow)]
        series = []
        for lvals in group(multi, line_keys) if line_keys else [()]:
            by_ranks = group([r for r in prow if in_line(r, line_keys, lvals)], ["ranks"])
            if len(by_ranks) >= 2:
                series.append((lvals, {int(k[0]): measure(v) for k, v in by_ranks.items()}))
        if series:
            panels.append((pvals, series))
    if not panels:
        return "no configuration has results at two rank counts"
    return rows, panels, line_keys, panel_keys, notes


def fusion_panels(rows, params):
    """What fusion.png draws: (rows, thresholds, panels, line_keys, panel_keys), each panel (its
    values, [(line values, {threshold: (images/sec, error)})]); or a string saying why nothing."""
    rows = [r for r in rows if r["ranks"] > 1 and r["fusion_threshold_mb"] != ""]
    thresholds = values_of(rows, "fusion_threshold_mb")
    if len(thresholds) < 2:
        return "fusion_threshold_mb has fewer than two values on more than one rank"
    var = varying(rows, params)
    line_keys = [k for k in LINE_KEYS if k in var and k != "hosts"]
    panel_keys = [k for k in var if k not in line_keys and k != "fusion_threshold_mb"]  # ranks, hosts included
    panels = []
    for pvals, prow in group(rows, panel_keys).items():
        if len(values_of(prow, "fusion_threshold_mb")) > 1:
            lines = group(prow, line_keys).items() if line_keys else [((), prow)]
            panels.append((pvals, [(lvals, {k[0]: measure(v) for k, v in group(lrow, ["fusion_threshold_mb"]).items()})
                                   for lvals, lrow in lines]))
    if not panels:
        return "no configuration has results at two fusion thresholds"
    return rows, thresholds, panels, line_keys, panel_keys


def precision_panels(rows, params):
    """What precision.png draws: (rows, precisions, panels, tick_keys, panel_keys, notes), each
    panel (its values, {(ranks, [hosts,] precision): (images/sec, error)}, its ticks: the
    (ranks, [hosts]) it has); or a string saying why nothing."""
    precisions = values_of(rows, "precision")
    if len(precisions) < 2:
        return "precision has one value (or its other values all failed)"
    precisions.sort(key=lambda p: (p != "fp32", p))
    notes = []
    rows = pin(rows, [k for k in ("allreduce", "fusion_threshold_mb", "compression", "variable_update")], notes)
    var = varying(rows, params)
    panel_keys = [k for k in var if k not in ("precision", "ranks", "hosts")]
    # a tick per rank count, and per host count where one rank count ran on several
    tick_keys = ["ranks"] + split_keys(rows, panel_keys + ["ranks", "precision"],
                                       [k for k in var if k not in panel_keys + ["ranks", "precision"]])
    panels = []
    for pvals, prow in group(rows, panel_keys).items():
        cells = {k: measure(v) for k, v in group(prow, tick_keys + ["precision"]).items()}
        groups = sorted({k[:-1] for k in cells}, key=lambda g: [order(k, v) for k, v in zip(tick_keys, g)])
        if len({k[-1] for k in cells}) > 1:
            panels.append((pvals, cells, groups))
    if not panels:
        return "no configuration has results in two precisions"
    return rows, precisions, panels, tick_keys, panel_keys, notes


def accuracy_series(rows, params):
    """What accuracy.png draws: (rows, line_keys, {line values: {global batch: [its rows]}}), the
    rows at one global batch of a line repeats of one configuration; or a string saying why nothing."""
    rows = [r for r in rows if r.get("test_top1")]
    if not rows:
        return "no convergence points (no test_top1 column with values)"
    for r in rows:
        r["global_batch"] = int(float(r["global_batch"]))
    var = varying(rows, params)
    line_keys = [k for k in var if k not in ("ranks", "batch_size", "hosts")]
    # ranks x batch (and hosts) are the x axis where they give different global batches; where
    # two give the same one (1 x 64 and 2 x 32), they are lines of their own
    line_keys += split_keys(rows, line_keys + ["global_batch"], [k for k in var if k not in line_keys])
    series = group(rows, line_keys) if line_keys else {(): rows}
    return rows, line_keys, {lvals: group(srows, ["global_batch"]) for lvals, srows in series.items()}
