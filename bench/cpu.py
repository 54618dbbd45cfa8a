#!/usr/bin/env python3
"""cpu.py: the CPU time (user + system) of several commands, side by side,
to the microsecond, for start-up costs below bench/pair.py's 0.1 ms.

    cpu.py RUNS -- COMMAND_A... [-- COMMAND_B...]...

Runs each command once to warm the page cache, then RUNS rounds, each
running every command once (in turn forward and backward, so drift on a
shared machine hits them alike), each spawned directly with its output
thrown away.  The CPU time is the child's rusage from wait4, which the
kernel keeps in nanoseconds.  Prints, per command, the median and the
mean of the middle half in ms, then the command.  Any exit status is
accepted but must be the same on every run of a command.
"""

import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pair  # noqa: E402  (its run(): spawn, reap, wall and CPU time)


def run(argv):
    _, ms, status = pair.run(argv)
    return status, ms


def main(argv):
    if len(argv) < 4 or argv[2] != "--" or not argv[1].isdigit():
        sys.exit(__doc__)
    cmds, cur = [], []
    for a in argv[3:]:
        if a == "--":
            cmds.append(cur)
            cur = []
        else:
            cur.append(a)
    cmds.append(cur)
    if not all(cmds):
        sys.exit(__doc__)
    status = [run(c)[0] for c in cmds]
    times = [[] for _ in cmds]
    for r in range(int(argv[1])):
        order = range(len(cmds)) if r % 2 == 0 else reversed(range(len(cmds)))
        for i in order:
            st, ms = run(cmds[i])
            if st != status[i]:
                sys.exit("cpu.py: %s: exit status changed" % " ".join(cmds[i]))
            times[i].append(ms)
    for c, t in zip(cmds, times):
        mid = sorted(t)[len(t) // 4:len(t) - len(t) // 4]
        print("%.3f %.3f %s" % (statistics.median(t), statistics.mean(mid),
                                " ".join(c)))


if __name__ == "__main__":
    main(sys.argv)
