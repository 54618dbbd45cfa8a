#!/usr/bin/env python3
"""Line coverage per file of src/ from a gcov-instrumented build.

usage: coverage.py BUILD_DIR [MIN_PERCENT] [--functions N] [--uncovered]

Reads BUILD_DIR/*.gcno and *.gcda through `gcov --json-format --stdout` (gcc 9 or
later), so nothing but gcc and python3 is needed.  Prints a table of lines
executed per src/*/*.c file, then for each core module (every one except
the three programs) the functions never called and the N functions with the
most lines not executed.  With MIN_PERCENT, ends with the core modules below
it; the exit status stays 0 either way (a report, not a gate), unless
COVERAGE_STRICT=1 is in the environment.  --uncovered also lists every
line number not executed, per core module.
"""
import glob
import json
import os
import signal
import subprocess
import sys

PROGRAMS = {"fatls.c", "fatprealloc.c", "fatcheck.c"}


def gcov_json(gcda):
    """The gcov JSON documents for one object (no .gcda: all zero)."""
    out = subprocess.run(
        ["gcov", "--json-format", "--stdout", gcda],
        check=True, capture_output=True, text=True,
        cwd=os.path.dirname(gcda) or ".").stdout
    # One JSON document per line for each .gcda given.
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def collect(build):
    """{src basename: (lines {lineno: count}, functions [...], path)}."""
    result = {}
    for gcda in sorted(glob.glob(os.path.join(build, "*.gcno"))):
        stem = os.path.splitext(os.path.basename(gcda))[0]
        want = stem + ".c"
        for doc in gcov_json(os.path.abspath(gcda)):
            for f in doc.get("files", []):
                if os.path.basename(f["file"]) != want:
                    continue  # inline helpers from headers
                lines = {}
                for ln in f["lines"]:
                    n = ln["line_number"]
                    lines[n] = lines.get(n, 0) + ln["count"]
                path = f["file"]  # as compiled: src/ROOM/NAME.c
                path = path[path.rfind("src/"):] if "src/" in path else path
                result[want] = (lines, f.get("functions", []), path)
    return result


def func_lines(lines, fn):
    rng = range(fn["start_line"], fn["end_line"] + 1)
    total = [n for n in rng if n in lines]
    missed = [n for n in total if lines[n] == 0]
    return total, missed


def ranges(nums):
    """[3,4,5,9] -> '3-5,9'."""
    out, start, prev = [], None, None
    for n in nums:
        if start is None:
            start = prev = n
        elif n == prev + 1:
            prev = n
        else:
            out.append(f"{start}-{prev}" if prev != start else f"{start}")
            start = prev = n
    if start is not None:
        out.append(f"{start}-{prev}" if prev != start else f"{start}")
    return ",".join(out)


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    nfunc = 5
    show_lines = "--uncovered" in argv
    for i, a in enumerate(argv):
        if a == "--functions" and i + 1 < len(argv):
            nfunc = int(argv[i + 1])
            args.remove(argv[i + 1])
    if not args:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    build = args[0]
    minimum = float(args[1]) if len(args) > 1 else None
    data = collect(build) if glob.glob(os.path.join(build, "*.gcda")) else {}
    if not data:
        print(f"coverage: no .gcda files in {build}; run the tests first",
              file=sys.stderr)
        return 1

    print(f"{'file':<28} {'lines':>6} {'exec':>6} {'cover':>7}")
    tot_n = tot_x = 0
    pct = {}
    for name in sorted(data):
        lines, _, path = data[name]
        n = len(lines)
        x = sum(1 for c in lines.values() if c > 0)
        pct[name] = 100.0 * x / n if n else 100.0
        tot_n += n
        tot_x += x
        mark = "" if name not in PROGRAMS else "  (program)"
        print(f"{path:<28} {n:>6} {x:>6} {pct[name]:>6.1f}%{mark}")
    print(f"{'total':<28} {tot_n:>6} {tot_x:>6} "
          f"{100.0 * tot_x / tot_n if tot_n else 100:>6.1f}%")

    core = [n for n in sorted(data) if n not in PROGRAMS]
    print("\nuncovered functions of the core modules "
          "(never called; then most lines not executed):")
    for name in core:
        lines, funcs, path = data[name]
        never = sorted(fn["name"] for fn in funcs
                       if fn["execution_count"] == 0)
        partial = []
        for fn in funcs:
            if fn["execution_count"] == 0:
                continue
            total, missed = func_lines(lines, fn)
            if missed:
                partial.append((len(missed), len(total), fn["name"]))
        partial.sort(key=lambda t: (-t[0], t[2]))
        if not never and not partial:
            continue
        print(f"  {path}:")
        if never:
            print(f"    never called: {', '.join(never)}")
        for m, t, fname in partial[:nfunc]:
            print(f"    {fname}: {m} of {t} lines not executed")
        if show_lines:
            missed = sorted(n for n, c in lines.items() if c == 0)
            print(f"    lines: {ranges(missed)}")

    status = 0
    if minimum is not None:
        low = [n for n in core if pct[n] < minimum]
        if low:
            print(f"\ncore modules under {minimum:g}%: " +
                  ", ".join(f"{n} ({pct[n]:.1f}%)" for n in low))
            if os.environ.get("COVERAGE_STRICT") == "1":
                status = 1
        else:
            print(f"\nevery core module is at {minimum:g}% or more")
    return status


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends quietly
    sys.exit(main(sys.argv))
