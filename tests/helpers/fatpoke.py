#!/usr/bin/env python3
"""fatpoke.py: follow, read and damage FAT chains and directory slots, for
the bats tests. Built on fatimg.py (the independent reader); shares no code
with fatkit, so tests can use it as a chain model and to make hostile
images.

    fatpoke.py COMMAND IMAGE[@@OFFSET] ARGS...

COMMAND is one of:
  chain CLUSTER     follow the chain from CLUSTER in the first FAT; print
                    `runs=A-B,C-D end=eoc` (runs=- for cluster 0); end is
                    eoc, free, bad, reserved, range or loop
  chains            the same for each cluster number read from stdin, one
                    line out per line in (one process for many chains)
  get CLUSTER       the entry of CLUSTER in the first FAT, in decimal
  set CLUSTER VAL   write VAL into entry CLUSTER of every FAT copy (VAL is
                    decimal or 0x hex; FAT12 keeps the neighbour's nibble)
  slot NAME11       byte offset in IMAGE (volume offset included) of the
                    first 32-byte directory slot, in the fixed root or the
                    data area, whose 11-byte short name is NAME11 (pad with
                    spaces: "README  TXT"); exit 1 when there is none
Exit 2 on a usage error or an image that is not FAT.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fatimg import Volume, die, le  # noqa: E402


def entry_off(vol, clus):
    """Byte offset of entry CLUS in one FAT copy."""
    if vol.type == "fat12":
        return clus * 3 // 2
    return clus * (2 if vol.type == "fat16" else 4)


def get_entry(vol, clus):
    fat_off = vol.rsvd * vol.bps
    if vol.type == "fat12":
        v = le(vol.read(fat_off + entry_off(vol, clus), 2), 0, 2)
        return v >> 4 if clus & 1 else v & 0xFFF
    if vol.type == "fat16":
        return le(vol.read(fat_off + clus * 2, 2), 0, 2)
    return le(vol.read(fat_off + clus * 4, 4), 0, 4) & 0x0FFFFFFF


def set_entry(vol, clus, val):
    path = sys.argv[2].partition("@@")[0]
    with open(path, "r+b") as f:
        for copy in range(vol.nfats):
            at = vol.base + (vol.rsvd + copy * vol.fat_secs) * vol.bps + \
                entry_off(vol, clus)
            f.seek(at)
            if vol.type == "fat12":
                old = int.from_bytes(f.read(2), "little")
                if clus & 1:
                    new = (old & 0x000F) | (val & 0xFFF) << 4
                else:
                    new = (old & 0xF000) | (val & 0xFFF)
                f.seek(at)
                f.write(new.to_bytes(2, "little"))
            elif vol.type == "fat16":
                f.write((val & 0xFFFF).to_bytes(2, "little"))
            else:
                old = int.from_bytes(f.read(4), "little")
                f.seek(at)
                new = (old & 0xF0000000) | (val & 0x0FFFFFFF)
                f.write(new.to_bytes(4, "little"))


def classify(vol, val):
    eoc, bad = {"fat12": (0xFF8, 0xFF7), "fat16": (0xFFF8, 0xFFF7),
                "fat32": (0x0FFFFFF8, 0x0FFFFFF7)}[vol.type]
    if val == 0:
        return "free"
    if val >= eoc:
        return "eoc"
    if val == bad:
        return "bad"
    if val == 1 or val > bad - 8:
        return "reserved"
    if val > vol.nclus + 1:
        return "range"
    return "next"


def chain(vol, start):
    if start == 0:
        return "runs=- end=eoc"
    if classify(vol, start) != "next":
        return "runs=- end=" + classify(vol, start)
    runs, seen, clus = [], set(), start
    while True:
        if clus in seen:
            end = "loop"
            break
        seen.add(clus)
        if runs and runs[-1][1] + 1 == clus:
            runs[-1][1] = clus
        else:
            runs.append([clus, clus])
        val = get_entry(vol, clus)
        end = classify(vol, val)
        if end != "next":
            break
        clus = val
    return "runs=%s end=%s" % (",".join("%d-%d" % (a, b) for a, b in runs),
                               end)


def find_slot(vol, name):
    raw = name.encode("latin-1")
    if len(raw) != 11:
        die("slot: NAME11 must be 11 bytes: %r" % name)
    root_start = (vol.rsvd + vol.nfats * vol.fat_secs) * vol.bps
    end = vol.tot_secs * vol.bps
    step = 1 << 20
    off = root_start
    while off < end:
        buf = vol.read(off, min(step, end - off))
        if not buf:
            break
        for i in range(0, len(buf) - 31, 32):
            if buf[i:i + 11] == raw and buf[i + 11] & 0x3F != 0x0F:
                return vol.base + off + i
        off += len(buf)
    return None


def main(argv):
    if len(argv) == 3 and argv[1] == "chains":
        vol = Volume(argv[2])
        for line in sys.stdin:
            print(chain(vol, int(line, 0)))
        return 0
    if len(argv) < 4:
        die("usage: fatpoke.py COMMAND IMAGE[@@OFFSET] ARGS...")
    cmd, vol = argv[1], Volume(argv[2])
    if cmd == "chain" and len(argv) == 4:
        print(chain(vol, int(argv[3], 0)))
    elif cmd == "get" and len(argv) == 4:
        print(get_entry(vol, int(argv[3], 0)))
    elif cmd == "set" and len(argv) == 5:
        set_entry(vol, int(argv[3], 0), int(argv[4], 0))
    elif cmd == "slot" and len(argv) == 4:
        at = find_slot(vol, argv[3])
        if at is None:
            print("fatpoke.py: no slot named %r" % argv[3], file=sys.stderr)
            return 1
        print(at)
    else:
        die("bad command or arguments: " + " ".join(argv[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
