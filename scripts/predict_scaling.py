#!/usr/bin/python3
"""Predicts data-parallel images/sec and scaling efficiency from 1 to 1024 ranks with an
alpha-beta model of ring and tree allreduce, replaying cnnbench's own gradient pipeline.

Calibration, both from this machine:
  * a 1-rank step breakdown: a cnnbench result JSON made with --layer_timing (forward,
    backward and update time; each layer's backward time and gradient sizes, in the order
    backward produces them);
  * the allreduce microbenchmark on the link of interest: `cnnbench --mode=allreduce` JSON;
    t(S) = a + b*S is fitted to its sizes (least relative squares) and turned into a per-message
    cost alpha and a per-byte cost beta for the rank count it ran with. `--link RATE[,LATENCY]`
    instead models a link that is not here: beta = 1/RATE, alpha = LATENCY + the fitted
    software cost.

The step at N ranks is replayed as cnnbench runs it: gradients become ready layer by layer
during backward, are packed into buckets of --fusion-threshold-mb (Horovod's rule), one
communication thread reduces them in order as they fill, and the optimizer updates each bucket
once it is back. Step(N) = the 1-rank step + what of the reduction (and the update behind it) is
left when backward ends. Per bucket of S bytes (fp32 gradients; halved with --compression
fp16/bf16):
  ring  2(N-1) alpha + 2(N-1)/N S beta
  tree  2 ceil(log2 N) alpha + 2 S beta     (pipelined reduce + broadcast)
With --compression powersgd a bucket is two such allreduces, of its whole tensors with the P
factors and of the Q factors (comm/powersgd.h; --powersgd-rank), after PowerSGD's own work at
--powersgd-ns-per-element per compressed element.
With --ranks-per-host R the ranks fill hosts of R: up to R ranks the allreduce stays on the host
(--local-allreduce, a microbenchmark JSON of ranks on one host), beyond it a flat ring's slowest
hop is the link between hosts, as above. With --hierarchical (cnnbench's --hierarchical_allreduce)
a bucket is reduce-scattered among a host's ranks, each share allreduced across the H = N/R hosts
(the R shares cross the host's one link together: the link carries the whole bucket), and the
shares gathered back:
  2 ((R-1) alpha_local + (R-1)/R S beta_local) + the ring or tree above over H ranks
With --overlap-forward (cnnbench's --overlap_forward with forward priority) the step ends
after backward: the communication thread takes, of the buckets ready, the one the next forward
needs first, and the next forward waits before each layer for that layer's buckets (then
updates them): Step(N) = forward with those waits and updates + backward + the rest.
Not modelled: contention between the communication thread and compute on shared cores,
congestion beyond one link per host, stragglers, compression casts.

  scripts/predict_scaling.py --step STEP.json --allreduce AR.json [--fusion-threshold-mb 16]
        [--compression none|fp16|bf16|powersgd] [--overlap-forward] [--link 10gbit,50us]
        [--ranks-per-host 8 --local-allreduce LOCAL.json [--hierarchical]]
        [--measured A.json B.json ...]
        [--out results/scaling_model/NAME]
Writes NAME.csv and NAME.png (predicted curves, measured points beside them) and prints the
table; with --measured it prints predicted against measured for each run and the error.
"""
import argparse
import csv
import json
import os
import sys

if __package__:  # python3 -m scripts.predict_scaling
    from .scaling_model import Hosts, Link, plan_buckets, predict
else:  # scripts/predict_scaling.py: scripts/ is first on sys.path
    from scaling_model import Hosts, Link, plan_buckets, predict

RANKS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
# PowerSGD's work on the communication thread per compressed element (error feedback, the three
# thin products, Gram-Schmidt): resnet50 on this machine, `--mode=allreduce --compression=powersgd`
# on 1 rank, where the allreduces cost nothing: 44-45 ms over 25.5 M elements (2026-11-24).
POWERSGD_NS_PER_ELEMENT = 1.75


def fail(message):
    print(f"predict_scaling: {message}", file=sys.stderr)
    sys.exit(2)


def load_json(path, schema):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{path}: {e}")
    if doc.get("schema") != schema:
        fail(f"{path}: not a {schema} document (schema {doc.get('schema')!r})")
    return doc


class Step:
    """The 1-rank step: forward, backward (with tensor ready times), update."""

    def __init__(self, path):
        doc = load_json(path, "cnnbench.result/1")
        run, summary = doc["run"], doc["summary"]
        if run["ranks"] != 1:
            fail(f"{path}: the step breakdown must come from a 1-rank run (it has {run['ranks']})")
        layers = doc.get("layers")
        if not layers or not any("gradient_elements" in l for l in layers):
            fail(f"{path}: no per-layer breakdown: run cnnbench with --layer_timing (1 rank)")
        self.model, self.batch, self.precision = doc["model"]["name"], run["batch_size_per_rank"], run["precision"]
        self.threads = run["threads_per_rank"]
        self.forward = summary["forward_mean_sec"]
        self.backward = summary["backward_mean_sec"]
        self.update = summary["update_mean_sec"]
        self.step = summary["step_time_mean_sec"]
        # backward runs the layers in reverse; a layer's gradients are final when its backward ends.
        # Layer timing adds a little per layer: scale the ready times to the untimed backward.
        layer_total = sum(l["backward_sec_per_step"] for l in layers) or 1.0
        scale = self.backward / layer_total
        self.tensors = []  # (elements, ready time from the start of backward, rows: 0 for a vector)
        self.has_rows = all("gradient_rows" in l for l in layers if l.get("gradient_elements"))
        elapsed = 0.0
        tensors_of = {}  # layer position: the indices of its tensors in self.tensors
        for position in reversed(range(len(layers))):
            layer = layers[position]
            elapsed += layer["backward_sec_per_step"] * scale
            rows = layer.get("gradient_rows", [0] * len(layer.get("gradient_elements", [])))
            for elements, r in zip(layer.get("gradient_elements", []), rows):
                tensors_of.setdefault(position, []).append(len(self.tensors))
                self.tensors.append((elements, elapsed, r))
        # forward, layer by layer: (seconds, indices of the tensors it reads), scaled to the untimed forward
        forward_total = sum(l["forward_sec_per_step"] for l in layers) or 1.0
        self.forward_layers = [(l["forward_sec_per_step"] * self.forward / forward_total, tensors_of.get(i, []))
                               for i, l in enumerate(layers)]
        self.gradient_bytes = 4 * sum(t[0] for t in self.tensors)


def parse_rate(text):
    units = {"gbit": 1e9, "mbit": 1e6, "kbit": 1e3, "bit": 1.0}
    for unit, factor in units.items():
        if text.lower().endswith(unit):
            try:
                return float(text[: -len(unit)]) * factor / 8
            except ValueError:
                break
    fail(f"--link: '{text}' is not a rate like 10gbit or 100mbit")


def parse_time(text):
    units = {"us": 1e-6, "ms": 1e-3, "s": 1.0}
    for unit, factor in units.items():
        if text.lower().endswith(unit):
            try:
                return float(text[: -len(unit)]) * factor
            except ValueError:
                break
    fail(f"--link: '{text}' is not a latency like 50us or 1ms")


class CalibratedLink(Link):
    """A link fitted to the allreduce microbenchmark, or with `link` (RATE[,LATENCY]) a link that
    is not here: beta from the rate, alpha the fitted software cost plus the latency."""

    def __init__(self, allreduce_path, link=None):
        doc = load_json(allreduce_path, "cnnbench.allreduce/1")
        self.calibration_ranks = n = doc["run"]["ranks"]
        self.calibration_hosts = doc["run"]["hosts"]
        self.backend = doc["run"]["backend"]
        if n < 2:
            fail(f"{allreduce_path}: the allreduce microbenchmark needs 2 or more ranks to calibrate a link")
        sizes = [(s["bytes"], s["time_sec"]) for s in doc["sizes"] if s["time_sec"] > 0]
        if len(sizes) < 3:
            fail(f"{allreduce_path}: too few sizes to fit")
        a, b = fit_relative(sizes)
        # ring at n ranks: a = 2(n-1) alpha, b = 2(n-1)/n beta
        alpha = max(a, 0.0) / (2 * (n - 1))
        beta = b * n / (2 * (n - 1))
        self.fit_error = max(abs(a + b * s - t) / t for s, t in sizes)
        self.label = f"fitted: alpha {alpha * 1e6:.1f} us, {1 / beta / 1e9:.3f} GB/s"
        if link:
            rate, _, latency = link.partition(",")
            beta = 1 / parse_rate(rate)
            alpha += parse_time(latency) if latency else 0.0
            self.label = f"{link}: alpha {alpha * 1e6:.1f} us, {1 / beta / 1e9:.3f} GB/s"
        super().__init__(alpha, beta)


def fit_relative(points):
    """t = a + b*s minimising the sum of ((a + b s - t) / t)^2: small and large sizes count alike."""
    sw = swx = swxx = swy = swxy = 0.0
    for s, t in points:
        w = 1 / (t * t)
        sw += w
        swx += w * s
        swxx += w * s * s
        swy += w * t
        swxy += w * s * t
    det = sw * swxx - swx * swx
    b = (sw * swxy - swx * swy) / det
    a = (swy - b * swx) / sw
    return a, b


def measured_points(paths):
    points = []
    for path in paths:
        doc = load_json(path, "cnnbench.result/1")
        run, summary = doc["run"], doc["summary"]
        points.append({"path": path, "ranks": run["ranks"], "hosts": run["hosts"],
                       "images_per_sec": summary["images_per_sec"], "step": summary["step_time_mean_sec"],
                       "fusion_threshold_mb": run["fusion_threshold_mb"], "compression": run["compression"],
                       "allreduce": run["allreduce"], "batch": run["batch_size_per_rank"],
                       "overlap_forward": run.get("overlap_forward", False),
                       "first_layers_bucket_mb": run.get("first_layers_bucket_mb", 0),
                       "hierarchical": run.get("hierarchical_allreduce", False)})
    return points


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--step", required=True, help="1-rank cnnbench result JSON made with --layer_timing")
    parser.add_argument("--allreduce", required=True, help="cnnbench --mode=allreduce JSON on the link")
    parser.add_argument("--link", help="model this link instead: RATE[,LATENCY], e.g. 10gbit,50us")
    parser.add_argument("--fusion-threshold-mb", type=float, default=16)
    parser.add_argument("--first-layers-bucket-mb", type=float, default=0,
                        help="buckets planned from the input side, the first this size, doubling (cnnbench's flag)")
    parser.add_argument("--compression", choices=["none", "fp16", "bf16", "powersgd"], default="none")
    parser.add_argument("--overlap-forward", action="store_true",
                        help="updates in the next forward pass, buckets it needs first sent first (--overlap_forward)")
    parser.add_argument("--ranks-per-host", type=int, default=1,
                        help="ranks on each host (default 1: every rank its own host)")
    parser.add_argument("--local-allreduce", help="cnnbench --mode=allreduce JSON of ranks on one host "
                        "(needed with --ranks-per-host above 1)")
    parser.add_argument("--hierarchical", action="store_true",
                        help="sum within each host first, then across hosts (--hierarchical_allreduce)")
    parser.add_argument("--powersgd-rank", type=int, default=2)
    parser.add_argument("--powersgd-ns-per-element", type=float, default=POWERSGD_NS_PER_ELEMENT,
                        help="PowerSGD's own work per compressed gradient element (default: measured here, "
                             "one thread)")
    parser.add_argument("--measured", nargs="*", default=[], help="result JSONs of runs to set beside the prediction")
    parser.add_argument("--out", help="write OUT.csv and OUT.png")
    parser.add_argument("--title", help="plot title")
    args = parser.parse_args()

    step = Step(args.step)
    link = CalibratedLink(args.allreduce, args.link)
    if args.ranks_per_host < 1 or args.ranks_per_host & (args.ranks_per_host - 1):
        fail(f"--ranks-per-host: {args.ranks_per_host} is not a power of two (the rank counts are)")
    if args.hierarchical and args.ranks_per_host == 1:
        fail("--hierarchical needs --ranks-per-host above 1 (with one rank per host there is nothing to sum first)")
    local = None
    if args.ranks_per_host > 1:
        if not args.local_allreduce:
            fail("--ranks-per-host above 1 needs --local-allreduce (the microbenchmark with ranks on one host)")
        local = CalibratedLink(args.local_allreduce)
        if local.calibration_hosts != 1:
            fail(f"{args.local_allreduce}: ran on {local.calibration_hosts} hosts; --local-allreduce needs one")
    hosts = Hosts(args.ranks_per_host, local, args.hierarchical)
    if args.compression == "powersgd" and not step.has_rows:
        fail(f"{args.step}: no gradient_rows in its layers (made before PowerSGD): run --layer_timing again")
    psgd = {"powersgd_rank": args.powersgd_rank, "powersgd_sec_per_element": args.powersgd_ns_per_element * 1e-9}
    if args.first_layers_bucket_mb > 0 and args.fusion_threshold_mb == 0:
        fail("--first-layers-bucket-mb: with --fusion-threshold-mb 0 every tensor is a bucket already")
    mode = {**psgd, "overlap_forward": args.overlap_forward, "hosts": hosts,
            "first_layers_mb": args.first_layers_bucket_mb}
    print(f"# {step.model}, batch {step.batch}/rank, {step.precision}, {step.threads} thread(s)/rank: 1-rank step "
          f"{step.step * 1e3:.1f} ms (forward {step.forward * 1e3:.1f}, backward {step.backward * 1e3:.1f}, "
          f"update {step.update * 1e3:.1f}); {step.gradient_bytes / 2**20:.1f} MiB of gradients in "
          f"{len(step.tensors)} tensors")
    print(f"# link ({link.label}; fit within {link.fit_error * 100:.0f}% over the microbenchmark's sizes, "
          f"{link.calibration_ranks} ranks on {link.calibration_hosts} host(s))")
    if local:
        print(f"# {args.ranks_per_host} ranks per host, {'hierarchical' if args.hierarchical else 'flat'} allreduce; "
              f"on the host {local.label} ({local.calibration_ranks} ranks)")
    split = f" (first layers' bucket {args.first_layers_bucket_mb:g} MiB, doubling)" if args.first_layers_bucket_mb else ""
    buckets = plan_buckets(step.tensors, args.fusion_threshold_mb * (1 << 20),
                           first_layers_bytes=args.first_layers_bucket_mb * (1 << 20))
    print(f"# fusion {args.fusion_threshold_mb:g} MiB{split}, compression {args.compression}"
          f"{', updates in the next forward' if args.overlap_forward else ''}: {len(buckets)} buckets")
    print(f"{'ranks':>6} {'algorithm':>9} {'step(ms)':>9} {'exposed(ms)':>11} {'images/sec':>11} {'efficiency':>10}")
    rows = []
    for algorithm in ("ring", "tree"):
        for ranks in RANKS:
            t, exposed = predict(step, link, algorithm, ranks, args.fusion_threshold_mb, args.compression, **mode)
            ips = ranks * step.batch / t
            eff = step.step / t
            rows.append({"ranks": ranks, "algorithm": algorithm, "step_sec": t, "exposed_sec": exposed,
                         "images_per_sec": ips, "efficiency": eff})
            print(f"{ranks:>6} {algorithm:>9} {t * 1e3:>9.1f} {exposed * 1e3:>11.1f} {ips:>11.1f} {eff * 100:>9.1f}%")

    measured = measured_points(args.measured)
    errors = []
    if measured:
        print("# measured against predicted (the better of ring and tree; one link per host)")
    for m in [m for m in measured if m["ranks"] > 1 and m["allreduce"] != link.backend]:
        print(f"  {os.path.basename(m['path'])}: skipped, allreduce {m['allreduce']} (the link was calibrated "
              f"with {link.backend})")
    measured = [m for m in measured if m["ranks"] == 1 or m["allreduce"] == link.backend]
    for m in measured:
        if m["batch"] != step.batch:
            fail(f"{m['path']}: batch {m['batch']}/rank, the step breakdown has {step.batch}")
        if m["compression"] == "powersgd" and not step.has_rows:
            print(f"  {os.path.basename(m['path'])}: skipped, PowerSGD needs gradient_rows in --step")
            continue
        per_host = m["ranks"] // m["hosts"]
        if per_host > 1 and not local:
            print(f"  {os.path.basename(m['path'])}: skipped, {per_host} ranks per host needs --local-allreduce")
            continue
        placed = Hosts(per_host, local, m["hierarchical"])
        t = min(predict(step, link, a, m["ranks"], m["fusion_threshold_mb"], m["compression"], **psgd,
                        overlap_forward=m["overlap_forward"], hosts=placed,
                        first_layers_mb=m["first_layers_bucket_mb"])[0]
                for a in ("ring", "tree"))
        predicted = m["ranks"] * step.batch / t
        error = predicted / m["images_per_sec"] - 1
        errors.append(abs(error))
        m["predicted"] = predicted
        print(f"  {os.path.basename(m['path']):<40} {m['ranks']} ranks/{m['hosts']} hosts, fusion "
              f"{m['fusion_threshold_mb']:g} MiB{' split' if m['first_layers_bucket_mb'] else ''}, {m['compression']:<4}"
              f"{', overlap' if m['overlap_forward'] else ''}: "
              f"measured {m['images_per_sec']:.2f} img/s, "
              f"predicted {predicted:.2f} ({error * 100:+.1f}%)")
    if errors:
        print(f"# mean absolute error {sum(errors) / len(errors) * 100:.1f}%, largest {max(errors) * 100:.1f}%")

    if args.out:
        os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
        with open(args.out + ".csv", "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        plot(args, step, link, rows, measured)
        print(f"# wrote {args.out}.csv and {args.out}.png")


def plot(args, step, link, rows, measured):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8))
    ideal = [r * step.batch / step.step for r in RANKS]
    left.plot(RANKS, ideal, "k:", label="ideal (linear)")
    for algorithm, style in (("ring", "-o"), ("tree", "-s")):
        mine = [r for r in rows if r["algorithm"] == algorithm]
        left.plot([r["ranks"] for r in mine], [r["images_per_sec"] for r in mine], style, ms=3,
                  label=f"predicted, {algorithm}")
        right.plot([r["ranks"] for r in mine], [r["efficiency"] * 100 for r in mine], style, ms=3,
                   label=f"predicted, {algorithm}")
    # measured runs with the curve's fusion and compression in red, the other settings in grey
    def same(m):
        return m["ranks"] == 1 or (m["fusion_threshold_mb"] == args.fusion_threshold_mb and
                                   m["compression"] == args.compression)
    for points, style, label in (([m for m in measured if same(m)], "rx", "measured"),
                                 ([m for m in measured if not same(m)], "o", "measured, other fusion/compression")):
        if not points:
            continue
        extra = {"color": "0.6", "mfc": "none"} if style == "o" else {}
        left.plot([m["ranks"] for m in points], [m["images_per_sec"] for m in points], style, ms=8, label=label,
                  **extra)
        right.plot([m["ranks"] for m in points],
                   [step.step * m["images_per_sec"] / (m["ranks"] * step.batch) * 100 for m in points], style,
                   ms=8, label=label, **extra)
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("ranks")
        ax.grid(True, alpha=0.3)
        ax.legend()
    left.set_yscale("log")
    left.set_ylabel("images/sec")
    right.set_ylabel("scaling efficiency (%)")
    right.set_ylim(0, 105)
    fig.suptitle(args.title or f"{step.model} b{step.batch}/rank {step.precision}, fusion "
                 f"{args.fusion_threshold_mb:g} MiB, compression {args.compression}; link {link.label}")
    fig.tight_layout()
    fig.savefig(args.out + ".png", dpi=110)


if __name__ == "__main__":
    main()