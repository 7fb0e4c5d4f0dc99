#!/usr/bin/env python3
"""cnnbench_kernels_bench, briefly (batch 2, a few layers, 5 ms each): every distinct layer of
the three models is registered, each benchmark runs and reports its counters, its own flags are
checked, and scripts/kernels_table.py turns the JSON into a table. The figures themselves come
from a quiet machine (results/kernels/), not from here.
  tests/test_kernels_bench.py --binary build/cnnbench_kernels_bench"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = None


def bench(*args):
    return subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=600)


class KernelsBench(unittest.TestCase):
    def test_every_distinct_layer_is_registered(self):
        r = bench("--benchmark_list_tests", "--cnnbench_batch=1", "--cnnbench_dtypes=fp32")
        self.assertEqual(r.returncode, 0, r.stderr)
        names = [n for n in r.stdout.split() if n.endswith("/manual_time")]
        convs = {m: {n.split("/")[1] for n in names if n.startswith(m + "/conv_")} for m in ("resnet50", "vgg16", "resnet20")}
        # resnet50 v1.5: 23 distinct convolution shapes; vgg16: 9; CIFAR resnet20: 6
        self.assertEqual({m: len(c) for m, c in convs.items()}, {"resnet50": 23, "vgg16": 9, "resnet20": 6})
        self.assertIn("resnet50/conv_3x224x224_k7s2p3_to64/forward/onednn/fp32/manual_time", names)
        self.assertNotIn("resnet50/conv_3x224x224_k7s2p3_to64/backward_data/onednn/fp32/manual_time", names,
                         "the first layer has no data gradient")
        for layer in ("batch_norm_64x56x56_relu", "add_256x56x56_relu", "max_pool_64x112x112_k3s2p1",
                      "global_avg_pool_2048x7x7", "linear_2048_to1000"):
            self.assertIn(f"resnet50/{layer}/forward/onednn/fp32/manual_time", names)
        # VGG's convolutions carry their fused ReLU; its ReLUs after the linear layers stand alone
        self.assertIn("vgg16/conv_64x224x224_k3s1p1_to64_relu/forward/onednn/fp32/manual_time", names)
        self.assertNotIn("vgg16/relu_64x224x224/forward/onednn/fp32/manual_time", names)
        self.assertIn("vgg16/relu_4096x1x1/backward/onednn/fp32/manual_time", names)
        self.assertIn("resnet20/shortcut_16x32x32_s2_to32/forward/onednn/fp32/manual_time", names)

    def test_benchmarks_run_and_report_their_counters(self):
        out = os.path.join(tempfile.mkdtemp(prefix="kernels_bench_"), "k.json")
        r = bench("--cnnbench_models=resnet20", "--cnnbench_batch=2", "--cnnbench_dtypes=fp32",
                  "--benchmark_filter=conv_16x32x32_k3s1p1_to16/|batch_norm_16x32x32_relu/|add_16x32x32",
                  "--benchmark_min_time=0.005", f"--benchmark_out={out}", "--benchmark_out_format=json")
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            doc = json.load(f)
        self.assertIn("peak_gflops_fp32", doc["context"])
        self.assertIn("stream_triad_gbps", doc["context"])
        got = {b["name"].split("/")[1] + "/" + b["name"].split("/")[2]: b for b in doc["benchmarks"]}
        self.assertEqual(set(got), {"conv_16x32x32_k3s1p1_to16/forward", "conv_16x32x32_k3s1p1_to16/backward_data",
                                    "conv_16x32x32_k3s1p1_to16/backward_weights", "batch_norm_16x32x32_relu/forward",
                                    "batch_norm_16x32x32_relu/backward", "add_16x32x32_relu/forward",
                                    "add_16x32x32_relu/backward"})
        for name, b in got.items():
            self.assertFalse(b.get("error_occurred"), f"{name}: {b.get('error_message')}")
            self.assertGreater(b["real_time"], 0, name)
            self.assertGreater(b["GB/s"], 0, name)
            self.assertEqual(b["batch"], 2, name)
            if name.startswith("conv_"):
                # 2 x 2 images x 16 x 16 x 9 x 32 x 32 FLOP in real_time milliseconds
                flop = 2 * 2 * 16 * 16 * 9 * 32 * 32
                self.assertAlmostEqual(b["GFLOP/s"], flop / (b["real_time"] / 1e3) / 1e9, delta=0.02 * b["GFLOP/s"])
                # of the peak measured at start (no upper bound: a peak measured while another
                # process had the core comes out low, and the fraction above 1)
                peak = float(doc["context"]["peak_gflops_fp32"].split()[0])  # "234.4 (avx512, 2 threads)"
                self.assertAlmostEqual(b["peak_fraction"], b["GFLOP/s"] / peak, delta=0.02 * b["peak_fraction"])
            else:
                # of the STREAM triad measured at start (no upper bound either: a small layer's
                # bytes stay in cache, and a triad measured beside another test comes out low)
                triad = float(doc["context"]["stream_triad_gbps"].split()[0])  # "50.1 (2 threads)"
                self.assertGreater(b["bandwidth_fraction"], 0, name)
                self.assertAlmostEqual(b["bandwidth_fraction"], b["GB/s"] / triad, delta=0.02 * b["bandwidth_fraction"])
        table = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "kernels_table.py"), out],
                               capture_output=True, text=True)
        self.assertEqual(table.returncode, 0, table.stderr)
        self.assertIn("| resnet20 | conv_16x32x32_k3s1p1_to16 | backward_weights |", table.stdout)

    def test_bad_flags_get_one_line(self):
        for args, error in [(["--cnnbench_batch=0"], "--cnnbench_batch: not a positive number: '0'"),
                            (["--cnnbench_dtypes=fp64"], "--cnnbench_dtypes: unknown precision 'fp64'"),
                            (["--cnnbench_models=resnet9"], "resnet9")]:
            r = bench(*args, "--benchmark_list_tests")
            self.assertEqual(r.returncode, 2, args)
            self.assertTrue(r.stderr.startswith("cnnbench_kernels_bench: "), r.stderr)
            self.assertIn(error, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    args, rest = parser.parse_known_args()
    BINARY = args.binary
    unittest.main(argv=[sys.argv[0]] + rest)
