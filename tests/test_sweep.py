#!/usr/bin/python3
"""scripts/sweep.py and scripts/plot.py end to end on configs/sweep_smoke.toml: the dry run, a
real run with one failing point, resume without re-running, another sweep's folder refused, a torn
CSV line, a timeout, SIGTERM, a bad sweep file, --fresh keeping the previous sweep whole, a rerun
leaving one row in runs/results.csv, a point whose run had other hosts than it says, plot.py never
averaging different configurations, and the scaling PNG; then a convergence sweep on a small
generated data set in Fashion-MNIST's idx format (accuracy columns, accuracy.png), and --adopt of
its points. Run by ctest (label "scripts"):
  /usr/bin/python3 tests/test_sweep.py --binary build/cnnbench
"""
import argparse
import csv
import gzip
import json
import os
import signal
import struct
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SWEEP = os.path.join(ROOT, "scripts", "sweep.py")
PLOT = os.path.join(ROOT, "scripts", "plot.py")
SMOKE = os.path.join(ROOT, "configs", "sweep_smoke.toml")
BINARY = os.path.join(ROOT, "build", "cnnbench")


def run(script, *args):
    p = subprocess.run([sys.executable, script, *args], capture_output=True, text=True, cwd=ROOT, timeout=300)
    return p.returncode, p.stdout, p.stderr


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


# A launcher that runs nothing: it writes a result JSON as cnnbench would (the ranks and hosts
# it was given, a stamp of its own), appends a row naming it to the runs' results.csv, and
# exits 3 where the file FAIL names exists. Fast sweeps with ok points.
FAKE_LAUNCHER = r"""
import json, os, sys, time
ranks, hosts = int(sys.argv[1]), int(sys.argv[2])
opt = dict(a.split("=", 1) for a in sys.argv[3:] if a.startswith("--") and "=" in a)
stamp = str(time.time_ns())
with open(opt["--result_json"], "w") as f:
    json.dump({"schema": "cnnbench.result/1", "run": {"ranks": ranks, "hosts": hosts},
               "summary": {"images_per_sec": 100.0 * ranks}, "context": {"time_utc": stamp}}, f)
results = os.path.join(opt["--benchmark_log_dir"], "results.csv")
new = not os.path.exists(results)
with open(results, "a") as f:
    f.write(("time_utc,json_file\n" if new else "") + stamp + "," + opt["--result_json"] + "\n")
print("fake run", stamp)
sys.exit(3 if os.path.exists(FAIL) else 0)
"""


def resolve(path):
    """A path cell of sweep.csv or results.csv (relative to the repository root, or absolute)."""
    return os.path.join(ROOT, path)


def read(path):
    with open(path) as f:
        return f.read()


def write_idx(folder, prefix, n):
    """n learnable 28x28 images in Fashion-MNIST's gzipped idx files, as tests/test_files.h
    writes them: label i % 10, a bright row at 2 x label."""
    labels = bytes(i % 10 for i in range(n))
    pixels = bytes(255 if p // 28 == labels[i] * 2 else (i + p) % 40 for i in range(n) for p in range(784))
    with gzip.open(os.path.join(folder, f"{prefix}-images-idx3-ubyte.gz"), "wb") as f:
        f.write(struct.pack(">IIII", 0x803, n, 28, 28) + pixels)
    with gzip.open(os.path.join(folder, f"{prefix}-labels-idx1-ubyte.gz"), "wb") as f:
        f.write(struct.pack(">II", 0x801, n) + labels)


class Sweep(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="cnnbench_sweep_")
        cls.out = os.path.join(cls.tmp.name, "smoke")
        cls.csv = os.path.join(cls.out, "sweep.csv")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def sweep(self, *args, sweep_file=SMOKE, out=None):
        return run(SWEEP, sweep_file, "--binary", BINARY, "--out", out or self.out, *args)

    def write(self, name, text):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:  # \udce9 writes byte 0xe9
            f.write(text)
        return path

    def test_1_dry_run_prints_commands_and_writes_nothing(self):
        rc, out, err = self.sweep("--dry-run")
        self.assertEqual(rc, 0, out + err)
        commands = [l for l in out.splitlines() if not l.startswith("#")]
        self.assertEqual(len(commands), 4, out)
        self.assertTrue(all(l.startswith("mpiexec ") and "--model=resnet20" in l for l in commands), out)
        self.assertEqual(sum("-np 1 " in l for l in commands), 2, out)  # fp32 and the failing fp16
        self.assertTrue(any("-np 2 " in l and "--allreduce=gloo" in l and "--baseline=" in l for l in commands), out)
        self.assertTrue(any("--precision=fp16" in l for l in commands), out)
        self.assertFalse(any("--allreduce" in l for l in commands if "-np 1 " in l), "1-rank points drop allreduce")
        self.assertFalse(os.path.exists(self.out), "--dry-run must write nothing")

    def test_2_run_records_ok_and_failed_points(self):
        t0 = time.monotonic()
        rc, out, err = self.sweep()
        self.assertEqual(rc, 1, "a failing point makes the exit code 1\n" + out + err)
        r = rows(self.csv)
        self.assertEqual(len(r), 4, out)
        ok = [x for x in r if x["status"] == "ok"]
        failed = [x for x in r if x["status"] == "failed"]
        self.assertEqual(len(ok), 3, out)
        self.assertEqual(len(failed), 1, out)
        self.assertEqual(failed[0]["precision"], "fp16")
        self.assertEqual(failed[0]["exit_code"], "2")
        self.assertIn("fp16", failed[0]["error"])
        for x in ok:
            self.assertGreater(float(x["images_per_sec"]), 0)
            self.assertTrue(os.path.exists(os.path.join(ROOT, x["json"])), x["json"])
            self.assertEqual(x["threads_per_rank"], "1")
        two = [x for x in ok if x["ranks"] == "2"]
        self.assertEqual(sorted(x["allreduce"] for x in two), ["gloo", "mpi"])
        self.assertTrue(all(x["global_batch"] == "16" and float(x["scaling_efficiency"]) > 0 for x in two), two)
        self.assertEqual(len(os.listdir(os.path.join(self.out, "logs"))), 4)
        print(f"sweep of 4 points: {time.monotonic() - t0:.1f} s")

    def test_3_resume_runs_nothing_again(self):
        logs = os.path.join(self.out, "logs")
        before = {f: os.stat(os.path.join(logs, f)).st_mtime_ns for f in os.listdir(logs)}
        rc, out, err = self.sweep()
        self.assertEqual(rc, 1, "the failed point still counts\n" + out + err)
        self.assertIn("0 to run, 3 done, 1 failed before", out)
        self.assertEqual(len(rows(self.csv)), 4)
        self.assertEqual(before, {f: os.stat(os.path.join(logs, f)).st_mtime_ns for f in os.listdir(logs)})
        rc, out, err = self.sweep("--dry-run")
        self.assertEqual(rc, 0)
        self.assertEqual(out.count(": skip ("), 4, out)

    def test_3b_another_sweeps_folder_is_refused_and_left_alone(self):
        with open(SMOKE) as f:
            other = self.write("sweep_other.toml", f.read().replace('name = "smoke"', 'name = "other"'))
        toml, csv_text = read(os.path.join(self.out, "sweep.toml")), read(self.csv)
        for args in ((), ("--dry-run",)):
            rc, out, err = self.sweep(*args, sweep_file=other)
            self.assertEqual(rc, 2, out + err)
            self.assertEqual(len(err.strip().splitlines()), 1, err)
            self.assertIn("holds sweep 'smoke'", err)
            self.assertIn("not 'other' of", err)
            self.assertIn("--fresh", err)
        self.assertEqual(read(os.path.join(self.out, "sweep.toml")), toml)
        self.assertEqual(read(self.csv), csv_text)

    def test_3c_a_csv_from_before_a_result_column_resumes_with_it_added(self):
        # a sweep.csv written before cnnbench reported sent_mib_per_step: the sweep resumes (it
        # was refused with "use --fresh"), the column added and empty in the rows written before
        with open(self.csv, newline="") as f:
            table = list(csv.reader(f))
        gone = table[0].index("sent_mib_per_step")
        old_rows = [r[:gone] + r[gone + 1:] for r in table]
        with open(self.csv, "w", newline="") as f:
            csv.writer(f, lineterminator="\n").writerows(old_rows)
        before = read(self.csv)
        rc, out, err = self.sweep("--dry-run")
        self.assertEqual(rc, 0, out + err)
        self.assertIn("would add the result column(s) sent_mib_per_step", err)
        self.assertEqual(read(self.csv), before, "a dry run changes nothing")
        rc, out, err = self.sweep()
        self.assertEqual(rc, 1, "the failed point still counts\n" + out + err)
        self.assertIn("added the result column(s) sent_mib_per_step of this cnnbench, empty for the 4 row(s)", err)
        self.assertIn("0 to run, 3 done, 1 failed before", out)
        with open(self.csv, newline="") as f:
            now = list(csv.reader(f))
        self.assertEqual(now[0], table[0])
        self.assertTrue(all(r[gone] == "" for r in now[1:]))
        self.assertEqual([r[:gone] + r[gone + 1:] for r in now], old_rows)

    def test_4_torn_last_line_is_dropped(self):
        with open(self.csv, "a") as f:
            f.write("0123456789ab,1,2,1,resnet")  # a kill mid-write
        rc, out, err = self.sweep()
        self.assertEqual(rc, 1, out + err)
        self.assertIn("incomplete last line", err)
        r = rows(self.csv)
        self.assertEqual(len(r), 4)
        self.assertTrue(all(x["status"] in ("ok", "failed") for x in r))

    def test_5_plot_draws_the_scaling_curve(self):
        png = os.path.join(self.tmp.name, "png")
        rc, out, err = run(PLOT, self.csv, "--out", png)
        self.assertEqual(rc, 0, out + err)
        with open(os.path.join(png, "scaling.png"), "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        self.assertIn("skipped fusion.png", out)
        self.assertIn("skipped precision.png", out)

    def test_6_retry_failed_reruns_only_the_failed_point(self):
        rc, out, err = self.sweep("--retry-failed")
        self.assertEqual(rc, 1, out + err)
        self.assertIn("1 to run", out)
        self.assertEqual(len(rows(self.csv)), 5)

    def test_7_timeout_ends_the_point_the_sweep_goes_on_and_fresh_keeps_the_old_csv(self):
        path = self.write("sweep_timeout.toml", """
[sweep]
timeout = 1
[launch]
command = "sh -c 'sleep 60' sh"
[grid]
ranks = [1, 2]
""")
        out = os.path.join(self.tmp.name, "timeout")
        t0 = time.monotonic()
        rc, so, se = self.sweep(sweep_file=path, out=out)
        self.assertLess(time.monotonic() - t0, 30)
        self.assertEqual(rc, 1, so + se)
        r = rows(os.path.join(out, "sweep.csv"))
        self.assertEqual([x["status"] for x in r], ["timeout", "timeout"], so)
        rc, so, se = self.sweep("--fresh", sweep_file=path, out=out)
        self.assertIn("moved the previous sweep's files to", so)
        previous = [f for f in os.listdir(out) if f.startswith("previous-")]
        self.assertEqual(len(previous), 1, os.listdir(out))
        self.assertEqual(len(rows(os.path.join(out, previous[0], "sweep.csv"))), 2)

    def fake_sweep(self, name, extra=""):
        """A sweep file of ranks 1 and 2 run by FAKE_LAUNCHER (failing while <tmp>/<name>.fail exists)."""
        fake = self.write(f"{name}_launcher.py", FAKE_LAUNCHER.replace("FAIL", repr(os.path.join(self.tmp.name, name + ".fail"))))
        return self.write(f"{name}.toml", f"""
[launch]
command = "{sys.executable} {fake} {{ranks}} {{hosts}}"
[fixed]
model = "resnet20"
[grid]
ranks = [1, 2]
{extra}""")

    def test_7c_fresh_moves_the_previous_sweep_whole_into_a_new_folder(self):
        path = self.fake_sweep("sweep_fresh")
        out = os.path.join(self.tmp.name, "fresh")
        rc, so, se = self.sweep(sweep_file=path, out=out)
        self.assertEqual(rc, 0, so + se)
        old_rows = rows(os.path.join(out, "sweep.csv"))
        old = {x["point"]: (read(resolve(x["json"])), read(resolve(x["log"]))) for x in old_rows}
        self.assertEqual(len(old), 2)
        asides = []
        for _ in range(2):  # twice in the same second: two folders, the first left as it was
            rc, so, se = self.sweep("--fresh", sweep_file=path, out=out)
            self.assertEqual(rc, 0, so + se)
            asides.append(os.path.join(out, so.split("moved the previous sweep's files to ")[1].split()[0].split(os.sep)[-1]))
        self.assertNotEqual(asides[0], asides[1])
        self.assertEqual(sorted(os.listdir(asides[0])), ["logs", "points", "runs", "sweep.csv", "sweep.toml"])
        moved = rows(os.path.join(asides[0], "sweep.csv"))
        self.assertEqual([x["point"] for x in moved], [x["point"] for x in old_rows])
        for x in moved:  # the moved CSV names the moved files, which hold the old runs
            for column, content in zip(("json", "log"), old[x["point"]]):
                self.assertTrue(resolve(x[column]).startswith(asides[0] + os.sep), x[column])
                self.assertEqual(read(resolve(x[column])), content)
        for x in rows(os.path.join(asides[0], "runs", "results.csv")):
            self.assertTrue(resolve(x["json_file"]).startswith(asides[0] + os.sep), x)
            self.assertEqual(json.loads(read(resolve(x["json_file"])))["context"]["time_utc"], x["time_utc"])
        self.assertEqual(read(os.path.join(asides[0], "sweep.toml")), read(path))
        for x in rows(os.path.join(out, "sweep.csv")):  # the new sweep's own runs
            self.assertNotEqual(read(resolve(x["json"])), old[x["point"]][0])

    def test_7d_a_rerun_leaves_one_row_of_the_point_in_runs_results_csv(self):
        path = self.fake_sweep("sweep_rerun")
        out = os.path.join(self.tmp.name, "rerun")
        flag = os.path.join(self.tmp.name, "sweep_rerun.fail")
        open(flag, "w").close()
        rc, so, se = self.sweep(sweep_file=path, out=out)
        self.assertEqual(rc, 1, so + se)
        self.assertEqual(len(rows(os.path.join(out, "runs", "results.csv"))), 2)  # the failed attempts' rows
        os.remove(flag)
        rc, so, se = self.sweep("--retry-failed", sweep_file=path, out=out)
        self.assertEqual(rc, 0, so + se)
        runs = rows(os.path.join(out, "runs", "results.csv"))
        self.assertEqual(len(runs), 2, runs)
        for x in runs:  # each the ok attempt's
            self.assertEqual(json.loads(read(resolve(x["json_file"])))["context"]["time_utc"], x["time_utc"])

    def test_7e_another_nameless_sweep_is_refused_an_extended_grid_is_not(self):
        path = self.fake_sweep("sweep_nameless")
        out = os.path.join(self.tmp.name, "nameless")
        rc, so, se = self.sweep(sweep_file=path, out=out)
        self.assertEqual(rc, 0, so + se)
        other = self.write("sweep_nameless_other.toml", read(path).replace('"resnet20"', '"trivial"'))
        toml = read(os.path.join(out, "sweep.toml"))
        rc, so, se = self.sweep(sweep_file=other, out=out)
        self.assertEqual(rc, 2, so + se)
        self.assertEqual(len(se.strip().splitlines()), 1, se)
        self.assertIn("differs from", se)
        self.assertIn("in [fixed]", se)
        self.assertEqual(read(os.path.join(out, "sweep.toml")), toml)
        more = self.write("sweep_nameless_more.toml", read(path).replace("ranks = [1, 2]", "ranks = [1, 2, 4]"))
        rc, so, se = self.sweep("--dry-run", sweep_file=more, out=out)
        self.assertEqual(rc, 0, so + se)
        self.assertIn("1 to run", so)

    def test_7f_a_point_whose_run_had_other_hosts_is_recorded_failed(self):
        # {hosts} reaches the launcher, which still runs both ranks here: cnnbench records hosts=1
        path = self.write("sweep_hosts.toml", """
[sweep]
timeout = 120
[launch]
command = "mpiexec {allow_root} --oversubscribe --bind-to none --mca btl self,vader -np {ranks} env HOSTS={hosts}"
[fixed]
model = "resnet20"
batch_size = 4
num_batches = 2
num_warmup_batches = 1
num_intra_threads = 1
[grid]
ranks = [2]
hosts = [2]
""")
        out = os.path.join(self.tmp.name, "hosts")
        rc, so, se = self.sweep(sweep_file=path, out=out)
        self.assertEqual(rc, 1, so + se)
        (x,) = rows(os.path.join(out, "sweep.csv"))
        self.assertEqual((x["status"], x["hosts"]), ("failed", "2"), x)
        self.assertIn("the run had hosts=1, the point hosts=2", x["error"])
        self.assertEqual(x["json"], "")

    def test_7g_plot_never_averages_different_configurations(self):
        sys.path.insert(0, os.path.join(ROOT, "scripts"))
        import plot
        import sweep

        def load(name, header, table):
            """plot.load of a sweep.csv with these columns and values (every other parameter blank)."""
            blank = [c for c in sweep.PARAM_COLUMNS if c not in header]
            path = self.write(name, "\n".join([",".join(["point", "status"] + header + blank)] +
                                               [",".join([f"p{i}", "ok"] + [str(v) for v in r] + [""] * len(blank))
                                                for i, r in enumerate(table)]) + "\n")
            params, ok, _ = plot.load(path)
            return ok, params
        # 2 ranks on 1 host and on 2 hosts, in two precisions: never one point of their mean
        ok, params = load("hosts.csv", ["ranks", "hosts", "precision", "images_per_sec"],
                          [(1, 1, "fp32", 100), (2, 1, "fp32", 190), (2, 2, "fp32", 120),
                           (1, 1, "bf16", 150), (2, 1, "bf16", 280), (2, 2, "bf16", 160)])
        _, panels, line_keys, _, _ = plot.scaling_panels([dict(r) for r in ok], params)
        drawn = {(pvals, lvals): {n: v[0] for n, v in pts.items()} for pvals, lines in panels for lvals, pts in lines}
        self.assertEqual(drawn, {(("fp32",), ("1",)): {1: 100, 2: 190}, (("fp32",), ("2",)): {1: 100, 2: 120},
                                 (("bf16",), ("1",)): {1: 150, 2: 280}, (("bf16",), ("2",)): {1: 150, 2: 160}})
        self.assertEqual(line_keys, ["hosts"])
        _, _, panels, _, _, _ = plot.precision_panels([dict(r) for r in ok], params)
        self.assertEqual(sorted(v[0] for _, cells, _ in panels for v in cells.values()), [100, 120, 150, 160, 190, 280])
        ok, params = load("fusion.csv", ["ranks", "hosts", "fusion_threshold_mb", "images_per_sec"],
                          [(2, 1, 0, 50), (2, 1, 16, 60), (2, 2, 0, 20), (2, 2, 16, 36)])
        _, _, panels, _, _ = plot.fusion_panels([dict(r) for r in ok], params)
        self.assertEqual(sorted(v[0] for _, lines in panels for _, pts in lines for v in pts.values()), [20, 36, 50, 60])
        # 1 rank x 64 and 2 ranks x 32 have one global batch: two lines, not their median
        ok, params = load("accuracy.csv", ["ranks", "hosts", "batch_size", "global_batch", "images_per_sec", "test_top1"],
                          [(1, 1, 64, 64, 10, 0.9), (2, 1, 32, 64, 10, 0.5), (1, 1, 32, 32, 10, 0.8)])
        _, line_keys, series = plot.accuracy_series([dict(r) for r in ok], params)
        self.assertIn("ranks", line_keys)
        self.assertTrue(all(len(at) == 1 for by_batch in series.values() for at in by_batch.values()), series)

    def test_7b_sigterm_ends_the_running_point_and_records_nothing(self):
        pidfile = os.path.join(self.tmp.name, "point.pid")
        path = self.write("sweep_term.toml", f"""
[sweep]
timeout = 120
[launch]
command = "sh -c 'echo $$ > {pidfile}; exec sleep 60' sh"
[grid]
ranks = [1]
""")
        out = os.path.join(self.tmp.name, "term")
        p = subprocess.Popen([sys.executable, SWEEP, path, "--binary", BINARY, "--out", out], cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for _ in range(300):
            if os.path.exists(pidfile) and open(pidfile).read().strip():
                break
            time.sleep(0.1)
        p.send_signal(signal.SIGTERM)
        so, _ = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 128 + signal.SIGTERM, so)
        self.assertIn("interrupted", so)
        pid = int(open(pidfile).read())

        def alive():  # a zombie has ended
            try:
                with open(f"/proc/{pid}/stat") as f:
                    return f.read().rsplit(") ", 1)[1][0] != "Z"
            except OSError:
                return False
        for _ in range(50):
            if not alive():
                break
            time.sleep(0.1)
        if alive():
            os.kill(pid, signal.SIGKILL)
            self.fail("the point's process outlived the sweep")
        self.assertEqual(rows(os.path.join(out, "sweep.csv")), [], "an interrupted point is not recorded")

    def test_9_convergence_sweep_records_accuracy_and_draws_it(self):
        data = os.path.join(self.tmp.name, "idx")
        os.makedirs(data)
        write_idx(data, "train", 640)
        write_idx(data, "t10k", 100)
        sweep_file = self.write("convergence.toml", f"""
[sweep]
name = "convergence"
timeout = 120
[fixed]
model = "small_cnn"
data_dir = "{data}"
batch_size = 32
num_intra_threads = 1
optimizer = "momentum"
init_learning_rate = 0.02
num_epochs = 2
eval_during_training_every_n_epochs = 1
target_top_1_accuracy = 0.3
[grid]
ranks = [1, 2]
""")
        out = os.path.join(self.tmp.name, "convergence")
        type(self).convergence = (sweep_file, out)  # test_9b adopts its points
        rc, text, err = self.sweep(sweep_file=sweep_file, out=out)
        self.assertEqual(rc, 0, text + err)
        self.assertIn("test top-1", text)
        r = rows(os.path.join(out, "sweep.csv"))
        self.assertEqual([x["ranks"] for x in r], ["1", "2"])
        for x in r:
            self.assertEqual(x["status"], "ok", x)
            self.assertEqual(x["epochs"], "2")
            self.assertEqual(x["target_top_1_accuracy"], "0.3")
            self.assertGreater(float(x["test_top1"]), 0.0)
            self.assertGreaterEqual(float(x["best_test_top1"]), float(x["test_top1"]))
            self.assertGreater(float(x["images_per_sec"]), 0.0)
            # reached: seconds and the images of whole epochs of 640; missed: all three empty
            if x["time_to_accuracy_sec"]:
                self.assertIn(int(x["images_to_accuracy"]), (640, 1280))
            else:
                self.assertEqual(x["images_to_accuracy"], "")
        # one rank learns this data set to 100% in one epoch (tests/test_files.h's pattern)
        self.assertGreater(float(r[0]["time_to_accuracy_sec"]), 0.0)
        self.assertEqual(r[0]["epochs_to_accuracy"], "1")
        self.assertEqual([x["global_batch"] for x in r], ["32", "64"])
        png = os.path.join(self.tmp.name, "convergence_png")
        rc, text, err = run(PLOT, os.path.join(out, "sweep.csv"), "--out", png)
        self.assertEqual(rc, 0, text + err)
        with open(os.path.join(png, "accuracy.png"), "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")

    def test_9b_adopt_takes_a_run_with_the_points_settings_and_refuses_any_other(self):
        sweep_file, done = self.convergence
        rc, text, err = self.sweep("--dry-run", sweep_file=sweep_file, out=os.path.join(self.tmp.name, "ids"))
        self.assertEqual(rc, 0, text + err)
        one, two = [line.split()[2] for line in text.splitlines() if line.startswith("# [")]
        ran = {x["ranks"]: x for x in rows(os.path.join(done, "sweep.csv"))}
        one_json = os.path.join(done, "points", one + ".json")
        out = os.path.join(self.tmp.name, "adopted")
        # refused before anything is written: another point's ranks, a setting that differs, no
        # such point, not a result
        with open(one_json) as f:
            doc = json.load(f)
        doc["config"]["init_learning_rate"] = "0.05"
        other_rate = self.write("other_rate.json", json.dumps(doc))
        for spec, message in ((f"{two}={one_json}", "the run had ranks=1, the point ranks=2"),
                              (f"{one}={other_rate}", "the run had init_learning_rate=0.05, the point init_learning_rate=0.02"),
                              (f"0123456789ab={one_json}", "this sweep has no point 0123456789ab"),
                              (f"{one}={sweep_file}", "convergence.toml"),
                              (one_json, "expected POINT=RESULT_JSON")):
            rc, text, err = self.sweep("--adopt", spec, sweep_file=sweep_file, out=out)
            self.assertEqual(rc, 2, spec + text + err)
            self.assertEqual(len(err.strip().splitlines()), 1, err)
            self.assertIn(message, err)
            self.assertFalse(os.path.exists(out))
        # taken: the 1-rank point is not run again, its row carries the adopted run's figures
        rc, text, err = self.sweep("--adopt", f"{one}={one_json}", sweep_file=sweep_file, out=out)
        self.assertEqual(rc, 0, text + err)
        self.assertIn(f"adopted {one} ranks=1", text)
        self.assertIn("1 to run, 1 done", text)
        r = {x["ranks"]: x for x in rows(os.path.join(out, "sweep.csv"))}
        self.assertEqual(r["1"]["status"], "ok")
        self.assertEqual(r["1"]["wall_sec"], "")  # not timed by this sweep
        for field in ("test_top1", "best_test_top1", "time_to_accuracy_sec", "images_per_sec"):
            self.assertEqual(r["1"][field], ran["1"][field], field)
        with open(one_json) as f:
            self.assertEqual(r["1"]["time_utc"], json.load(f)["context"]["time_utc"])  # when it ran
        self.assertEqual(r["2"]["status"], "ok")
        self.assertNotEqual(r["2"]["time_utc"], "")
        with open(os.path.join(out, "logs", one + ".log")) as f:
            self.assertTrue(f.readline().startswith("# adopted by sweep.py --adopt from"))
        # a point with an ok row is not adopted over
        rc, text, err = self.sweep("--adopt", f"{one}={one_json}", sweep_file=sweep_file, out=out)
        self.assertEqual(rc, 2, text + err)
        self.assertIn("already has an ok row", err)

    def test_8_bad_sweep_files_get_one_line_and_exit_2(self):
        cases = {
            "[grid]\nranks = 2\n": "grid.ranks must be a non-empty list",
            "[grid]\nbogus_flag = [1]\n": "no flag --bogus_flag",
            "[fixed]\nresult_json = 'x'\n": "set by sweep.py",
            # the default mpiexec would run both hosts' ranks here: rows claiming hosts=2
            "[grid]\nranks = [1, 2]\nhosts = [1, 2]\n": "launch.command has no {hosts} or {ranks_per_host}",
            "[launch]\ncommand = 'mpiexec -np {nodes}'\n": "unknown placeholder {nodes}",
            "[grid\n": "sweep_bad.toml",
            "[sweeps]\n": "unknown section 'sweeps'",
            "[grid]\nranks = [1]\n[[exclude]]\nmodel = 'x'\n": "exclude names 'model'",
            # found by tests/fuzz/fuzz_sweep_toml.py: a traceback (UnicodeDecodeError) before
            "[fixed]\nmodel = 'r\udce9'\n": "sweep_bad.toml: not UTF-8 text (byte 18 is 0xe9)",
            # counted before the points are built (a million took minutes and gigabytes)
            "[sweep]\nrepeat = 200000\n": "sweep.repeat must be a whole number from 1 to 1000",
            "[grid]\nbatch_size = [%s]\nnum_batches = [%s]\n" % (", ".join(str(i) for i in range(1, 1001)),
                                                              ", ".join(str(i) for i in range(1, 1001))):
                "make 1000000 runs, more than the 100000 a sweep holds",
        }
        for text, message in cases.items():
            path = self.write("sweep_bad.toml", text)
            rc, out, err = self.sweep(sweep_file=path, out=os.path.join(self.tmp.name, "bad"))
            self.assertEqual(rc, 2, text + out + err)
            self.assertEqual(len(err.strip().splitlines()), 1, err)
            self.assertIn(message, err)
            self.assertFalse(os.path.exists(os.path.join(self.tmp.name, "bad")))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=BINARY)
    args, rest = parser.parse_known_args()
    BINARY = os.path.abspath(args.binary)
    unittest.main(argv=[sys.argv[0], "-v"] + rest)
