#!/usr/bin/env python3
"""Trains the same models with cnnbench and with PyTorch on this machine, alternating, and
reports images/sec, peak RSS and the ratio per model.

Both sides run the same model, per-rank batch, thread count, precision (fp32, or bf16: cnnbench
--use_fp16, PyTorch autocast), synthetic data, SGD with momentum and weight decay, and number of
warm-up and timed steps. PyTorch runs in one of a fixed list of settings (SETTINGS: eager or
torch.compile in its default mode or max-autotune, channels_last on or off, with or without
glibc told to keep freed memory, MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=68719476736, without
which it pays page faults every step). cnnbench always runs under that environment. Where the
process owns exactly as many CPUs as --threads, cnnbench binds each thread to one of them, and
PyTorch's OpenMP threads are bound alike (OMP_PROC_BIND=close, OMP_PLACES; --no-pin leaves them
free, as every table before 2026-11-29). Who runs first swaps each repeat.

  # the peer as users run it today: PyTorch from PyPI in a virtual environment (about 5 GB with the
  # CUDA libraries its wheel pulls in; not part of the README's commands)
  python3 -m venv ~/.venvs/torch && ~/.venvs/torch/bin/pip install torch==2.15.0 torchvision
  # every setting once per model: which one is fastest (results/pytorch_settings_<precision>.md)
  scripts/compare_pytorch.py --python ~/.venvs/torch/bin/python --scan
  # cnnbench against the fastest setting, 5 alternating runs a side, Debian's PyTorch 1.13 beside
  scripts/compare_pytorch.py --python ~/.venvs/torch/bin/python --repeats 5 --footnote-python /usr/bin/python3

torch.compile's first step compiles (minutes per model on two cores); Inductor caches what it
compiled, so later runs of the same model and setting start at once. The first step's time is
reported apart and never counted in images/sec.
"""
import argparse
import csv
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKER = os.path.join(ROOT, "scripts", "pytorch_cpu_worker.py")
DEFAULTS = {"resnet50": 32, "vgg16": 16, "resnet20": 128}  # the models compared unless named, per-rank batch
# others that --models may name (tf_cnn_benchmarks' batch; alexnet a quarter of its 512)
BATCHES = {**DEFAULTS, "googlenet": 32, "alexnet": 128, "inception3": 32, "mobilenet": 32, "nasnet": 32}
MALLOC_ENV = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": "68719476736"}
# name: (mode, channels_last, glibc's allocator told to keep freed memory)
SETTINGS = {
    "eager": ("eager", False, False),
    "eager+malloc": ("eager", False, True),
    "eager+cl": ("eager", True, False),
    "eager+cl+malloc": ("eager", True, True),
    "compile": ("compile", False, False),
    "compile+malloc": ("compile", False, True),
    "compile+cl": ("compile", True, False),
    "compile+cl+malloc": ("compile", True, True),
    "max-autotune+malloc": ("max-autotune", False, True),
    "max-autotune+cl+malloc": ("max-autotune", True, True),
}
FOOTNOTE_SETTING = "eager+cl+malloc"  # Debian's 1.13 has torch.compile, but it was 2022's: its best eager setting


def run_checked(args, env, what):
    done = subprocess.run(args, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{os.path.basename(sys.argv[0])}: {what} failed (exit {done.returncode}):\n{done.stderr.strip()[-2000:]}")
    return done


def pinning_env(threads):
    """PyTorch's OpenMP threads bound one to a CPU as cnnbench binds its own (kernels/threads.cc):
    only where the process owns exactly as many CPUs as threads; {} otherwise."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) != threads:
        return {}
    return {"OMP_PROC_BIND": "close", "OMP_PLACES": ",".join(f"{{{c}}}" for c in cpus)}


def run_pytorch(python, model, batch, threads, warmup, steps, precision, setting, profile=False, pin=True):
    """The worker's JSON line; with profile, its torch.profiler events too (scripts/per_op_table.py).
    pin: bind its threads as cnnbench binds its own (pinning_env)."""
    mode, channels_last, malloc = SETTINGS[setting]
    env = dict(os.environ, **MALLOC_ENV) if malloc else {k: v for k, v in os.environ.items() if k not in MALLOC_ENV}
    env.pop("LD_LIBRARY_PATH", None)  # a wheel's own libraries, not ours
    for key in ("OMP_PROC_BIND", "OMP_PLACES"):
        env.pop(key, None)
    if pin:
        env.update(pinning_env(threads))
    out = run_checked([python, WORKER, model, str(batch), str(threads), str(warmup), str(steps), precision, mode,
                       "1" if channels_last else "0"] + (["profile"] if profile else []), env,
                      f"PyTorch {model} ({setting})")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["setting"] = setting
    return result


def cnnbench_result(binary, model, batch, threads, warmup, steps, precision, extra=()):
    """One cnnbench run as the PyTorch side trains (SGD with momentum and weight decay): its JSON result."""
    env = dict(os.environ, **MALLOC_ENV)
    with tempfile.TemporaryDirectory() as tmp:
        result = os.path.join(tmp, "r.json")
        args = [binary, f"--model={model}", f"--batch_size={batch}", f"--num_batches={steps}",
                f"--num_warmup_batches={warmup}", f"--num_intra_threads={threads}", "--optimizer=momentum",
                # torch.optim.SGD's arithmetic: plain momentum, weight decay on every parameter
                "--nesterov=false", "--weight_decay=1e-4", "--weight_decay_on_batch_norm",
                f"--benchmark_log_dir={tmp}", f"--result_json={result}", *extra]
        if precision != "fp32":
            args.append("--use_fp16")
        run_checked(args, env, f"cnnbench {model}")
        with open(result) as f:
            return json.load(f)


def run_cnnbench(binary, model, batch, threads, warmup, steps, precision):
    doc = cnnbench_result(binary, model, batch, threads, warmup, steps, precision)
    summary = doc["summary"]
    # null where not measured (no peak for the type, or below what the run achieved; no wait figure): -1 here
    return {"images_per_sec": summary["images_per_sec"], "fraction_of_peak": none_as(summary.get("fraction_of_peak"), -1),
            "peak_gflops": summary["peak_gflops_per_rank"], "cpu": doc["context"]["cpu_model"],
            "cpu_wait_fraction": none_as(summary.get("cpu_wait_fraction"), -1),
            "peak_rss_bytes": doc["summary"]["peak_rss_bytes"]}


def none_as(value, default):
    return default if value is None else value


def peak_pct(fraction):
    return f"{100 * fraction:.1f}%" if fraction >= 0 else "?"


def runs_text(runs):
    """Every run's images/sec in order, with the share of its time its threads waited for a CPU."""
    return "; ".join(f"{r['images_per_sec']:.2f} ({100 * r.get('cpu_wait_fraction', -1):.1f}% wait)" for r in runs)


def most_wait(runs):
    waits = [r.get("cpu_wait_fraction", -1) for r in runs]
    return f"{100 * max(waits):.1f}%" if waits and min(waits) >= 0 else "?"


def median_run(runs):
    return sorted(runs, key=lambda r: r["images_per_sec"])[len(runs) // 2]


def span(runs):
    ordered = sorted(runs, key=lambda r: r["images_per_sec"])
    return [ordered[0], ordered[-1]]


def spread_pct(runs):
    """(max - min) / median of the runs' images/sec, in percent: what one bad run widens."""
    speeds = sorted(r["images_per_sec"] for r in runs)
    return round(100 * (speeds[-1] - speeds[0]) / statistics.median(speeds), 1)


def iqr_pct(runs):
    """Interquartile range / median, in percent: the spread of the middle half, which one run
    slowed by a neighbour does not move. Needs 4 runs or more; None below."""
    speeds = [r["images_per_sec"] for r in runs]
    if len(speeds) < 4:
        return None
    q1, _, q3 = statistics.quantiles(speeds, n=4, method="inclusive")
    return round(100 * (q3 - q1) / statistics.median(speeds), 1)


def pct(value):
    return "n/a" if value is None else f"{value}%"


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=list(DEFAULTS), help="models to compare")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10, help="timed steps (5x for resnet20, whose steps are short)")
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    parser.add_argument("--binary", default=os.path.join(ROOT, "build", "cnnbench"))
    parser.add_argument("--python", default="/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable,
                        help="the Python whose torch is the peer (a virtual environment's for PyTorch 2.x)")
    parser.add_argument("--scan", action="store_true",
                        help="run PyTorch alone in every setting of --settings, --repeats times each, and record which is fastest")
    parser.add_argument("--settings", nargs="+", default=None,
                        help=f"PyTorch settings (default: all with --scan, else the fastest of the scan): {', '.join(SETTINGS)}")
    parser.add_argument("--footnote-python", default=None,
                        help=f"another torch run beside in its {FOOTNOTE_SETTING} setting (Debian's 1.13: /usr/bin/python3)")
    parser.add_argument("--no-pin", action="store_true",
                        help="leave PyTorch's threads unbound (as every table before 2026-11-29), where cnnbench "
                             "binds its own one to a CPU when the process owns exactly as many CPUs as threads")
    parser.add_argument("--repeats", type=int, default=1,
                        help="run each side this many times, alternating; report the medians (and the range)")
    parser.add_argument("--out", default=os.path.join(ROOT, "results"), help="folder for the tables")
    args = parser.parse_args()
    for name in args.settings or []:
        if name not in SETTINGS:
            parser.error(f"--settings: unknown setting {name!r} (known: {', '.join(SETTINGS)})")
    return args


def steps_for(model, steps):
    return steps * (5 if model == "resnet20" else 1)  # short steps: time more of them


def scan_path(out, precision):
    return os.path.join(out, f"pytorch_settings_{precision}")


def scan(args):
    """Every setting, --repeats runs each in rounds (every setting's first run, then every
    setting's second...), per model; the fastest setting by median marked."""
    settings = args.settings or list(SETTINGS)
    rows = []
    for model in args.models:
        batch, steps = BATCHES.get(model, 32), steps_for(model, args.steps)
        runs = {name: [] for name in settings}
        for _ in range(max(1, args.repeats)):
            for name in settings:
                r = run_pytorch(args.python, model, batch, args.threads, args.warmup, steps, args.precision, name,
                                pin=not args.no_pin)
                runs[name].append(r)
                print(f"  {model} {name}: {r['images_per_sec']:.2f} img/s, first step {r['first_step_sec']:.1f} s, "
                      f"{100 * r['cpu_wait_fraction']:.1f}% wait, peak RSS {r['peak_rss_bytes'] / 2**30:.2f} GiB", flush=True)
        best = max(settings, key=lambda name: median_run(runs[name])["images_per_sec"])
        for name in settings:
            m = median_run(runs[name])
            rows.append({"model": model, "batch": batch, "precision": args.precision, "threads": args.threads,
                         "setting": name, "images_per_sec": round(m["images_per_sec"], 3),
                         "range": "-".join(f"{r['images_per_sec']:.2f}" for r in span(runs[name])),
                         "first_step_sec": round(max(r["first_step_sec"] for r in runs[name]), 1),
                         "peak_rss_gib": round(max(r["peak_rss_bytes"] for r in runs[name]) / 2**30, 2),
                         "most_cpu_wait": most_wait(runs[name]), "fastest": name == best, "torch_version": m["torch"],
                         "runs": len(runs[name]), "pinned": all(r.get("omp_places") for r in runs[name])})
        print(f"{model}: fastest {best}", flush=True)
    stem = scan_path(args.out, args.precision)
    write_csv(stem + ".csv", rows)
    with open(stem + ".md", "w") as f:
        f.write(f"PyTorch {rows[0]['torch_version']} alone in each setting, {args.precision}, {args.threads} threads"
                f"{' bound one to a CPU' if all(r['pinned'] for r in rows) else ' unbound'}, "
                f"{cpu_model()} ({platform.node()}), {time.strftime('%Y-%m-%d')}; {args.steps} timed steps "
                f"({5 * args.steps} for resnet20) after {args.warmup} warm-up, median of {rows[0]['runs']} run(s) "
                "per setting, range in brackets; the first step (torch.compile's compilation, or its cache) apart\n\n")
        f.write("| model | batch | setting | img/s | first step s | peak RSS GiB | most CPU wait | fastest |\n"
                "|---|---|---|---|---|---|---|---|\n")
        for r in rows:
            f.write(f"| {r['model']} | {r['batch']} | {r['setting']} | {r['images_per_sec']} ({r['range']}) "
                    f"| {r['first_step_sec']} | {r['peak_rss_gib']} | {r['most_cpu_wait']} | {'**yes**' if r['fastest'] else ''} |\n")
    print(f"wrote {stem}.csv and {stem}.md")


def fastest_settings(args):
    """model -> the fastest setting of the scan for this precision and torch; exits if none."""
    path = scan_path(args.out, args.precision) + ".csv"
    try:
        with open(path, newline="") as f:
            found = {r["model"]: r["setting"] for r in csv.DictReader(f) if r["fastest"] == "True"}
    except OSError:
        found = {}
    missing = [m for m in args.models if m not in found]
    if missing:
        sys.exit(f"compare_pytorch.py: no scan of PyTorch's settings for {', '.join(missing)} in {path}: run --scan "
                 "first, or name --settings")
    return found


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            return next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor()


def write_csv(path, rows):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def compare(args):
    chosen = {m: args.settings[0] for m in args.models} if args.settings else fastest_settings(args)
    rows = []
    for model in args.models:
        batch, steps, setting = BATCHES.get(model, 32), steps_for(model, args.steps), chosen[model]
        # alternate the sides so that a slow spell of the machine hits them alike; keep each side's median run
        ours, theirs, footnote = [], [], []
        for repeat in range(max(1, args.repeats)):
            # who goes first swaps every repeat (cnnbench, PyTorch, PyTorch, cnnbench, ...): a machine
            # slowing or warming through the sitting favours neither side
            sides = [lambda: ours.append(run_cnnbench(args.binary, model, batch, args.threads, args.warmup, steps,
                                                      args.precision)),
                     lambda: theirs.append(run_pytorch(args.python, model, batch, args.threads, args.warmup, steps,
                                                       args.precision, setting, pin=not args.no_pin))]
            for side in sides if repeat % 2 == 0 else sides[::-1]:
                side()
            if args.footnote_python:
                footnote.append(run_pytorch(args.footnote_python, model, batch, args.threads, args.warmup, steps,
                                            args.precision, FOOTNOTE_SETTING, pin=not args.no_pin))
            print(f"  {model} run {len(ours)}: cnnbench {runs_text(ours[-1:])}, PyTorch {setting} {runs_text(theirs[-1:])}"
                  + (f", footnote {runs_text(footnote[-1:])}" if footnote else ""), flush=True)
        o, t = median_run(ours), median_run(theirs)
        ratio = o["images_per_sec"] / t["images_per_sec"]
        row = {"model": model, "batch": batch, "threads": args.threads, "precision": args.precision, "steps": steps,
               "cnnbench_images_per_sec": round(o["images_per_sec"], 2), "pytorch_setting": setting,
               "pytorch_images_per_sec": round(t["images_per_sec"], 2), "ratio": round(ratio, 3),
               "cnnbench_fraction_of_peak": round(o["fraction_of_peak"], 3), "torch_version": t["torch"],
               "cpu": o["cpu"], "repeats": len(ours),
               "cnnbench_range": "-".join(f"{r['images_per_sec']:.2f}" for r in span(ours)),
               "pytorch_range": "-".join(f"{r['images_per_sec']:.2f}" for r in span(theirs)),
               "cnnbench_spread_pct": spread_pct(ours), "pytorch_spread_pct": spread_pct(theirs),
               "cnnbench_iqr_pct": iqr_pct(ours), "pytorch_iqr_pct": iqr_pct(theirs),
               "cnnbench_runs": runs_text(ours), "pytorch_runs": runs_text(theirs),
               "most_cpu_wait": f"{most_wait(ours)} / {most_wait(theirs)}",
               "cnnbench_peak_rss_gib": round(max(r["peak_rss_bytes"] for r in ours) / 2**30, 2),
               "pytorch_peak_rss_gib": round(max(r["peak_rss_bytes"] for r in theirs) / 2**30, 2),
               # of that, what the process held once torch was imported, before any model (-1: a worker
               # from before this figure)
               "pytorch_import_rss_gib": round(max(r.get("import_rss_bytes", -2**30) for r in theirs) / 2**30, 2),
               "pytorch_pinned": all(r.get("omp_places") for r in theirs),
               "pytorch_first_step_sec": round(max(r["first_step_sec"] for r in theirs), 1)}
        if footnote:
            f = median_run(footnote)
            row.update({"footnote_torch_version": f["torch"], "footnote_images_per_sec": round(f["images_per_sec"], 2),
                        "footnote_range": "-".join(f"{r['images_per_sec']:.2f}" for r in span(footnote)),
                        "footnote_peak_rss_gib": round(max(r["peak_rss_bytes"] for r in footnote) / 2**30, 2)})
        rows.append(row)
        print(f"{model:10s} batch {batch:4d}  cnnbench {o['images_per_sec']:9.2f} img/s  PyTorch {setting} "
              f"{t['images_per_sec']:9.2f} img/s  ratio {ratio:5.2f}x  "
              f"({peak_pct(o['fraction_of_peak'])} of the measured {args.precision} peak)", flush=True)
    stem = os.path.join(args.out, f"compare_pytorch_{args.precision}")
    write_csv(stem + ".csv", rows)
    with open(stem + ".md", "w") as f:
        chosen_how = ("in the setting named by --settings" if args.settings
                      else f"in its fastest setting of the scan in {scan_path(args.out, args.precision)}.csv")
        pinned = ("PyTorch's threads bound one to a CPU as cnnbench's (OMP_PROC_BIND, OMP_PLACES)"
                  if all(r["pytorch_pinned"] for r in rows) else
                  "PyTorch's threads not bound to CPUs" + (" (--no-pin)" if args.no_pin else
                                                           " (the process owns more CPUs than threads)"))
        f.write(f"cnnbench vs PyTorch {rows[0]['torch_version']} {chosen_how}, {args.precision}, "
                f"{args.threads} threads, {rows[0]['cpu']} ({platform.node()}), {time.strftime('%Y-%m-%d')}; "
                f"{pinned}\n\n"
                f"{args.steps} timed steps ({5 * args.steps} for resnet20) after {args.warmup} warm-up; median of "
                f"{rows[0]['repeats']} alternating run(s) per side, range in brackets\n\n")
        note = "footnote_images_per_sec" in rows[0]
        f.write("| model | batch | cnnbench img/s | PyTorch setting | PyTorch img/s | ratio | peak RSS GiB (cnnbench / PyTorch) "
                "| cnnbench % of peak | most CPU wait (cnnbench / PyTorch) | spread, range / median | spread, IQR / median |"
                + (f" PyTorch {rows[0]['footnote_torch_version']} ({FOOTNOTE_SETTING}) img/s |" if note else "") + "\n"
                + "|---" * (11 + note) + "|\n")
        for r in rows:
            f.write(f"| {r['model']} | {r['batch']} | {r['cnnbench_images_per_sec']} ({r['cnnbench_range']}) "
                    f"| {r['pytorch_setting']} | {r['pytorch_images_per_sec']} ({r['pytorch_range']}) | {r['ratio']}x "
                    f"| {r['cnnbench_peak_rss_gib']} / {r['pytorch_peak_rss_gib']} ({r['pytorch_import_rss_gib']} of it once torch was imported) | {peak_pct(r['cnnbench_fraction_of_peak'])} "
                    f"| {r['most_cpu_wait']} | {r['cnnbench_spread_pct']}% / {r['pytorch_spread_pct']}% "
                    f"| {pct(r['cnnbench_iqr_pct'])} / {pct(r['pytorch_iqr_pct'])} |"
                    + (f" {r['footnote_images_per_sec']} ({r['footnote_range']}) |" if note else "") + "\n")
        f.write("\nEvery run in order, images/sec (share of its threads' time spent waiting for a CPU another "
                "process held):\n\n")
        for r in rows:
            f.write(f"- {r['model']}: cnnbench {r['cnnbench_runs']}; PyTorch {r['pytorch_runs']}\n")
    print(f"wrote {stem}.csv and {stem}.md")


def main():
    args = parse_args()
    if not os.path.exists(args.python):
        sys.exit(f"compare_pytorch.py: no Python at {args.python} (see the virtual environment command in --help)")
    if args.scan:
        scan(args)
    else:
        compare(args)


if __name__ == "__main__":
    main()
