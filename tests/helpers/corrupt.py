#!/usr/bin/env python3
"""corrupt.py: damage a FAT image in one chosen way, for the fatcheck tests.

    corrupt.py IMAGE[@@OFFSET] CASE [ARG...]

It shares no code with fatkit (so a bug in fatkit cannot hide in both), and
prints the in-volume path of every file or directory it damaged, one per
line, or "-" for volume-level damage (the FATs, the boot sector, FSInfo,
lost clusters). Paths match long and short names case-insensitively.

Cases (PATH is absolute inside the volume):
  fat-copy                 one used entry of FAT copy 1 differs from copy 0
  fat-sector-zero COPY PATH [last]
                           copy COPY (from 0) of the FAT sector that holds
                           the entry of PATH's first cluster past FAT
                           sector 0 (with "last": of its last but one;
                           sector 0 if none is past it) all zeros, the
                           other copy intact
  fat-copies-both PATH1 PATH2
                           each FAT copy damaged in the same sector, in
                           another entry: in copy 0, the end mark of
                           PATH1's chain points past the last cluster; in
                           copy 1, PATH2's first link points to a free
                           cluster far off (a differential finding)
  media                    FAT[0] media byte differs from the BPB (every copy)
  fat0-zero [COPY]         FAT[0] all zero (every copy, or copy COPY
                           only, counted from 0)
  fat0-high [COPY]         FAT[0] keeps the media byte, the reserved bits
                           above it cleared (every copy, or copy COPY)
  nfats N                  the BPB's number of FATs becomes N (nothing
                           moves: the root and data stay where they were)
  root-ents N              the BPB's root entry count becomes N (FAT12/16)
  fat1-dirty               FAT[1] clean-shutdown bit cleared (FAT16/32)
  fat1-error               FAT[1] hard-error bit cleared (FAT16/32)
  fat1-value               FAT[1] an end-of-chain mark with its low byte
                           cleared, the flag bits kept (every copy)
  boot-dirty               boot sector dirty flag set (as Linux while mounted)
  backup-boot              one byte of the FAT32 backup boot sector differs
  no-backup                the FAT32 BPB names no backup boot sector
  backup-outside           the FAT32 BPB's backup boot sector is the first
                           sector after the reserved ones (the first FAT's)
  fsinfo-sig               FSInfo lead signature broken
  fsinfo-free              FSInfo free count off by 7
  fsinfo-next              FSInfo next-free hint past the last cluster
  fsinfo-unset             FSInfo free count 0xFFFFFFFF (not known)
  lost                     a 3-cluster chain owned by nobody
  start-range PATH         first cluster past the last cluster
  link-free PATH           first link points to a free cluster
  link-bad PATH            first link points to a cluster marked bad
  link-reserved PATH       first link holds a reserved value
  link-range PATH          first link points past the last cluster
  loop PATH                the last cluster links back to the first
  cross PATH1 PATH2        PATH2's last cluster links into PATH1's second,
                           and PATH2's size covers the shared clusters
  short PATH               size grown by two clusters past the chain
  tail PATH [N]            N (default 2) clusters chained past the size
  dot PATH                 "." of directory PATH points elsewhere
  dotdot PATH              ".." of directory PATH points elsewhere
  no-dot PATH              "." of directory PATH is missing
  dotdot-renamed PATH      ".." of directory PATH renamed DOTDOT: an entry
                           in its slot that aliases the parent
  no-dotdot PATH           ".." of directory PATH is missing
  dot-attr PATH [WHICH]    "." (or WHICH, "..") of directory PATH loses
                           its directory attribute
  dot-name PATH [WHICH]    "." (or "..") of directory PATH gets the name
                           ".!" (start cluster and attribute kept)
  dot-swap PATH            directory PATH's "." slot holds ".." (the
                           parent's cluster), so it has two ".." and no "."
  dot-entries PATH         directory PATH's first two entries (long names
                           with them) take the first slots, then ".." and
                           "." follow: dosfstools' test image
                           check-dot_entries, on any directory
  dots-removed PATH        directory PATH's "." and ".." removed, every
                           later slot two places nearer the start (two
                           zero slots at the end): its first entry (or its
                           long name) sits in slot 0
  dir-loop PATH ANCESTOR   directory PATH's entry points at ANCESTOR's chain
  dir-size PATH            directory PATH has a non-zero size
  dup PATH1 PATH2          PATH2 (same directory) gets PATH1's short name
                           (PATH2's entry then shows as PATH1 too)
  lfn-sum PATH             PATH's long-name slots carry a wrong checksum
  lfn-seq PATH             PATH's first long-name slot has a wrong ordinal
  lfn-unfinished PATH      PATH's long-name slots numbered one higher each,
                           so the name lacks its last piece when the short
                           entry comes
  lfn-empty PATH           PATH's long-name slots hold an empty name
                           (every character 0)
  orphan-lfn PATH          PATH's short slot deleted, its long-name slots
                           left behind (and its clusters lost)
  bad-char PATH            PATH's short name gets a '?' (checksums kept)
  lower-name PATH          PATH's short name gets a lower-case letter, no
                           case flags (checksums kept)
  lead-space PATH          PATH's short name starts with a space
                           (checksums kept)
  punct-name PATH          PATH's short name gets a '+', a character only
                           long names may hold (checksums kept)
  lower-short PATH         PATH's short name in lower case without the NT
                           case flags (checksums kept)
  long-is PATH1 PATH2      PATH2's long name becomes PATH1's name (one
                           long-name slot), so the two entries share it
  after-end PATH           PATH moves behind the directory's end marker
                           (after what earlier calls moved there)
  endless-dir PATH         directory PATH grows to more than 65536 slots
  deep-loop PATH           directory PATH holds an entry for itself, so the
                           tree nests without end
  nest PATH N              N more directories nested one in another under
                           directory PATH (a tree deeper than any real one)
  label                    the boot sector's label differs from the root's
  root-label TEXT [same]   the root's volume label entry (made in the first
                           free root slot if there is none) holds TEXT,
                           padded with spaces; Python escapes such as \x01
                           give any byte.  The boot sector's label (and
                           its FAT32 backup's) becomes TEXT too with
                           "same", else it is left
  lfn-field PATH [type]    PATH's first long-name slot gets a first-cluster
                           field (bytes 26-27) of 0x0042, or with "type" a
                           type byte (12) of 0x01 (checksums kept)
  fat-garbage SEED         every FAT entry past the first 2 random (the same
                           in every copy)
  dir-garbage PATH SEED    directory PATH's slots (after "." and "..")
                           random bytes
"""

import struct
import sys

DELETED = 0xE5
ATTR_LFN = 0x0F
ATTR_DIR = 0x10
ATTR_VOLUME = 0x08


def die(msg):
    print("corrupt.py: " + msg, file=sys.stderr)
    sys.exit(2)


def le(b, off, n):
    return int.from_bytes(b[off:off + n], "little")


def lfn_checksum(raw):
    s = 0
    for c in raw:
        s = (((s & 1) << 7) + (s >> 1) + c) & 0xFF
    return s


class Entry:
    """A directory entry: its short slot and the long-name slots before it."""

    def __init__(self, name, short, raw, attr, first, size, offs, slots):
        self.name, self.short, self.raw = name, short, raw
        self.attr, self.first, self.size = attr, first, size
        self.offs = offs      # volume offsets of every slot, short slot last
        self.slots = slots    # slot indexes in the directory, same order

    @property
    def off(self):
        return self.offs[-1]

    def is_dir(self):
        return bool(self.attr & ATTR_DIR)


class Volume:
    def __init__(self, arg):
        path, _, off = arg.partition("@@")
        self.base = 0
        if off:
            mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
            unit = off[-1].upper()
            self.base = int(off[:-1]) * mult[unit] if unit in mult \
                else int(off)
        self.f = open(path, "r+b")
        bs = self.read(0, 512)
        self.bps = le(bs, 11, 2)
        self.spc = bs[13]
        self.rsvd = le(bs, 14, 2)
        self.nfats = bs[16]
        self.root_ents = le(bs, 17, 2)
        tot = le(bs, 19, 2) or le(bs, 32, 4)
        fatsz16 = le(bs, 22, 2)
        self.fat_secs = fatsz16 or le(bs, 36, 4)
        self.media = bs[21]
        root_secs = (self.root_ents * 32 + self.bps - 1) // self.bps
        self.fat_off = self.rsvd * self.bps
        self.root_off = self.fat_off + self.nfats * self.fat_secs * self.bps
        self.data_off = self.root_off + root_secs * self.bps
        self.clus_len = self.bps * self.spc
        self.nclus = (tot - self.rsvd - self.nfats * self.fat_secs -
                      root_secs) // self.spc
        self.bits = 12 if self.nclus < 4085 else 16 if self.nclus < 65525 \
            else 32
        self.root_clus = le(bs, 44, 4) if self.bits == 32 else 0
        self.fsinfo_sec = le(bs, 48, 2) if self.bits == 32 else 0
        self.backup_sec = le(bs, 50, 2) if self.bits == 32 else 0
        self.eoc = {12: 0xFFF, 16: 0xFFFF, 32: 0x0FFFFFFF}[self.bits]
        self.bad = {12: 0xFF7, 16: 0xFFF7, 32: 0x0FFFFFF7}[self.bits]

    # ---- raw I/O ------------------------------------------------------
    def read(self, off, n):
        self.f.seek(self.base + off)
        return self.f.read(n)

    def write(self, off, data):
        self.f.seek(self.base + off)
        self.f.write(data)

    # ---- FAT ----------------------------------------------------------
    def get(self, clus, copy=0):
        base = self.fat_off + copy * self.fat_secs * self.bps
        if self.bits == 12:
            v = le(self.read(base + clus * 3 // 2, 2), 0, 2)
            return v >> 4 if clus & 1 else v & 0xFFF
        if self.bits == 16:
            return le(self.read(base + clus * 2, 2), 0, 2)
        return le(self.read(base + clus * 4, 4), 0, 4) & 0x0FFFFFFF

    def put(self, clus, val, copies=None):
        for copy in range(self.nfats) if copies is None else copies:
            base = self.fat_off + copy * self.fat_secs * self.bps
            if self.bits == 12:
                off = base + clus * 3 // 2
                v = le(self.read(off, 2), 0, 2)
                v = (v & 0x000F) | (val << 4) if clus & 1 \
                    else (v & 0xF000) | val
                self.write(off, struct.pack("<H", v))
            elif self.bits == 16:
                self.write(base + clus * 2, struct.pack("<H", val))
            else:
                old = le(self.read(base + clus * 4, 4), 0, 4)
                self.write(base + clus * 4,
                           struct.pack("<I", (old & 0xF0000000) | val))

    def chain(self, first):
        out = []
        c = first
        while 2 <= c < self.nclus + 2 and len(out) <= self.nclus:
            out.append(c)
            c = self.get(c)
        return out

    def free_clusters(self, n, after=2):
        out = []
        for c in range(after, self.nclus + 2):
            if self.get(c) == 0:
                out.append(c)
                if len(out) == n:
                    return out
        die("not enough free clusters")

    def took(self, n):
        """@n free clusters were allocated: keep the FSInfo free count true,
        so a case shows only its own defect."""
        if not self.fsinfo_sec:
            return
        off = self.fsinfo_sec * self.bps + 488
        free = le(self.read(off, 4), 0, 4)
        if free != 0xFFFFFFFF:
            self.write(off, struct.pack("<I", free - n))

    def clus_off(self, clus):
        return self.data_off + (clus - 2) * self.clus_len

    # ---- directories --------------------------------------------------
    def dir_slots(self, first):
        """(volume offset, index) of every slot of directory @first."""
        if first == 0:
            for i in range(self.root_ents):
                yield self.root_off + i * 32, i
            return
        i = 0
        for c in self.chain(first):
            for k in range(self.clus_len // 32):
                yield self.clus_off(c) + k * 32, i
                i += 1

    def entries(self, first):
        lfn, offs, slots = {}, [], []
        for off, idx in self.dir_slots(first):
            e = self.read(off, 32)
            if e[0] == 0:
                return
            if e[0] == DELETED:
                lfn, offs, slots = {}, [], []
                continue
            if e[11] & 0x3F == ATTR_LFN:
                ords = e[0] & 0x3F
                units = [le(e, p, 2) for p in
                         (1, 3, 5, 7, 9, 14, 16, 18, 20, 22, 24, 28, 30)]
                lfn[ords] = units
                offs.append(off)
                slots.append(idx)
                continue
            raw = e[:11]
            base = raw[:8].decode("latin-1").rstrip()
            ext = raw[8:].decode("latin-1").rstrip()
            short = base + ("." + ext if ext else "")
            name = short
            if lfn:
                units = []
                for k in sorted(lfn):
                    units += lfn[k]
                if 0 in units:
                    units = units[:units.index(0)]
                name = b"".join(struct.pack("<H", u) for u in units) \
                    .decode("utf-16-le", "replace")
            first_clus = le(e, 26, 2)
            if self.bits == 32:
                first_clus |= le(e, 20, 2) << 16
            yield Entry(name, short, raw, e[11], first_clus, le(e, 28, 4),
                        offs + [off], slots + [idx])
            lfn, offs, slots = {}, [], []

    def lookup(self, path):
        """The entry of @path and the first cluster of its directory."""
        dir_clus, ent = self.root_clus, None
        parts = [p for p in path.split("/") if p]
        if not parts:
            die("no entry for the root")
        for i, part in enumerate(parts):
            for e in self.entries(dir_clus):
                if e.attr & ATTR_VOLUME:
                    continue
                if part.lower() in (e.name.lower(), e.short.lower()):
                    ent = e
                    break
            else:
                die("no such path: " + path)
            if i + 1 < len(parts):
                dir_clus = ent.first
        return ent, dir_clus

    def set_first(self, ent, clus):
        self.write(ent.off + 26, struct.pack("<H", clus & 0xFFFF))
        if self.bits == 32:
            self.write(ent.off + 20, struct.pack("<H", clus >> 16))

    def set_size(self, ent, size):
        self.write(ent.off + 28, struct.pack("<I", size))


def file_chain(vol, path, need=1):
    ent, _ = vol.lookup(path)
    ch = vol.chain(ent.first)
    if len(ch) < need:
        die("%s has %d clusters, the case needs %d" % (path, len(ch), need))
    return ent, ch


def case_fat_copy(vol):
    if vol.nfats < 2:
        die("one FAT copy only")
    c = next(c for c in range(2, vol.nclus + 2) if vol.get(c) != 0)
    vol.put(c, vol.get(c) ^ 1 if vol.get(c) != vol.eoc else 0, copies=[1])
    return ["-"]


def case_fat_sector_zero(vol, copy, path, which="first"):
    if vol.nfats < 2:
        die("one FAT copy only")
    _, ch = file_chain(vol, path, 2)
    per = {12: 1.5, 16: 2, 32: 4}[vol.bits]
    for c in ch[:-1] if which == "first" else ch[-2::-1]:
        sec = int(c * per) // vol.bps
        if sec >= 1:
            break
    else:
        sec = 0  # FAT[0] and FAT[1] go too: the other copy keeps them
    base = vol.fat_off + int(copy) * vol.fat_secs * vol.bps
    vol.write(base + sec * vol.bps, bytes(vol.bps))
    return [path]


def case_fat_copies_both(vol, path1, path2):
    if vol.nfats < 2:
        die("one FAT copy only")
    _, ch1 = file_chain(vol, path1)
    _, ch2 = file_chain(vol, path2, 2)
    per = {12: 1.5, 16: 2, 32: 4}[vol.bits]
    if int(ch1[-1] * per) // vol.bps != int(ch2[0] * per) // vol.bps:
        die("the two entries lie in different FAT sectors")
    vol.put(ch1[-1], vol.nclus + 2 + 3, copies=[0])
    vol.put(ch2[0], vol.free_clusters(1, after=(vol.nclus + 2) // 2)[0],
            copies=[1])
    return [path1, path2]


def case_media(vol):
    other = 0xF0 if vol.media != 0xF0 else 0xF8
    vol.put(0, (vol.get(0) & ~0xFF) | other)
    return ["-"]


def case_fat0(vol, kind, copy=None):
    copies = None if copy is None else [int(copy)]
    if kind == "zero":
        vol.put(0, 0, copies)
    else:
        vol.put(0, vol.media, copies)
    return ["-"]


def case_nfats(vol, n):
    vol.write(16, bytes([int(n)]))
    return ["-"]


def case_root_ents(vol, n):
    if vol.bits == 32:
        die("FAT32 has no fixed root")
    vol.write(17, struct.pack("<H", int(n)))
    return ["-"]


def flag_bits(vol):
    return {16: 0xC000, 32: 0x0C000000}.get(vol.bits, 0)


def case_fat1_error(vol):
    if not flag_bits(vol):
        die("FAT12 has no hard-error bit")
    vol.put(1, vol.get(1) & ~(flag_bits(vol) >> 1 & flag_bits(vol)))
    return ["-"]


def case_fat1_value(vol):
    vol.put(1, vol.eoc & ~0xFF | flag_bits(vol))
    return ["-"]


def case_fat1_dirty(vol):
    bit = {16: 0x8000, 32: 0x08000000}.get(vol.bits)
    if not bit:
        die("FAT12 has no clean-shutdown bit")
    vol.put(1, vol.get(1) & ~bit)
    return ["-"]


def case_boot_dirty(vol):
    off = 65 if vol.bits == 32 else 37
    vol.write(off, bytes([vol.read(off, 1)[0] | 1]))
    return ["-"]


def case_backup_boot(vol):
    if not vol.backup_sec:
        die("no backup boot sector")
    off = vol.backup_sec * vol.bps + 3     # the OEM name
    vol.write(off, bytes([vol.read(off, 1)[0] ^ 0x20]))
    return ["-"]


def case_no_backup(vol):
    if vol.bits != 32:
        die("only FAT32 has a backup boot sector")
    vol.write(50, struct.pack("<H", 0))
    return ["-"]


def case_backup_outside(vol):
    if vol.bits != 32:
        die("only FAT32 has a backup boot sector")
    vol.write(50, struct.pack("<H", vol.rsvd))
    return ["-"]


def fsinfo_off(vol):
    if not vol.fsinfo_sec:
        die("no FSInfo sector")
    return vol.fsinfo_sec * vol.bps


def case_fsinfo_sig(vol):
    vol.write(fsinfo_off(vol), b"XXXX")
    return ["-"]


def case_fsinfo_free(vol):
    off = fsinfo_off(vol) + 488
    vol.write(off, struct.pack("<I", (le(vol.read(off, 4), 0, 4) + 7)
                               & 0xFFFFFFFF))
    return ["-"]


def case_fsinfo_unset(vol):
    vol.write(fsinfo_off(vol) + 488, struct.pack("<I", 0xFFFFFFFF))
    return ["-"]


def case_fsinfo_next(vol):
    vol.write(fsinfo_off(vol) + 492, struct.pack("<I", vol.nclus + 100))
    return ["-"]


def case_lost(vol):
    cs = vol.free_clusters(3, after=(vol.nclus + 2) // 2)
    vol.put(cs[0], cs[1])
    vol.put(cs[1], cs[2])
    vol.put(cs[2], vol.eoc)
    vol.took(3)
    return ["-"]


def case_start_range(vol, path):
    ent, _ = vol.lookup(path)
    vol.set_first(ent, vol.nclus + 5)
    return [path]


def case_link(vol, path, kind):
    ent, ch = file_chain(vol, path, 2)
    if kind == "free":
        target = vol.free_clusters(1, after=(vol.nclus + 2) // 2)[0]
    elif kind == "bad":
        target = vol.free_clusters(1, after=(vol.nclus + 2) // 2)[0]
        vol.put(target, vol.bad)
        vol.took(1)
    elif kind == "reserved":
        target = 1
    else:
        target = vol.nclus + 2 + 3
        if target >= vol.bad - 8:
            die("no out-of-range value below the reserved ones")
    vol.put(ch[0], target)
    return [path]


def case_loop(vol, path):
    ent, ch = file_chain(vol, path, 2)
    vol.put(ch[-1], ch[0])
    return [path]


def case_cross(vol, path1, path2):
    _, ch1 = file_chain(vol, path1, 2)
    ent2, ch2 = file_chain(vol, path2, 1)
    vol.put(ch2[-1], ch1[1])
    # Both sizes cover the shared clusters, so neither is merely too long.
    vol.set_size(ent2, (len(ch2) + len(ch1) - 1) * vol.clus_len)
    return [path1, path2]


def case_short(vol, path):
    ent, ch = file_chain(vol, path, 1)
    vol.set_size(ent, len(ch) * vol.clus_len + 2 * vol.clus_len - 1)
    return [path]


def case_tail(vol, path, n="2"):
    ent, ch = file_chain(vol, path, 0)
    cs = vol.free_clusters(int(n), after=(vol.nclus + 2) // 2)
    for a, b in zip(cs, cs[1:] + [vol.eoc]):
        vol.put(a, b)
    if ch:
        vol.put(ch[-1], cs[0])
    else:
        vol.set_first(ent, cs[0])
    vol.took(len(cs))
    return [path]


def dot_entry(vol, path, which):
    ent, _ = vol.lookup(path)
    if not ent.is_dir():
        die(path + " is not a directory")
    for e in vol.entries(ent.first):
        if e.raw == which.ljust(11).encode():
            return ent, e
    die(path + " has no " + which)


def case_dot(vol, path, which="."):
    ent, dot = dot_entry(vol, path, which)
    other = vol.free_clusters(1)[0]
    vol.set_first(dot, other)
    return [path]


def case_no_dot(vol, path):
    ent, dot = dot_entry(vol, path, ".")
    vol.write(dot.off, bytes([DELETED]))
    return [path]


def case_dotdot_renamed(vol, path):
    ent, dotdot = dot_entry(vol, path, "..")
    vol.write(dotdot.off, b"DOTDOT     ")
    return [path]


def case_no_dotdot(vol, path):
    ent, dotdot = dot_entry(vol, path, "..")
    vol.write(dotdot.off, bytes([DELETED]))
    return [path]


def case_dot_attr(vol, path, which="."):
    ent, dot = dot_entry(vol, path, which)
    vol.write(dot.off + 11, bytes([dot.attr & ~ATTR_DIR]))
    return [path]


def case_dot_name(vol, path, which="."):
    ent, dot = dot_entry(vol, path, which)
    vol.write(dot.off, b".!")
    return [path]


def case_dot_swap(vol, path):
    ent, dot = dot_entry(vol, path, ".")
    _, dotdot = dot_entry(vol, path, "..")
    vol.write(dot.off, vol.read(dotdot.off, 32))
    return [path]


def dir_with_dots(vol, path):
    """Directory PATH's entry, its slots' offsets and their bytes; its
    first two slots must be "." and ".."."""
    ent, _ = vol.lookup(path)
    if not ent.is_dir():
        die(path + " is not a directory")
    offs = [off for off, _ in vol.dir_slots(ent.first)]
    data = [vol.read(off, 32) for off in offs]
    if data[0][:11] != b".".ljust(11) or data[1][:11] != b"..".ljust(11):
        die(path + " does not begin with '.' and '..'")
    return ent, offs, data


def case_dot_entries(vol, path):
    ent, offs, data = dir_with_dots(vol, path)
    ents = [e for e in vol.entries(ent.first)
            if e.raw not in (b".".ljust(11), b"..".ljust(11))][:2]
    if len(ents) < 2 or ents[0].slots[0] != 2 or \
            ents[1].slots[0] != ents[0].slots[-1] + 1:
        die(path + " does not hold two entries right after '..'")
    new = [data[k] for k in ents[0].slots + ents[1].slots] + \
        [data[1], data[0]]
    for off, d in zip(offs, new):
        vol.write(off, d)
    return [path]


def case_dots_removed(vol, path):
    ent, offs, data = dir_with_dots(vol, path)
    for off, d in zip(offs, data[2:] + [bytes(32)] * 2):
        vol.write(off, d)
    return [path]


def case_dir_loop(vol, path, ancestor):
    ent, _ = vol.lookup(path)
    anc, _ = vol.lookup(ancestor)
    vol.set_first(ent, anc.first)
    return [path]


def case_dir_size(vol, path):
    ent, _ = vol.lookup(path)
    vol.set_size(ent, 4096)
    return [path]


def case_dup(vol, path1, path2):
    e1, d1 = vol.lookup(path1)
    e2, d2 = vol.lookup(path2)
    if d1 != d2:
        die("the two paths must share a directory")
    vol.write(e2.off, e1.raw)
    fix_lfn_sum(vol, e2, e1.raw)
    return [path1, path2]


def fix_lfn_sum(vol, ent, raw):
    for off in ent.offs[:-1]:
        vol.write(off + 13, bytes([lfn_checksum(raw)]))


def long_entry(vol, path):
    ent, _ = vol.lookup(path)
    if len(ent.offs) < 2:
        die(path + " has no long name")
    return ent


def case_lfn_sum(vol, path):
    ent = long_entry(vol, path)
    for off in ent.offs[:-1]:
        vol.write(off + 13, bytes([vol.read(off + 13, 1)[0] ^ 0x5A]))
    return [path]


def case_lfn_seq(vol, path):
    ent = long_entry(vol, path)
    off = ent.offs[0]
    vol.write(off, bytes([(vol.read(off, 1)[0] & 0x40) | 0x1F]))
    return [path]


def case_lfn_unfinished(vol, path):
    ent = long_entry(vol, path)
    n = len(ent.offs) - 1
    for k, off in enumerate(ent.offs[:-1]):
        vol.write(off, bytes([(0x40 if k == 0 else 0) | (n + 1 - k)]))
    return [path]


def case_lfn_empty(vol, path):
    ent = long_entry(vol, path)
    for off in ent.offs[:-1]:
        for p in (1, 3, 5, 7, 9, 14, 16, 18, 20, 22, 24, 28, 30):
            vol.write(off + p, b"\0\0")
    return [path]


def case_orphan_lfn(vol, path):
    ent = long_entry(vol, path)
    vol.write(ent.off, bytes([DELETED]))
    return [path.rsplit("/", 1)[0] or "/", path]


def case_bad_char(vol, path):
    ent, _ = vol.lookup(path)
    raw = bytearray(ent.raw)
    raw[1] = ord("?")
    vol.write(ent.off, bytes(raw))
    fix_lfn_sum(vol, ent, bytes(raw))
    return [path]


def case_short_byte(vol, path, pos, byte):
    """Byte @pos of PATH's short name becomes @byte; long names still
    match it."""
    ent, _ = vol.lookup(path)
    raw = bytearray(ent.raw)
    raw[pos] = byte
    vol.write(ent.off, bytes(raw))
    fix_lfn_sum(vol, ent, bytes(raw))
    return [path]


def case_lower_short(vol, path):
    ent, _ = vol.lookup(path)
    raw = ent.raw.lower()
    if raw == ent.raw:
        die(path + "'s short name has no letters")
    vol.write(ent.off, raw + bytes([ent.attr, 0]))
    fix_lfn_sum(vol, ent, raw)
    return [path]


def lfn_slot(ordinal, name, checksum):
    units = [ord(c) for c in name] + [0]
    units += [0xFFFF] * (13 - len(units))
    b = bytearray(32)
    b[0] = ordinal
    b[11] = ATTR_LFN
    b[13] = checksum
    for k, p in enumerate((1, 3, 5, 7, 9, 14, 16, 18, 20, 22, 24, 28, 30)):
        b[p:p + 2] = struct.pack("<H", units[k])
    return bytes(b)


def case_long_is(vol, path1, path2):
    e1, d1 = vol.lookup(path1)
    e2, d2 = vol.lookup(path2)
    if d1 != d2:
        die("the two paths must share a directory")
    name = path1.rsplit("/", 1)[1]
    if len(name) > 12 or len(e2.offs) < 2:
        die(path2 + " has no long name, or " + path1 + "'s is too long")
    for off in e2.offs[:-2]:
        vol.write(off, bytes([DELETED]))
    vol.write(e2.offs[-2], lfn_slot(0x41, name, lfn_checksum(e2.raw)))
    return [path1, path2]


def case_after_end(vol, path):
    ent, dir_clus = vol.lookup(path)
    slots = list(vol.dir_slots(dir_clus))
    n = len(ent.offs)
    end = next((i for i, (off, _) in enumerate(slots)
                if vol.read(off, 1)[0] == 0), None)
    # Right after the marker, or after what earlier calls hid there.
    at = None if end is None else end + 1
    while at is not None and at + n <= len(slots) and \
            any(vol.read(slots[k][0], 1)[0] for k in range(at, at + n)):
        at += 1
    if at is None or at + n > len(slots):
        die("no room after the end marker of the directory of " + path)
    data = [vol.read(off, 32) for off in ent.offs]
    for off in ent.offs:
        vol.write(off, bytes([DELETED]))
    for k, d in enumerate(data):
        vol.write(slots[at + k][0], d)
    return [path]


def case_endless_dir(vol, path):
    ent, _ = vol.lookup(path)
    ch = vol.chain(ent.first)
    need = 65536 * 32 // vol.clus_len + 1 - len(ch)
    cs = vol.free_clusters(need)
    for a, b in zip(cs, cs[1:] + [vol.eoc]):
        vol.put(a, b)
    vol.put(ch[-1], cs[0])
    vol.took(len(cs))
    return [path]


def case_deep_loop(vol, path):
    ent, _ = vol.lookup(path)
    slots = [off for off, _ in vol.dir_slots(ent.first)]
    for off in slots:
        if vol.read(off, 1)[0] in (0, DELETED):
            vol.write(off, b"LOOP       " + bytes([ATTR_DIR]) +
                      vol.read(ent.off + 12, 20))
            return [path.rstrip("/") + "/LOOP"]
    die("no free slot in " + path)


def new_dir(vol, clus, parent, name):
    """Write a one-cluster directory at @clus with "." and ".."."""
    vol.write(vol.clus_off(clus), bytes(vol.clus_len))
    dot = bytearray(32)
    dot[0:11] = b".          "
    dot[11] = ATTR_DIR
    dotdot = bytearray(dot)
    dotdot[0:11] = b"..         "
    for e, c in ((dot, clus), (dotdot, parent)):
        e[26:28] = struct.pack("<H", c & 0xFFFF)
        e[20:22] = struct.pack("<H", c >> 16 if vol.bits == 32 else 0)
    vol.write(vol.clus_off(clus), bytes(dot) + bytes(dotdot))
    vol.put(clus, vol.eoc)
    ent = bytearray(32)
    ent[0:11] = name.ljust(11).encode()
    ent[11] = ATTR_DIR
    ent[26:28] = struct.pack("<H", clus & 0xFFFF)
    ent[20:22] = struct.pack("<H", clus >> 16 if vol.bits == 32 else 0)
    return bytes(ent)


def case_nest(vol, path, n):
    ent, _ = vol.lookup(path)
    parent = ent.first
    cs = vol.free_clusters(int(n))
    for c in cs:
        e = new_dir(vol, c, parent, "D")
        # the new directory's entry goes in its parent's third slot
        vol.write(vol.clus_off(parent) + 2 * 32, e)
        parent = c
    vol.took(len(cs))
    return [path]


def case_label(vol):
    off = 71 if vol.bits == 32 else 43
    vol.write(off, b"OTHERLABEL ")
    return ["-"]


def case_root_label(vol, text, same=None):
    import codecs
    raw = codecs.escape_decode(text.encode("latin-1"))[0]
    if len(raw) > 11:
        die("a label has 11 bytes at most")
    raw = raw.ljust(11, b" ")
    label = free = None
    for off, _ in vol.dir_slots(vol.root_clus):
        e = vol.read(off, 32)
        if e[0] in (0, DELETED):
            free = off if free is None else free
            if e[0] == 0:
                break
        elif e[11] & 0x3F != ATTR_LFN and \
                e[11] & (ATTR_VOLUME | ATTR_DIR) == ATTR_VOLUME:
            label = off
            break
    if label is not None:
        vol.write(label, raw)
    elif free is not None:
        vol.write(free, raw + bytes([ATTR_VOLUME]) + bytes(20))
    else:
        die("no free slot in the root for a label")
    if same == "same":   # and in the FAT32 backup, as labellers do
        for sec in {0, vol.backup_sec}:
            vol.write(sec * vol.bps + (71 if vol.bits == 32 else 43), raw)
    elif same is not None:
        die("root-label: the third argument is 'same' or nothing")
    return ["-"]


def case_lfn_field(vol, path, which="start"):
    ent = long_entry(vol, path)
    if which == "type":
        vol.write(ent.offs[0] + 12, b"\x01")
    else:
        vol.write(ent.offs[0] + 26, struct.pack("<H", 0x42))
    return [path]


def rand_bytes(seed, n):
    import hashlib
    out = bytearray()
    i = 0
    while len(out) < n:
        out += hashlib.sha256(("%s:%d" % (seed, i)).encode()).digest()
        i += 1
    return bytes(out[:n])


def case_fat_garbage(vol, seed):
    start = 2 * vol.bits // 8
    n = vol.fat_secs * vol.bps - start
    data = rand_bytes(seed, n)
    for copy in range(vol.nfats):
        vol.write(vol.fat_off + copy * vol.fat_secs * vol.bps + start, data)
    return ["-"]


def case_dir_garbage(vol, path, seed):
    ent, _ = vol.lookup(path)
    offs = [off for off, _ in vol.dir_slots(ent.first)][2:]
    data = rand_bytes(seed, 32 * len(offs))
    for k, off in enumerate(offs):
        vol.write(off, data[32 * k:32 * k + 32])
    return [path]


CASES = {
    "nest": case_nest, "label": case_label,
    "root-label": case_root_label, "lfn-field": case_lfn_field,
    "fat-garbage": case_fat_garbage, "dir-garbage": case_dir_garbage,
    "fat-copy": case_fat_copy, "media": case_media,
    "fat-sector-zero": case_fat_sector_zero,
    "fat0-zero": lambda v, *c: case_fat0(v, "zero", *c),
    "fat0-high": lambda v, *c: case_fat0(v, "high", *c),
    "nfats": case_nfats, "root-ents": case_root_ents,
    "fat1-error": case_fat1_error, "fat1-value": case_fat1_value,
    "no-backup": case_no_backup, "fsinfo-unset": case_fsinfo_unset,
    "backup-outside": case_backup_outside,
    "lower-name": lambda v, p: case_short_byte(v, p, 1, ord("e")),
    "lead-space": lambda v, p: case_short_byte(v, p, 0, ord(" ")),
    "punct-name": lambda v, p: case_short_byte(v, p, 1, ord("+")),
    "fat1-dirty": case_fat1_dirty, "boot-dirty": case_boot_dirty,
    "backup-boot": case_backup_boot, "fsinfo-sig": case_fsinfo_sig,
    "fsinfo-free": case_fsinfo_free, "fsinfo-next": case_fsinfo_next,
    "lost": case_lost, "start-range": case_start_range,
    "link-free": lambda v, p: case_link(v, p, "free"),
    "link-bad": lambda v, p: case_link(v, p, "bad"),
    "link-reserved": lambda v, p: case_link(v, p, "reserved"),
    "link-range": lambda v, p: case_link(v, p, "range"),
    "loop": case_loop, "cross": case_cross, "short": case_short,
    "tail": case_tail, "dot": case_dot,
    "dotdot": lambda v, p: case_dot(v, p, ".."),
    "no-dot": case_no_dot, "dotdot-renamed": case_dotdot_renamed,
    "no-dotdot": case_no_dotdot, "dot-attr": case_dot_attr,
    "dot-name": case_dot_name, "dot-swap": case_dot_swap,
    "dot-entries": case_dot_entries, "dots-removed": case_dots_removed,
    "lower-short": case_lower_short, "long-is": case_long_is,
    "dir-loop": case_dir_loop, "fat-copies-both": case_fat_copies_both,
    "dir-size": case_dir_size, "dup": case_dup, "lfn-sum": case_lfn_sum,
    "lfn-seq": case_lfn_seq, "lfn-unfinished": case_lfn_unfinished, "orphan-lfn": case_orphan_lfn,
    "lfn-empty": case_lfn_empty, "bad-char": case_bad_char,
    "after-end": case_after_end, "endless-dir": case_endless_dir,
    "deep-loop": case_deep_loop,
}


def main(argv):
    if len(argv) < 3 or argv[2] not in CASES:
        die("usage: corrupt.py IMAGE[@@OFFSET] CASE [ARG...] (cases: %s)"
            % " ".join(sorted(CASES)))
    vol = Volume(argv[1])
    try:
        paths = CASES[argv[2]](vol, *argv[3:])
    except TypeError as e:
        die("%s: %s" % (argv[2], e))
    vol.f.close()
    for p in paths:
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
