#!/usr/bin/env python3
"""scripts/plot_timeline.py on the committed resnet50 2-rank trace (results/timeline/) and on
files that are not traces: a PNG of one row per rank and track over the asked window, or one
line saying what is wrong and a non-zero exit."""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "plot_timeline.py")
TRACE = os.path.join(ROOT, "results", "timeline", "resnet50_2ranks.json")


def plot(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


class PlotTimeline(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="plot_timeline_")

    def test_draws_a_row_per_rank_and_track_over_the_asked_steps(self):
        out = os.path.join(self.dir, "t.png")
        r = plot(TRACE, "--first_step", "2", "--steps", "1", "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("6 rows", r.stdout)  # 2 ranks x compute, communication, update
        with open(out, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        one = float(r.stdout.split(", ")[1].split(" ms")[0])
        r = plot(TRACE, "--first_step", "1", "--steps", "3", "-o", out)
        three = float(r.stdout.split(", ")[1].split(" ms")[0])
        self.assertGreater(three, 2.5 * one, "three steps span about three times one")
        r = plot(TRACE, "--from_ms", "100", "--to_ms", "350", "-o", out)
        self.assertIn("250.0 ms", r.stdout)

    def test_a_file_that_is_not_a_trace_gets_one_line(self):
        for name, text in [("empty.json", ""), ("list.json", "[1, 2]"), ("none.json", '{"traceEvents": []}')]:
            path = os.path.join(self.dir, name)
            with open(path, "w") as f:
                f.write(text)
            r = plot(path, "-o", os.path.join(self.dir, "x.png"))
            self.assertNotEqual(r.returncode, 0, name)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertTrue(r.stderr.startswith("plot_timeline.py: " + path), r.stderr)
            self.assertFalse(os.path.exists(os.path.join(self.dir, "x.png")))


if __name__ == "__main__":
    unittest.main()
