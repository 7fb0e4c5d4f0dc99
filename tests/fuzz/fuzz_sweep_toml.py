#!/usr/bin/python3
"""Fuzzes the sweep-file loader of scripts/sweep.py: mutates the shipped sweep files
(configs/sweep_*.toml) N times, byte by byte and value by value, and runs each mutant through
sweep.py's main() with --dry-run (so nothing runs and nothing is written). Every mutant must be
accepted (exit 0) or refused with exit code 2 and one line "sweep.py: ..." on stderr; a
traceback, another exit code, more lines or a mutant taking over 10 s is a failure, saved with
its reason under --failures. A few mutants also go through the real command line, to check the
exit code the shell sees. Seeded: the same --seed gives the same mutants. Run by ctest:
  /usr/bin/python3 tests/fuzz/fuzz_sweep_toml.py --count 2000
"""
import argparse
import contextlib
import glob
import importlib
import io
import os
import random
import signal
import subprocess
import sys
import tempfile
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SWEEP = os.path.join(ROOT, "scripts", "sweep.py")
SEEDS = sorted(glob.glob(os.path.join(ROOT, "configs", "sweep_*.toml")))
SECONDS_EACH = 10

# Values a mutant may put where a value was: every TOML type, the edges of numbers, names that
# are not flags, placeholders that are not known.
VALUES = ["0", "-1", "1", "2", "3", "1.5", "-0.0", "1e400", "nan", "inf", "-inf", "9223372036854775807",
          "99999999999999999999", "true", "false", '""', '"x"', '"{ranks}"', '"{nope}"', '"{0}"', '"{"',
          '"mpiexec -np {ranks} \'"', '"é"', "[]", "[1, 2]", '["a", 1]', "[[1]]", "{}", '{ model = "resnet20" }',
          '[{ model = "resnet20" }, 3]', "[{}]", "1979-05-27", "07:32:00", '"""multi\nline"""', "'lit'",
          '"result_json"', '"ranks"']
KEYS = ["name", "output", "binary", "repeat", "timeout", "multi_rank_keys", "command", "ranks", "hosts", "model",
        "batch_size", "result_json", "Bad-Key", "x.y", '"quoted key"', "exclude", "grid", "fixed"]
LINES = ["[sweep]", "[launch]", "[env]", "[fixed]", "[grid]", "[[exclude]]", "[nope]", "[[grid]]", "[sweep.sub]",
         "sweep = 3", "grid = []", "exclude = 1", "[[exclude]]\nranks = 2"]


def load_sweep_module():
    """scripts/sweep.py as the module scripts.sweep (its siblings imported relatively)."""
    sys.path.insert(0, ROOT)
    return importlib.import_module("scripts.sweep")


def mutate(rng, text, seeds):
    """One to four edits of one kind or another."""
    data = bytearray(text.encode("utf-8", "surrogateescape"))
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(9)
        at = rng.randrange(len(data) + 1)
        if kind == 0 and data:  # flip a bit
            data[min(at, len(data) - 1)] ^= 1 << rng.randrange(8)
        elif kind == 1:  # insert a random byte
            data[at:at] = bytes([rng.randrange(256)])
        elif kind == 2 and data:  # delete a run
            del data[at:at + rng.randint(1, 16)]
        elif kind == 3 and data:  # duplicate a run
            start = rng.randrange(len(data))
            data[at:at] = data[start:start + rng.randint(1, 64)]
        elif kind == 4:  # splice in a piece of another seed
            other = rng.choice(seeds).encode()
            start = rng.randrange(len(other))
            data[at:at] = other[start:start + rng.randint(1, 200)]
        else:  # replace a value, a key or a whole line
            lines = data.decode("utf-8", "surrogateescape").split("\n")
            i = rng.randrange(len(lines))
            line = lines[i]
            if kind in (5, 6) and "=" in line:
                key, _, _ = line.partition("=")
                lines[i] = f"{key}= {rng.choice(VALUES)}"
            elif kind == 7 and "=" in line:
                _, _, value = line.partition("=")
                lines[i] = f"{rng.choice(KEYS)} ={value}"
            else:
                lines.insert(i, rng.choice(LINES + [f"{rng.choice(KEYS)} = {rng.choice(VALUES)}"]))
            data = bytearray("\n".join(lines).encode("utf-8", "surrogateescape"))
    return bytes(data)


class TooSlow(Exception):
    pass


def on_alarm(signum, frame):
    raise TooSlow()


def check_in_process(sweep, path, out):
    """(exit code, None) if sweep.py's main() accepted or refused the file properly, else
    (exit code, the reason)."""
    stdout, stderr = io.StringIO(), io.StringIO()
    signal.alarm(SECONDS_EACH)
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            code = sweep.main([path, "--dry-run", "--binary", "/nonexistent/cnnbench", "--out", out])
    except TooSlow:
        return None, f"took more than {SECONDS_EACH} s"
    except BaseException:  # SystemExit included: main() returns its exit code
        return None, "traceback:\n" + traceback.format_exc()
    finally:
        signal.alarm(0)
    message = stderr.getvalue()
    if code == 0:
        return code, None
    if code != 2:
        return code, f"exit code {code}, stderr {message!r}"
    if message.count("\n") != 1 or not message.startswith("sweep.py: "):
        return code, f"exit code 2 without one 'sweep.py: ' line: {message!r}"
    return code, None


def check_command_line(path, out):
    p = subprocess.run([sys.executable, SWEEP, path, "--dry-run", "--binary", "/nonexistent/cnnbench", "--out", out],
                       capture_output=True, text=True, errors="replace", timeout=60)
    if p.returncode == 0:
        return None
    if p.returncode != 2 or p.stderr.count("\n") != 1 or "Traceback" in p.stderr:
        return f"command line: exit code {p.returncode}, stderr {p.stderr!r}"
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=2000, help="mutants to try")
    parser.add_argument("--seed", type=int, default=1, help="random seed of the mutations")
    parser.add_argument("--command-line-every", type=int, default=250,
                        help="also run every Nth mutant through the real command line")
    parser.add_argument("--failures", help="folder for failing mutants (default: a temporary folder, named)")
    args = parser.parse_args()
    if not SEEDS:
        sys.exit("fuzz_sweep_toml.py: no configs/sweep_*.toml to start from")
    seeds = [open(p, encoding="utf-8").read() for p in SEEDS]
    sweep = load_sweep_module()
    signal.signal(signal.SIGALRM, on_alarm)
    rng = random.Random(args.seed)
    failures = []
    accepted = refused = 0
    with tempfile.TemporaryDirectory(prefix="cnnbench_fuzz_sweep_") as tmp:
        out = os.path.join(tmp, "out")  # --dry-run must never create it
        for n in range(args.count):
            mutant = mutate(rng, rng.choice(seeds), seeds)
            path = os.path.join(tmp, f"sweep_mutant{n % 7}.toml")
            with open(path, "wb") as f:
                f.write(mutant)
            code, why = check_in_process(sweep, path, out)
            if why is None and n % args.command_line_every == 0:
                why = check_command_line(path, out)
            if why is None and os.path.exists(out):
                why = "--dry-run wrote its output folder"
            if why is not None:
                failures.append((n, mutant, why))
                continue
            accepted += code == 0
            refused += code == 2
    print(f"fuzz_sweep_toml: {args.count} mutants of {len(seeds)} sweep files (seed {args.seed}): "
          f"{accepted} accepted, {refused} refused with one line, {len(failures)} failures")
    if failures:
        folder = args.failures or tempfile.mkdtemp(prefix="cnnbench_fuzz_sweep_failures_")
        os.makedirs(folder, exist_ok=True)
        for n, mutant, why in failures:
            with open(os.path.join(folder, f"mutant{n}.toml"), "wb") as f:
                f.write(mutant)
            with open(os.path.join(folder, f"mutant{n}.why"), "w") as f:
                f.write(why + "\n")
        n, _, why = failures[0]
        print(f"first failure (mutant {n}): {why}\nall {len(failures)} in {folder}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
