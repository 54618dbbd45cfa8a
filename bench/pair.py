#!/usr/bin/env python3
"""pair.py: time two commands side by side, for bench/fatcheck.sh.

    pair.py RUNS [--cold FILE] -- COMMAND_A... -- COMMAND_B...

Runs each command once to warm the page cache, then RUNS rounds, each
running both (A first in odd rounds, B first in even ones, so drift on a
shared machine hits both alike).  Each run is spawned directly (no shell)
and its wall time taken around spawn and reap.  Peak RSS comes from three
more runs of each under /usr/bin/time -f %M: a child spawned from Python
would inherit Python's high-water mark (exec keeps the old one).  Both
inherit this process's nice value.  Any exit status is accepted but must
be the same on every run of a command.

Prints one line: the median wall time in ms and the median peak RSS in KiB
of A, then of B, then the spread of the wall times (min-max) of each, then
the median CPU time (user + system, from wait4) in ms of each: on a busy
machine it moves less than wall time.

--cold FILE drops FILE's pages from the page cache (POSIX_FADV_DONTNEED)
before every timed run and skips the warm-up, so each run reads FILE from
the disk as a first look at a card or an image would.
"""

import os
import statistics
import sys
import tempfile
import time


def run(argv):
    t0 = time.perf_counter_ns()
    pid = os.posix_spawnp(argv[0], argv, os.environ,
                          file_actions=[(os.POSIX_SPAWN_OPEN, 1, os.devnull,
                                         os.O_WRONLY, 0),
                                        (os.POSIX_SPAWN_OPEN, 2, os.devnull,
                                         os.O_WRONLY, 0)])
    _, status, ru = os.wait4(pid, 0)
    t1 = time.perf_counter_ns()
    cpu = (ru.ru_utime + ru.ru_stime) * 1000
    return (t1 - t0) / 1e6, cpu, os.waitstatus_to_exitcode(status)


def peak_rss(argv):
    with tempfile.NamedTemporaryFile("r") as out:
        pid = os.posix_spawn("/usr/bin/time",
                             ["/usr/bin/time", "-f", "%M", "-o", out.name] +
                             argv, os.environ,
                             file_actions=[(os.POSIX_SPAWN_OPEN, 1,
                                            os.devnull, os.O_WRONLY, 0),
                                           (os.POSIX_SPAWN_OPEN, 2,
                                            os.devnull, os.O_WRONLY, 0)])
        os.waitpid(pid, 0)
        return int(out.read().split()[-1])


def drop_cache(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def main(argv):
    cold = None
    if len(argv) > 3 and argv[2] == "--cold":
        cold = argv[3]
        argv = argv[:2] + argv[4:]
    if len(argv) < 5 or argv[2] != "--" or "--" not in argv[3:]:
        print("usage: pair.py RUNS [--cold FILE] -- COMMAND_A... -- "
              "COMMAND_B...", file=sys.stderr)
        return 2
    runs = int(argv[1])
    cut = argv.index("--", 3)
    cmds = (argv[3:cut], argv[cut + 1:])
    times, cpus, codes = ([], []), ([], []), [set(), set()]
    if cold is None:
        for i in (0, 1):
            codes[i].add(run(cmds[i])[2])
    for r in range(runs):
        for i in ((0, 1) if r % 2 == 0 else (1, 0)):
            if cold is not None:
                drop_cache(cold)
            ms, cpu, code = run(cmds[i])
            times[i].append(ms)
            cpus[i].append(cpu)
            codes[i].add(code)
    rss = [[peak_rss(cmds[i]) for _ in range(3)] for i in (0, 1)]
    for i in (0, 1):
        if len(codes[i]) != 1:
            print("pair.py: %s: exit status varies: %s"
                  % (cmds[i][0], sorted(codes[i])), file=sys.stderr)
            return 1
    out = []
    for i in (0, 1):
        out += ["%.1f" % statistics.median(times[i]),
                "%d" % statistics.median(rss[i])]
    for i in (0, 1):
        out.append("%.1f-%.1f" % (min(times[i]), max(times[i])))
    for i in (0, 1):
        out.append("%.1f" % statistics.median(cpus[i]))
    print(" ".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
