#!/usr/bin/env python3
"""Check the layering of src/ by its #include lines.

    layers.py SRC_DIR OBJ_DIR KNOWN_FILE

Every module of src/ (a .c and the .h of its name, or a header alone)
sits in the folder of its room, src/ROOM/ (ROOMS below names them, lowest
first), so a new module needs no edit here: its folder says where it
belongs.  A module uses another when it includes its header or, read
from the objects in OBJ_DIR with nm, calls a function or reads a variable
the other defines.  Rooms are stacked: a module may use modules of its
own room and of rooms below it, never of a room above.  The two families
sit side by side and never include each other, and the rooms above them
(the generic engines and the programs) see a family only through the
family interface, never by including a family's own files.  Modules must
not use each other in a circle.  No code outside the family folders
names a family: no identifier there (comments and string literals left
out) holds "exfat", "fat12", "fat16", "fat32" or "bpb", in any case;
only the list of families (FAMILY_LIST) names them.

The tree does not keep these rules everywhere yet (issue 21 moves it
there).  KNOWN_FILE lists the breaks that exist, one per line; the check
fails on a break not in it, and on a line of it that no longer breaks
anything, so the list only ever shrinks.  Exit 0 when all holds, 1 with
one line per problem otherwise.
"""
import os
import re
import subprocess
import sys

# The rooms, lowest first; each is a folder of src/.  A room's files may
# include its own room and those before it, except that "fat" and
# "exfat" are one level: neither includes the other.  "mount" holds the
# one list that names every family (families.c) and the opening that
# walks it, so it sits above both; the engines and programs above it
# reach a family only through the table the opening chose.
ROOMS = [
    ("lib", "error detail, growable arrays, large arrays, names, UTF-8"),
    ("io", "the device, the sector cache, where the volume lies"),
    ("volume", "opening a volume, the family's directory table"),
    ("table", "the allocation table, cluster chains, allocation maps"),
    ("iface", "the tables a family fills in for the engines"),
    ("fat", "the FAT family"),
    ("exfat", "the exFAT family"),
    ("mount", "the list of families, opening a volume by asking each"),
    ("engine", "the generic check and preallocation engines"),
    ("tools", "the programs, option parsing, JSON"),
]
FAMILIES = ("fat", "exfat")
# Rooms above the families: they reach a family only through the tables
# in "volume" and "iface".
UPPER = {"engine", "tools"}
NAMES = [r for r, _ in ROOMS]
# The one file outside the family folders that names each family.
FAMILY_LIST = os.path.join("mount", "families.c")
# An identifier that names a family (FAT12/16/32, its BPB, or exFAT).
FAMILY_WORD = re.compile(r"\b\w*(?:exfat|fat12|fat16|fat32|bpb)\w*\b", re.I)
# Comments and string or character literals, which may name a format.
NOT_CODE = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"'
                      r"|'(?:\\.|[^'\\\n])*'", re.S)


def level(room):
    i = NAMES.index(room)
    return NAMES.index("fat") if room == "exfat" else i


def modules(src):
    """{module: (room or None, [paths under src])}, and the problems."""
    mods, problems = {}, []
    for top, dirs, files in os.walk(src):
        dirs.sort()
        rel = os.path.relpath(top, src)
        for name in sorted(files):
            mod, ext = os.path.splitext(name)
            if ext not in (".c", ".h"):
                continue
            path = name if rel == "." else os.path.join(rel, name)
            room = rel.split(os.sep)[0] if rel != "." else None
            have = mods.setdefault(mod, (room, []))
            if have[0] != room:
                problems.append(f"{mod}: in two folders ({have[1][0]} and "
                                f"{path}): a module has one room")
            have[1].append(path)
    for mod, (room, paths) in sorted(mods.items()):
        if room is None:
            problems.append(f"{mod}: in no room (move {paths[0]} into the "
                            f"folder of its room: src/"
                            f"{{{','.join(NAMES)}}}/)")
        elif room not in NAMES:
            problems.append(f"{mod}: in no room (src/{room}/ is not one of "
                            f"ROOMS in tests/helpers/layers.py)")
    return mods, problems


def family_names(src, mods):
    """An identifier naming a family outside the family folders."""
    found = []
    for mod, (room, paths) in sorted(mods.items()):
        if room in FAMILIES:
            continue
        for path in paths:
            if path == FAMILY_LIST:
                continue
            with open(os.path.join(src, path), encoding="utf-8") as f:
                code = NOT_CODE.sub(
                    lambda m: re.sub(r"[^\n]", " ", m.group(0)), f.read())
            seen = set()
            for ln in code.splitlines():
                if re.match(r"\s*#\s*include\b", ln):
                    continue
                for word in FAMILY_WORD.findall(ln):
                    if word not in seen:
                        seen.add(word)
                        found.append(f"{path}: names a family ({word}); "
                                     f"only src/{{{','.join(FAMILIES)}}}/ "
                                     f"and {FAMILY_LIST} may")
    return found


def uses(src, obj, mods):
    """Module -> {module it uses: how, for the first way seen}."""
    edges = {}
    pat = re.compile(r'^\s*#\s*include\s+"([^"]+\.h)"', re.M)
    for mod, (_, paths) in sorted(mods.items()):
        edges.setdefault(mod, {})
        for path in paths:
            with open(os.path.join(src, path), encoding="utf-8") as f:
                for inc in pat.findall(f.read()):
                    there = os.path.splitext(os.path.basename(inc))[0]
                    if there != mod:
                        edges[mod].setdefault(
                            there, f"{path} includes {inc}")
    defined, wanted = {}, {}
    for name in sorted(os.listdir(obj)):
        mod, ext = os.path.splitext(name)
        if ext != ".o" or not any(p.endswith(".c")
                                  for p in mods.get(mod, (None, []))[1]):
            continue
        out = subprocess.run(["nm", "-P", os.path.join(obj, name)],
                             check=True, capture_output=True, text=True)
        for ln in out.stdout.splitlines():
            sym, kind = ln.split()[:2]
            if kind == "U":
                wanted.setdefault(mod, []).append(sym)
            elif kind.isupper():
                defined[sym] = mod
    for mod, syms in wanted.items():
        src_c = [p for p in mods[mod][1] if p.endswith(".c")][0]
        for sym in syms:
            there = defined.get(sym)
            if there and there != mod:
                edges[mod].setdefault(there, f"{src_c} uses {sym}")
    return edges


def breaks(src, obj):
    mods, found = modules(src)
    rooms = {m: r for m, (r, _) in mods.items() if r in NAMES}
    edges = uses(src, obj, mods)
    for mod, targets in sorted(edges.items()):
        if mod not in rooms:
            continue
        here = rooms[mod]
        for there_mod, how in sorted(targets.items()):
            there = rooms.get(there_mod)
            if there is None:
                continue
            if {here, there} == set(FAMILIES):
                why = "one family uses the other's module"
            elif here in UPPER and there in FAMILIES:
                why = f"{here} reaches the {there} family past its table"
            elif level(there) > level(here):
                why = f"{here} uses {there}, a room above it"
            else:
                continue
            found.append(f"{mod} -> {there_mod}: {why} ({how})")
    found += cycles(edges)
    found += family_names(src, mods)
    return found


def cycles(edges):
    """The shortest circle through each module, each circle once."""
    seen, out = set(), []
    for start in sorted(edges):
        prev, todo, ring = {start: None}, [start], None
        while todo and ring is None:
            nxt = []
            for m in todo:
                for n in sorted(edges.get(m, ())):
                    if n == start:
                        ring = [m]
                        while prev[ring[-1]] is not None:
                            ring.append(prev[ring[-1]])
                        ring.reverse()
                        break
                    if n not in prev:
                        prev[n] = m
                        nxt.append(n)
                if ring is not None:
                    break
            todo = nxt
        if ring is None or frozenset(ring) in seen:
            continue
        seen.add(frozenset(ring))
        i = ring.index(min(ring))
        ring = ring[i:] + ring[:i]
        out.append("circle: " + " -> ".join(ring + [ring[0]]))
    return out


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__.split("\n\n")[1])
    src, obj, known_file = sys.argv[1:]
    with open(known_file, encoding="utf-8") as f:
        known = {ln.strip() for ln in f
                 if ln.strip() and not ln.startswith("#")}
    # A known break is named without its example ("(how)"), which may
    # change as the code does while the break stays.
    now = {b.rsplit(" (", 1)[0] if not b.startswith("circle") else b: b
           for b in breaks(src, obj)}
    bad = 0
    for b in sorted(set(now) - known):
        print(f"layers: new break: {now[b]}")
        bad = 1
    for b in sorted(known - set(now)):
        print(f"layers: fixed, remove it from {known_file}: {b}")
        bad = 1
    if not bad:
        print(f"layers: no new break ({len(now)} known, issue 21)")
    return bad


if __name__ == "__main__":
    sys.exit(main())
