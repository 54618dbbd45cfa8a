#!/usr/bin/env python3
"""crafted-names.py: a FAT32 root of N short names made to share the low
17 bits of fatcheck's name hash (FNV-1a over the upper-cased name, one
multiply per character), and fatcheck's time on it.

    bench/crafted-names.py [N] [FATCHECK]     (default 60000 build/fatcheck)

FNV's low k bits depend only on the low k bits of the state, so names that
agree there can be found by meeting in the middle: the first four
characters forward from the basis, the last four backward from a target.
A duplicate table that took its first place from those low bits probed
linearly through all of them (quadratic in N); fatcheck takes it from the
top bits of a multiplicative mix.  The image: mkfs.fat, then the root
chain and its entries written directly.  Prints N and the median of 5
wall times of `FATCHECK IMG` (exit 4: the entries have no clusters, but
that is not what is timed).
"""
import itertools
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time

BITS = 17
MASK = (1 << BITS) - 1
BASIS = 0xcbf29ce484222325 & MASK
PRIME = (0x100000001b3 * 0x100000001b3) & MASK  # one multiply per character
INVERSE = pow(PRIME, -1, 1 << BITS)
ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def names(n, target=12345):
    """n 8-character names whose hashes agree with target in the low bits."""
    ahead = {}
    for t in itertools.product(ALPHABET, repeat=4):
        h = BASIS
        for c in t:
            h = ((h ^ c) * PRIME) & MASK
        ahead.setdefault(h, []).append(bytes(t))
    out = []
    for t in itertools.product(ALPHABET, repeat=4):
        h = target
        for c in reversed(t):
            h = ((h * INVERSE) & MASK) ^ c
        for head in ahead.get(h, ()):
            out.append(head + bytes(t))
            if len(out) == n:
                return out
    return out


def image(path, ns):
    subprocess.run(["truncate", "-s", "300M", path], check=True)
    subprocess.run(["mkfs.fat", "-F", "32", "-s", "8", path], check=True,
                   stdout=subprocess.DEVNULL)
    with open(path, "r+b") as f:
        bs = f.read(512)
        sec, spc = struct.unpack_from("<H", bs, 11)[0], bs[13]
        rsv, nfats = struct.unpack_from("<H", bs, 14)[0], bs[16]
        fat_secs, root = struct.unpack_from("<II", bs, 36)[0], \
            struct.unpack_from("<I", bs, 44)[0]
        clus = sec * spc
        nclus = (len(ns) * 32 + clus - 1) // clus
        for k in range(nfats):
            fat = (rsv + k * fat_secs) * sec
            for i in range(nclus):
                f.seek(fat + 4 * (root + i))
                f.write(struct.pack("<I", root + i + 1 if i < nclus - 1
                                    else 0x0FFFFFFF))
        f.seek((rsv + nfats * fat_secs) * sec + (root - 2) * clus)
        f.write(b"".join(n + b"   \x20" + bytes(20) for n in ns))


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 60000
    fatcheck = sys.argv[2] if len(sys.argv) > 2 else "build/fatcheck"
    ns = names(n)
    with tempfile.TemporaryDirectory() as tmp:
        img = os.path.join(tmp, "names.img")
        image(img, ns)
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            subprocess.run([fatcheck, img], stdout=subprocess.DEVNULL)
            times.append(time.perf_counter() - t0)
    print("%d names: fatcheck %.3f s (median of 5)" % (len(ns),
                                                      statistics.median(times)))


if __name__ == "__main__":
    main()
