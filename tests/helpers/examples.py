#!/usr/bin/env python3
"""examples.py: run the commands of a man page's EXAMPLES section, or of
README.md's Usage section, as a user would paste them.

    examples.py list FILE     print the commands found, one per line
    examples.py run FILE      run each with bash in the current directory

Man pages: every .EX/.EE block of EXAMPLES.  In a block whose lines start
with a prompt ("$ " or "# "), those lines are commands (a trailing
backslash continues one) and the others are what the command printed; a
block without prompts is a script, each line a command.  A command whose
shown output is a line "PROG: ..." for its own program is expected to
fail with exactly that line on standard error; every other command must
exit 0 (a fatcheck repair: 0 or 1, fsck's "errors corrected").  README.md: the indented lines of the Usage section that start
with fatprealloc, fatls or fatcheck (synopsis lines with [OPTIONS] are
not commands).  Commands on block devices (/dev/...) are skipped.
Exit status 0 when every command behaved, 1 otherwise.
"""
import re
import subprocess
import sys

PROGS = ("fatprealloc", "fatls", "fatcheck")


def unroff(s):
    s = s.replace("\\(aq", "'").replace("\\(dq", '"').replace("\\-", "-")
    s = s.replace("\\&", "")
    s = re.sub(r"\\f[BIRP]", "", s)
    return s.replace("\\e", "\\")


def man_examples(text):
    m = re.search(r"^\.SH EXAMPLES\n(.*?)(?=^\.SH )", text, re.S | re.M)
    if not m:
        return []
    out = []
    for block in re.findall(r"^\.EX\n(.*?)^\.EE", m.group(1), re.S | re.M):
        lines = [unroff(l) for l in block.splitlines()]
        prompted = any(l.startswith(("$ ", "# ")) for l in lines)
        if not prompted:
            out.append(["set -e\n" + "\n".join(lines), []])
            continue
        cur = None
        for line in lines:
            if not line.startswith(("$ ", "# ")):
                if cur and cur[0].endswith("\\"):
                    cur[0] = cur[0][:-1] + line.strip()
                elif cur is not None:
                    cur[1].append(line)
                continue
            if cur:
                out.append(cur)
            cur = [line[2:], []]
        if cur:
            out.append(cur)
    cmds = []
    for cmd, shown in out:
        prog = cmd.split()[0]
        fail = None
        if prog in PROGS and shown and shown[0].startswith(prog + ": "):
            fail = shown[0]
        cmds.append((cmd, fail))
    return cmds


def readme_examples(text):
    m = re.search(r"^## Usage\n(.*?)(?=^## )", text, re.S | re.M)
    cmds = []
    for line in m.group(1).splitlines():
        if not line.startswith("    "):
            continue
        cmd = line.strip()
        if cmd.split()[0] in PROGS and "[OPTIONS]" not in cmd:
            cmds.append((cmd, None))
    return cmds


def main(argv):
    if len(argv) != 3 or argv[1] not in ("list", "run"):
        sys.exit(__doc__)
    text = open(argv[2], encoding="utf-8").read()
    cmds = (readme_examples(text) if argv[2].endswith(".md")
            else man_examples(text))
    bad = 0
    for cmd, fail in cmds:
        if argv[1] == "list":
            print(cmd)
            continue
        if "/dev/" in cmd:
            continue
        r = subprocess.run(["bash", "-c", "set -o pipefail\n" + cmd],
                           capture_output=True, text=True)
        err = r.stderr.rstrip("\n")
        # fsck's 1: errors were corrected, which a repair example may do
        ok = (0, 1) if re.match(r"fatcheck .*(-r\b|--repair)", cmd) else (0,)
        if fail is None and r.returncode not in ok:
            print("FAILED (exit %d): %s\n%s" % (r.returncode, cmd, err))
            bad = 1
        elif fail is not None and (r.returncode == 0 or err != fail):
            print("EXPECTED FAILURE DIFFERS: %s\n  shown:  %s\n  actual: "
                  "%s (exit %d)" % (cmd, fail, err, r.returncode))
            bad = 1
    return bad


if __name__ == "__main__":
    sys.exit(main(sys.argv))
