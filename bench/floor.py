#!/usr/bin/env python3
"""floor.py: the bytes a job must read from a FAT32 or exFAT image, and what
they cost on a card that charges a latency per request and a bandwidth,
when each contiguous run is read in one request.  For bench/coldcard.sh.

    floor.py JOB IMAGE LATENCY_US MBPS [BYTES NEWDIRS]

Prints "BYTES RUNS MS".  What each job needs (the floor), by JOB:

  ls       fatls -R: the boot sector; every directory's sectors up to the
           one holding its end-of-directory marker (or its whole chain);
           the FAT sectors holding the links of every FAT-chained
           directory.
  check    fatcheck: FAT32: the boot sector, FSInfo and the backup boot
           sector; every FAT copy once; the directories as for ls.
           exFAT: the main and backup boot regions; the FAT sectors of
           every FAT-chained stream (a contiguous NoFatChain file has no
           chain to read); the allocation bitmap; the up-case table; the
           directories as for ls.
  prealloc fatprealloc of BYTES in all, on a path whose NEWDIRS missing
           directories it creates, under the root: the boot sector (FAT32:
           and FSInfo; exFAT: the boot region whose checksum a writer
           checks, and the up-case table names are hashed with); the root
           directory as for ls; the span of the FAT (FAT32) or the
           allocation bitmap (exFAT) searched from the FSInfo next-free
           hint (exFAT: the start of the heap) until it has found as many
           free clusters as the job takes.

Runs are merged where extents touch; sectors are the volume's.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests",
                                "helpers"))
import exfatref  # noqa: E402


def le(buf, off, n):
    return int.from_bytes(buf[off:off + n], "little")


class Extents:
    def __init__(self):
        self.ext = []

    def add(self, off, n):
        if n > 0:
            self.ext.append((off, off + n))

    def runs(self):
        out = []
        for a, b in sorted(self.ext):
            if out and a <= out[-1][1]:
                out[-1][1] = max(out[-1][1], b)
            else:
                out.append([a, b])
        return out


def clusters_runs(clusters):
    """[(first, count)] of consecutive clusters."""
    out = []
    for c in clusters:
        if out and c == out[-1][0] + out[-1][1]:
            out[-1][1] += 1
        else:
            out.append([c, 1])
    return out


class Fat32:
    def __init__(self, path):
        self.f = open(path, "rb")
        bs = self.read(0, 512)
        self.bps = le(bs, 11, 2)
        self.spc = bs[13]
        self.rsvd = le(bs, 14, 2)
        self.nfats = bs[16]
        self.fat_secs = le(bs, 36, 4)
        self.root = le(bs, 44, 4)
        self.fsinfo_sec = le(bs, 48, 2)
        self.backup_sec = le(bs, 50, 2)
        tot = le(bs, 32, 4)
        self.data = self.rsvd + self.nfats * self.fat_secs
        self.nclus = (tot - self.data) // self.spc
        self.csize = self.bps * self.spc
        self.fat = self.read(self.rsvd * self.bps, (self.nclus + 2) * 4)

    def read(self, off, n):
        self.f.seek(off)
        return self.f.read(n)

    def next(self, c):
        return le(self.fat, c * 4, 4) & 0x0FFFFFFF

    def chain(self, c):
        out = []
        while 2 <= c < self.nclus + 2 and len(out) <= self.nclus:
            out.append(c)
            c = self.next(c)
        return out

    def coff(self, c):
        return (self.data + (c - 2) * self.spc) * self.bps

    def fat_sectors(self, ext, clusters):
        for s in sorted({c * 4 // self.bps for c in clusters}):
            ext.add((self.rsvd + s) * self.bps, self.bps)

    def dir_used(self, ext, clusters):
        """Add the directory's sectors up to its end marker; yield its
        subdirectories' first clusters."""
        subs = []
        for c in clusters:
            data = self.read(self.coff(c), self.csize)
            for i in range(0, self.csize, 32):
                e = data[i:i + 32]
                if e[0] == 0:
                    end = (i // self.bps + 1) * self.bps
                    ext.add(self.coff(c), end)
                    return subs
                if e[0] == 0xE5 or e[11] == 0x0F or not e[11] & 0x10:
                    continue
                if e[0:2] == b". " or e[0:2] == b"..":
                    continue
                subs.append(le(e, 20, 2) << 16 | le(e, 26, 2))
            ext.add(self.coff(c), self.csize)
        return subs

    def dirs(self, ext, chains):
        todo = [self.root]
        while todo:
            clusters = self.chain(todo.pop())
            chains.extend(clusters)
            todo.extend(self.dir_used(ext, clusters))

    def job(self, job, nbytes, newdirs):
        ext = Extents()
        chains = []
        ext.add(0, self.bps)
        if job == "ls":
            self.dirs(ext, chains)
            self.fat_sectors(ext, chains)
        elif job == "check":
            ext.add(self.fsinfo_sec * self.bps, self.bps)
            ext.add(self.backup_sec * self.bps, self.bps)
            ext.add(self.rsvd * self.bps,
                    self.nfats * self.fat_secs * self.bps)
            self.dirs(ext, chains)
        else:
            ext.add(self.fsinfo_sec * self.bps, self.bps)
            root = self.chain(self.root)
            self.dir_used(ext, root)
            self.fat_sectors(ext, root)
            fsinfo = self.read(self.fsinfo_sec * self.bps, 512)
            hint = le(fsinfo, 492, 4)
            if not 2 <= hint < self.nclus + 2:
                hint = 2
            need = -(-nbytes // self.csize) + newdirs
            c, found = hint, 0
            while found < need and c < self.nclus + 2:
                found += self.next(c) == 0
                c += 1
            self.fat_sectors(ext, range(hint, c))
        return ext.runs()


class ExFat:
    def __init__(self, path):
        self.v = exfatref.Volume(path)

    def fat_sectors(self, ext, clusters):
        v = self.v
        base = (v.fat_offset + v.active * v.fat_length) * v.bps
        for s in sorted({c * 4 // v.bps for c in clusters}):
            ext.add(base + s * v.bps, v.bps)

    def stream_runs(self, ext, clusters, used):
        """Add the first @used bytes of @clusters."""
        v = self.v
        for first, n in clusters_runs(clusters):
            take = min(used, n * v.csize)
            ext.add(v.cluster_off(first), take)
            used -= take
            if not used:
                break

    def used_len(self, d):
        """Bytes of @d up to the sector holding its end marker."""
        for i in range(0, len(d.data), 32):
            if d.data[i] == 0:
                return (i // self.v.bps + 1) * self.v.bps
        return len(d.data)

    def dirs(self, ext, chains):
        v = self.v
        todo = [v.root_dir()]
        chains.extend(todo[0].clusters)
        while todo:
            d = todo.pop()
            self.stream_runs(ext, d.clusters, self.used_len(d))
            for e in d.sets().values():
                if not e.nofatchain:
                    chains.extend(v.clusters_of(e.first, e.dl, False)[0])
                if e.is_dir:
                    todo.append(v.open_dir(e))

    def special_stream(self, ext, entry):
        v = self.v
        first, dl = le(entry, 20, 4), le(entry, 24, 8)
        self.stream_runs(ext, v.chain(first)[0], dl)

    def job(self, job, nbytes, newdirs):
        v = self.v
        ext = Extents()
        chains = []
        if job == "ls":
            ext.add(0, v.bps)
            self.dirs(ext, chains)
            dirs = [c for c in chains]
            self.fat_sectors(ext, dirs)
        elif job == "check":
            ext.add(0, 24 * v.bps)
            self.dirs(ext, chains)
            self.fat_sectors(ext, chains)
            self.special_stream(ext, v.bitmap_entry()[1])
            self.special_stream(ext, v.upcase_entry()[1])
        else:
            ext.add(0, 12 * v.bps)
            root = v.root_dir()
            self.stream_runs(ext, root.clusters, self.used_len(root))
            self.fat_sectors(ext, root.clusters)
            self.special_stream(ext, v.upcase_entry()[1])
            need = -(-nbytes // v.csize) + newdirs
            c, found = 2, 0
            while found < need and c < v.nclus + 2:
                found += not v.bit(c)
                c += 1
            bm = v.bitmap_entry()[1]
            start = v.cluster_off(le(bm, 20, 4))
            first = (2 - 2) // 8 // v.bps * v.bps
            last = ((c - 2 + 7) // 8 + v.bps - 1) // v.bps * v.bps
            ext.add(start + first, last - first)
        return ext.runs()


def main(argv):
    if len(argv) not in (5, 7) or argv[1] not in ("ls", "check", "prealloc"):
        sys.exit(__doc__)
    job, path = argv[1], argv[2]
    lat_us, mbps = float(argv[3]), float(argv[4])
    nbytes = int(argv[5]) if len(argv) == 7 else 0
    newdirs = int(argv[6]) if len(argv) == 7 else 0
    with open(path, "rb") as f:
        is_exfat = f.read(11)[3:11] == b"EXFAT   "
    vol = ExFat(path) if is_exfat else Fat32(path)
    runs = vol.job(job, nbytes, newdirs)
    total = sum(b - a for a, b in runs)
    ms = len(runs) * lat_us / 1000 + total / (mbps * 1e6) * 1000
    print(total, len(runs), "%.1f" % ms)


if __name__ == "__main__":
    main(sys.argv)
