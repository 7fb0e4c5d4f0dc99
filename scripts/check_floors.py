#!/usr/bin/env python3
"""Shows the house's two rules and fails where one is broken:

1. Floors: every #include runs down or sideways, never up. Bottom to top: models/ and proto/,
   kernels/, comm/, then harness/'s own floors cli/, data/, report/, compare/, run/ and last
   harness/main.cc; bench/ and tests/ stand on top and may include anything.
2. Size: no source file outside tests/ is over 450 lines.

Prints the include arrows between folders (how many #include lines run from one to the other),
then every file over the limit and every arrow up, naming the file and line.

    scripts/check_floors.py            # from anywhere; reads the files git knows (without git, the tree)
    scripts/check_floors.py --quiet    # only what is wrong
"""

import argparse
import collections
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_LINES = 450
# bottom first; a folder's floor is the floor of the longest prefix that names it
FLOORS = [
    ["models", "proto"],
    ["kernels"],
    ["comm"],
    ["harness/cli"],
    ["harness/data"],
    ["harness/report"],
    ["harness/compare"],
    ["harness/run"],
    ["harness"],  # main.cc
    ["bench", "tests"],
]
SOURCE = re.compile(r"\.(h|hpp|cc|cpp|cu|cuh|py|sh|cmake|proto)$|(^|/)CMakeLists\.txt$")
CODE = re.compile(r"\.(h|hpp|cc|cpp|cu|cuh)$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def folder_of(path):
    """The floor's folder a repository path belongs to, or None outside the house."""
    best = None
    for floor in FLOORS:
        for folder in floor:
            if (path == folder or path.startswith(folder + "/")) and (best is None or len(folder) > len(best)):
                best = folder
    return best


def floor_of(folder):
    return next(i for i, floor in enumerate(FLOORS) if folder in floor)


def tracked_files():
    """The files git knows; without git (or outside a clone), the tree less build folders."""
    try:
        out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], check=True, capture_output=True).stdout
        return [p for p in out.decode().split("\0") if p and os.path.isfile(os.path.join(ROOT, p))]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for top, dirs, names in os.walk(ROOT):
            dirs[:] = [d for d in dirs if not d.startswith((".", "build"))]
            files += [os.path.relpath(os.path.join(top, n), ROOT) for n in names]
        return files


def check(files):
    """(arrows {(from, to): count}, oversized [(path, lines)], upward [(path, line, included)])."""
    arrows, oversized, upward = collections.Counter(), [], []
    for path in files:
        if not SOURCE.search(path):
            continue
        with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
        if len(lines) > MAX_LINES and not path.startswith("tests/"):
            oversized.append((path, len(lines)))
        here = folder_of(path)
        if not CODE.search(path) or here is None:
            continue
        for number, line in enumerate(lines, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            there = folder_of(m.group(1))
            if there is None or there == here:  # a system or generated header, or the same folder
                continue
            arrows[(here, there)] += 1
            if floor_of(there) > floor_of(here):
                upward.append((path, number, m.group(1)))
    return arrows, oversized, upward


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quiet", action="store_true", help="print only what breaks a rule")
    args = parser.parse_args()
    arrows, oversized, upward = check(tracked_files())
    if not args.quiet:
        print("floors, bottom first: " + " < ".join("/".join(f) if len(f) > 1 else f[0] for f in FLOORS))
        print(f"\n{'from':<18}{'includes':<18}lines")
        for (a, b), n in sorted(arrows.items(), key=lambda kv: (-floor_of(kv[0][0]), kv[0])):
            print(f"{a:<18}{b:<18}{n}" + ("   UP" if floor_of(b) > floor_of(a) else ""))
        print()
    for path, n in oversized:
        print(f"{path}: {n} lines, over {MAX_LINES}")
    for path, number, included in upward:
        print(f"{path}:{number}: includes {included}, a floor up ({folder_of(path)} < {folder_of(included)})")
    if oversized or upward:
        print(f"check_floors: {len(oversized)} file(s) over {MAX_LINES} lines, {len(upward)} include(s) up a floor")
        return 1
    if not args.quiet:
        print(f"check_floors: no file outside tests/ over {MAX_LINES} lines, no include up a floor")
    return 0


if __name__ == "__main__":
    sys.exit(main())
