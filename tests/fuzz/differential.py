#!/usr/bin/env python3
"""differential.py: judge fatkit's programs against tools we did not write,
on mutated FAT and exFAT images (`make differential`; see README.md in
this folder, "Differential run").

    differential.py [--build DIR] [--seconds N] [--seed N] [--out DIR]
                    [--keep N]

It makes small base images of every family and geometry (mkfs.fat filled
by mtools; mkfs.exfat filled by tests/helpers/exfatref.py or by
fatprealloc), checks that `fatls -R -a --json` lists on every clean image
what `mdir -/ -a` (FAT) or the reference reader (exFAT) lists, then, until
the time is up, mutates a copy of a random base (byte flips in the boot
sector, FATs, directories, bitmap or up-case table; or a field-aware
case of corrupt.py or exfatref.py's corruptor, sometimes with flips on
top) and judges four things:

  verdict   `fatcheck -n` (exit 0, or 4/8) against `fsck.fat -n` or
            `fsck.exfat -n` (and, for exFAT, the reference checker as a
            tie-breaker); known, documented differences are classified
  listing   on a mutated image every judge calls clean, fatls against
            mdir or the reference reader again
  repair    `fatcheck -r` on a copy: a volume it calls repaired is clean
            to fsck and to fatcheck, a refusal (exit 8) wrote nothing,
            and every file fsck did not complain about (before the
            repair) reads the same bytes after it (mtools, or the
            reference reader)
  writer    `fatprealloc -p IMG /NEW/f.bin 64K` on a copy either refuses
            with the image byte-identical, or succeeds with no fsck
            finding the image did not have, the new file reading as
            64 KiB of zeros and every such intact file unchanged

Each disagreement is written to OUT/KIND/NNNNNN.img (the mutated image,
minimised where cheap: byte flips that do not matter are undone) with
NNNNNN.txt (the one-line reason, the mutation and the commands that show
it). A summary table ends the run (and is kept in OUT/summary.txt).
Standard library only; needs mkfs.fat, fsck.fat, mtools, mkfs.exfat and
fsck.exfat.
"""

import argparse
import hashlib
import json
import os
import random
import re
import resource
import shlex
import signal
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
HELPERS = os.path.join(ROOT, "tests", "helpers")
sys.path.insert(0, HELPERS)
sys.dont_write_bytecode = True  # no __pycache__ in the source tree

import exfatref  # noqa: E402

ENV = dict(os.environ, MTOOLS_SKIP_CHECK="1", LC_ALL="C.UTF-8", TZ="UTC",
           SOURCE_DATE_EPOCH="1700000000")
TIMEOUT = 60          # seconds per program run; more is a hang
NEW_PATH = "/NEW/f.bin"
NEW_SIZE = 64 * 1024
MAX_DEPTH = 32        # the bases nest three deep


# ---------------------------------------------------------------------------
# running programs
class Run:
    def __init__(self, argv, rc, out, err, secs):
        self.argv, self.rc, self.out, self.err = argv, rc, out, err
        self.secs = secs

    @property
    def crashed(self):
        return self.rc is not None and self.rc < 0

    @property
    def hung(self):
        return self.rc is None

    def text(self):
        return self.out.decode("utf-8", "replace") + \
            self.err.decode("utf-8", "replace")


def run(argv, stdin=None, timeout=TIMEOUT):
    t = time.monotonic()
    try:
        p = subprocess.run(argv, input=stdin, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, env=ENV,
                           timeout=timeout)
        r = Run(argv, p.returncode, p.stdout, p.stderr,
                time.monotonic() - t)
    except subprocess.TimeoutExpired as ex:
        r = Run(argv, None, ex.stdout or b"", ex.stderr or b"",
                time.monotonic() - t)
    k = os.path.basename(argv[0]) if argv[0] != sys.executable else \
        os.path.basename(argv[1]) + " " + argv[2]
    PROFILE[k] = PROFILE.get(k, 0) + r.secs
    return r


PROFILE = {}
REFUSALS = {}


def sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                return h.hexdigest()
            h.update(b)


def copy(src, dst):
    # Sparse copies: the FAT32 base is 33 MiB of mostly holes.
    subprocess.run(["cp", "--sparse=always", src, dst], check=True)


class Tools:
    def __init__(self, build):
        self.build = build

    def prog(self, name):
        return os.path.join(self.build, name)


# ---------------------------------------------------------------------------
# base images
FAT_BASES = [
    # name, mkfs.fat options, size in KiB
    ("fat12", ["-F", "12", "-s", "2"], 1024),
    ("fat12-4k", ["-F", "12", "-S", "4096", "-s", "1"], 4096),
    ("fat16", ["-F", "16", "-s", "1"], 4096),
    ("fat16-1fat", ["-F", "16", "-s", "2", "-f", "1"], 8192),
    ("fat32", ["-F", "32", "-s", "1"], 33792),
]
EXFAT_BASES = [
    # name, cluster size, size in MiB, how it is filled
    ("exfat-4k", "4K", 4, "ref"),
    ("exfat-512", "512", 2, "ref"),
    ("exfat-32k", "32K", 8, "ref"),
    ("exfat-4k-fatkit", "4K", 4, "fatprealloc"),
]


def family_of(base):
    return "exfat" if base.startswith("exfat") else base.split("-")[0]


def rand_bytes(rng, n):
    return bytes(rng.getrandbits(8) for _ in range(n))


def fat_tree(rng, clus):
    """(directories, [(path, data, attrs)]) of a FAT base image."""
    dirs = ["/DATA", "/DATA/Sub dir", "/DATA/Sub dir/deeper", "/Photos"]
    files = [
        ("/readme.txt", b"fatkit differential base\n" * 3, ""),
        ("/A long file name.txt", rand_bytes(rng, 2 * clus + 17), ""),
        ("/\u00dcn\u00efc\u00f6d\u00e9 na\u00efve.bin",
         rand_bytes(rng, clus + 3), ""),
        ("/empty.txt", b"", ""),
        ("/HIDDEN.SYS", rand_bytes(rng, 100), "+h"),
        ("/DATA/Sub dir/deeper/x.dat", rand_bytes(rng, 3 * clus), ""),
        ("/Photos/IMG_0001.JPG", rand_bytes(rng, 4 * clus + 1), ""),
    ]
    # Enough two-slot names to spread /DATA over two 512-byte clusters.
    for i in range(10):
        files.append(("/DATA/file number %02d.bin" % i,
                      rand_bytes(rng, clus * (1 + i % 3) - i), ""))
    return dirs, files


def make_fat_base(tools, work, name, opts, kib, rng):
    img = os.path.join(work, name + ".img")
    if os.path.exists(img):
        os.unlink(img)
    r = run(["mkfs.fat", "--invariant", "-C", "-n", "BASE" +
             name[3:5].upper()] + opts + [img, str(kib)])
    if r.rc != 0:
        raise SystemExit("mkfs.fat %s: %s" % (name, r.text()))
    clus = int(re.search(r"cluster size: (\d+)", run(
        [tools.prog("fatls"), "--info", img]).text()).group(1))
    dirs, files = fat_tree(rng, clus)
    src = os.path.join(work, "src")
    os.makedirs(src, exist_ok=True)
    for d in dirs:
        run(["mmd", "-i", img, "::" + d])
    for i, (path, data, attr) in enumerate(files):
        local = os.path.join(src, "f%d" % i)
        with open(local, "wb") as f:
            f.write(data)
        r = run(["mcopy", "-i", img, local, "::" + path])
        if r.rc != 0:
            raise SystemExit("mcopy %s: %s" % (path, r.text()))
        if attr:
            run(["mattrib", "-i", img, attr, "::" + path])
    # A fragmented file: free every other file of /DATA, then write one
    # that needs more than any single gap.
    for i in range(0, 10, 2):
        run(["mdel", "-i", img, "::/DATA/file number %02d.bin" % i])
    local = os.path.join(src, "frag")
    with open(local, "wb") as f:
        f.write(rand_bytes(rng, 7 * clus + 5))
    run(["mcopy", "-i", img, local, "::/DATA/fragmented file.bin"])
    return img


def make_exfat_base(tools, work, name, csize, mib, how, rng):
    img = os.path.join(work, name + ".img")
    if os.path.exists(img):
        os.unlink(img)
    with open(img, "wb") as f:
        f.truncate(mib << 20)
    # -b: mkfs.exfat aligns the heap to 1 MiB by default, more than a
    # small volume holds
    r = run(["mkfs.exfat", "-L", "BASE", "-c", csize, "-b", "4096", img])
    if r.rc != 0:
        raise SystemExit("mkfs.exfat %s: %s" % (name, r.text()))
    # mkfs.exfat takes the serial from the clock: fix it, so a seed
    # makes the same bases.
    run(["tune.exfat", "-I", "0x1234abcd", img])
    cs = exfatref.parse_size(csize)
    if how == "fatprealloc":
        r = run([tools.prog("fatprealloc"), "-p", img,
                 "/DCIM/100MEDIA/CLIP0001.MP4", str(3 * cs + 100),
                 "/DCIM/100MEDIA/A rather long clip name 0002.mp4",
                 str(5 * cs),
                 "/notes.txt", "10",
                 "/Music/\u00dcn\u00efc\u00f6d\u00e9 na\u00efve.flac",
                 str(2 * cs)])
        if r.rc != 0:
            raise SystemExit("fatprealloc %s: %s" % (name, r.text()))
        return img
    src = os.path.join(work, "src")
    os.makedirs(src, exist_ok=True)
    cmds = ["mkdir /DCIM/100MEDIA", "mkdir /Music"]
    specs = [
        ("/readme.txt", 75, ""),
        ("/DCIM/100MEDIA/CLIP0001.MP4", 3 * cs + 100, "--nofatchain"),
        ("/DCIM/100MEDIA/clip 0002 fragmented.mp4", 4 * cs, "--fragmented"),
        ("/DCIM/100MEDIA/chained.bin", 2 * cs + 1, "--fatchain"),
        ("/Music/\u00dcn\u00efc\u00f6d\u00e9 na\u00efve.flac", cs + 7, ""),
        ("/Music/" + "A name of a hundred characters " * 3 + "end.txt",
         100, ""),
        ("/empty.txt", 0, ""),
        ("/half valid.bin", 2 * cs, "--vdl %d" % (cs // 2)),
    ]
    for i in range(8):
        specs.append(("/DCIM/many/file %02d.dat" % i, 300 * (i + 1), ""))
    for i, (path, size, opt) in enumerate(specs):
        local = os.path.join(src, "e%d" % i)
        with open(local, "wb") as f:
            f.write(rand_bytes(rng, size))
        cmds.append("put %s --size %d --data-from %s %s" % (
            shlex.quote(path), size, local, opt))
    r = run([sys.executable, os.path.join(HELPERS, "exfatref.py"), "batch",
             img], stdin=("\n".join(cmds) + "\n").encode())
    if r.rc != 0:
        raise SystemExit("exfatref.py batch %s: %s" % (name, r.text()))
    return img


# ---------------------------------------------------------------------------
# listings and file contents, by tools we did not write
MDIR_DIR = re.compile(r"^Directory for ::(/.*)$")
MDIR_ENTRY = re.compile(r"^(.{8}) (.{3}) +(<DIR>|\d+) +(\d{4}-\d\d-\d\d) +"
                        r"(\d+:\d\d) (?: (.+))?$")


class Listing:
    """What a reader lists: {path: Item}; ok is False when the reader
    failed part way (then items holds what it listed before)."""

    def __init__(self):
        self.items = {}
        self.ok = True
        self.why = ""


class Item:
    def __init__(self, path, is_dir, size, comps, vdl=None, offs=(),
                 chain=()):
        self.path, self.is_dir, self.size = path, is_dir, size
        self.comps = comps   # [(long name, short name)] from the root
        self.vdl = vdl
        self.offs = offs     # exFAT: image offsets of the entry set
        self.chain = chain   # exFAT: first offsets of its and its
        #                      ancestors' sets


def mdir_list(img):
    lst = Listing()
    r = run(["mdir", "-/", "-a", "-i", img, "::/"])
    if r.rc != 0 or r.hung or r.crashed:
        lst.ok = False
        lst.why = "mdir exit %s" % r.rc
    comps_of = {"/": []}
    # mdir -/ heads a directory whose short name holds a space (and that
    # has no long name) with the name cut at the space ("DATA   0" as
    # "::/DATA"); Linux and fatls keep the space, as the FAT
    # specification does.  Headings are mapped back.
    cut = {}
    cur = None
    for line in r.out.decode("utf-8", "replace").splitlines():
        m = MDIR_DIR.match(line)
        if m:
            cur = m.group(1)
            for k in sorted(cut, key=len, reverse=True):
                if cur not in comps_of and (cur == k or
                                            cur.startswith(k + "/")):
                    cur = cut[k] + cur[len(k):]
            if cur not in comps_of:
                # mdir names each directory before listing it.
                comps_of[cur] = comps_of.get(
                    cur.rsplit("/", 1)[0] or "/", []) + [
                    (cur.rsplit("/", 1)[1], cur.rsplit("/", 1)[1])]
            continue
        m = MDIR_ENTRY.match(line)
        if not m or cur is None:
            continue
        base, ext = m.group(1).rstrip(), m.group(2).rstrip()
        short = base + ("." + ext if ext else "")
        if short in (".", ".."):
            continue
        name = m.group(6) if m.group(6) else short
        path = cur.rstrip("/") + "/" + name
        comps = comps_of[cur] + [(name, short)]
        is_dir = m.group(3) == "<DIR>"
        if is_dir:
            comps_of[path] = comps
            if not m.group(6) and " " in base:
                cut[cur.rstrip("/") + "/" + base.split(" ")[0] + (
                    "." + ext if ext else "")] = path
        lst.items[path] = Item(path, is_dir,
                               None if is_dir else int(m.group(3)), comps)
    return lst


def mdir_read(img, paths, sizes=None):
    """{path: sha256 or None (unreadable)} through mtools: one mtype for
    all when sizes ({path: bytes}) tells where each file ends and mtype
    reads them all, else one mtype each."""
    out = {}
    if sizes and paths and all(p in sizes for p in paths):
        r = run(["mtype", "-i", img] + ["::" + p for p in paths])
        if r.rc == 0 and not r.err and \
                len(r.out) == sum(sizes[p] for p in paths):
            at = 0
            for p in paths:
                out[p] = hashlib.sha256(r.out[at:at + sizes[p]]).hexdigest()
                at += sizes[p]
            return out
    for p in paths:
        r = run(["mtype", "-i", img, "::" + p])
        out[p] = hashlib.sha256(r.out).hexdigest() if r.rc == 0 else None
    return out


class RefTimeout(Exception):
    pass


def on_alarm(signum, frame):
    raise RefTimeout("reference reader: more than %d s" % TIMEOUT)


def ref_dump(img, want_files, verify=False):
    """The reference reader's listing, file hashes and (with verify) its
    checker's verdict, run in this process under an alarm (a program
    start per call costs more than the reading)."""
    t = time.monotonic()
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(TIMEOUT)
    try:
        doc = ref_doc(img, want_files, verify)
        lst = Listing()
        for it in doc["items"]:
            lst.items[it["path"]] = Item(
                it["path"], it["dir"], it["size"],
                [(n, n) for n in it["path"].split("/")[1:]], it["vdl"],
                it["offs"], it["chain"])
    except (RefTimeout, MemoryError) as ex:
        why = "reference reader: %s" % (str(ex) or type(ex).__name__)
        doc = {"items": [], "ok": False, "why": why, "hashes": {},
               "verify": {"errors": 1, "warnings": 0, "text": why}}
        lst = Listing()
    finally:
        signal.alarm(0)
    PROFILE["reference reader"] = PROFILE.get("reference reader", 0) + \
        time.monotonic() - t
    lst.ok = doc["ok"]
    lst.why = doc["why"]
    return lst, doc.get("hashes", {}), doc.get("verify")


def ref_doc(img, files, verify):
    doc = {"items": [], "ok": True, "why": "", "hashes": {}}
    v = None
    try:
        v = exfatref.Volume(img)
        stack = [(v.root_dir(), [])]
        seen = 0
        while stack:
            d, chain = stack.pop(0)
            if len(chain) > MAX_DEPTH:
                # the reader does not look for directory loops
                raise exfatref.Fatal("directories nested deeper than %d"
                                     % MAX_DEPTH)
            for e in sorted(d.sets().values(), key=lambda x: x.index):
                seen += 1
                if seen > 5000:
                    raise exfatref.Fatal("more than 5000 entries")
                offs = [d.entry_offset(e.index + k)
                        for k in range(len(e.raw) // 32)]
                doc["items"].append({"path": e.path, "dir": e.is_dir,
                                     "size": None if e.is_dir else e.dl,
                                     "vdl": e.vdl, "offs": offs,
                                     "chain": chain + offs[:1]})
                if e.is_dir:
                    try:
                        stack.append((v.open_dir(e), chain + offs[:1]))
                    except exfatref.Fatal as ex:
                        doc["ok"], doc["why"] = False, str(ex)
                elif files:
                    doc["hashes"][e.path] = ref_cat(v, e)
    except (RefTimeout, MemoryError):
        raise
    except Exception as ex:  # a hostile image: any failure is a finding
        doc["ok"], doc["why"] = False, "%s: %s" % (type(ex).__name__, ex)
    finally:
        if v is not None:
            v.f.close()
    if verify:
        try:
            import contextlib
            import io
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                v = exfatref.Volume(img)
                try:
                    c = exfatref.Checker(v, img)
                    c.run()
                finally:
                    v.f.close()
            doc["verify"] = {"errors": c.errors, "warnings": c.warnings,
                             "text": buf.getvalue()[-2000:]}
        except (RefTimeout, MemoryError):
            raise
        except Exception as ex:
            doc["verify"] = {"errors": 1, "warnings": 0,
                             "text": "%s: %s" % (type(ex).__name__, ex)}
    return doc


def ref_cat(v, e):
    cl, prob = v.clusters_of(e.first, e.dl, e.nofatchain)
    if prob or e.dl > len(cl) * v.csize:
        return None
    h = hashlib.sha256()
    left, valid = e.dl, e.vdl
    for a, b in exfatref.runs_of(cl):
        data = v.read(v.cluster_off(a), min(left, (b - a + 1) * v.csize))
        take = len(data)
        if valid < take:
            data = data[:valid] + bytes(take - valid)
        h.update(data)
        left -= take
        valid = max(0, valid - take)
    return h.hexdigest() if left == 0 else None


def fatls_list(tools, img):
    lst = Listing()
    r = run([tools.prog("fatls"), "-R", "-a", "--json", img])
    if r.hung or r.crashed:
        lst.ok, lst.why = False, "fatls exit %s" % r.rc
        return lst, r
    try:
        doc = json.loads(r.out.decode("utf-8", "replace"))
    except ValueError:
        lst.ok, lst.why = False, "fatls wrote no JSON (exit %s)" % r.rc
        return lst, r
    if "error" in doc:
        lst.ok, lst.why = False, "fatls: " + doc["error"]["message"]
    for e in doc.get("entries", []):
        attrs = e.get("attributes", [])
        if "volume" in attrs or e["name"] in (".", ".."):
            continue
        is_dir = "directory" in attrs
        lst.items[e["path"]] = Item(e["path"], is_dir,
                                    None if is_dir else e["size"], [],
                                    e.get("valid_data_length"))
    return lst, r


def compare_listings(mine, theirs, exfat):
    """'' when they agree, else the first difference."""
    if not mine.ok:
        return "fatls failed: " + mine.why
    if not theirs.ok:
        return "the other reader failed: " + theirs.why
    a, b = set(mine.items), set(theirs.items)
    if a - b:
        return "only fatls lists %s" % sorted(a - b)[0]
    if b - a:
        return "only the other reader lists %s" % sorted(b - a)[0]
    for p in sorted(a):
        x, y = mine.items[p], theirs.items[p]
        if x.is_dir != y.is_dir or x.size != y.size:
            return "%s: fatls says %s, the other reader %s" % (
                p, "dir" if x.is_dir else x.size,
                "dir" if y.is_dir else y.size)
        if exfat and not x.is_dir and x.vdl != y.vdl:
            return "%s: ValidDataLength %s against %s" % (p, x.vdl, y.vdl)
    return ""


def short_shown(name):
    """A short name as mdir shows it: byte 0xFF (U+00A0 in code pages 437
    and 850, as fatls decodes it) as a space, trailing spaces and a
    trailing dot cut."""
    return name.replace("\u00a0", " ").rstrip(" ").rstrip(".").rstrip(" ")


def listing_known(mine, theirs, exfat, mtools_refuses):
    """The classified known difference that explains a listing
    difference, or None: mdir refusing the media byte, or showing a
    short name's 0xFF byte as a space."""
    if exfat:
        return None
    if not theirs.ok and mtools_refuses:
        return "listing: mtools refuses the media byte"
    if not mine.ok or not theirs.ok:
        return None

    def norm(p):
        return "/".join(short_shown(c) for c in p.split("/"))
    a = {norm(p): it for p, it in mine.items.items()}
    b = {norm(p): it for p, it in theirs.items.items()}
    if a.keys() != b.keys() or any(
            a[p].is_dir != b[p].is_dir or a[p].size != b[p].size for p in a):
        return None
    return "listing: mdir shows a short name's byte 0xFF as a space"


# ---------------------------------------------------------------------------
# fsck runs, parsed
FSCK_FAT_NOISE = re.compile(
    r"^(fsck\.fat \d|Checking we can access|Leaving filesystem unchanged|"
    r"\s*$)")
FSCK_FAT_SUMMARY = re.compile(r"^.*: \d+ files, \d+/\d+ clusters$")
FSCK_HARMLESS = re.compile(
    r"^(Free cluster summary uninitialized|There are differences between "
    r"boot sector and its backup|This is mostly harmless|"
    # the differences, as many to a line as fit in 78 columns
    r"\s+(, )?\d+:[0-9a-f]{2}/[0-9a-f]{2}(, \d+:[0-9a-f]{2}/[0-9a-f]{2})*$|"
    r"\s+Not automatically fixing this)")
FSCK_EXFAT_SUMMARY = re.compile(r": (clean|corrupted)\. directories \d+")


class Fsck:
    """One fsck -n run: verdict 'clean', 'damage' or 'refused' (it did
    not get to the end: no summary), its message lines, the paths it
    names, and (exFAT) the image offsets it names."""

    def __init__(self, exfat, img):
        self.exfat = exfat
        prog = "fsck.exfat" if exfat else "fsck.fat"
        self.run = run([prog, "-n", img], stdin=b"")
        text = self.run.out.decode("utf-8", "replace") + \
            self.run.err.decode("utf-8", "replace")
        self.lines = [ln for ln in text.splitlines()
                      if not FSCK_FAT_NOISE.match(ln) and
                      not ln.startswith("exfatprogs version")]
        summary = FSCK_EXFAT_SUMMARY if exfat else FSCK_FAT_SUMMARY
        complete = any(summary.search(ln) for ln in self.lines)
        self.lines = [ln for ln in self.lines if not summary.search(ln)
                      and "files corrupted" not in ln]
        # A complaint printed with exit status 0 is damage too (fsck.fat
        # leaves some for a person: "Unfinished long file name"), except
        # what fsck itself calls harmless.
        complaints = [ln for ln in self.lines if not FSCK_HARMLESS.search(ln)]
        if self.run.hung or self.run.crashed or not complete:
            self.verdict = "refused"
        elif self.run.rc != 0 or complaints:
            self.verdict = "damage"
        else:
            self.verdict = "clean"
        self.paths, self.named, self.scoped = [], [], set()
        where = None
        for ln in self.lines:
            if FSCK_HARMLESS.search(ln):
                continue
            if exfat:
                m = re.match(r"^ERROR: (/[^:]*): ", ln)
                offs = [int(o, 16) for o in re.findall(r" at 0x([0-9a-f]+)",
                                                       ln)]
                path = m.group(1) if m else None
                if path is not None:
                    self.paths.append(path)
                self.named.append((path, offs))
                msg = ln[m.end():] if m else ln
                self.scoped.add((path.lower() if path else None,
                                 re.sub(r"0x[0-9a-f]+|\d+", "N", msg)))
            elif ln.startswith("/"):
                where = ln.strip()
                if where.endswith("  and"):
                    where = where[:-5].rstrip()
                self.paths.append(where)
                self.named.append((where, []))
            else:
                if not ln.startswith(" "):
                    where = None
                self.scoped.add((where.lower() if where else None,
                                 re.sub(r"\d+", "N", ln.strip())))

    def messages(self):
        """(path or None, message with numbers masked) of every complaint,
        for a before/after comparison."""
        return self.scoped


def intact_files(fsck, lst, exfat):
    """Files of lst that fsck did not complain about (none if fsck did
    not get through the volume)."""
    if fsck.verdict == "refused":
        return set()
    named = []      # component lists of the paths fsck names
    named_sets = set()
    by_off = {}
    for it in lst.items.values():
        for o in it.offs:
            by_off[o] = it
    for path, offs in fsck.named:
        # exFAT: fsck.exfat names the directory of a damaged set, or the
        # file, and the set's offset: the set at that offset is the one
        # it means, whatever name the reference reader gives it.
        sets = {by_off[o].offs[0] for o in offs if o in by_off}
        if sets:
            named_sets |= sets
        elif path is not None:
            named.append([c.lower() for c in path.split("/") if c])
    out = set()
    for it in lst.items.values():
        if it.is_dir:
            continue
        if named_sets & set(it.chain):
            continue
        bad = False
        for comps in named:
            if len(comps) <= len(it.comps) and all(
                    c in (ln.lower(), sn.lower())
                    for c, (ln, sn) in zip(comps, it.comps)):
                bad = True
                break
        if not bad:
            out.add(it.path)
    return out


# ---------------------------------------------------------------------------
# fatcheck runs, parsed
class Check:
    def __init__(self, tools, img, repair=False):
        argv = [tools.prog("fatcheck"), "--json", "--no-progress"]
        if repair:
            argv.append("-r")
        self.run = run(argv + [img])
        self.findings, self.error = [], None
        try:
            doc = json.loads(self.run.out.decode("utf-8", "replace"))
            self.findings = doc.get("findings", [])
            if "error" in doc:
                self.error = doc["error"]["message"]
        except ValueError:
            self.error = "no JSON"
        rc = self.run.rc
        self.verdict = "clean" if rc in (0, 1) else \
            "damage" if rc == 4 else "refused"

    def codes(self, severity=None):
        return {f["code"] for f in self.findings
                if severity is None or f["severity"] == severity}


# ---------------------------------------------------------------------------
# classifying verdict differences
# fsck.fat reports these, fatcheck makes them a warning or a note (see
# fatcheck(1), FINDINGS, Exceptions): (fatcheck code, fsck.fat line).
FAT_FSCK_ONLY = [
    ("dirty", re.compile(r"Dirty bit is set|Automatically removing dirty")),
    # (fsck.fat counts the tail it would cut as free: its free count
    # then differs from the FSInfo one by the tail's clusters)
    ("prealloc-tail", re.compile(
        r"File size is \d+ bytes, cluster chain length is > \d+|"
        r"Truncating file to \d+ bytes|Free cluster summary wrong|"
        r"^\s+Auto-correcting\.$")),
    ("label-8bit", re.compile(r"Volume label .* is not valid|"
                              r"Auto-removing label")),
]
# fatcheck errors fsck.fat does not report (fatcheck(1), NOTES; Errors:
# a boot sector media byte Linux does not mount).
FAT_CHECK_ONLY = {"hidden-entry", "media"}
# fatkit's refusals of a volume fsck.fat reads (fatkit(7)): a FAT32
# version (BPB_FSVer) other than 0.0, which the Microsoft specification
# asks disk utilities not to touch and FreeBSD's fsck_msdosfs refuses;
# fsck.fat, mtools and Linux do not read the field.
FAT_CHECK_REFUSES = [
    ("fat32-version", re.compile(r"FAT32 version \d+\.\d+ is not 0\.0")),
]
# fsck.exfat 1.2.0's known false positive and what the reference checker
# then says: a Vendor Allocation (or other benign) secondary entry.
EXFAT_FSCK_ONLY = [
    ("benign-secondary", re.compile(r"failed to get name dentry")),
]


def fat_fsck_explained(fsck, check):
    """The fatcheck codes that explain every fsck.fat line, or None."""
    used, left = set(), []
    codes = check.codes()
    lines = list(fsck.lines)
    i = 0
    while i < len(lines):
        ln = lines[i]
        if ln.startswith("/") or FSCK_HARMLESS.search(ln):
            i += 1
            continue
        for code, pat in FAT_FSCK_ONLY:
            if code in codes and pat.search(ln):
                used.add(code)
                break
        else:
            left.append(ln)
        i += 1
    return None if left else used


def classify_verdict(exfat, fsck, check, refv):
    """('agree'|'known'|'disagree', kind, reason)."""
    fc = fsck.verdict != "clean"
    kc = check.verdict != "clean"
    if fc == kc:
        return "agree", "", ""
    if not exfat:
        if fc:
            used = fat_fsck_explained(fsck, check)
            if used:
                return "known", "fsck.fat-only: " + "+".join(sorted(used)), \
                    ""
            return "disagree", "verdict: fsck.fat damage, fatcheck clean", \
                "fsck.fat: " + " | ".join(fsck.lines[:3])
        errs = check.codes("error")
        if errs and errs <= FAT_CHECK_ONLY:
            return "known", "fatcheck-only: " + "+".join(sorted(errs)), ""
        for code, pat in FAT_CHECK_REFUSES:
            if check.verdict == "refused" and pat.search(check.error or ""):
                return "known", "fatcheck-only: refused, " + code, ""
        return "disagree", "verdict: fatcheck %s, fsck.fat clean" % (
            check.verdict), "fatcheck: %s" % (
            check.error or sorted(errs))
    if kc:
        # fsck.exfat's blind spots: the reference checker settles it.
        errs = check.codes("error")
        if refv and refv["errors"]:
            return "known", "fsck.exfat blind spot: " + "+".join(
                sorted(errs) or ["refused"]), ""
        return "disagree", "verdict: fatcheck %s, fsck.exfat and the " \
            "reference clean" % check.verdict, "fatcheck: %s" % (
                check.error or sorted(errs))
    for code, pat in EXFAT_FSCK_ONLY:
        if all(pat.search(ln) for ln in fsck.lines if ln.startswith(
                "ERROR")) and (refv is None or not refv["errors"]):
            return "known", "fsck.exfat-only: " + code, ""
    return "disagree", "verdict: fsck.exfat %s, fatcheck clean" % (
        fsck.verdict), "fsck.exfat: " + " | ".join(fsck.lines[:3]) + (
        "; reference: %s" % ("errors" if refv and refv["errors"]
                             else "clean"))


# ---------------------------------------------------------------------------
# mutations
class Mutation:
    def __init__(self):
        self.flips = []   # (offset, old byte, new byte)
        self.case = None  # "corrupt.py CASE ARGS" or "exfatref CASE"
        self.field = None

    def describe(self):
        parts = []
        if self.case:
            parts.append(self.case)
        if self.field:
            parts.append(self.field)
        if self.flips:
            parts.append("flips " + ",".join(
                "0x%x:%02x->%02x" % f for f in self.flips))
        return "; ".join(parts) or "none"


def read_at(img, off, n):
    with open(img, "rb") as f:
        f.seek(off)
        return f.read(n)


def write_at(img, off, data):
    with open(img, "r+b") as f:
        f.seek(off)
        f.write(data)


def fat_regions(img):
    """[(name, start, length)] of a FAT image's metadata."""
    bs = read_at(img, 0, 512)
    bps = int.from_bytes(bs[11:13], "little") or 512
    spc = bs[13] or 1
    rsvd = int.from_bytes(bs[14:16], "little")
    nfats = bs[16]
    root_ents = int.from_bytes(bs[17:19], "little")
    fatsz = int.from_bytes(bs[22:24], "little") or \
        int.from_bytes(bs[36:40], "little")
    fat_off = rsvd * bps
    root_off = fat_off + nfats * fatsz * bps
    data_off = root_off + (root_ents * 32 + bps - 1) // bps * bps
    regs = [("boot", 0, 90 if root_ents == 0 else 62)]
    if root_ents == 0:
        regs.append(("fsinfo", int.from_bytes(bs[48:50], "little") * bps,
                     bps))
        regs.append(("backup-boot", 6 * bps, 90))
    # FAT entries actually used: the first 200 or so.
    used = min(fatsz * bps, 400 if root_ents else 800)
    regs.append(("fat", fat_off, used))
    if nfats > 1:
        regs.append(("fat2", fat_off + fatsz * bps, used))
    if root_ents:
        regs.append(("root", root_off, min(root_ents * 32, 32 * 32)))
    regs.append(("dirs", data_off, 24 * bps * spc))
    return regs


def exfat_regions(img):
    try:
        v = exfatref.Volume(img)
        bm_first = int.from_bytes(v.bitmap_entry()[1][20:24], "little")
        up_first = int.from_bytes(v.upcase_entry()[1][20:24], "little")
    except Exception:
        return [("boot", 0, 120)]
    regs = [("boot", 64, 56), ("boot-checksum", 11 * v.bps, 4),
            ("fat", v.fat_offset * v.bps, 4 * 80),
            ("bitmap", v.cluster_off(bm_first), 16),
            ("upcase", v.cluster_off(up_first), 256),
            ("root", v.cluster_off(v.root_cluster), min(v.csize, 1024)),
            ("heap", v.cluster_off(2), min(40 * v.csize, 64 * 1024))]
    v.f.close()
    return regs


def flip(img, rng, regions, n, mut):
    for _ in range(n):
        name, start, length = rng.choice(regions)
        off = start + rng.randrange(max(1, length))
        old = read_at(img, off, 1)
        if not old:
            continue
        if rng.random() < 0.5:
            new = old[0] ^ (1 << rng.randrange(8))
        else:
            new = rng.choice([0x00, 0xFF, 0xE5, 0x2E, 0x20, 0x0F, 0x10,
                              rng.randrange(256)])
        if new == old[0]:
            new ^= 0x01
        write_at(img, off, bytes([new]))
        mut.flips.append((off, old[0], new))


def fat_case_args(rng, lst):
    """Argument lists for corrupt.py cases, from what the image holds."""
    files = [p for p, it in lst.items.items() if not it.is_dir]
    big = [p for p in files if (lst.items[p].size or 0) > 1024]
    dirs = [p for p, it in lst.items.items() if it.is_dir]
    longs = [p for p in files if lst.items[p].comps and
             lst.items[p].comps[-1][0] != lst.items[p].comps[-1][1]]
    pick = rng.choice
    cases = [["fat-copy"], ["media"], ["fat0-zero"], ["fat0-high"],
             ["fat0-zero", "1"], ["nfats", pick(["0", "3"])],
             ["root-ents", "513"], ["fat1-dirty"], ["fat1-error"],
             ["fat1-value"], ["boot-dirty"], ["backup-boot"], ["no-backup"],
             ["fsinfo-sig"], ["fsinfo-free"], ["fsinfo-next"],
             ["fsinfo-unset"], ["lost"], ["label"],
             ["fat-garbage", str(rng.randrange(1 << 30))],
             ["root-label", pick(["lower", "A*B", "\\x01X", "\\xe9T"])]]
    if files:
        cases += [[c, pick(files)] for c in
                  ("start-range", "short", "after-end", "bad-char",
                   "lower-name", "lead-space", "punct-name", "lower-short")]
    if big:
        cases += [[c, pick(big)] for c in
                  ("link-free", "link-bad", "link-reserved", "link-range",
                   "loop", "tail")]
        a = pick(big)
        same = [p for p in files if p != a and
                p.rsplit("/", 1)[0] == a.rsplit("/", 1)[0]]
        if same:
            b = pick(same)
            cases += [["cross", a, b], ["dup", a, b], ["long-is", a, b]]
    if longs:
        cases += [[c, pick(longs)] for c in
                  ("lfn-sum", "lfn-seq", "lfn-unfinished", "lfn-empty",
                   "orphan-lfn", "lfn-field")]
        cases.append(["lfn-field", pick(longs), "type"])
    if dirs:
        cases += [[c, pick(dirs)] for c in
                  ("dot", "dotdot", "no-dot", "dotdot-renamed", "no-dotdot",
                   "dot-attr", "dot-name", "dot-swap", "dir-size",
                   "deep-loop")]
        cases.append(["dir-garbage", pick(dirs), str(rng.randrange(1000))])
        cases.append(["nest", pick(dirs), "3"])
        nested = [d for d in dirs if d.count("/") > 1]
        if nested:
            d = pick(nested)
            cases.append(["dir-loop", d, d.rsplit("/", 1)[0]])
    return cases


EXFAT_CASES = None


def exfat_cases():
    global EXFAT_CASES
    if EXFAT_CASES is None:
        EXFAT_CASES = sorted(exfatref.CASES)
    return EXFAT_CASES


def exfat_field(img, rng, lst, mut):
    """Change one byte of a file's entry set and make its SetChecksum
    (and, for a name byte, NameHash) right again, so that the change
    reaches past the checksum test."""
    items = [it for it in lst.items.values() if it.offs]
    if not items:
        return False
    it = rng.choice(items)
    raw = bytearray(b"".join(read_at(img, o, 32) for o in it.offs))
    # File entry bytes 4-5 attributes; stream entry 33 flags, 35 name
    # length, 40-47 VDL, 52-55 first cluster, 56-63 DataLength; name.
    pos = rng.choice([4, 5, 33, 35, 40, 41, 43, 52, 53, 56, 57, 58, 60,
                      1, 66, 68, 96 if len(raw) > 96 else 66])
    old = raw[pos]
    raw[pos] = rng.choice([old ^ (1 << rng.randrange(8)), 0, 0xFF,
                           rng.randrange(256)])
    if raw[pos] == old:
        raw[pos] ^= 1
    if pos >= 64:
        # a name unit: keep NameHash right through the up-case table
        try:
            v = exfatref.Volume(img)
            v.load_upcase()
            n = raw[35]
            units = []
            for k in range(2, len(raw) // 32):
                units += [int.from_bytes(raw[k * 32 + 2 + 2 * i:
                                             k * 32 + 4 + 2 * i], "little")
                          for i in range(15)]
            h = exfatref.name_hash(v.upcase_units(units[:n]))
            raw[36:38] = h.to_bytes(2, "little")
            v.f.close()
        except Exception:
            pass
    if rng.random() < 0.9:
        s = exfatref.set_checksum(raw)
        raw[2:4] = s.to_bytes(2, "little")
    for k, o in enumerate(it.offs):
        write_at(img, o, bytes(raw[k * 32:k * 32 + 32]))
    mut.field = "%s: set byte %d 0x%02x->0x%02x" % (it.path, pos, old,
                                                    raw[pos])
    return True


def fat_field(img, rng, mut):
    """Change one field of a short entry (FAT has no checksum over it)."""
    try:
        import corrupt
        vol = corrupt.Volume(img)
    except BaseException:
        return False
    ents = []

    def walk(first, path, depth):
        if depth > 6:
            return
        for e in vol.entries(first):
            if e.attr & 0x08 or e.short in (".", ".."):
                continue
            ents.append((path + "/" + e.name, e))
            if e.is_dir() and e.first:
                walk(e.first, path + "/" + e.name, depth + 1)
    try:
        walk(vol.root_clus, "", 0)
    except BaseException:
        return False
    finally:
        vol.f.close()
    if not ents:
        return False
    path, e = rng.choice(ents)
    # 0-10 name, 11 attributes, 12 NT case flags, 20-21 and 26-27 first
    # cluster, 28-31 size
    pos = rng.choice([0, 3, 8, 11, 11, 12, 20, 26, 26, 27, 28, 29, 30])
    old = read_at(img, e.off + pos, 1)[0]
    new = rng.choice([old ^ (1 << rng.randrange(8)), 0, 0xFF,
                      rng.randrange(256)])
    if new == old:
        new ^= 1
    write_at(img, e.off + pos, bytes([new]))
    mut.field = "%s: entry byte %d 0x%02x->0x%02x" % (path, pos, old, new)
    return True


def mutate(img, rng, exfat, lst):
    mut = Mutation()
    kind = rng.choices(["flip", "field", "case", "case+flip"],
                       [4, 3, 3, 1])[0]
    if kind in ("case", "case+flip"):
        if exfat:
            case = rng.choice(exfat_cases())
            r = run([sys.executable, os.path.join(HELPERS, "exfatref.py"),
                     "corrupt", img, case])
            mut.case = "exfatref.py corrupt IMG " + case
        else:
            args = rng.choice(fat_case_args(rng, lst))
            r = run([sys.executable, os.path.join(HELPERS, "corrupt.py"),
                     img] + args)
            mut.case = "corrupt.py IMG " + " ".join(
                repr(a) if " " in a else a for a in args)
        if r.rc != 0:
            return None  # the case does not fit this image
    if kind == "field":
        ok = exfat_field(img, rng, lst, mut) if exfat else \
            fat_field(img, rng, mut)
        if not ok:
            return None
    if kind in ("flip", "case+flip"):
        regions = exfat_regions(img) if exfat else fat_regions(img)
        flip(img, rng, regions, rng.choice([1, 1, 2, 3, 4]), mut)
    return mut


# ---------------------------------------------------------------------------
# judging one mutated image
class Finding:
    def __init__(self, kind, reason, stage):
        self.kind, self.reason, self.stage = kind, reason, stage


class Judge:
    def __init__(self, tools, work):
        self.tools = tools
        self.work = work
        self.mtools_refuses = False

    def listing(self, exfat, img, files=True, verify=False):
        """(Listing, {path: sha256 or None}, reference verdict)."""
        if exfat:
            return ref_dump(img, files, verify)
        lst = mdir_list(img)
        return lst, {}, None

    def read(self, exfat, img, paths, sizes=None):
        if exfat:
            _, hashes, _ = ref_dump(img, True)
            return {p: hashes.get(p) for p in paths}
        return mdir_read(img, paths, sizes)

    def judge(self, exfat, img, stats):
        """Every Finding (agreements are counted in stats)."""
        out = []
        for_crash = []
        fsck = Fsck(exfat, img)
        check = Check(self.tools, img)
        for_crash.append(check.run)
        lst, hashes, refv = self.listing(exfat, img, True, exfat)
        res, kind, reason = classify_verdict(exfat, fsck, check, refv)
        stats["verdict-" + res] = stats.get("verdict-" + res, 0) + 1
        if res == "known":
            stats.setdefault("known", {})
            stats["known"][kind] = stats["known"].get(kind, 0) + 1
        elif res == "disagree":
            out.append(Finding(kind, reason, "verdict"))
        # mtools reads nothing of a volume whose boot sector media byte
        # is not FAT[0]'s ("Bad media types"), which fatcheck calls a
        # warning (media) and fsck.fat and Linux do not compare.
        self.mtools_refuses = not exfat and not lst.ok and \
            "media" in check.codes()
        # listing on an image every judge calls clean
        if fsck.verdict == "clean" and check.verdict == "clean":
            mine, lsr = fatls_list(self.tools, img)
            for_crash.append(lsr)
            why = compare_listings(mine, lst, exfat)
            known = listing_known(mine, lst, exfat, self.mtools_refuses) \
                if why else None
            if known:
                stats.setdefault("known", {})
                stats["known"][known] = stats["known"].get(known, 0) + 1
            elif why:
                out.append(Finding("listing differs on a clean image", why,
                                   "listing"))
            else:
                stats["listing-agree"] = stats.get("listing-agree", 0) + 1
        intact = intact_files(fsck, lst, exfat)
        if exfat:
            before = {p: hashes.get(p) for p in intact}
        else:
            before = mdir_read(img, sorted(intact), {
                p: lst.items[p].size for p in intact})
        self.sizes = {p: lst.items[p].size for p in before}
        self.sizes[NEW_PATH] = NEW_SIZE
        before = {p: h for p, h in before.items() if h is not None}
        stats["intact-files"] = stats.get("intact-files", 0) + len(before)
        out += self.repair(exfat, img, check, before, stats, for_crash)
        out += self.writer(exfat, img, fsck, before, stats, for_crash)
        for r in for_crash:
            if r.crashed or r.hung:
                out.insert(0, Finding(
                    "crash or hang", "%s: %s" % (
                        " ".join(os.path.basename(a) for a in r.argv[:-1]),
                        "hung" if r.hung else "signal %d" % -r.rc),
                    "run"))
        return out

    def repair(self, exfat, img, check0, before, stats, for_crash):
        out = []
        rimg = os.path.join(self.work, "repair.img")
        copy(img, rimg)
        h0 = sha(rimg)
        rep = Check(self.tools, rimg, repair=True)
        for_crash.append(rep.run)
        rc = rep.run.rc
        stats["repair-exit-%s" % rc] = stats.get("repair-exit-%s" % rc,
                                                 0) + 1
        if rc == 8 or (rc == 0 and check0.verdict == "clean" and
                       not check0.findings):
            if sha(rimg) != h0:
                out.append(Finding("repair wrote while it refused or found "
                                   "nothing", "fatcheck -r exit %s changed "
                                   "the image" % rc, "repair"))
        if rc in (0, 1):
            fsck = Fsck(exfat, rimg)
            again = Check(self.tools, rimg)
            for_crash.append(again.run)
            if fsck.verdict != "clean":
                refv = self.listing(exfat, rimg, False, True)[2] \
                    if exfat else None
                res, kind, _ = classify_verdict(exfat, fsck, again, refv)
                if res == "known" and kind.startswith(("fsck.fat-only",
                                                       "fsck.exfat-only")):
                    stats.setdefault("known", {})
                    k = "after repair: " + kind
                    stats["known"][k] = stats["known"].get(k, 0) + 1
                else:
                    out.append(Finding(
                        "repair left fsck unclean",
                        "fatcheck -r exit %s, then %s: %s%s" % (
                            rc, "fsck.exfat" if exfat else "fsck.fat",
                            " | ".join(fsck.lines[:3]),
                            "; reference: " + (refv["text"].strip().split(
                                "\n")[0] if refv["errors"] else "clean")
                            if refv else ""), "repair"))
            if again.verdict != "clean":
                if exfat and "lost-kept" in rep.codes() and \
                        again.codes("error") <= {"lost"}:
                    stats.setdefault("known", {})
                    k = "repair in two steps: lost-kept"
                    stats["known"][k] = stats["known"].get(k, 0) + 1
                else:
                    out.append(Finding(
                        "repair did not converge",
                        "fatcheck -r exit %s, then fatcheck -n exit %s: %s"
                        % (rc, again.run.rc, sorted(again.codes("error"))
                           or again.error), "repair"))
        if rc == 4:
            # What fatcheck(1) says -r leaves: on exFAT, unknown critical
            # entries with an allocation (with their clusters), and the
            # lost clusters it keeps while it cannot attribute them.
            again = Check(self.tools, rimg)
            for_crash.append(again.run)
            left = [f for f in again.findings if f["severity"] == "error"]
            kept = "lost-kept" in rep.codes()
            if exfat and left and all(
                    (f["code"] == "entry-set" and "unknown critical" in
                     f["message"]) or (f["code"] == "lost" and kept)
                    for f in left):
                stats.setdefault("known", {})
                k = "repair leaves what it cannot attribute (exit 4)"
                stats["known"][k] = stats["known"].get(k, 0) + 1
            else:
                out.append(Finding("repair left errors",
                                   "fatcheck -r exit 4, then left: %s" %
                                   sorted({f["code"] for f in left}),
                                   "repair"))
        if rc is not None and rc >= 0:
            after = self.read(exfat, rimg, sorted(before), self.sizes)
            for p in sorted(before):
                if after.get(p) == before[p]:
                    continue
                if after.get(p) is None and self.renamed(
                        exfat, rimg, p, before[p], before):
                    # fatcheck -r renames names no reader may use (its
                    # bad-name and duplicate findings); the data stays.
                    stats.setdefault("known", {})
                    k = "repair renamed a file fsck passed"
                    stats["known"][k] = stats["known"].get(k, 0) + 1
                    continue
                out.append(Finding(
                    "repair lost an intact file",
                    "%s (fsck did not complain about it) %s after "
                    "fatcheck -r (exit %s)" % (
                        p, "is gone or unreadable" if after.get(p)
                        is None else "reads other bytes", rc), "repair"))
                break
        return out

    def renamed(self, exfat, img, path, digest, before):
        """Whether a file that was not there before holds path's bytes
        (the base images' files hold random bytes: no two are alike)."""
        lst = self.listing(exfat, img, exfat)[0]
        cands = [p for p, it in lst.items.items() if not it.is_dir and
                 p not in before]
        return digest in self.read(exfat, img, cands).values()

    def writer(self, exfat, img, fsck0, before, stats, for_crash):
        out = []
        wimg = os.path.join(self.work, "writer.img")
        copy(img, wimg)
        h0 = sha(wimg)
        w = run([self.tools.prog("fatprealloc"), "-p", wimg, NEW_PATH,
                 "64K"])
        for_crash.append(w)
        rc = w.rc
        stats["writer-exit-%s" % rc] = stats.get("writer-exit-%s" % rc,
                                                 0) + 1
        if rc != 0:
            why = re.sub(r"\d+", "N", w.err.decode("utf-8", "replace")
                         .strip().split(": ", 2)[-1])[:70]
            REFUSALS[why] = REFUSALS.get(why, 0) + 1
            if rc is not None and rc > 0 and sha(wimg) != h0:
                out.append(Finding("writer refused but changed the image",
                                   "fatprealloc exit %s: %s" % (
                                       rc, w.err.decode(
                                           "utf-8", "replace").strip()),
                                   "writer"))
            return out
        fsck = Fsck(exfat, wimg)
        new = fsck.messages() - fsck0.messages()
        if fsck0.verdict == "clean" and fsck.verdict != "clean":
            new = new or {(None, "fsck verdict %s" % fsck.verdict)}
        if fsck0.verdict != "clean":
            # A file whose chain already ran into a free cluster may lose
            # that cluster to the new file (the writer cannot know
            # without a full check): findings on paths fsck named before
            # (and the new file's share of them) are old damage; so are
            # counts that change with any allocation (lost clusters).
            old = {p.lower() for p in fsck0.paths} | {NEW_PATH.lower()}
            new = {(p, m) for p, m in new if p not in old and not
                   re.search(r"Reclaimed|Free cluster summary|unused "
                             r"clusters|more clusters are allocated", m)}
            # fsck.fat repeats for the new directory a complaint it made
            # before about others (a '.' it misreads as free once a
            # rename it only plans has changed its picture).
            said = {m for _, m in fsck0.messages()}
            parent = NEW_PATH.rsplit("/", 1)[0].lower()
            echo = {(p, m) for p, m in new if p == parent and m in said}
            if echo:
                stats.setdefault("known", {})
                k = "writer: fsck repeats an old complaint for /NEW"
                stats["known"][k] = stats["known"].get(k, 0) + 1
            new -= echo
            # fsck.fat 4.2 removes the long name of an entry it renames
            # by marking deleted every 32 bytes from its first slot to
            # its short entry in disk order (lfn_remove()): a long name
            # that spans two directory clusters that are not adjacent
            # takes whatever lies between them, here the writer's new
            # directory, whose '.' and '..' it then reads as free (and
            # -a destroys, with files of the gap).
            gap = set()
            if any(re.search(r"Renamed to |Auto-renaming", m)
                   for _, m in fsck0.messages()):
                gap = {(p, m) for p, m in new if p == parent and re.search(
                    r"^Expected a valid '\.\.?' entry in the \w+ slot, "
                    r"found free entry\.$|^Creating\.$", m)}
            if gap:
                stats.setdefault("known", {})
                k = "writer: fsck.fat's rename blanks a long name's gap"
                stats["known"][k] = stats["known"].get(k, 0) + 1
            new -= gap
        new = sorted("%s: %s" % (p, m) if p else m for p, m in new)
        if new:
            out.append(Finding("writer added an fsck finding",
                               "fatprealloc exit 0, then new: %s" % (
                                   new[0]), "writer"))
        got = self.read(exfat, wimg, sorted(before) + [NEW_PATH],
                        self.sizes)
        zeros = hashlib.sha256(bytes(NEW_SIZE)).hexdigest()
        if got.get(NEW_PATH) != zeros and self.mtools_refuses:
            stats.setdefault("known", {})
            k = "writer: mtools refuses the media byte"
            stats["known"][k] = stats["known"].get(k, 0) + 1
        elif got.get(NEW_PATH) != zeros:
            out.append(Finding("writer's new file unreadable",
                               "fatprealloc exit 0, but %s does not read "
                               "as 64 KiB of zeros" % NEW_PATH, "writer"))
        for p in sorted(before):
            if got.get(p) != before[p]:
                out.append(Finding("writer changed an intact file",
                                   "%s reads other bytes after fatprealloc"
                                   % p, "writer"))
                break
        return out


# ---------------------------------------------------------------------------
# the run
def minimise(judge, exfat, img, mut, kind):
    """Undo each flip that the finding does not need."""
    if len(mut.flips) < 2:
        return
    for f in list(mut.flips):
        write_at(img, f[0], bytes([f[1]]))
        if any(x.kind == kind for x in judge.judge(exfat, img, {})):
            mut.flips.remove(f)
        else:
            write_at(img, f[0], bytes([f[2]]))


def record(out, kind, n, img, base, mut, finding, build, keep, saved):
    slug = re.sub(r"[^a-z0-9]+", "-", kind.lower()).strip("-")
    saved[slug] = saved.get(slug, 0) + 1
    if saved[slug] > keep:
        return None
    d = os.path.join(out, slug)
    os.makedirs(d, exist_ok=True)
    dst = os.path.join(d, "%06d.img" % n)
    copy(img, dst)
    exfat = base.startswith("exfat")
    fsck = "fsck.exfat" if exfat else "fsck.fat"
    with open(os.path.join(d, "%06d.txt" % n), "w") as f:
        f.write("%s: %s\n" % (kind, finding.reason))
        f.write("base: %s; mutation: %s\n" % (base, mut.describe()))
        f.write("show: %s -n %s; %s/fatcheck %s; cp %s t.img && "
                "%s/fatcheck -r t.img; cp %s w.img && %s/fatprealloc -p "
                "w.img %s 64K\n" % (fsck, dst, build, dst, dst, build, dst,
                                    build, NEW_PATH))
    return dst


def summary(stats_by, found, elapsed, seed):
    lines = ["differential run: %d s, seed %d" % (elapsed, seed), ""]
    fams = sorted(stats_by)
    lines.append("%-8s %7s %7s %7s %9s %7s %8s" % (
        "family", "images", "agree", "known", "disagree", "listing",
        "intact"))
    tot = {}
    for fam in fams:
        s = stats_by[fam]
        row = (s.get("images", 0), s.get("verdict-agree", 0),
               s.get("verdict-known", 0), s.get("verdict-disagree", 0),
               s.get("listing-agree", 0), s.get("intact-files", 0))
        for i, v in enumerate(row):
            tot[i] = tot.get(i, 0) + v
        lines.append("%-8s %7d %7d %7d %9d %7d %8d" % ((fam,) + row))
    lines.append("%-8s %7d %7d %7d %9d %7d %8d" % (
        ("all",) + tuple(tot.get(i, 0) for i in range(6))))
    lines.append("")
    lines.append("(images: mutated images judged; agree/known/disagree: "
                 "fatcheck -n's verdict against fsck's; listing: clean "
                 "mutated images whose fatls listing matched; intact: "
                 "files fsck did not complain about, followed through "
                 "repair and writer)")
    lines.append("")
    lines.append("classified known differences:")
    known = {}
    for fam in fams:
        for k, v in stats_by[fam].get("known", {}).items():
            known[(fam, k)] = v
    for (fam, k), v in sorted(known.items()):
        lines.append("  %-6s %6d  %s" % (fam, v, k))
    if not known:
        lines.append("  none")
    lines.append("")
    lines.append("repair and writer exit statuses:")
    for fam in fams:
        s = stats_by[fam]
        lines.append("  %-6s repair %s; writer %s" % (fam, ", ".join(
            "%s: %d" % (k[12:], v) for k, v in sorted(s.items())
            if k.startswith("repair-exit-")), ", ".join(
            "%s: %d" % (k[12:], v) for k, v in sorted(s.items())
            if k.startswith("writer-exit-"))))
    lines.append("")
    lines.append("disagreements by kind:")
    if not found:
        lines.append("  none")
    for (fam, kind), v in sorted(found.items()):
        lines.append("  %-6s %6d  %s" % (fam, v, kind))
    return "\n".join(lines) + "\n"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--seconds", type=int, default=600)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=os.path.join(ROOT, "build-diff"))
    ap.add_argument("--keep", type=int, default=20,
                    help="images kept per kind of disagreement")
    ap.add_argument("--only", default="",
                    help="base images to use (comma-separated names)")
    ap.add_argument("--mem-limit", type=int, default=1024,
                    help="address space limit of every program run, in "
                    "MiB (0: none; a build-san build gets none)")
    ap.add_argument("--profile", action="store_true",
                    help="print the time spent in each program")
    a = ap.parse_args(argv)
    tools = Tools(os.path.abspath(a.build))
    if a.mem_limit and "san" not in os.path.basename(tools.build):
        # Every program run inherits it (AddressSanitizer's shadow
        # memory would not fit: sanitizer builds go without).
        lim = a.mem_limit << 20
        resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
    for p in ("fatls", "fatcheck", "fatprealloc"):
        if not os.access(tools.prog(p), os.X_OK):
            raise SystemExit("differential.py: %s: not built (make all)"
                             % tools.prog(p))
    out = os.path.abspath(a.out)
    work = os.path.join(out, "work")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(work)
    rng = random.Random(a.seed)
    start = time.monotonic()

    # base images, and their listings
    bases = {}
    only = set(filter(None, a.only.split(",")))
    for name, opts, kib in FAT_BASES:
        if not only or name in only:
            bases[name] = make_fat_base(tools, work, name, opts, kib, rng)
    for name, cs, mib, how in EXFAT_BASES:
        if not only or name in only:
            bases[name] = make_exfat_base(tools, work, name, cs, mib, how,
                                          rng)
    judge = Judge(tools, work)
    stats_by, found, saved = {}, {}, {}
    base_lists = {}
    for name, img in sorted(bases.items()):
        exfat = name.startswith("exfat")
        fam = family_of(name)
        theirs = judge.listing(exfat, img)[0]
        mine, _ = fatls_list(tools, img)
        why = compare_listings(mine, theirs, exfat)
        fsck = Fsck(exfat, img)
        check = Check(tools, img)
        base_lists[name] = theirs
        print("base %-16s %3d entries, fsck %s, fatcheck %s, listing %s"
              % (name, len(theirs.items), fsck.verdict, check.verdict,
                 "agrees" if not why else "DIFFERS: " + why))
        if why or fsck.verdict != "clean" or check.verdict != "clean":
            k = (fam, "base image: " + ("listing differs" if why else
                                        "not clean"))
            found[k] = found.get(k, 0) + 1
            with open(os.path.join(out, "base-%s.txt" % name), "w") as f:
                f.write("%s\nfsck: %s\nfatcheck: %s\n" % (
                    why, " | ".join(fsck.lines), check.run.out.decode()))

    n = 0
    names = sorted(bases)
    mimg = os.path.join(work, "mutated.img")
    last_print = time.monotonic()
    while time.monotonic() - start < a.seconds:
        name = rng.choice(names)
        exfat = name.startswith("exfat")
        fam = family_of(name)
        copy(bases[name], mimg)
        mut = mutate(mimg, rng, exfat, base_lists[name])
        if mut is None:
            continue
        n += 1
        s = stats_by.setdefault(fam, {})
        s["images"] = s.get("images", 0) + 1
        for fd in judge.judge(exfat, mimg, s):
            # each finding minimised on its own copy: what one needs may
            # be what another does not
            fimg = os.path.join(work, "finding.img")
            copy(mimg, fimg)
            fm = Mutation()
            fm.case, fm.field, fm.flips = mut.case, mut.field, list(mut.flips)
            if fd.kind != "crash or hang":
                minimise(judge, exfat, fimg, fm, fd.kind)
            k = (fam, fd.kind)
            found[k] = found.get(k, 0) + 1
            dst = record(out, fd.kind, n, fimg, name, fm, fd, tools.build,
                         a.keep, saved)
            if dst:
                print("%s: %s (%s) -> %s" % (fd.kind, fd.reason,
                                             fm.describe(), dst))
        if time.monotonic() - last_print > 60:
            last_print = time.monotonic()
            print("... %d images, %d s" % (n, last_print - start))
        sys.stdout.flush()
    text = summary(stats_by, found, time.monotonic() - start, a.seed)
    with open(os.path.join(out, "summary.txt"), "w") as f:
        f.write(text)
    print()
    print(text, end="")
    if a.profile:
        for k, v in sorted(PROFILE.items(), key=lambda x: -x[1]):
            print("%8.1f s  %s" % (v, k))
        for k, v in sorted(REFUSALS.items(), key=lambda x: -x[1]):
            print("%6d writer refusals: %s" % (v, k))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
