#!/usr/bin/env python3
"""fatimg.py: an independent reader of FAT boot sectors, FATs and FSInfo,
for the bats helpers in common.bash. It shares no code with fatkit, so the
tests can judge fatkit's results with it.

    fatimg.py COMMAND IMAGE[@@OFFSET]

COMMAND is one of:
  type         FAT type by cluster count (Microsoft spec): fat12|fat16|fat32
  geometry     key=value lines: bytes_per_sec, sec_per_clus, rsvd_secs, nfats,
               fat_secs, root_secs, tot_secs, data_start_sec, nclus, type,
               fsinfo_sec
  copies-equal exit 0 when every FAT copy equals the first, else 1 and say
               which copy differs where
  free         free clusters counted in the first FAT
  fsinfo-free  FSInfo free count (FAT32 only)
  fsinfo-next  FSInfo next-free hint (FAT32 only)

OFFSET is bytes, or a number with K, M or G (powers of 1024), as mtools'
IMAGE@@OFFSET. Exit 2 on a usage error or an image that is not FAT.
"""

import sys


def die(msg, code=2):
    print("fatimg.py: " + msg, file=sys.stderr)
    sys.exit(code)


def parse_offset(text):
    mult = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    unit = text[-1:].upper() if text[-1:].isalpha() else ""
    num = text[: len(text) - len(unit)]
    if not num.isdigit() or unit not in mult:
        die("bad offset: " + text)
    return int(num) * mult[unit]


def le(buf, off, n):
    return int.from_bytes(buf[off : off + n], "little")


class Volume:
    def __init__(self, arg):
        path, _, off = arg.partition("@@")
        self.base = parse_offset(off) if off else 0
        try:
            self.f = open(path, "rb")
        except OSError as e:
            die("%s: %s" % (path, e.strerror))
        bs = self.read(0, 512)
        if len(bs) < 512:
            die("%s: too short for a boot sector" % arg)
        self.bps = le(bs, 11, 2)
        self.spc = bs[13]
        self.rsvd = le(bs, 14, 2)
        self.nfats = bs[16]
        root_ents = le(bs, 17, 2)
        tot16 = le(bs, 19, 2)
        fatsz16 = le(bs, 22, 2)
        tot32 = le(bs, 32, 4)
        if self.bps not in (512, 1024, 2048, 4096) or self.spc == 0 or \
                self.spc & (self.spc - 1) or self.nfats == 0 or \
                self.rsvd == 0:
            die("%s: not a FAT boot sector" % arg)
        self.fat_secs = fatsz16 if fatsz16 else le(bs, 36, 4)
        self.tot_secs = tot16 if tot16 else tot32
        self.root_secs = (root_ents * 32 + self.bps - 1) // self.bps
        self.data_start = self.rsvd + self.nfats * self.fat_secs + \
            self.root_secs
        if self.fat_secs == 0 or self.tot_secs <= self.data_start:
            die("%s: impossible geometry" % arg)
        self.nclus = (self.tot_secs - self.data_start) // self.spc
        # Microsoft FAT spec: the type follows from the cluster count only.
        if self.nclus < 4085:
            self.type = "fat12"
        elif self.nclus < 65525:
            self.type = "fat16"
        else:
            self.type = "fat32"
        self.fsinfo_sec = le(bs, 48, 2) if self.type == "fat32" else 0

    def read(self, off, n):
        self.f.seek(self.base + off)
        return self.f.read(n)

    def fat(self, copy):
        n = self.fat_secs * self.bps
        buf = self.read((self.rsvd + copy * self.fat_secs) * self.bps, n)
        if len(buf) != n:
            die("FAT copy %d is cut short by the end of the image" % copy)
        return buf

    def entries(self, fat):
        """Entries 2 .. nclus+1 of one FAT copy, as integers."""
        last = self.nclus + 2
        if self.type == "fat12":
            for c in range(2, last):
                v = le(fat, c * 3 // 2, 2)
                yield v >> 4 if c & 1 else v & 0xFFF
        elif self.type == "fat16":
            for c in range(2, last):
                yield le(fat, c * 2, 2)
        else:
            for c in range(2, last):
                yield le(fat, c * 4, 4) & 0x0FFFFFFF

    def fsinfo(self, field):
        if self.type != "fat32":
            die("not FAT32: no FSInfo sector")
        sec = self.read(self.fsinfo_sec * self.bps, 512)
        if le(sec, 0, 4) != 0x41615252 or le(sec, 484, 4) != 0x61417272:
            die("FSInfo sector %d has bad signatures" % self.fsinfo_sec, 1)
        return le(sec, field, 4)


def main(argv):
    if len(argv) != 3:
        die("usage: fatimg.py COMMAND IMAGE[@@OFFSET]")
    cmd, vol = argv[1], Volume(argv[2])
    if cmd == "type":
        print(vol.type)
    elif cmd == "geometry":
        for k, v in (("bytes_per_sec", vol.bps), ("sec_per_clus", vol.spc),
                     ("rsvd_secs", vol.rsvd), ("nfats", vol.nfats),
                     ("fat_secs", vol.fat_secs),
                     ("root_secs", vol.root_secs),
                     ("tot_secs", vol.tot_secs),
                     ("data_start_sec", vol.data_start),
                     ("nclus", vol.nclus), ("type", vol.type),
                     ("fsinfo_sec", vol.fsinfo_sec)):
            print("%s=%s" % (k, v))
    elif cmd == "copies-equal":
        first = vol.fat(0)
        for i in range(1, vol.nfats):
            other = vol.fat(i)
            if other != first:
                at = next(j for j in range(len(first))
                          if first[j] != other[j])
                print("FAT copy %d differs from copy 0 at byte %d of %d "
                      "(0x%02x, copy 0 has 0x%02x)"
                      % (i, at, len(first), other[at], first[at]),
                      file=sys.stderr)
                return 1
    elif cmd == "free":
        print(sum(1 for e in vol.entries(vol.fat(0)) if e == 0))
    elif cmd == "fsinfo-free":
        print(vol.fsinfo(488))
    elif cmd == "fsinfo-next":
        print(vol.fsinfo(492))
    else:
        die("unknown command: " + cmd)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
