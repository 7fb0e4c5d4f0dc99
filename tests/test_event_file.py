#!/usr/bin/env python3
"""--summary_dir's TensorBoard event files, read back by scripts/read_events.py: its own TFRecord
framing and CRC-32C, Python's protobuf against proto/event.proto, nothing of the C++ writer. The
scalars must match the JSON result of the same run: every step's loss and images/sec on synthetic
data, every epoch's figures in a CIFAR-10 convergence run."""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import read_events  # noqa: E402

BINARY = None


def run(args, cwd):
    r = subprocess.run([BINARY, *args], cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"cnnbench {' '.join(args)} exited {r.returncode}:\n{r.stdout}{r.stderr}")
    return r.stdout


def scalars(events):
    out = {}
    for _, step, _, values in events:
        for tag, value in values:
            out.setdefault(tag, []).append((step, value))
    return out


def write_cifar10(folder, per_batch):
    """The published binary layout: records of a label byte and 3 x 32 x 32 pixel bytes."""
    os.makedirs(folder)
    names = [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]
    for n, name in enumerate(names):
        with open(os.path.join(folder, name), "wb") as f:
            for r in range(per_batch):
                label = (r + n) % 10
                f.write(bytes([label]) + bytes(((label * 25 + p % 7) % 256) for p in range(3072)))


class EventFiles(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.pb2 = read_events.event_module()

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="event_file_")

    def only_file(self, folder):
        files = glob.glob(os.path.join(folder, "events.out.tfevents.*"))
        self.assertEqual(len(files), 1, files)
        return files[0]

    def test_synthetic_steps_match_the_json(self):
        out = run(["--model=resnet20", "--batch_size=8", "--num_batches=6", "--num_warmup_batches=1",
                   "--display_every=4", "--save_summaries_steps=2", "--summary_dir=s", "--result_json=r.json",
                   "--benchmark_log_dir=."], self.dir)
        path = self.only_file(os.path.join(self.dir, "s"))
        self.assertIn(f"summaries       s/{os.path.basename(path)}", out)
        events = read_events.read_events(path, self.pb2)
        self.assertEqual(events[0][2], "brain.Event:2")  # the file-version event comes first
        tags = scalars(events)
        with open(os.path.join(self.dir, "r.json")) as f:
            steps = json.load(f)["steps"]
        self.assertEqual([s for s, _ in tags["loss"]], [2, 4, 6])  # every second step, 1-based
        for step, loss in tags["loss"]:
            self.assertAlmostEqual(loss, steps["loss"][step - 1], delta=1e-5 * max(1, abs(loss)))
        for step, speed in tags["images_per_sec"]:
            self.assertAlmostEqual(speed, 8 / steps["time_sec"][step - 1], delta=1e-3 * speed)
        self.assertEqual(len(tags["total_images_per_sec"]), 1)
        walls = [e[0] for e in events]
        self.assertEqual(walls, sorted(walls))
        # each step stamped with its own end, though steps 2 and 4 are written together at the
        # display point of step 4 (found by an audit: they shared the moment of writing, and
        # TensorBoard's time axes stacked them)
        loss_walls = {e[1]: e[0] for e in events if any(tag == "loss" for tag, _ in e[3])}
        between = steps["time_sec"][2] + steps["time_sec"][3]
        self.assertGreaterEqual(loss_walls[4] - loss_walls[2], 0.9 * between)
        self.assertLessEqual(loss_walls[4] - loss_walls[2], between + 0.5)

    def test_loss_scale_is_one_point_a_step(self):
        """Found by an audit: the final scale was written again at the last step, a second point there."""
        with open("/proc/cpuinfo") as f:
            if "avx512_bf16" not in f.read():
                self.skipTest("bf16 training needs AVX-512 BF16 on this CPU")
        run(["--model=resnet20", "--batch_size=8", "--num_batches=4", "--num_warmup_batches=1", "--precision=bf16",
             "--fp16_enable_auto_loss_scale", "--save_summaries_steps=1", "--summary_dir=s", "--benchmark_log_dir=."],
            self.dir)
        tags = scalars(read_events.read_events(self.only_file(os.path.join(self.dir, "s")), self.pb2))
        self.assertEqual([s for s, _ in tags["loss_scale"]], [1, 2, 3, 4])

    def test_steps_set_by_num_epochs_and_repeats_are_numbered_on(self):
        """--num_epochs on synthetic data sets the timed steps (not --num_batches): each repeat's
        steps follow the one before's, and the total lands at the last step (found by an audit:
        the second repeat was numbered from 100 on, the total at 200)."""
        out = run(["--model=resnet20", "--batch_size=64", "--num_epochs=0.005", "--num_warmup_batches=1",
                   "--repeats=2", "--save_summaries_steps=1", "--summary_dir=s", "--result_json=r.json",
                   "--benchmark_log_dir=."], self.dir)
        tags = scalars(read_events.read_events(self.only_file(os.path.join(self.dir, "s")), self.pb2))
        with open(os.path.join(self.dir, "r.json")) as f:
            timed = json.load(f)["run"]["timed_steps"]
        self.assertEqual(timed, 4, out)  # 0.005 x 50,000 images / 64, rounded up
        self.assertEqual([s for s, _ in tags["loss"]], list(range(1, 2 * timed + 1)))
        self.assertEqual([s for s, _ in tags["total_images_per_sec"]], [2 * timed])

    def test_convergence_epochs_match_the_json_and_verbosity_0_writes_nothing(self):
        write_cifar10(os.path.join(self.dir, "cifar"), 64)
        run(["--model=resnet20", "--data_dir=cifar", "--batch_size=32", "--num_epochs=2", "--summary_dir=s",
             "--result_json=c.json", "--benchmark_log_dir=."], self.dir)
        tags = scalars(read_events.read_events(self.only_file(os.path.join(self.dir, "s")), self.pb2))
        with open(os.path.join(self.dir, "c.json")) as f:
            epochs = json.load(f)["epochs"]
        self.assertEqual([s for s, _ in tags["loss"]], list(range(1, 21)))  # 320 images / 32: 10 steps an epoch
        self.assertEqual([s for s, _ in tags["epoch/train_loss"]], [10, 20])
        for (step, value), epoch in zip(tags["epoch/train_loss"], epochs):
            self.assertAlmostEqual(value, epoch["train_loss"], delta=1e-5 * max(1, abs(value)))
        self.assertEqual(len(tags["epoch/test_top1"]), 1)  # evaluated once, at the end
        self.assertAlmostEqual(tags["epoch/test_top1"][0][1], epochs[-1]["test_top1"], delta=1e-6)
        run(["--model=resnet20", "--data_dir=cifar", "--batch_size=32", "--num_epochs=1", "--summary_dir=quiet",
             "--summary_verbosity=0", "--result_json=q.json", "--benchmark_log_dir=."], self.dir)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "quiet")))

    def test_the_documented_tags_are_the_tags_written(self):
        """docs/output.md's TensorBoard section names every scalar tag the writers write, and no other."""
        written = set()
        for path in glob.glob(os.path.join(ROOT, "harness", "**", "*.cc"), recursive=True):
            with open(path) as f:
                written |= set(re.findall(r'scalar\("([^"]+)"', f.read()))
        with open(os.path.join(ROOT, "docs", "output.md")) as f:
            page = f.read()
        section = page.split("## TensorBoard", 1)[1].split("\n## ", 1)[0]
        documented = set(re.findall(r"`([a-z][a-z0-9_]*(?:/[a-z0-9_]+)?)`", section))
        self.assertGreater(len(written), 10)
        self.assertEqual(documented, written)

    def test_tensorboards_own_reader_reads_what_read_events_reads(self):
        """TensorBoard's EventAccumulator (tensorboard from PyPI, not a build dependency: run this
        file with a virtual environment's python that has it) sees every tag, step and value."""
        try:
            from tensorboard.backend.event_processing import event_accumulator
        except ImportError:
            self.skipTest("tensorboard is not installed here (a by-hand check: pip install tensorboard in a venv)")
        write_cifar10(os.path.join(self.dir, "cifar"), 64)
        run(["--model=resnet20", "--data_dir=cifar", "--batch_size=32", "--num_epochs=1", "--summary_dir=s",
             "--result_json=c.json", "--benchmark_log_dir=."], self.dir)
        run(["--model=resnet20", "--batch_size=8", "--num_batches=4", "--num_warmup_batches=1", "--summary_dir=t",
             "--result_json=r.json", "--benchmark_log_dir=."], self.dir)
        for folder in ("s", "t"):
            path = self.only_file(os.path.join(self.dir, folder))
            ours = scalars(read_events.read_events(path, self.pb2))
            acc = event_accumulator.EventAccumulator(path, size_guidance={event_accumulator.SCALARS: 0})
            acc.Reload()
            self.assertEqual(sorted(acc.Tags()["scalars"]), sorted(ours))
            for tag, points in ours.items():
                theirs = [(e.step, e.value) for e in acc.Scalars(tag)]
                self.assertEqual([s for s, _ in theirs], [s for s, _ in points], tag)
                for (_, a), (_, b) in zip(theirs, points):
                    self.assertAlmostEqual(a, b, delta=1e-6 * max(1, abs(b)), msg=tag)

    def test_runs_started_together_keep_a_file_each(self):
        """Three runs into one --summary_dir in the same second (a sweep's points): three files,
        each with one run's events, none appended to another's."""
        procs = [subprocess.Popen([BINARY, "--model=trivial", "--batch_size=2", "--num_batches=2",
                                   "--num_intra_threads=1", "--summary_dir=s", f"--result_json=r{i}.json",
                                   "--benchmark_log_dir=."], cwd=self.dir, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL) for i in range(3)]
        self.assertEqual([p.wait() for p in procs], [0, 0, 0])
        files = glob.glob(os.path.join(self.dir, "s", "events.out.tfevents.*"))
        self.assertEqual(len(files), 3, files)
        for path in files:
            events = read_events.read_events(path, self.pb2)
            self.assertEqual([e[2] for e in events].count("brain.Event:2"), 1, path)
            self.assertEqual(len(scalars(events)["total_images_per_sec"]), 1, path)

    def test_a_running_job_is_on_disk_within_2_seconds(self):
        """A step's scalars reach the file within about 2 s of being written, however long the
        next step takes: here step 2 takes over 5 s and every tag of step 1 is read well before it ends."""
        env = dict(os.environ, CNNBENCH_TEST_SLOW_STEP_MS="5000")
        proc = subprocess.Popen([BINARY, "--model=trivial", "--batch_size=2", "--num_batches=2",
                                 "--num_warmup_batches=0", "--display_every=1", "--save_summaries_steps=1",
                                 "--num_intra_threads=1", "--summary_dir=s", "--result_json=r.json",
                                 "--benchmark_log_dir=."], cwd=self.dir, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        wanted = {"loss", "learning_rate", "images_per_sec", "allreduce_exposed_sec"}
        seen_at = None
        import time
        while proc.poll() is None:
            for path in glob.glob(os.path.join(self.dir, "s", "events.out.tfevents.*")):
                try:
                    tags = scalars(read_events.read_events(path, self.pb2))
                except (Exception, SystemExit):  # a record being written: read again
                    continue
                if all(any(step == 1 for step, _ in tags.get(t, [])) for t in wanted):
                    seen_at = time.monotonic()
            if seen_at is not None:
                break
            time.sleep(0.1)
        self.assertIsNotNone(seen_at, "step 1's scalars were on disk only when the run ended")
        proc.wait()
        self.assertEqual(proc.returncode, 0)
        self.assertGreater(time.monotonic() - seen_at, 2.0, "step 1's scalars came within 2 s of the run's end")

    def test_a_damaged_record_is_named(self):
        run(["--model=trivial", "--num_batches=3", "--summary_dir=s", "--result_json=r.json",
             "--benchmark_log_dir=."], self.dir)
        path = self.only_file(os.path.join(self.dir, "s"))
        with open(path, "rb") as f:
            data = bytearray(f.read())
        first = 16 + int.from_bytes(data[0:8], "little")  # the second record starts here
        data[first + 14] ^= 0x40
        with open(path, "wb") as f:
            f.write(data)
        r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "read_events.py"), path],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stderr.strip(), f"read_events.py: {path}: record at byte {first}: the data's CRC does not match")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    args, rest = parser.parse_known_args()
    BINARY = os.path.abspath(args.binary)
    unittest.main(argv=[sys.argv[0], *rest])
