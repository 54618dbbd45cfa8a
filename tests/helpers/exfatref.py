#!/usr/bin/env python3
"""exfatref.py: an independent exFAT reader, writer, checker and corruptor,
written from Microsoft's published exFAT file system specification (section
numbers below refer to it). It shares no code with fatkit, Linux or
exfatprogs, so the tests can judge fatkit's exFAT results with it.
Standard library only.

    exfatref.py COMMAND IMAGE[@@OFFSET] [ARGS]

Reader:
  info IMG           key=value lines: every boot sector field, sector and
                     cluster size, FAT and heap geometry, volume flags,
                     percent_in_use (stored) and percent_in_use_computed and
                     free_clusters (both from the allocation bitmap), label,
                     serial, bitmap and up-case table location, up-case
                     checksum (stored and computed), boot_checksum_ok
  ls [-R] IMG [PATH] one line per entry of directory PATH (default /), or
                     of PATH itself if it is a file: TAB-separated key=value
                     fields attr (RHSDA letters or -), size (DataLength),
                     vdl (ValidDataLength), first (FirstCluster), nofatchain
                     (0/1), runs (cluster ranges a-b,c-d or -), ctime, mtime,
                     atime (local time with 10 ms and UTC offset), and last
                     path= (the full path). -R lists the whole subtree.
  cat IMG PATH       the file's data up to DataLength on stdout; bytes past
                     ValidDataLength read as zeros (spec 7.6.5)
  verify [-W] IMG    strict check; one line per finding, "error: ..." or
                     "warning: ..." (PercentInUse wrong, VolumeDirty set).
                     Exit 0 when no error (with -W: no warning either), 1
                     otherwise. Checks the boot regions (fields, checksum,
                     signatures, backup agreement), FAT entries 0 and 1,
                     bitmap and up-case entries and the up-case checksum,
                     every entry set (SecondaryCount, SetChecksum, NameHash,
                     NameLength, name characters, duplicate names through
                     the up-case table, unknown critical entries,
                     ValidDataLength), chains (range, free or bad links,
                     loops, cross-links, length against DataLength both
                     ways), NoFatChain runs inside the heap, directory
                     loops, and the bitmap against ownership both ways:
                     a marked cluster owned by nothing is a leak (an error).

Writer (builds test content on mkfs.exfat output; missing parent
directories are created; names are case-insensitively unique):
  mkdir IMG PATH     a directory of one zeroed cluster
  put IMG PATH --size N [--fragmented] [--nofatchain|--fatchain] [--vdl N]
                     [--data-from FILE|--pattern BYTE]
                     a file of N bytes (K, M, G suffixes: powers of 1024).
                     Contiguous by default, and then NoFatChain unless
                     --fatchain; --fragmented takes clusters with a free
                     gap between each (a FAT chain). Data: FILE's bytes
                     (zero-padded), or BYTE repeated, or by default byte i
                     of the file is i % 251. Only the first --vdl bytes
                     (default N) are written; the rest of the clusters keep
                     whatever they held.
  batch IMG          read writer commands from stdin, one per line, without
                     IMG (e.g. "put /d/f1 --size 1K"); one open for all
  junk IMG [--pattern BYTE]
                     fill every free cluster with BYTE (default 0xA5)
  Every write updates the bitmap, the FAT (for chained allocations), the
  entry sets with their checksums and NameHash (through the volume's own
  up-case table), and PercentInUse. A directory that fills up gets one
  more zeroed cluster; a NoFatChain directory whose next cluster is taken
  first gets FAT links for its run, then becomes a FAT chain. Timestamps
  are now, or SOURCE_DATE_EPOCH, in UTC with a valid UtcOffset of 0. With
  two FATs (TexFAT) only the active FAT and bitmap are written.

Corruptor:
  corrupt IMG CASE   damage a clean volume in one way (it adds the victim
                     files it needs under /corrupt-* first)
  corrupt --list     the cases, one a line: NAME fsck=yes|no DESCRIPTION,
                     where fsck= says whether fsck.exfat -n (exfatprogs
                     1.2.0, as measured) exits nonzero on the damage (for
                     label-length and entry-type-80 it prints a complaint
                     but still exits 0, "clean"); warn=1 marks the cases
                     verify reports only as a warning

OFFSET is bytes, or a number with K, M or G (powers of 1024), as mtools'
IMAGE@@OFFSET. Exit 2 on a usage error or an image that is not exFAT.
"""

import os
import shlex
import sys
import time

EOC = 0xFFFFFFFF
BAD = 0xFFFFFFF7

T_BITMAP, T_UPCASE, T_LABEL, T_FILE = 0x81, 0x82, 0x83, 0x85
T_GUID, T_PADDING = 0xA0, 0xA1
T_STREAM, T_NAME = 0xC0, 0xC1

ATTR_RO, ATTR_HIDDEN, ATTR_SYSTEM, ATTR_DIR, ATTR_ARCHIVE = 1, 2, 4, 16, 32

# Table 35: characters a file name may not contain.
INVALID_NAME_UNITS = frozenset(list(range(0x20)) + [0x22, 0x2A, 0x2F, 0x3A,
                                                     0x3C, 0x3E, 0x3F, 0x5C,
                                                     0x7C])


class Usage(Exception):
    pass


class Fatal(Exception):
    """An image this tool cannot go on reading (exit 2)."""


def die(msg, code=2):
    print("exfatref.py: " + msg, file=sys.stderr)
    sys.exit(code)


def parse_size(text):
    mult = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    unit = text[-1:].upper() if text[-1:].isalpha() else ""
    num = text[: len(text) - len(unit)]
    if not num.isdigit() or unit not in mult:
        raise Usage("bad size: " + text)
    return int(num) * mult[unit]


def le(buf, off, n):
    return int.from_bytes(buf[off : off + n], "little")


def put_le(buf, off, n, val):
    buf[off : off + n] = val.to_bytes(n, "little")


# The three checksums of the specification share one step: rotate the
# accumulator right by one bit, then add the byte (Figures 1 to 4).
def boot_checksum(region, bps):
    s = 0
    for i in range(bps * 11):
        if i in (106, 107, 112):  # VolumeFlags, PercentInUse: not covered
            continue
        s = (((s & 1) << 31) | (s >> 1)) + region[i] & 0xFFFFFFFF
    return s


def table_checksum(data):
    s = 0
    for b in data:
        s = (((s & 1) << 31) | (s >> 1)) + b & 0xFFFFFFFF
    return s


def set_checksum(entries):
    s = 0
    for i, b in enumerate(entries):
        if i == 2 or i == 3:  # the SetChecksum field itself
            continue
        s = (((s & 1) << 15) | (s >> 1)) + b & 0xFFFF
    return s


def name_hash(upcased_units):
    s = 0
    for u in upcased_units:
        for b in (u & 0xFF, u >> 8):
            s = (((s & 1) << 15) | (s >> 1)) + b & 0xFFFF
    return s


def units_of(name):
    raw = name.encode("utf-16-le", "surrogatepass")
    return [le(raw, i, 2) for i in range(0, len(raw), 2)]


def name_of(units):
    raw = b"".join(u.to_bytes(2, "little") for u in units)
    return raw.decode("utf-16-le", "surrogatepass")


def runs_of(clusters):
    runs = []
    for c in clusters:
        if runs and runs[-1][1] + 1 == c:
            runs[-1][1] = c
        else:
            runs.append([c, c])
    return runs


def fmt_runs(clusters):
    if not clusters:
        return "-"
    return ",".join("%d-%d" % (a, b) for a, b in runs_of(clusters))


def fmt_time(ts, ms10, utc):
    """Timestamp fields (7.4.8), 10msIncrement (7.4.9), UtcOffset (7.4.10)."""
    year = 1980 + (ts >> 25)
    mon, day = (ts >> 21) & 15, (ts >> 16) & 31
    hour, minute, sec2 = (ts >> 11) & 31, (ts >> 5) & 63, ts & 31
    sec = sec2 * 2 + ms10 // 100
    text = "%04d-%02d-%02dT%02d:%02d:%02d.%02d" % (year, mon, day, hour,
                                                   minute, sec, ms10 % 100)
    if utc & 0x80:
        off = utc & 0x7F
        if off & 0x40:
            off -= 0x80
        off *= 15
        sign = "+" if off >= 0 else "-"
        text += "%s%02d:%02d" % (sign, abs(off) // 60, abs(off) % 60)
    return text


def fmt_attr(attr):
    return "".join(ch if attr & bit else "-" for ch, bit in
                   (("R", ATTR_RO), ("H", ATTR_HIDDEN), ("S", ATTR_SYSTEM),
                    ("D", ATTR_DIR), ("A", ATTR_ARCHIVE)))


class Entry:
    """One File directory entry set (7.4, 7.6, 7.7), as found in a directory.

    index is the entry number of the File entry in its directory; raw is the
    whole set as stored (SecondaryCount + 1 entries)."""

    def __init__(self, dirobj, index, raw):
        self.dir = dirobj
        self.index = index
        self.raw = bytearray(raw)
        f, s = self.raw[0:32], self.raw[32:64]
        self.attr = le(f, 4, 2)
        self.times = (le(f, 8, 4), le(f, 12, 4), le(f, 16, 4),
                      f[20], f[21], f[22], f[23], f[24])
        self.flags = s[1]
        self.name_len = s[3]
        self.hash = le(s, 4, 2)
        self.vdl = le(s, 8, 8)
        self.first = le(s, 20, 4)
        self.dl = le(s, 24, 8)
        units = []
        for k in range(2, len(self.raw) // 32):
            e = self.raw[k * 32 : k * 32 + 32]
            if e[0] != T_NAME:
                break
            units += [le(e, 2 + 2 * i, 2) for i in range(15)]
        self.units = units[: self.name_len]
        self.name = name_of(self.units)

    @property
    def is_dir(self):
        return bool(self.attr & ATTR_DIR)

    @property
    def nofatchain(self):
        return bool(self.flags & 2)

    @property
    def path(self):
        return (self.dir.path.rstrip("/") + "/" + self.name)

    def set_stream(self, first=None, dl=None, vdl=None, flags=None):
        s = 32
        if first is not None:
            put_le(self.raw, s + 20, 4, first)
            self.first = first
        if dl is not None:
            put_le(self.raw, s + 24, 8, dl)
            self.dl = dl
        if vdl is not None:
            put_le(self.raw, s + 8, 8, vdl)
            self.vdl = vdl
        if flags is not None:
            self.raw[s + 1] = flags
            self.flags = flags


class Dir:
    """A directory: its clusters, its bytes, and the File sets in it."""

    def __init__(self, vol, path, clusters, entry):
        self.vol = vol
        self.path = path
        self.clusters = clusters
        self.entry = entry  # the parent's Entry for it; None for the root
        self.data = bytearray(vol.read_clusters(clusters))
        self._sets = None

    def sets(self):
        """{up-cased name units tuple: Entry}, parsed once."""
        if self._sets is None:
            self._sets = {}
            n = len(self.data) // 32
            i = 0
            while i < n:
                t = self.data[i * 32]
                if t == 0:
                    break
                if t == T_FILE:
                    sc = self.data[i * 32 + 1]
                    raw = self.data[i * 32 : (i + 1 + sc) * 32]
                    if sc >= 2 and len(raw) == (1 + sc) * 32:
                        e = Entry(self, i, raw)
                        self._sets[tuple(self.vol.upcase_units(e.units))] = e
                    i += 1 + sc
                    continue
                i += 1
        return self._sets

    def lookup(self, name):
        return self.sets().get(tuple(self.vol.upcase_units(units_of(name))))

    def entry_offset(self, i):
        cs = self.vol.csize
        c = self.clusters[(i * 32) // cs]
        return self.vol.cluster_off(c) + (i * 32) % cs

    def write_entries(self, i, raw):
        self.data[i * 32 : i * 32 + len(raw)] = raw
        for k in range(len(raw) // 32):
            self.vol.write(self.entry_offset(i + k), raw[k * 32 : k * 32 + 32])

    def free_slot(self, count):
        """First entry index of count free entries in a row, or None."""
        n = len(self.data) // 32
        run = 0
        for i in range(getattr(self, "hint", 0), n):
            t = self.data[i * 32]
            if t == 0:
                # 6.2.1: all entries after an end marker are end markers.
                if n - (i - run) >= count:
                    return i - run
                return None
            if t < 0x80:
                run += 1
                if run == count:
                    return i - run + 1
            else:
                run = 0
        return None


class Volume:
    def __init__(self, arg, write=False, backup=False):
        """backup: take the geometry from the backup boot sector (sector
        12), for checking a volume whose main boot sector is damaged."""
        path, _, off = arg.partition("@@")
        self.base = parse_size(off) if off else 0
        try:
            self.f = open(path, "r+b" if write else "rb")
        except OSError as e:
            raise Fatal("%s: %s" % (path, e.strerror))
        bs = self.raw_read(0, 512)
        if backup:
            for shift in range(9, 13):
                bs = self.raw_read(12 << shift, 512)
                if len(bs) == 512 and bs[108] == shift:
                    break
        if len(bs) < 512 or bs[3:11] != b"EXFAT   ":
            raise Fatal("%s: not an exFAT boot sector" % arg)
        self.boot = bs
        self.bps_shift = bs[108]
        self.spc_shift = bs[109]
        if not 9 <= self.bps_shift <= 12 or \
                self.spc_shift > 25 - self.bps_shift:
            raise Fatal("%s: impossible sector or cluster size" % arg)
        self.bps = 1 << self.bps_shift
        self.csize = self.bps << self.spc_shift
        self.boot = self.raw_read(12 * self.bps if backup else 0, self.bps)
        self.partition_offset = le(bs, 64, 8)
        self.volume_length = le(bs, 72, 8)
        self.fat_offset = le(bs, 80, 4)
        self.fat_length = le(bs, 84, 4)
        self.heap_offset = le(bs, 88, 4)
        self.nclus = le(bs, 92, 4)
        self.root_cluster = le(bs, 96, 4)
        self.serial = le(bs, 100, 4)
        self.revision = le(bs, 104, 2)
        self.flags = le(bs, 106, 2)
        self.nfats = bs[110]
        self.drive_select = bs[111]
        self.percent = bs[112]
        if self.nclus < 1 or self.nfats not in (1, 2) or \
                self.fat_length * self.bps < (self.nclus + 2) * 4:
            raise Fatal("%s: impossible FAT geometry" % arg)
        self.active = self.flags & 1 if self.nfats == 2 else 0
        self.fat = bytearray(self.raw_read(
            (self.fat_offset + self.active * self.fat_length) * self.bps,
            (self.nclus + 2) * 4))
        self.fat_dirty = False
        self.bitmap = None
        self.bitmap_dirty = False
        self.upcase = None
        self.root = None
        self.hint = 2
        self.dirs = {}

    # ---- raw access ----------------------------------------------------
    def raw_read(self, off, n):
        self.f.seek(self.base + off)
        return self.f.read(n)

    read = raw_read

    def write(self, off, data):
        self.f.seek(self.base + off)
        self.f.write(data)

    def cluster_off(self, c):
        return (self.heap_offset << self.bps_shift) + (c - 2) * self.csize

    def in_heap(self, c):
        return 2 <= c <= self.nclus + 1

    def read_clusters(self, clusters):
        out = bytearray()
        for a, b in runs_of(clusters):
            want = (b - a + 1) * self.csize
            got = self.read(self.cluster_off(a), want)
            out += got + bytes(want - len(got))
        return out

    def fat_get(self, c):
        return le(self.fat, c * 4, 4)

    def fat_set(self, c, v):
        put_le(self.fat, c * 4, 4, v)
        self.fat_dirty = True

    def chain(self, first, limit=None):
        """(clusters, problem or None) of a FAT chain, loop-safe."""
        out, seen = [], set()
        c = first
        limit = self.nclus if limit is None else limit
        while True:
            if not self.in_heap(c):
                return out, "link to cluster %d outside the heap" % c
            if c in seen:
                return out, "loop at cluster %d" % c
            seen.add(c)
            out.append(c)
            if len(out) > limit:
                return out, "longer than %d clusters" % limit
            nxt = self.fat_get(c)
            if nxt == EOC:
                return out, None
            if nxt == BAD:
                return out, "cluster %d is marked bad inside a chain" % c
            if nxt == 0:
                return out, "cluster %d links to a free FAT entry" % c
            if nxt < 2 or nxt > 0xFFFFFFF6:
                return out, "cluster %d has reserved FAT value 0x%08x" % (
                    c, nxt)
            c = nxt

    def clusters_of(self, first, dl, nofatchain):
        """The allocation of a stream, by its NoFatChain flag (6.3.4.2)."""
        if first == 0:
            return [], None
        if nofatchain:
            n = -(-dl // self.csize)
            end = min(first + n, self.nclus + 2)
            prob = None if end == first + n else "run past the heap end"
            return list(range(first, end)), prob
        return self.chain(first)

    # ---- root special entries ------------------------------------------
    def root_dir(self):
        if self.root is None:
            clusters, prob = self.chain(self.root_cluster)
            if prob:
                raise Fatal("root directory chain: " + prob)
            self.root = Dir(self, "/", clusters, None)
            self.dirs["/"] = self.root
        return self.root

    def special(self, t):
        """[(entry index, 32-byte entry)] of root entries of type t."""
        root = self.root_dir()
        out = []
        for i in range(len(root.data) // 32):
            e = root.data[i * 32 : i * 32 + 32]
            if e[0] == 0:
                break
            if e[0] == t:
                out.append((i, bytes(e)))
        return out

    def bitmap_entry(self):
        for i, e in self.special(T_BITMAP):
            if (e[1] & 1) == self.active:
                return i, e
        raise Fatal("no allocation bitmap entry in the root directory")

    def load_bitmap(self):
        if self.bitmap is None:
            _, e = self.bitmap_entry()
            first, dl = le(e, 20, 4), le(e, 24, 8)
            clusters, prob = self.chain(first)
            if prob:
                raise Fatal("allocation bitmap chain: " + prob)
            self.bitmap_clusters = clusters
            self.bitmap = bytearray(self.read_clusters(clusters)[:dl])
            need = (self.nclus + 7) // 8
            if len(self.bitmap) < need:
                raise Fatal("allocation bitmap shorter than the heap")
        return self.bitmap

    def bit(self, c):
        i = c - 2
        return (self.load_bitmap()[i >> 3] >> (i & 7)) & 1

    def set_bit(self, c, v):
        bm = self.load_bitmap()
        i = c - 2
        if v:
            bm[i >> 3] |= 1 << (i & 7)
        else:
            bm[i >> 3] &= ~(1 << (i & 7)) & 0xFF
        self.bitmap_dirty = True

    def used_clusters(self):
        bm = self.load_bitmap()
        full, rest = divmod(self.nclus, 8)
        n = bin(int.from_bytes(bm[:full], "little")).count("1")
        if rest:
            n += bin(bm[full] & ((1 << rest) - 1)).count("1")
        return n

    def upcase_entry(self):
        ents = self.special(T_UPCASE)
        if not ents:
            raise Fatal("no up-case table entry in the root directory")
        return ents[0]

    def load_upcase(self):
        """The up-case table as a 65536-entry list (7.2.5, both forms)."""
        if self.upcase is None:
            _, e = self.upcase_entry()
            first, dl = le(e, 20, 4), le(e, 24, 8)
            clusters, prob = self.chain(first)
            if prob:
                raise Fatal("up-case table chain: " + prob)
            raw = self.read_clusters(clusters)[:dl]
            self.upcase_raw = raw
            table = list(range(0x10000))
            idx, k = 0, 0
            vals = [le(raw, i, 2) for i in range(0, len(raw) - 1, 2)]
            while k < len(vals) and idx < 0x10000:
                v = vals[k]
                if v == 0xFFFF and k + 1 < len(vals):
                    # Identity-mapping compression: FFFFh, count.
                    idx += vals[k + 1]
                    k += 2
                    continue
                table[idx] = v
                idx += 1
                k += 1
            self.upcase = table
        return self.upcase

    def upcase_units(self, units):
        t = self.load_upcase()
        return [t[u] for u in units]

    def label(self):
        ents = self.special(T_LABEL)
        if not ents:
            return ""
        e = ents[0][1]
        n = min(e[1], 11)
        return name_of([le(e, 2 + 2 * i, 2) for i in range(n)])

    # ---- paths ----------------------------------------------------------
    def open_dir(self, entry):
        path = entry.path
        d = self.dirs.get(path)
        if d is None or d.entry is not entry:
            clusters, prob = self.clusters_of(entry.first, entry.dl,
                                              entry.nofatchain)
            if prob:
                raise Fatal("%s: chain: %s" % (path, prob))
            d = Dir(self, path, clusters, entry)
            self.dirs[path] = d
        return d

    def resolve(self, path):
        """(parent Dir, Entry or None for the root, last name)."""
        parts = [p for p in path.split("/") if p]
        d = self.root_dir()
        if not parts:
            return None, None, ""
        for p in parts[:-1]:
            e = d.lookup(p)
            if e is None or not e.is_dir:
                raise Fatal("%s: no such directory" % p)
            d = self.open_dir(e)
        return d, d.lookup(parts[-1]), parts[-1]

    # ---- writing --------------------------------------------------------
    def flush(self):
        if self.fat_dirty:
            base = (self.fat_offset + self.active * self.fat_length) * \
                self.bps
            self.write(base, self.fat)
            self.fat_dirty = False
        if self.bitmap_dirty:
            data = bytes(self.bitmap)
            cs = self.csize
            for k, c in enumerate(self.bitmap_clusters):
                chunk = data[k * cs : (k + 1) * cs]
                if chunk:
                    self.write(self.cluster_off(c), chunk)
            self.bitmap_dirty = False
            self.set_percent(self.used_clusters() * 100 // self.nclus)
        self.f.flush()

    def set_percent(self, pct):
        # PercentInUse is outside the boot checksum (3.1.18): no rewrite.
        self.write(112, bytes([pct]))
        self.percent = pct

    def find_free(self, start):
        bm = self.load_bitmap()
        c = max(start, 2)
        last = self.nclus + 1
        while c <= last:
            i = c - 2
            if bm[i >> 3] == 0xFF and (i & 7) == 0:
                c += 8
                continue
            if not (bm[i >> 3] >> (i & 7)) & 1:
                return c
            c += 1
        return None

    def alloc_run(self, n):
        """First run of n free clusters (next-fit from the hint)."""
        for start in (self.hint, 2):
            c = self.find_free(start)
            while c is not None:
                k = 1
                while k < n and c + k <= self.nclus + 1 and \
                        not self.bit(c + k):
                    k += 1
                if k == n:
                    return list(range(c, c + n))
                c = self.find_free(c + k)
        return None

    def alloc_fragmented(self, n):
        """n free clusters with a free cluster left between each two."""
        out = []
        c = self.find_free(self.hint)
        if c is None:
            c = self.find_free(2)
        while c is not None and len(out) < n:
            out.append(c)
            gap = self.find_free(c + 1)
            if gap is None:
                break
            c = self.find_free(gap + 1)
        return out if len(out) == n else None

    def claim(self, clusters, chained):
        for c in clusters:
            self.set_bit(c, 1)
        if chained:
            for a, b in zip(clusters, clusters[1:]):
                self.fat_set(a, b)
            self.fat_set(clusters[-1], EOC)
        if clusters:
            self.hint = clusters[-1] + 1

    def now(self):
        t = int(os.environ.get("SOURCE_DATE_EPOCH", time.time()))
        tm = time.gmtime(t)
        ts = ((max(tm.tm_year, 1980) - 1980) << 25 | tm.tm_mon << 21 |
              tm.tm_mday << 16 | tm.tm_hour << 11 | tm.tm_min << 5 |
              min(tm.tm_sec, 59) // 2)
        return ts, (tm.tm_sec % 2) * 100

    def build_set(self, name, attr, first, dl, vdl, nofatchain,
                  extra=b""):
        units = units_of(name)
        if not 1 <= len(units) <= 255:
            raise Fatal("%s: name length must be 1 to 255" % name)
        nnames = -(-len(units) // 15)
        ts, ms10 = self.now()
        f = bytearray(32)
        f[0] = T_FILE
        f[1] = 1 + nnames + len(extra) // 32
        put_le(f, 4, 2, attr)
        for off in (8, 12, 16):
            put_le(f, off, 4, ts)
        f[20] = f[21] = ms10
        f[22] = f[23] = f[24] = 0x80  # UTC, offset valid
        s = bytearray(32)
        s[0] = T_STREAM
        s[1] = 1 | (2 if nofatchain and first else 0)
        s[3] = len(units)
        put_le(s, 4, 2, name_hash(self.upcase_units(units)))
        put_le(s, 8, 8, vdl)
        put_le(s, 20, 4, first)
        put_le(s, 24, 8, dl)
        raw = f + s
        padded = units + [0] * (nnames * 15 - len(units))
        for k in range(nnames):
            e = bytearray(32)
            e[0] = T_NAME
            for i in range(15):
                put_le(e, 2 + 2 * i, 2, padded[k * 15 + i])
            raw += e
        raw += extra
        put_le(raw, 2, 2, set_checksum(raw))
        return raw

    def rewrite_set(self, entry):
        put_le(entry.raw, 2, 2, set_checksum(entry.raw))
        entry.dir.write_entries(entry.index, entry.raw)

    def grow_dir(self, d):
        """Add one zeroed cluster to directory d."""
        last = d.clusters[-1]
        nofat = d.entry is not None and d.entry.nofatchain
        if last + 1 <= self.nclus + 1 and not self.bit(last + 1):
            new = last + 1
        else:
            run = self.alloc_run(1)
            if run is None:
                raise Fatal("volume full")
            new = run[0]
        if nofat and new != last + 1:
            # The run ends: the existing clusters get FAT links first.
            self.claim(d.clusters, True)
            d.entry.set_stream(flags=d.entry.flags & ~2)
            nofat = False
        self.set_bit(new, 1)
        if not nofat:
            self.fat_set(last, new)
            self.fat_set(new, EOC)
        self.write(self.cluster_off(new), bytes(self.csize))
        d.clusters.append(new)
        d.data += bytes(self.csize)
        if d.entry is not None:
            size = len(d.clusters) * self.csize
            d.entry.set_stream(dl=size, vdl=size)
            self.rewrite_set(d.entry)

    def add_set(self, d, raw):
        count = len(raw) // 32
        while True:
            i = d.free_slot(count)
            if i is not None:
                break
            self.grow_dir(d)
        d.write_entries(i, raw)
        d.hint = i + count
        e = Entry(d, i, raw)
        d.sets()[tuple(self.upcase_units(e.units))] = e
        return e

    def mkdir(self, path, parents=True):
        parts = [p for p in path.split("/") if p]
        d = self.root_dir()
        for k, p in enumerate(parts):
            e = d.lookup(p)
            if e is None:
                if not parents and k != len(parts) - 1:
                    raise Fatal("%s: no such directory" % p)
                run = self.alloc_run(1)
                if run is None:
                    raise Fatal("volume full")
                self.claim(run, False)
                self.write(self.cluster_off(run[0]), bytes(self.csize))
                raw = self.build_set(p, ATTR_DIR, run[0], self.csize,
                                     self.csize, True)
                e = self.add_set(d, raw)
            elif not e.is_dir:
                raise Fatal("%s: not a directory" % p)
            d = self.open_dir(e)
        return d

    def put(self, path, size, data, vdl=None, fragmented=False,
            chain=None):
        """Create file path of size bytes; write data[:vdl] into it."""
        parts = [p for p in path.split("/") if p]
        if not parts:
            raise Fatal("put: a file needs a name")
        d = self.mkdir("/".join(parts[:-1]))
        if d.lookup(parts[-1]) is not None:
            raise Fatal("%s: exists" % path)
        vdl = size if vdl is None else vdl
        if vdl > size:
            raise Fatal("--vdl larger than --size")
        n = -(-size // self.csize)
        clusters = []
        if n:
            if fragmented:
                clusters = self.alloc_fragmented(n)
            else:
                clusters = self.alloc_run(n)
            if clusters is None:
                raise Fatal("no room for %d %s clusters" % (
                    n, "fragmented" if fragmented else "contiguous"))
        contiguous = len(runs_of(clusters)) <= 1
        if chain is None:
            chain = not contiguous
        if not chain and not contiguous:
            raise Fatal("--nofatchain needs contiguous clusters")
        self.claim(clusters, chain and bool(clusters))
        body = data[:vdl]
        cs = self.csize
        for k, c in enumerate(clusters):
            piece = body[k * cs : (k + 1) * cs]
            if piece:
                self.write(self.cluster_off(c), piece)
        raw = self.build_set(parts[-1], ATTR_ARCHIVE,
                             clusters[0] if clusters else 0, size, vdl,
                             not chain)
        return self.add_set(d, raw), clusters

    def junk(self, byte):
        bm = self.load_bitmap()
        free = [c for c in range(2, self.nclus + 2) if
                not (bm[(c - 2) >> 3] >> ((c - 2) & 7)) & 1]
        for a, b in runs_of(free):
            for c in range(a, b + 1, 256):
                k = min(256, b + 1 - c)
                self.write(self.cluster_off(c), bytes([byte]) *
                           (k * self.csize))


# ---------------------------------------------------------------------------
# verify
class Checker:
    def __init__(self, vol, arg):
        self.v = vol
        self.arg = arg
        self.errors = 0
        self.warnings = 0

    def err(self, msg):
        self.errors += 1
        print("error: " + msg)

    def warn(self, msg):
        self.warnings += 1
        print("warning: " + msg)

    def boot_region(self, first, which):
        v = self.v
        reg = v.read(first * v.bps, 12 * v.bps)
        if len(reg) < 12 * v.bps:
            self.err("%s boot region: cut short by the end of the image" %
                     which)
            return None
        sums = {le(reg, 11 * v.bps + i, 4) for i in range(0, v.bps, 4)}
        want = boot_checksum(reg, v.bps)
        if sums != {want}:
            self.err("%s boot region: boot checksum mismatch (sector 11 "
                     "holds %s, sectors 0-10 sum to 0x%08x)" % (
                         which, ",".join("0x%08x" % s for s in sorted(sums)),
                         want))
        if le(reg, 510, 2) != 0xAA55:
            self.err("%s boot sector: BootSignature is not AA55h" % which)
        for s in range(1, 9):
            if le(reg, s * v.bps + v.bps - 4, 4) != 0xAA550000:
                self.err("%s extended boot sector %d: signature is not "
                         "AA550000h" % (which, s))
        return reg

    def boot(self):
        v = self.v
        bs = v.boot
        if bs[0:3] != b"\xeb\x76\x90":
            self.err("boot sector: JumpBoot is not EB 76 90")
        if any(bs[11:64]):
            self.err("boot sector: MustBeZero bytes 11-63 are not zero")
        if v.volume_length < (1 << 20) >> v.bps_shift:
            self.err("boot sector: VolumeLength %d below 1 MiB" %
                     v.volume_length)
        size = os.fstat(v.f.fileno()).st_size
        if os.path.isfile(v.f.name) and \
                v.base + v.volume_length * v.bps > size:
            self.err("boot sector: VolumeLength %d sectors runs past the "
                     "end of the image" % v.volume_length)
        if v.fat_offset < 24 or v.fat_offset > v.heap_offset - \
                v.fat_length * v.nfats:
            self.err("boot sector: FatOffset %d out of range" % v.fat_offset)
        if v.fat_length < -(-(v.nclus + 2) * 4 // v.bps) or \
                v.fat_length > (v.heap_offset - v.fat_offset) // v.nfats:
            self.err("boot sector: FatLength %d out of range" % v.fat_length)
        if v.heap_offset < v.fat_offset + v.fat_length * v.nfats or \
                v.heap_offset > v.volume_length - (v.nclus << v.spc_shift):
            self.err("boot sector: ClusterHeapOffset %d out of range" %
                     v.heap_offset)
        fit = (v.volume_length - v.heap_offset) >> v.spc_shift
        if v.nclus != min(fit, 0xFFFFFFF5):
            self.err("boot sector: ClusterCount %d, the volume holds %d" %
                     (v.nclus, fit))
        if not v.in_heap(v.root_cluster):
            self.err("boot sector: FirstClusterOfRootDirectory %d outside "
                     "the heap" % v.root_cluster)
        major, minor = v.revision >> 8, v.revision & 0xFF
        if major != 1 or minor > 99:
            self.err("boot sector: FileSystemRevision %d.%02d is not 1.x" %
                     (major, minor))
        if v.flags & 1 and v.nfats != 2:
            self.err("boot sector: ActiveFat is 1 with one FAT")
        if v.flags & 4:
            self.warn("boot sector: MediaFailure is set")
        if v.percent > 100 and v.percent != 0xFF:
            self.err("boot sector: PercentInUse %d out of range" % v.percent)
        main = self.boot_region(0, "main")
        backup = self.boot_region(12, "backup")
        if main and backup:
            m, b = bytearray(main), bytearray(backup)
            for i in (106, 107, 112):  # stale in the backup (3.1)
                m[i] = b[i] = 0
            if m != b:
                bad = [s for s in range(12) if
                       m[s * v.bps : (s + 1) * v.bps] !=
                       b[s * v.bps : (s + 1) * v.bps]]
                self.err("backup boot region differs from the main one in "
                         "sector(s) %s" % ",".join(map(str, bad)))
        if v.fat_get(0) >> 8 != 0xFFFFFF:
            self.err("FAT: FatEntry[0] is 0x%08x, not ffffffxx" %
                     v.fat_get(0))
        if v.fat_get(1) != EOC:
            self.err("FAT: FatEntry[1] is 0x%08x, not ffffffff" %
                     v.fat_get(1))

    def own(self, label, clusters):
        """Record clusters as label's; report cross-links once per pair.
        Returns the owners already holding any of them."""
        hit = {}
        for c in clusters:
            if not self.v.in_heap(c):
                continue
            o = self.owner.get(c)
            if o is None:
                self.owner[c] = label
            elif o != label:
                hit.setdefault(o, c)
        for o, c in hit.items():
            self.err("%s: cross-linked with %s at cluster %d" % (label, o, c))
        return hit

    def stream_clusters(self, label, first, dl, nofatchain, fixed=False):
        """Check an allocation and own it. fixed: DataLength need not fill
        the last cluster exactly (bitmap, up-case table: byte lengths)."""
        v = self.v
        if first == 0:
            if dl:
                self.err("%s: FirstCluster 0 with DataLength %d" %
                         (label, dl))
            if nofatchain:
                self.err("%s: NoFatChain set without an allocation" % label)
            return []
        if not v.in_heap(first):
            self.err("%s: FirstCluster %d outside the heap" % (label, first))
            return []
        need = -(-dl // v.csize)
        if nofatchain:
            if dl == 0:
                self.err("%s: NoFatChain with DataLength 0" % label)
            last = first + need - 1
            if last > v.nclus + 1:
                self.err("%s: NoFatChain run %d-%d runs past the heap end "
                         "(cluster %d)" % (label, first, last, v.nclus + 1))
            clusters = list(range(first, min(first + need, v.nclus + 2)))
        else:
            clusters, prob = v.chain(first)
            if prob:
                self.err("%s: chain: %s" % (label, prob))
            elif len(clusters) != need:
                self.err("%s: chain has %d clusters, DataLength %d needs "
                         "%d (chain too %s)" % (
                             label, len(clusters), dl, need,
                             "long" if len(clusters) > need else "short"))
        return clusters

    def specials(self):
        v = self.v
        bms = v.special(T_BITMAP)
        ups = v.special(T_UPCASE)
        if len(bms) != v.nfats:
            self.err("root: %d allocation bitmap entries, NumberOfFats is "
                     "%d" % (len(bms), v.nfats))
        ids = sorted(e[1] & 1 for _, e in bms)
        if len(set(ids)) != len(ids):
            self.err("root: two allocation bitmaps with the same "
                     "BitmapIdentifier")
        for _, e in bms:
            label = "allocation bitmap %d" % (e[1] & 1)
            first, dl = le(e, 20, 4), le(e, 24, 8)
            if dl < (v.nclus + 7) // 8:
                self.err("%s: DataLength %d, the heap needs %d" % (
                    label, dl, (v.nclus + 7) // 8))
            self.own(label, self.stream_clusters(label, first, dl, False))
        if len(ups) != 1:
            self.err("root: %d up-case table entries, need 1" % len(ups))
        for _, e in ups:
            first, dl = le(e, 20, 4), le(e, 24, 8)
            cl = self.stream_clusters("up-case table", first, dl, False)
            self.own("up-case table", cl)
            raw = v.read_clusters(cl)[:dl]
            if table_checksum(raw) != le(e, 4, 4):
                self.err("up-case table: TableChecksum 0x%08x, the table "
                         "sums to 0x%08x" % (le(e, 4, 4),
                                             table_checksum(raw)))
            try:
                t = v.load_upcase()
                for c in range(128):
                    want = c - 32 if 0x61 <= c <= 0x7A else c
                    if t[c] != want:
                        self.err("up-case table: mandatory mapping of "
                                 "%04Xh is %04Xh" % (c, t[c]))
                        break
            except Fatal as ex:
                self.err("up-case table: %s" % ex)
        labels = v.special(T_LABEL)
        if len(labels) > 1:
            self.err("root: %d volume label entries" % len(labels))
        for _, e in labels:
            if e[1] > 11:
                self.err("volume label: CharacterCount %d > 11" % e[1])

    def walk(self):
        v = self.v
        root = v.root_dir()
        self.own("/", root.clusters)
        stack = [root]
        while stack:
            d = stack.pop()
            for e in self.dir_sets(d):
                cl = self.stream_clusters(e.path, e.first, e.dl,
                                          e.nofatchain)
                hit = self.own(e.path, cl)
                if not e.is_dir:
                    continue
                if hit:
                    self.err("%s: directory loop or shared directory "
                             "clusters: not descending" % e.path)
                    continue
                if cl:
                    sub = Dir(v, e.path, cl, e)
                    stack.append(sub)

    def dir_sets(self, d):
        """Check every entry of directory d; return its good File sets."""
        v = self.v
        data = d.data
        n = len(data) // 32
        out = []
        names = {}
        i = 0
        ended = False
        is_root = d.entry is None
        while i < n:
            t = data[i * 32]
            where = "%s: entry %d" % (d.path, i)
            if ended:
                if t != 0:
                    self.err("%s: type 0x%02x after the end-of-directory "
                             "marker" % (where, t))
                    ended = False
                else:
                    i += 1
                    continue
            if t == 0:
                ended = True
                i += 1
                continue
            if t < 0x80:
                i += 1
                continue
            if t == 0x80:
                self.err("%s: invalid entry type 80h" % where)
                i += 1
                continue
            if t & 0x40:
                self.err("%s: secondary entry 0x%02x outside an entry set" %
                         (where, t))
                i += 1
                continue
            if t in (T_BITMAP, T_UPCASE, T_LABEL):
                if not is_root:
                    self.err("%s: root-only entry 0x%02x in a "
                             "subdirectory" % (where, t))
                i += 1
                continue
            if t != T_FILE and not t & 0x20:
                self.err("%s: unknown critical primary entry 0x%02x" %
                         (where, t))
                i += 1
                continue
            sc = data[i * 32 + 1]
            raw = data[i * 32 : (i + 1 + sc) * 32]
            good = len(raw) == (1 + sc) * 32
            k = 1
            while good and k <= sc:
                st = raw[k * 32]
                if st < 0xC0:
                    good = False
                k += 1
            if not good:
                self.err("%s: SecondaryCount %d, but only %d secondary "
                         "entries follow" % (where, sc, k - 2))
                i += k - 1
                continue
            if le(raw, 2, 2) != set_checksum(raw):
                self.err("%s: SetChecksum 0x%04x, the set sums to 0x%04x" %
                         (where, le(raw, 2, 2), set_checksum(raw)))
                i += 1 + sc
                continue
            if t == T_FILE:
                e = self.file_set(d, i, raw, where)
                if e is not None:
                    key = tuple(v.upcase_units(e.units))
                    if key in names:
                        self.err("%s: duplicate name %r (same as %r through "
                                 "the up-case table)" % (
                                     e.path, e.name, names[key]))
                    else:
                        names[key] = e.name
                    out.append(e)
            elif t == T_GUID and not is_root:
                self.err("%s: volume GUID entry outside the root" % where)
            i += 1 + sc
        return out

    def file_set(self, d, i, raw, where):
        v = self.v
        sc = raw[1]
        if sc < 2 or raw[32] != T_STREAM:
            self.err("%s: a File entry must be followed by a Stream "
                     "Extension and a File Name entry" % where)
            return None
        e = Entry(d, i, raw)
        need = -(-e.name_len // 15)
        nnames = 0
        for k in range(2, sc + 1):
            st = raw[k * 32]
            if st == T_NAME and k - 2 == nnames:
                nnames += 1
            elif st == T_NAME:
                self.err("%s: File Name entry out of place" % where)
                return None
            elif not st & 0x20:
                self.err("%s: unknown critical secondary entry 0x%02x in "
                         "the set of %s" % (where, st, e.path))
                return None
            elif raw[k * 32 + 1] & 1:
                # A benign secondary with an allocation (vendor allocation)
                fc, dl = le(raw, k * 32 + 20, 4), le(raw, k * 32 + 24, 8)
                lab = "%s (secondary 0x%02x)" % (e.path, st)
                self.own(lab, self.stream_clusters(lab, fc, dl,
                                                   raw[k * 32 + 1] & 2))
        if not 1 <= e.name_len <= 255 or nnames != need:
            self.err("%s: NameLength %d needs %d File Name entries, the set "
                     "has %d" % (where, e.name_len, need, nnames))
            return None
        bad = sorted({u for u in e.units if u in INVALID_NAME_UNITS})
        if bad or e.name in (".", ".."):
            self.err("%s: invalid name %r (characters %s)" % (
                e.path, e.name, ",".join("%04Xh" % u for u in bad) or
                "reserved name"))
        want = name_hash(v.upcase_units(e.units))
        if e.hash != want:
            self.err("%s: NameHash 0x%04x, the up-cased name hashes to "
                     "0x%04x" % (e.path, e.hash, want))
        if not e.flags & 1:
            if e.first or e.dl:
                self.err("%s: AllocationPossible clear but an allocation "
                         "is recorded" % e.path)
        if e.vdl > e.dl:
            self.err("%s: ValidDataLength %d > DataLength %d" % (
                e.path, e.vdl, e.dl))
        if e.is_dir:
            if e.vdl != e.dl:
                self.err("%s: directory ValidDataLength %d != DataLength "
                         "%d" % (e.path, e.vdl, e.dl))
            if e.dl % v.csize:
                self.err("%s: directory DataLength %d is not whole "
                         "clusters" % (e.path, e.dl))
            if e.dl > 256 << 20:
                self.err("%s: directory larger than 256 MiB" % e.path)
        if e.dl > v.nclus * v.csize:
            self.err("%s: DataLength %d larger than the heap" % (e.path,
                                                                 e.dl))
        return e

    def bitmap(self):
        v = self.v
        bm = v.load_bitmap()
        missing, leaked = [], []
        for c in range(2, v.nclus + 2):
            i = c - 2
            b = (bm[i >> 3] >> (i & 7)) & 1
            o = c in self.owner
            if o and not b:
                missing.append(c)
            elif b and not o and v.fat_get(c) != BAD:
                leaked.append(c)
        for a, b in runs_of(missing):
            self.err("bitmap: clusters %d-%d are in use (%s) but marked "
                     "free" % (a, b, self.owner[a]))
        for a, b in runs_of(leaked):
            self.err("bitmap: clusters %d-%d are marked used but owned by "
                     "nothing (lost clusters)" % (a, b))
        used = v.used_clusters()
        pct = used * 100 // v.nclus
        if v.percent != 0xFF and v.percent != pct:
            self.warn("boot sector: PercentInUse %d, the bitmap says %d "
                      "(%d of %d clusters)" % (v.percent, pct, used,
                                               v.nclus))
        if v.flags & 2:
            self.warn("boot sector: VolumeDirty is set (not cleanly "
                      "unmounted)")

    def run(self):
        self.owner = {}
        self.boot()
        try:
            self.specials()
            self.walk()
            self.bitmap()
        except Fatal as ex:
            self.err(str(ex))


# ---------------------------------------------------------------------------
# corruption cases: name -> (fsck.exfat -n 1.2.0 detects it, warning only,
# description). The fsck column was measured with tests/exfatref.bats's
# images and is checked there in both directions.
CASES = {
    "boot-checksum": (True, False, "a BootCode byte of the main boot sector "
                      "changed, checksum not updated"),
    "backup-differs": (False, False, "the backup boot sector's BootCode "
                       "changed, its own checksum updated"),
    "boot-signature": (False, False, "main BootSignature 55AA broken "
                       "(checksum updated)"),
    "sector-shift": (True, False, "main BytesPerSectorShift 13 (checksum "
                     "updated)"),
    "cluster-count": (True, False, "main ClusterCount larger than the "
                      "volume holds (checksum updated)"),
    "root-cluster": (True, False, "main FirstClusterOfRootDirectory outside "
                     "the heap (checksum updated)"),
    "fs-revision": (True, False, "main FileSystemRevision 2.00 (checksum "
                    "updated)"),
    "set-checksum": (True, False, "a file's SetChecksum wrong"),
    "name-hash": (True, False, "a file's NameHash wrong (SetChecksum "
                  "updated)"),
    "secondary-count": (True, False, "a file's SecondaryCount one short: its "
                        "last File Name entry orphaned"),
    "name-length": (True, False, "a file's NameLength larger than its File "
                    "Name entries hold"),
    "vdl-gt-dl": (True, False, "a file's ValidDataLength > DataLength"),
    "dir-vdl": (False, False, "a directory's ValidDataLength != DataLength"),
    "first-cluster-range": (True, False, "a file's FirstCluster past the "
                            "heap"),
    "chain-loop": (True, False, "a FAT chain links back to its first "
                   "cluster"),
    "chain-free-link": (True, False, "a FAT chain links to a free FAT "
                        "entry"),
    "chain-bad-cluster": (True, False, "a cluster inside a FAT chain "
                          "marked bad (FFFFFFF7h)"),
    "cross-link": (True, False, "two files' FAT chains share a cluster"),
    "chain-too-long": (True, False, "a FAT chain one cluster longer than "
                       "DataLength needs"),
    "chain-too-short": (True, False, "a FAT chain one cluster shorter than "
                        "DataLength needs"),
    "nofatchain-past-heap": (True, False, "a NoFatChain file's run ends past "
                             "the heap"),
    "bitmap-missing": (True, False, "the bitmap bit of a used cluster "
                       "cleared"),
    "bitmap-leak": (False, False, "bitmap bits set for clusters nobody "
                    "owns"),
    "percent-in-use": (False, True, "PercentInUse wrong"),
    "volume-dirty": (False, True, "VolumeDirty set"),
    "upcase-checksum": (True, False, "the up-case table's TableChecksum "
                        "wrong"),
    "no-bitmap-entry": (True, False, "the allocation bitmap entry marked "
                        "unused"),
    "no-upcase-entry": (True, False, "the up-case table entry marked "
                        "unused"),
    "upcase-mapping": (True, False, "the up-case table maps 'a' to itself "
                       "(TableChecksum updated)"),
    "entry-type-80": (False, False, "a directory entry of the invalid type "
                      "80h before the end marker"),
    "bitmap-too-small": (True, False, "the allocation bitmap's DataLength "
                         "smaller than the heap needs"),
    "bitmap-too-large": (False, False, "the allocation "
                         "bitmap's DataLength far larger than the heap "
                         "needs (2^63 more)"),
    "unknown-critical-secondary": (True, False, "an unknown critical "
                                   "secondary entry (0xDF) in a file's set"),
    "invalid-name-char": (False, False, "a file name with ':' (NameHash and "
                          "SetChecksum updated)"),
    "duplicate-name": (False, False, "two names equal through the up-case "
                       "table (dup.txt, DUP.TXT)"),
    "directory-loop": (True, False, "a subdirectory whose FirstCluster is "
                       "its parent's"),
    "label-length": (False, False, "volume label CharacterCount 12"),
    # exfat-checker cases. A fourth field True marks a volume that is
    # valid (listed with valid=1): every judge must call it clean and no
    # repair may change it.
    # (fsck.exfat 1.2.0 predates Vendor Allocation entries: it reports
    # "failed to get name dentry" for such sets, and -y deletes them.)
    "vendor-alloc-file": (True, False, "a file's set holds a Vendor "
                          "Allocation secondary (E1h) owning two "
                          "FAT-chained clusters", True),
    "vendor-alloc-dir": (True, False, "a directory's set holds a Vendor "
                         "Allocation secondary (E1h) owning one NoFatChain "
                         "cluster", True),
    "set-split-nonadjacent": (False, False, "an entry set spans the "
                              "boundary between a directory's two "
                              "non-adjacent clusters", True),
    "dir-chain-long": (True, False, "a subdirectory whose first cluster is "
                       "full of entry sets has a FAT chain one cluster "
                       "longer than its DataLength"),
    "dir-chain-short": (True, False, "a subdirectory's FAT chain one "
                        "cluster shorter than its DataLength"),
    "first-cluster-zero": (True, False, "a subdirectory with FirstCluster 0 "
                           "and a non-zero DataLength"),
    "dir-cross-link": (True, False, "two directory entries share one "
                       "directory's cluster"),
    "name-dot": (True, False, "a file named '.' (NameHash and SetChecksum "
                 "updated)"),
    "name-dotdot": (True, False, "a file named '..' (NameHash and "
                    "SetChecksum updated)"),
    # exfat-writer cases: directories a writer must not enter or grow
    "dir-chain-too-long": (True, False, "a subdirectory's FAT chain one "
                           "cluster longer than its DataLength, its first "
                           "cluster full of entry sets"),
    "dir-chain-too-short": (True, False, "a subdirectory's FAT chain one "
                            "cluster shorter than its DataLength"),
}


def checker_case(v, case):
    """The exfat-checker cases of CASES; False if case is not one."""
    cs = v.csize

    def vendor_alloc(n, chained):
        # Vendor Allocation (7.9): the generic secondary template with
        # AllocationPossible, a VendorGuid; the clusters hold vendor data.
        cl = v.alloc_fragmented(n) if chained else v.alloc_run(n)
        v.claim(cl, chained)
        for c in cl:
            v.write(v.cluster_off(c), b"V" * cs)
        e = bytearray(32)
        e[0], e[1] = 0xE1, 1 if chained else 3
        e[2:18] = bytes(range(0x10, 0x20))
        put_le(e, 20, 4, cl[0])
        put_le(e, 24, 8, n * cs)
        return bytes(e)

    def chained_dir(path, n):
        # A directory of n clusters with a free gap between each: a FAT
        # chain, whatever the writer would have made.
        d = v.mkdir(path)
        more = v.alloc_fragmented(n - 1) if n > 1 else []
        v.claim(d.clusters + more, True)
        for c in more:
            v.write(v.cluster_off(c), bytes(cs))
        d.clusters += more
        d.data += bytes(cs * len(more))
        d.entry.set_stream(dl=n * cs, vdl=n * cs, flags=d.entry.flags & ~2)
        v.rewrite_set(d.entry)
        return d

    def fill_first(path, d):
        # Sets of three entries until the first cluster has fewer than
        # three entries free.
        k = 0
        while d.free_slot(1) is not None and \
                d.free_slot(1) + 3 <= cs // 32:
            v.put("%s/f%03d" % (path, k), 10, b"x")
            k += 1

    def rename(e, name):
        units = units_of(name)
        e.raw[32 + 3] = len(units)
        put_le(e.raw, 32 + 4, 2, name_hash(v.upcase_units(units)))
        put_le(e.raw, 64 + 2, 30, 0)
        for k, u in enumerate(units):
            put_le(e.raw, 64 + 2 + 2 * k, 2, u)
        v.rewrite_set(e)

    if case == "vendor-alloc-file":
        data = v.alloc_run(1)
        v.claim(data, False)
        v.write(v.cluster_off(data[0]), b"f" * cs)
        raw = v.build_set("corrupt-vfile", ATTR_ARCHIVE, data[0], cs, cs,
                          True, extra=vendor_alloc(2, True))
        v.add_set(v.root_dir(), raw)
    elif case == "vendor-alloc-dir":
        c = v.alloc_run(1)
        v.claim(c, False)
        v.write(v.cluster_off(c[0]), bytes(cs))
        raw = v.build_set("corrupt-vdir", ATTR_DIR, c[0], cs, cs, True,
                          extra=vendor_alloc(1, False))
        v.add_set(v.root_dir(), raw)
        v.put("/corrupt-vdir/inner.txt", 100, b"i")
    elif case == "set-split-nonadjacent":
        d = chained_dir("/corrupt-split", 2)
        fill_first("/corrupt-split", d)
        e, _ = v.put("/corrupt-split/" + "long name " * 5, 10, b"s")
        assert e.index < cs // 32 < e.index + len(e.raw) // 32
    elif case == "dir-chain-long":
        d = chained_dir("/corrupt-dlong", 1)
        fill_first("/corrupt-dlong", d)
        extra = v.alloc_fragmented(1)
        v.write(v.cluster_off(extra[0]), bytes(cs))
        v.claim(d.clusters + extra, True)
    elif case == "dir-chain-short":
        d = chained_dir("/corrupt-dshort", 2)
        v.put("/corrupt-dshort/in-first", 10, b"a")
        v.fat_set(d.clusters[0], EOC)
        v.set_bit(d.clusters[1], 0)
    elif case == "first-cluster-zero":
        d = v.mkdir("/corrupt-fc0")
        v.set_bit(d.clusters[0], 0)
        d.entry.set_stream(first=0, flags=1)
        v.rewrite_set(d.entry)
    elif case == "dir-cross-link":
        v.put("/corrupt-xd1/inside", 10, b"a")
        a = v.dirs["/corrupt-xd1"]
        b = v.mkdir("/corrupt-xd2")
        v.set_bit(b.clusters[0], 0)
        b.entry.set_stream(first=a.clusters[0])
        v.rewrite_set(b.entry)
    elif case in ("name-dot", "name-dotdot"):
        e, _ = v.put("/c-" + case[5:], 10, b"d")  # one File Name entry
        rename(e, "." if case == "name-dot" else "..")
    else:
        return False
    return True


def fix_boot_checksum(vol, first):
    reg = bytearray(vol.read(first * vol.bps, 12 * vol.bps))
    s = boot_checksum(reg, vol.bps)
    vol.write((first + 11) * vol.bps, s.to_bytes(4, "little") *
              (vol.bps // 4))


def corrupt(vol, case):
    v = vol
    cs = v.csize

    def victim(name, clusters=2, **kw):
        e, cl = v.put("/corrupt-" + name, clusters * cs, b"", vdl=0, **kw)
        return e, cl

    def boot_field(off, data):
        v.write(off, data)
        fix_boot_checksum(v, 0)

    if case == "boot-checksum":
        b = v.read(200, 1)[0]
        v.write(200, bytes([b ^ 0xFF]))
    elif case == "backup-differs":
        off = 12 * v.bps + 200
        v.write(off, bytes([v.read(off, 1)[0] ^ 0xFF]))
        fix_boot_checksum(v, 12)
    elif case == "boot-signature":
        boot_field(510, b"\x55\xab")
    elif case == "sector-shift":
        boot_field(108, b"\x0d")
    elif case == "cluster-count":
        boot_field(92, (v.nclus + 1000).to_bytes(4, "little"))
    elif case == "root-cluster":
        boot_field(96, (v.nclus + 2).to_bytes(4, "little"))
    elif case == "fs-revision":
        boot_field(104, b"\x00\x02")
    elif case == "set-checksum":
        e, _ = victim("sum", 1)
        put_le(e.raw, 2, 2, le(e.raw, 2, 2) ^ 0x5A5A)
        e.dir.write_entries(e.index, e.raw)
    elif case == "name-hash":
        e, _ = victim("hash", 1)
        put_le(e.raw, 32 + 4, 2, e.hash ^ 0x0101)
        v.rewrite_set(e)
    elif case == "secondary-count":
        e, _ = v.put("/corrupt-" + "x" * 20, cs, b"", vdl=0)
        e.raw[1] -= 1
        e.raw = e.raw[:-32]
        v.rewrite_set(e)
    elif case == "name-length":
        e, _ = victim("len", 1)
        e.raw[32 + 3] = 40
        v.rewrite_set(e)
    elif case == "vdl-gt-dl":
        e, _ = victim("vdl", 1)
        e.set_stream(vdl=e.dl + 1)
        v.rewrite_set(e)
    elif case == "dir-vdl":
        d = v.mkdir("/corrupt-dir")
        d.entry.set_stream(vdl=0)
        v.rewrite_set(d.entry)
    elif case == "first-cluster-range":
        e, cl = victim("range", 1)
        v.set_bit(cl[0], 0)
        e.set_stream(first=v.nclus + 5)
        v.rewrite_set(e)
    elif case == "chain-loop":
        e, cl = victim("loop", 3, fragmented=True)
        v.fat_set(cl[-1], cl[0])
    elif case == "chain-free-link":
        e, cl = victim("free", 3, fragmented=True)
        gap = v.find_free(cl[1] + 1)  # a free cluster (FAT entry 0)
        v.fat_set(cl[1], gap)
        v.fat_set(gap, 0)
    elif case == "chain-bad-cluster":
        e, cl = victim("bad", 3, fragmented=True)
        v.fat_set(cl[1], BAD)
    elif case == "cross-link":
        a, acl = victim("xa", 2, fragmented=True)
        b, bcl = victim("xb", 2, fragmented=True)
        v.fat_set(bcl[-1], acl[-1])
        b.set_stream(dl=3 * cs)
        v.rewrite_set(b)
    elif case == "chain-too-long":
        e, cl = victim("long", 2, fragmented=True)
        extra = v.alloc_fragmented(1)[0]
        v.claim([cl[-1], extra], True)
    elif case == "chain-too-short":
        e, cl = victim("short", 3, fragmented=True)
        v.fat_set(cl[1], EOC)
        v.set_bit(cl[2], 0)
    elif case == "nofatchain-past-heap":
        e, cl = victim("heap", 1, chain=False)
        e.set_stream(dl=(v.nclus + 2 - cl[0] + 2) * cs)
        v.rewrite_set(e)
    elif case == "bitmap-missing":
        e, cl = victim("missing", 2)
        v.set_bit(cl[1], 0)
    elif case == "bitmap-leak":
        run = v.alloc_run(3)
        for c in run:
            v.set_bit(c, 1)
    elif case == "percent-in-use":
        v.flush()
        v.set_percent((v.used_clusters() * 100 // v.nclus + 7) % 101)
        v.f.flush()
        return
    elif case == "volume-dirty":
        v.write(106, (v.flags | 2).to_bytes(2, "little"))
    elif case == "upcase-checksum":
        i, e = v.upcase_entry()
        e = bytearray(e)
        put_le(e, 4, 4, le(e, 4, 4) ^ 0x10000)
        v.root_dir().write_entries(i, e)
    elif case == "no-bitmap-entry":
        v.load_bitmap()
        i, e = v.bitmap_entry()
        v.root_dir().write_entries(i, bytes([T_BITMAP & 0x7F]) + e[1:])
    elif case == "no-upcase-entry":
        v.load_upcase()
        i, e = v.upcase_entry()
        v.root_dir().write_entries(i, bytes([T_UPCASE & 0x7F]) + e[1:])
    elif case == "upcase-mapping":
        i, e = v.upcase_entry()
        e = bytearray(e)
        v.load_upcase()
        raw = bytearray(v.upcase_raw)
        # Find the entry that maps 'a' (0061h) in the stored form.
        idx, k = 0, 0
        while k + 1 < len(raw):
            u = le(raw, k, 2)
            if u == 0xFFFF:
                idx += le(raw, k + 2, 2)
                k += 4
                continue
            if idx == 0x61:
                put_le(raw, k, 2, 0x61)
                break
            idx += 1
            k += 2
        first = le(e, 20, 4)
        clusters, _ = v.chain(first)
        for n, c in enumerate(clusters):
            piece = bytes(raw[n * cs : (n + 1) * cs])
            if piece:
                v.write(v.cluster_off(c), piece)
        put_le(e, 4, 4, table_checksum(raw))
        v.root_dir().write_entries(i, e)
    elif case == "entry-type-80":
        e, _ = victim("type80", 1)
        d = v.root_dir()
        i = d.free_slot(2)
        d.write_entries(i, bytes([0x80]) + bytes(31))
    elif case == "bitmap-too-small":
        i, e = v.bitmap_entry()
        e = bytearray(e)
        put_le(e, 24, 8, (v.nclus + 7) // 8 - 1)
        v.root_dir().write_entries(i, e)
    elif case == "bitmap-too-large":
        i, e = v.bitmap_entry()
        e = bytearray(e)
        put_le(e, 24, 8, (1 << 63) + (v.nclus + 7) // 8)
        v.root_dir().write_entries(i, e)
    elif case == "unknown-critical-secondary":
        d = v.root_dir()
        raw = v.build_set("corrupt-crit", ATTR_ARCHIVE, 0, 0, 0, False,
                          extra=bytes([0xDF]) + bytes(31))
        v.add_set(d, raw)
    elif case == "invalid-name-char":
        e, _ = victim("name", 1)
        units = units_of("corrupt:name")
        e.raw[32 + 3] = len(units)
        put_le(e.raw, 32 + 4, 2, name_hash(v.upcase_units(units)))
        for k, u in enumerate(units):
            put_le(e.raw, 64 + 2 + 2 * k, 2, u)
        v.rewrite_set(e)
    elif case == "duplicate-name":
        v.put("/corrupt-dup.txt", 1, b"a")
        e, _ = v.put("/corrupt-dup.tx_", 1, b"b")
        units = units_of("CORRUPT-DUP.TXT")
        put_le(e.raw, 32 + 4, 2, name_hash(v.upcase_units(units)))
        for k, u in enumerate(units):
            put_le(e.raw, 64 + 2 + 2 * k, 2, u)
        v.rewrite_set(e)
    elif case == "directory-loop":
        parent = v.mkdir("/corrupt-loop")
        sub = v.mkdir("/corrupt-loop/sub")
        v.set_bit(sub.clusters[0], 0)
        sub.entry.set_stream(first=parent.clusters[0])
        v.rewrite_set(sub.entry)
    elif case == "label-length":
        ents = v.special(T_LABEL)
        if ents:
            i, e = ents[0]
            e = bytearray(e)
        else:
            d = v.root_dir()
            i = d.free_slot(1)
            e = bytearray(32)
            e[0] = T_LABEL
        e[1] = 12
        v.root_dir().write_entries(i, e)
    elif corrupt_dir(v, case):
        pass
    elif not checker_case(v, case):
        raise Usage("unknown case %s (see corrupt --list)" % case)
    v.flush()


# exfat-writer cases
def fill_dir(v, path, nclus):
    """A directory of nclus clusters chained in the FAT: its first one full
    of entry sets (the slots left over deleted), the others empty."""
    d = v.mkdir(path)
    k = 0
    while d.free_slot(3) is not None:
        v.put("%s/f%04d" % (path, k), 1, b"x")
        k += 1
    for i in range(d.free_slot(1) or len(d.data) // 32, len(d.data) // 32):
        d.write_entries(i, bytes([0x05]) + bytes(31))
    v.claim(d.clusters, True)
    d.entry.set_stream(flags=d.entry.flags & ~2)
    while len(d.clusters) < nclus:
        v.grow_dir(d)
    v.rewrite_set(d.entry)
    return d


def corrupt_dir(v, case):
    cs = v.csize
    if case == "dir-chain-too-long":
        # DataLength one cluster, the chain two: a writer that trusts the
        # chain puts a new set where no reader looks.
        d = fill_dir(v, "/corrupt-dirlong", 2)
        d.entry.set_stream(dl=cs, vdl=cs)
        v.rewrite_set(d.entry)
    elif case == "dir-chain-too-short":
        d = fill_dir(v, "/corrupt-dirshort", 3)
        v.fat_set(d.clusters[1], EOC)
        v.fat_set(d.clusters[2], 0)
        v.set_bit(d.clusters[2], 0)
    else:
        return False
    return True


# ---------------------------------------------------------------------------
# commands
def cmd_info(v):
    bs = v.boot
    out = [
        ("jump_boot", bs[0:3].hex()),
        ("file_system_name", bs[3:11].decode("ascii", "replace")),
        ("must_be_zero_ok", int(not any(bs[11:64]))),
        ("partition_offset", v.partition_offset),
        ("volume_length", v.volume_length),
        ("fat_offset", v.fat_offset),
        ("fat_length", v.fat_length),
        ("cluster_heap_offset", v.heap_offset),
        ("cluster_count", v.nclus),
        ("root_cluster", v.root_cluster),
        ("serial", "0x%08x" % v.serial),
        ("revision", "%d.%02d" % (v.revision >> 8, v.revision & 0xFF)),
        ("volume_flags", "0x%04x" % v.flags),
        ("active_fat", v.flags & 1),
        ("volume_dirty", (v.flags >> 1) & 1),
        ("media_failure", (v.flags >> 2) & 1),
        ("clear_to_zero", (v.flags >> 3) & 1),
        ("bytes_per_sector_shift", v.bps_shift),
        ("sectors_per_cluster_shift", v.spc_shift),
        ("number_of_fats", v.nfats),
        ("drive_select", "0x%02x" % v.drive_select),
        ("percent_in_use", v.percent),
        ("boot_signature", "0x%04x" % le(bs, 510, 2)),
        ("sector_size", v.bps),
        ("cluster_size", v.csize),
    ]
    reg = v.read(0, 12 * v.bps)
    stored = le(reg, 11 * v.bps, 4)
    calc = boot_checksum(reg, v.bps)
    out.append(("boot_checksum", "0x%08x" % stored))
    out.append(("boot_checksum_ok", int(stored == calc and all(
        le(reg, 11 * v.bps + i, 4) == calc for i in range(0, v.bps, 4)))))
    _, bm = v.bitmap_entry()
    used = v.used_clusters()
    out += [
        ("bitmap_cluster", le(bm, 20, 4)),
        ("bitmap_length", le(bm, 24, 8)),
        ("used_clusters", used),
        ("free_clusters", v.nclus - used),
        ("percent_in_use_computed", used * 100 // v.nclus),
    ]
    _, up = v.upcase_entry()
    v.load_upcase()
    out += [
        ("upcase_cluster", le(up, 20, 4)),
        ("upcase_length", le(up, 24, 8)),
        ("upcase_checksum", "0x%08x" % le(up, 4, 4)),
        ("upcase_checksum_computed", "0x%08x" %
         table_checksum(v.upcase_raw)),
        ("label", v.label()),
    ]
    guids = v.special(T_GUID)
    if guids:
        out.append(("volume_guid", guids[0][1][6:22].hex()))
    for k, val in out:
        print("%s=%s" % (k, val))


def ls_line(v, e):
    cl, prob = v.clusters_of(e.first, e.dl, e.nofatchain)
    t = e.times
    fields = [
        "attr=" + fmt_attr(e.attr),
        "size=%d" % e.dl,
        "vdl=%d" % e.vdl,
        "first=%d" % e.first,
        "nofatchain=%d" % int(e.nofatchain),
        "runs=" + (fmt_runs(cl) + ("!" if prob else "")),
        "ctime=" + fmt_time(t[0], t[3], t[5]),
        "mtime=" + fmt_time(t[1], t[4], t[6]),
        "atime=" + fmt_time(t[2], 0, t[7]),
        "path=" + e.path,
    ]
    print("\t".join(fields))


def cmd_ls(v, path, recursive):
    d, e, _ = v.resolve(path)
    if d is not None and e is None:
        raise Fatal("%s: not found" % path)
    if e is not None and not e.is_dir:
        ls_line(v, e)
        return
    stack = [v.root_dir() if e is None else v.open_dir(e)]
    while stack:
        d = stack.pop(0)
        subs = []
        for ent in sorted(d.sets().values(), key=lambda x: x.index):
            ls_line(v, ent)
            if recursive and ent.is_dir:
                subs.append(v.open_dir(ent))
        stack = subs + stack


def cmd_cat(v, path):
    _, e, _ = v.resolve(path)
    if e is None or e.is_dir:
        raise Fatal("%s: not a file" % path)
    cl, prob = v.clusters_of(e.first, e.dl, e.nofatchain)
    if prob:
        raise Fatal("%s: chain: %s" % (path, prob))
    out = sys.stdout.buffer
    left, valid = e.dl, e.vdl
    for a, b in runs_of(cl):
        data = v.read(v.cluster_off(a), min(left, (b - a + 1) * v.csize))
        take = len(data)
        if valid < take:
            data = data[:valid] + bytes(take - valid)
        out.write(data)
        left -= take
        valid = max(0, valid - take)
    if left:
        raise Fatal("%s: allocation shorter than DataLength" % path)


def writer_cmd(v, args):
    if not args:
        raise Usage("empty writer command")
    cmd, rest = args[0], args[1:]
    if cmd == "mkdir":
        if len(rest) != 1:
            raise Usage("mkdir IMG PATH")
        v.mkdir(rest[0])
    elif cmd == "put":
        path, size, vdl, data = None, None, None, None
        fragmented, chain = False, None
        i = 0
        while i < len(rest):
            a = rest[i]
            if a in ("--size", "--vdl", "--data-from", "--pattern"):
                if i + 1 >= len(rest):
                    raise Usage(a + " needs a value")
                val = rest[i + 1]
                i += 2
                if a == "--size":
                    size = parse_size(val)
                elif a == "--vdl":
                    vdl = parse_size(val)
                elif a == "--data-from":
                    with open(val, "rb") as f:
                        data = f.read()
                else:
                    data = ("pattern", int(val, 0) & 0xFF)
                continue
            if a == "--fragmented":
                fragmented = True
            elif a == "--nofatchain":
                chain = False
            elif a == "--fatchain":
                chain = True
            elif a.startswith("-"):
                raise Usage("put: unknown option " + a)
            elif path is None:
                path = a
            else:
                raise Usage("put: one PATH")
            i += 1
        if path is None or size is None:
            raise Usage("put IMG PATH --size N [...]")
        if data is None:
            data = bytes(i % 251 for i in range(251)) * (size // 251 + 1)
        elif isinstance(data, tuple):
            data = bytes([data[1]]) * size
        data = data[:size] + bytes(max(0, size - len(data)))
        v.put(path, size, data, vdl=vdl, fragmented=fragmented, chain=chain)
    elif cmd == "junk":
        byte = 0xA5
        if rest[:1] == ["--pattern"] and len(rest) == 2:
            byte = int(rest[1], 0) & 0xFF
        elif rest:
            raise Usage("junk IMG [--pattern BYTE]")
        v.junk(byte)
    else:
        raise Usage("unknown writer command " + cmd)


def main(argv):
    if len(argv) < 2:
        raise Usage("usage: exfatref.py COMMAND IMAGE [ARGS] (see the "
                    "docstring)")
    cmd, args = argv[1], argv[2:]
    if cmd == "corrupt" and args == ["--list"]:
        for name, (fsck, warn, desc, *valid) in CASES.items():
            print("%s fsck=%s%s %s" % (name, "yes" if fsck else "no",
                                       " warn=1" if warn else
                                       " valid=1" if valid and valid[0]
                                       else "", desc))
        return 0
    if cmd in ("info", "verify", "cat", "ls") or not args:
        flags = [a for a in args if a in ("-R", "-W")]
        args = [a for a in args if a not in ("-R", "-W")]
        if not args:
            raise Usage("%s needs an IMAGE" % cmd)
        if cmd == "verify":
            try:
                v = Volume(args[0])
            except Fatal as ex:
                # Check what can be checked through the backup boot sector.
                print("error: main boot sector: %s" % ex)
                try:
                    v = Volume(args[0], backup=True)
                except Fatal as ex2:
                    print("error: backup boot sector: %s" % ex2)
                    return 1
                c = Checker(v, args[0])
                c.run()
                return 1
        else:
            v = Volume(args[0])
        if cmd == "info" and len(args) == 1:
            cmd_info(v)
        elif cmd == "verify" and len(args) == 1:
            c = Checker(v, args[0])
            c.run()
            return 1 if c.errors or ("-W" in flags and c.warnings) else 0
        elif cmd == "ls" and len(args) <= 2:
            cmd_ls(v, args[1] if len(args) == 2 else "/", "-R" in flags)
        elif cmd == "cat" and len(args) == 2:
            sys.stdout.flush()
            cmd_cat(v, args[1])
        else:
            raise Usage("bad arguments for " + cmd)
        return 0
    v = Volume(args[0], write=True)
    if cmd == "corrupt":
        if len(args) != 2:
            raise Usage("corrupt IMG CASE")
        if args[1] not in CASES:
            raise Usage("unknown case %s (see corrupt --list)" % args[1])
        corrupt(v, args[1])
    elif cmd == "batch":
        for line in sys.stdin:
            words = shlex.split(line)
            if words:
                writer_cmd(v, words)
        v.flush()
    elif cmd in ("mkdir", "put", "junk"):
        writer_cmd(v, [cmd] + args[1:])
        v.flush()
    else:
        raise Usage("unknown command " + cmd)
    # Close explicitly: the Volume sits in reference cycles, and buffered
    # writes of objects left to interpreter shutdown may never be flushed.
    v.f.close()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except Usage as ex:
        die(str(ex))
    except Fatal as ex:
        die(str(ex))
    except BrokenPipeError:
        sys.exit(1)
