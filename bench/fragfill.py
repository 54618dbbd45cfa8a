#!/usr/bin/env python3
"""fragfill.py: fill a freshly made FAT32 image (mkfs.fat --invariant) to
a given share of its clusters with files whose chains interleave, so every
file is in many fragments.  For bench/fatcheck.sh and one test in
tests/fatcheck-edges.bats: writing the FAT and the directories directly
takes seconds where mcopy would write gigabytes, and the file data stays
a hole of the sparse image (no checker reads it).

    fragfill.py IMAGE NDIRS PER_DIR PERCENT GROUP

NDIRS directories "Frag NNN" in the root hold PER_DIR files "Piece
NNNNN.bin" each; the files of a directory take PERCENT of the free
clusters between them, GROUP files at a time round-robin (file k of a
group owns clusters base + k, base + k + GROUP, ...), so a file of n
clusters has n fragments when GROUP > 1.  Names, sizes, dates and the
layout follow from the arguments alone: the image is reproducible.
FSInfo gets the true free count and next-free hint, so fsck.fat -n finds
nothing to say.
"""

import struct
import sys

DATE = (2020 - 1980) << 9 | 1 << 5 | 1  # 2020-01-01
TIME = 12 << 11
EOC = 0x0FFFFFFF
LFN_AT = (1, 3, 5, 7, 9, 14, 16, 18, 20, 22, 24, 28, 30)


def die(msg):
    print("fragfill.py: " + msg, file=sys.stderr)
    sys.exit(2)


def le(buf, off, n):
    return int.from_bytes(buf[off:off + n], "little")


def checksum(raw):
    s = 0
    for b in raw:
        s = (((s & 1) << 7) + (s >> 1) + b) & 0xFF
    return s


def short_slot(raw, attr, clus, size):
    return struct.pack("<11sBBBHHHHHHHI", raw, attr, 0, 0, TIME, DATE, DATE,
                       clus >> 16, TIME, DATE, clus & 0xFFFF, size)


def lfn_slots(name, raw):
    """The long-name slots of @name (ASCII), last one first, as on disk."""
    units = [ord(c) for c in name] + [0]
    units += [0xFFFF] * (-len(units) % 13)
    n = len(units) // 13
    if len(name) % 13 == 0:  # no room for the NUL: not stored
        units, n = units[:len(name)], len(name) // 13
    out = []
    for i in range(n, 0, -1):
        slot = bytearray(32)
        slot[0] = i | (0x40 if i == n else 0)
        slot[11] = 0x0F
        slot[13] = checksum(raw)
        for j, at in enumerate(LFN_AT):
            struct.pack_into("<H", slot, at, units[(i - 1) * 13 + j])
        out.append(bytes(slot))
    return out


def entry(name, raw, attr, clus, size):
    return b"".join(lfn_slots(name, raw)) + short_slot(raw, attr, clus, size)


class Image:
    def __init__(self, path):
        self.f = open(path, "r+b")
        bs = self.f.read(512)
        self.bps = le(bs, 11, 2)
        self.spc = bs[13]
        self.rsvd = le(bs, 14, 2)
        self.nfats = bs[16]
        if le(bs, 17, 2) or le(bs, 22, 2):
            die("not FAT32")
        self.fat_secs = le(bs, 36, 4)
        self.root = le(bs, 44, 4)
        self.fsinfo = le(bs, 48, 2)
        tot = le(bs, 32, 4)
        self.data = self.rsvd + self.nfats * self.fat_secs
        self.nclus = (tot - self.data) // self.spc
        self.clus_len = self.bps * self.spc
        self.fat = [0] * (self.nclus + 2)

    def write_clus(self, clus, data):
        off = (self.data + (clus - 2) * self.spc) * self.bps
        self.f.seek(off)
        self.f.write(data)

    def link(self, chain):
        for a, b in zip(chain, chain[1:]):
            self.fat[a] = b
        self.fat[chain[-1]] = EOC

    def write_dir(self, chain, data):
        data += bytes(-len(data) % self.clus_len)
        if len(data) > len(chain) * self.clus_len:
            die("directory overflows its clusters")
        data += bytes(len(chain) * self.clus_len - len(data))
        for i, c in enumerate(chain):
            self.write_clus(c, data[i * self.clus_len:(i + 1) *
                                    self.clus_len])

    def finish(self):
        self.f.seek(self.rsvd * self.bps)
        head = bytes(self.f.read(8))
        raw = bytearray(struct.pack("<%dI" % len(self.fat), *self.fat))
        raw[0:8] = head  # FAT[0] and FAT[1] as mkfs.fat wrote them
        raw += bytes(self.fat_secs * self.bps - len(raw))
        for c in range(self.nfats):
            self.f.seek((self.rsvd + c * self.fat_secs) * self.bps)
            self.f.write(raw)
        free = self.fat[2:].count(0)
        nxt = next((c for c in range(2, self.nclus + 2) if not self.fat[c]),
                   0xFFFFFFFF)
        self.f.seek(self.fsinfo * self.bps + 488)
        self.f.write(struct.pack("<II", free, nxt))
        self.f.close()


def main(argv):
    if len(argv) != 6:
        die("usage: fragfill.py IMAGE NDIRS PER_DIR PERCENT GROUP")
    img = Image(argv[1])
    ndirs, per, pct, group = (int(a) for a in argv[2:])
    slots_per = 2 + per * 3  # ".", "..", then 2 long-name slots + 1
    dir_nclus = (slots_per * 32 + img.clus_len - 1) // img.clus_len
    root_nclus = (ndirs * 2 * 32 + img.clus_len - 1) // img.clus_len
    nxt = img.root + 1
    root_chain = [img.root] + list(range(nxt, nxt + root_nclus - 1))
    nxt += root_nclus - 1
    img.link(root_chain)
    dirs = []
    for d in range(ndirs):
        dirs.append(list(range(nxt, nxt + dir_nclus)))
        img.link(dirs[-1])
        nxt += dir_nclus
    free = img.nclus + 2 - nxt
    per_dir = free * pct // 100 // ndirs
    root = b""
    for d in range(ndirs):
        name = "Frag %03d" % d
        raw = b"FRAG%04d   " % d
        root += entry(name, raw, 0x10, dirs[d][0], 0)
        body = short_slot(b".          ", 0x10, dirs[d][0], 0)
        body += short_slot(b"..         ", 0x10, 0, 0)
        base = nxt + d * per_dir
        for g0 in range(0, per, group):
            members = list(range(g0, min(g0 + group, per)))
            span = per_dir * len(members) // per
            if g0 + group >= per:  # the last group takes the rest
                span = nxt + (d + 1) * per_dir - base
            each = span // len(members)
            for k, f in enumerate(members):
                chain = [base + k + i * len(members) for i in range(each)]
                size = each * img.clus_len - (f * 37 % img.clus_len)
                fname = "Piece %05d.bin" % f
                fraw = b"P%07dBIN" % f
                if chain:
                    img.link(chain)
                body += entry(fname, fraw, 0x20,
                              chain[0] if chain else 0, size if chain else 0)
            base += span
        img.write_dir(dirs[d], body)
    img.write_dir(root_chain, root)
    img.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
