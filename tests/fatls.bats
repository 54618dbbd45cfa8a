#!/usr/bin/env bats
# fatls.bats: fatls held to account by judges we did not write (mdir,
# minfo, mshowfat, mtype, mcopy from mtools; fsck.fat), by fatimg.py and
# fatpoke.py (readers of the on-disk format that share no code with
# fatkit), and by offsets computed here from the BPB.

load helpers/common

FATPOKE=$BATS_TEST_DIRNAME/helpers/fatpoke.py

# One fixture per row: FAT SECSIZE CLUSSIZE NFATS SIZE.  Together the rows
# cover FAT12/16/32, each with 512- and 4096-byte sectors, clusters from
# 512 B to 32 KiB, and one or two FATs.  Images are sparse: 2100M costs
# what its metadata and files cost.
GEOMS=(
	"12 512 512 2 2M"
	"12 4096 4K 1 12M"
	"12 512 32K 2 64M"
	"16 512 2K 2 16M"
	"16 4096 8K 1 64M"
	"32 512 512 2 40M"
	"32 4096 4K 2 300M"
	"32 512 1K 1 80M"
	"32 4096 32K 2 2100M"
)

# fixture FAT SECSIZE CLUSSIZE NFATS [SIZE]: path of that fixture image.
fixture()
{
	echo "$BATS_FILE_TMPDIR/fat$1-$2-$3-$4.img"
}

# make_fixture FAT SECSIZE CLUSSIZE NFATS SIZE: the populate tree, 1100
# files in /BIG/sub (a directory of several clusters), and /FRAG/frag.bin,
# written after holes were punched in /FRAG so that it has fragments.
make_fixture()
{
	local img i clus src
	local bytes_per_sec sec_per_clus rsvd_secs nfats fat_secs root_secs
	local tot_secs data_start_sec nclus type fsinfo_sec
	img=$(fixture "$@")
	mkimg_geom "$1" "$2" "$3" "$4" "$5" "$img" &&
		populate "$img" &&
		populate_big_dir "$img" /BIG/sub 1100 || return 1
	eval "$(fat_geometry "$img")" || return 1
	clus=$((bytes_per_sec * sec_per_clus))
	src=$img.src
	mkdir -p "$src"
	for i in 1 2 3 4 5; do
		echo "s$i" >"$src/s$i"
	done
	gen_bytes $((3 * clus + 100)) frag >"$src/frag.bin"
	mmd -i "$img" ::/FRAG </dev/null &&
		mcopy -i "$img" "$src"/s[1-5] ::/FRAG/ </dev/null &&
		mdel -i "$img" ::/FRAG/s2 ::/FRAG/s4 </dev/null || return 1
	# mtools allocates after the FAT32 FSInfo hint; forget it so that
	# frag.bin fills the holes.
	if [[ $type == fat32 ]]; then
		printf '\xff\xff\xff\xff' | dd of="$img" bs=1 conv=notrunc \
			seek=$((fsinfo_sec * bytes_per_sec + 492)) status=none ||
			return 1
	fi
	mcopy -i "$img" "$src/frag.bin" ::/FRAG/ </dev/null
}

# The fixtures are built in parallel: mtools and python start-ups, not
# I/O, are what they cost.
setup_file()
{
	local g i=0 status=0
	local -a pids=()
	cd "$BATS_FILE_TMPDIR" || return 1
	for g in "${GEOMS[@]}"; do
		# shellcheck disable=SC2086
		make_fixture $g >"fixture.$i.log" 2>&1 &
		pids+=($!)
		i=$((i + 1))
	done
	for i in "${!pids[@]}"; do
		if ! wait "${pids[$i]}"; then
			echo "fixture ${GEOMS[$i]} failed:" >&2
			cat "fixture.$i.log" >&2
			status=1
		fi
	done
	return "$status"
}

teardown()
{
	if [[ -n ${LOOPDEV:-} ]]; then
		losetup -d "$LOOPDEV"
		LOOPDEV=
	fi
}

# mdir_entries IMG DIR: DIR as mdir lists it, in on-disk order, without .
# and ..: one line per entry, SIZE or <DIR>, date and H:MM, short name,
# name (the long name when there is one, else the short name).
mdir_entries()
{
	mdir -i "$1" "::$2" </dev/null | "$FK_PYTHON" -c '
import re, sys
pat = re.compile(r"^(.{8}) (.{3}) +(<DIR>|\d+) +(\d{4}-\d\d-\d\d) +"
                 r"(\d+:\d\d)(?:  (.+))?$")
for line in sys.stdin:
    m = pat.match(line.rstrip())
    if not m:
        continue
    base, ext, size, date, hm, long = m.groups()
    short = base.rstrip() + ("." + ext.rstrip() if ext.strip() else "")
    if short not in (".", ".."):
        print("\t".join((size, date + " " + hm, short, long or short)))
'
}

# fatls_entries IMG DIR [OPTIONS]: the same fields from fatls -l -s.
fatls_entries()
{
	local img=$1 dir=$2 attrs size alloc mtime short name
	shift 2
	fatls -l -s "$@" "$img" "$dir" |
		while read -r attrs size alloc mtime short name; do
			[[ $attrs == d* ]] && size='<DIR>'
			printf '%s\t%s %d:%s\t%s\t%s\n' "$size" "${mtime:0:10}" \
				"$((10#${mtime:11:2}))" "${mtime:14:2}" "$short" \
				"$name"
		done
}

@test "fixtures: fsck.fat clean, a big dir of several clusters, a fragmented file" {
	local g img
	for g in "${GEOMS[@]}"; do
		img=$(fixture $g)
		echo "# $img"
		fsck_clean "$img"
		run -0 mshowfat -i "$img" ::/BIG/sub ::/FRAG/frag.bin
		assert_line --regexp '^::/BIG/sub <[0-9]+(-[0-9]+)?> <'
		assert_line --regexp '^::/FRAG/frag.bin <[0-9]+(-[0-9]+)?> <[0-9]+(-[0-9]+)?> <'
	done
}

@test "fatls -l -s -R: every directory's names, short names, sizes, times and order agree with mdir -/, on every geometry" {
	local g img
	for g in "${GEOMS[@]}"; do
		img=$(fixture $g)
		echo "# $img"
		mdir -/ -i "$img" :: </dev/null >mdir.out
		fatls -l -s -R "$img" >fatls.out
		"$FK_PYTHON" - mdir.out fatls.out <<'EOF'
import difflib, re, sys
# mdir -/: a "Directory for ::/PATH" header, then one line per entry:
# short name, size or <DIR>, date, H:MM, and the long name if any.
ent = re.compile(r"^(.{8}) (.{3}) +(<DIR>|\d+) +(\d{4}-\d\d-\d\d) +"
                 r"(\d+):(\d\d)(?:  (.+))?$")
want, cur = {}, None
for line in open(sys.argv[1], encoding="utf-8"):
    line = line.rstrip()
    if line.startswith("Directory for ::"):
        cur = line[len("Directory for ::"):].rstrip("/")
        want[cur] = []
        continue
    m = ent.match(line)
    if not m:
        continue
    base, ext, size, date, h, mi, long = m.groups()
    short = base.rstrip() + ("." + ext.rstrip() if ext.strip() else "")
    if short not in (".", ".."):
        want[cur].append("%s %s %d:%s %s %s" % (size, date, int(h), mi,
                                                short, long or short))
# fatls -l -s -R: ATTRS SIZE ALLOCATED MTIME SHORT PATH, grouped here by
# the directory each entry is in.
lre = re.compile(r"^([-dv][-r][-h][-s][-a]) +(\d+) +(\d+) "
                 r"(\d{4}-\d\d-\d\d)T(\d\d):(\d\d):\d\d (\S+) +(/.*)$")
got = {d: [] for d in want}
for line in open(sys.argv[2], encoding="utf-8"):
    m = lre.match(line.rstrip("\n"))
    assert m, "bad fatls line: %r" % line
    attrs, size, alloc, date, h, mi, short, path = m.groups()
    d, name = path.rsplit("/", 1)
    size = "<DIR>" if attrs[0] == "d" else size
    got.setdefault(d, []).append("%s %s %d:%s %s %s" % (size, date, int(h),
                                                         mi, short, name))
assert sorted(got) == sorted(want), (sorted(got), sorted(want))
for d in want:
    if got[d] != want[d]:
        sys.exit("\n".join(difflib.unified_diff(
            want[d], got[d], "mdir " + d, "fatls " + d, lineterm="")))
# The judge saw the whole tree, or the comparison proves nothing:
# /, DATA, EMPTYDIR, Mixed Case Dir, deep1..6, BIG, BIG/sub, FRAG.
counts = {d: len(v) for d, v in want.items()}
assert len(want) == 13 and counts[""] == 12, counts
assert counts["/BIG/sub"] == 1100 and counts["/FRAG"] == 4, counts
EOF
	done
}

@test "fatls -R: full paths of every entry, pre-order, as mdir -/ walks the tree, on every geometry" {
	local g img
	for g in "${GEOMS[@]}"; do
		img=$(fixture $g)
		echo "# $img"
		mdir -b -/ -i "$img" :: </dev/null >mdir.out
		fatls -R "$img" >got
		"$FK_PYTHON" - mdir.out >want <<'EOF'
import sys
# mdir -/ -b lists each directory's entries together, in on-disk order
# ("::/path", directories with a trailing "/"); rebuild the pre-order.
children, is_dir = {}, set()
for line in open(sys.argv[1], encoding="utf-8"):
    path = line.rstrip("\n")[2:]
    if path.endswith("/"):
        path = path[:-1]
        is_dir.add(path)
    children.setdefault(path.rsplit("/", 1)[0], []).append(path)
def walk(d):
    for c in children.get(d, []):
        print(c)
        if c in is_dir:
            walk(c)
walk("")
EOF
		[ "$(wc -l <want)" -eq 1131 ]
		diff -u want got
	done
}

@test "fatls --info agrees with minfo, mdir and fatimg.py, on every geometry" {
	local g img fat sec clus nf size line k v keys
	local bytes_per_sec sec_per_clus rsvd_secs nfats fat_secs root_secs
	local tot_secs data_start_sec nclus type fsinfo_sec
	local -A info mi
	for g in "${GEOMS[@]}"; do
		read -r fat sec clus nf size <<<"$g"
		img=$(fixture $g)
		echo "# $img"
		eval "$(fat_geometry "$img")"
		# minfo lines are "key: value", "key=value" or key="value".
		mi=()
		while IFS= read -r line; do
			[[ $line =~ ^([a-zA-Z][^:=]*)(:|=)\ ?(.*)$ ]] || continue
			k=${BASH_REMATCH[1]} v=${BASH_REMATCH[3]}
			v=${v#\"} v=${v%\"}
			v=${v%"${v##*[! ]}"}
			[[ -v mi[$k] ]] || mi[$k]=$v
		done < <(minfo -i "$img" :: </dev/null)
		run -0 --separate-stderr fatls --info "$img"
		[ -z "$stderr" ]
		info=()
		keys=
		while IFS= read -r line; do
			info[${line%%: *}]=${line#*: }
			keys+=${line%%: *},
		done <<<"$output"
		# The keys, in order (FSInfo and mirroring only on FAT32).
		if ((fat == 32)); then
			[ "$keys" = "fat type,sector size,cluster size,sectors per cluster,reserved sectors,fat copies,sectors per fat,root cluster,total sectors,data clusters,free clusters,free bytes,fsinfo free count,fsinfo next free,fat mirroring,label,root label,serial,oem,media,volume offset," ]
		else
			[ "$keys" = "fat type,sector size,cluster size,sectors per cluster,reserved sectors,fat copies,sectors per fat,root entries,total sectors,data clusters,free clusters,free bytes,label,root label,serial,oem,media,volume offset," ]
		fi
		[ "${info[fat type]}" = "FAT$fat" ]
		[ "${info[fat type]}" = "${type^^}" ]
		[ "${info[fat type]}" = "${mi[disk type]}" ]
		[ "${info[sector size]}" = "$sec" ]
		[ "${info[sector size]} bytes" = "${mi[sector size]}" ]
		[ "${info[sectors per cluster]} sectors" = "${mi[cluster size]}" ]
		[ "${info[sectors per cluster]}" = "$sec_per_clus" ]
		[ "${info[cluster size]}" = $((sec * sec_per_clus)) ]
		case $clus in
		*K) [ "${info[cluster size]}" = $((${clus%K} * 1024)) ] ;;
		*) [ "${info[cluster size]}" = "$clus" ] ;;
		esac
		[ "${info[reserved sectors]}" = "${mi[reserved (boot) sectors]}" ]
		[ "${info[reserved sectors]}" = "$rsvd_secs" ]
		[ "${info[fat copies]}" = "${mi[fats]}" ]
		[ "${info[fat copies]}" = "$nf" ]
		[ "${info[sectors per fat]}" = "$fat_secs" ]
		[ "${info[total sectors]}" = "$tot_secs" ]
		[ "${info[data clusters]}" = "$nclus" ]
		if ((fat == 32)); then
			[ "${info[sectors per fat]}" = "${mi[Big fatlen]}" ]
			[ "${info[total sectors]} sectors" = "${mi[big size]}" ]
			[ "${info[root cluster]}" = "${mi[rootCluster]}" ]
			[ "${info[fsinfo free count]}" = "${mi[free clusters]}" ]
			[ "${info[fsinfo next free]}" = "${mi[last allocated cluster]}" ]
			[ "${info[fat mirroring]}" = on ]
		else
			[ "${info[sectors per fat]}" = "${mi[sectors per fat]}" ]
			[ "${info[root entries]}" = "${mi[max available root directory slots]}" ]
			[ "${info[root entries]}" = $((root_secs * sec / 32)) ]
			if [ "${mi[small size]}" = "0 sectors" ]; then
				[ "${info[total sectors]} sectors" = "${mi[big size]}" ]
			else
				[ "${info[total sectors]} sectors" = "${mi[small size]}" ]
			fi
		fi
		[ "${info[free clusters]}" = "$(count_free_clusters "$img")" ]
		[ "${info[free bytes]}" = $((${info[free clusters]} * ${info[cluster size]})) ]
		line=$(mdir -i "$img" ::/ </dev/null | grep ' bytes free$')
		line=${line% bytes free}
		[ "${info[free bytes]}" = "${line// /}" ]
		[ "${info[label]}" = "NO NAME" ]
		[ "${info[label]}" = "${mi[disk label]}" ]
		[ "${info[root label]}" = "" ]
		[ "${info[serial]}" = 1234-ABCD ]
		[ "${info[serial]/-/}" = "${mi[serial number]}" ]
		[ "${info[oem]}" = "${mi[banner]}" ]
		[ "${info[media]}" = "${mi[media descriptor byte]}" ]
		[ "${info[volume offset]}" = 0 ]
	done
}

@test "fatls --info: no listing without PATH, the listing follows with one" {
	img=$(fixture 16 512 2K 2)
	run -0 fatls --info "$img"
	refute_line README.TXT
	assert_line 'fat type: FAT16'
	run -0 fatls --info "$img" /DATA
	assert_line 'fat type: FAT16'
	assert_line --index 18 rand-100000.bin
	assert_line --index 24 rand-513.bin
	[ "${#lines[@]}" -eq 25 ]
}

# check_chains IMG CHAIN_OUT MSHOWFAT_OUT [BASE]: every line of fatls
# --chain -R output (CHAIN_OUT) has runs whose offsets and lengths follow
# from the BPB (OFF = BASE + data start + (A-2) * cluster, LEN = (B-A+1)
# * cluster) and whose clusters are those mshowfat printed in
# MSHOWFAT_OUT, when it printed the path.  Writes the first clusters to
# "firsts" and the runs, as fatpoke.py chains prints them, to "runs".
check_chains()
{
	local img=$1 base=${4:-0}
	local bytes_per_sec sec_per_clus rsvd_secs nfats fat_secs root_secs
	local tot_secs data_start_sec nclus type fsinfo_sec
	eval "$(fat_geometry "$img")"
	"$FK_PYTHON" - "$2" "$3" "$base" $((data_start_sec * bytes_per_sec)) \
		$((sec_per_clus * bytes_per_sec)) <<'EOF'
import re, sys
chain_out, mshowfat_out = sys.argv[1:3]
base, data, clus = map(int, sys.argv[3:])
ms = {}
for line in open(mshowfat_out, encoding="utf-8"):
    line = line.rstrip("\n")
    if not line:
        continue
    m = re.match(r"^::(.*?) ((?:<\d+(?:-\d+)?> ?)+|Root directory or "
                 r"empty file)$", line)
    assert m, "bad mshowfat line: %r" % line
    path, runs = m.groups()
    ms[path] = "-" if runs.startswith("Root") else ",".join(
        r if "-" in r else r + "-" + r for r in re.findall(r"<([\d-]+)>", runs))
firsts, walks, seen = open("firsts", "w"), open("runs", "w"), 0
line_re = re.compile(r"^first=(\d+) fragments=(\d+) runs=(\S+) (?:aligned=\S+ )?(/.*)$")
for line in open(chain_out, encoding="utf-8"):
    m = line_re.match(line.rstrip("\n"))
    assert m, "bad --chain line: %r" % line
    first, frags, runs, path = m.groups()
    pairs = []
    if runs != "-":
        for r in runs.split(","):
            a, b, off, n = map(int, re.fullmatch(
                r"(\d+)-(\d+)@(\d+)\+(\d+)", r).groups())
            assert off == base + data + (a - 2) * clus, (path, r)
            assert n == (b - a + 1) * clus, (path, r)
            pairs.append("%d-%d" % (a, b))
    text = ",".join(pairs) or "-"
    assert int(frags) == len(pairs), (path, frags, runs)
    assert (first == "0") == (runs == "-"), (path, first, runs)
    assert not pairs or pairs[0].startswith(first + "-"), (path, runs)
    if path in ms:
        assert ms[path] == text, ("mshowfat", path, ms[path], text)
        seen += 1
    print(first, file=firsts)
    print("runs=%s end=eoc" % text, file=walks)
assert seen == len(ms) > 0, (seen, len(ms))
EOF
}

@test "fatls --chain: runs agree with mshowfat and with fatpoke.py's FAT walk; offsets follow from the BPB, on every geometry" {
	local g img
	local -a paths
	for g in "${GEOMS[@]}"; do
		img=$(fixture $g)
		echo "# $img"
		fatls --chain -R "$img" >chain.out
		[ "$(wc -l <chain.out)" -eq 1131 ]
		# mtools' view of the chains: all but most of the 1100 small
		# files, in one call.
		mapfile -t paths < <(sed 's/^first=[0-9]* fragments=[0-9]* runs=[^ ]* \(aligned=[^ ]* \)\{0,1\}//' chain.out |
			grep -v '^/BIG/sub/f[0-9]*[1-9]\.txt$')
		[ "${#paths[@]}" -eq 141 ]
		mshowfat -i "$img" "${paths[@]/#/::}" </dev/null >mshowfat.out
		check_chains "$img" chain.out mshowfat.out
		# Our own FAT walk from every first cluster: the same runs, and
		# every chain ends in end-of-chain.
		"$FK_PYTHON" "$FATPOKE" chains "$img" <firsts >walk
		diff -u runs walk
		# The multi-run cases are really there.
		grep -q '^first=[0-9]* fragments=[3-9] .* /FRAG/frag.bin$' chain.out
		grep -q '^first=[0-9]* fragments=[2-9] .* /BIG/sub$' chain.out
		grep -q '^first=0 fragments=0 runs=- /empty.bin$' chain.out
	done
}

# check_data IMG CLUSSIZE CHAIN_OUT PATH...: the bytes at the offsets
# CHAIN_OUT (fatls --chain output) gives for each PATH, read straight from
# the file IMG names, are the file as mcopy reads it from IMG, up to its
# size, and the runs are the fewest clusters that hold it.  The PATHs'
# base names must differ.
check_data()
{
	local img=$1 clus=$2 chain=$3
	shift 3
	rm -rf copied
	mkdir copied
	mcopy -n -i "$img" "${@/#/::}" copied/ </dev/null
	"$FK_PYTHON" - "${img%%@@*}" "$clus" "$chain" "$@" <<'EOF'
import re, sys
image, clus, chain_out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
runs = {}
for line in open(chain_out, encoding="utf-8"):
    m = re.match(r"^first=\d+ fragments=\d+ runs=(\S+) (?:aligned=\S+ )?(/.*)$",
                 line.rstrip("\n"))
    assert m, "bad --chain line: %r" % line
    runs[m.group(2)] = [] if m.group(1) == "-" else [
        tuple(map(int, re.fullmatch(r"\d+-\d+@(\d+)\+(\d+)", r).groups()))
        for r in m.group(1).split(",")]
with open(image, "rb") as f:
    for path in sys.argv[4:]:
        want = open("copied/" + path.rsplit("/", 1)[1], "rb").read()
        got = b""
        for off, n in runs[path]:
            f.seek(off)
            got += f.read(n)
        assert len(got) == -(-len(want) // clus) * clus, \
            (path, len(got), len(want))
        assert got[:len(want)] == want, "%s: its runs hold other bytes" % path
EOF
}

# The files check_data reads on each fixture.
DATA_PATHS=(
	/README.TXT "/A long file name for testing.txt" "/name with spaces.dat"
	/Grüße.txt /日本語.txt /empty.bin "/Mixed Case Dir/lower.txt"
	/deep1/deep2/deep3/deep4/deep5/deep6/leaf.txt
	/DATA/rand-0.bin /DATA/rand-1.bin /DATA/rand-511.bin /DATA/rand-512.bin
	/DATA/rand-513.bin /DATA/rand-4096.bin /DATA/rand-100000.bin
	/FRAG/frag.bin /FRAG/s5 /BIG/sub/f1100.txt
)

@test "fatls --chain: each file's byte offsets and lengths in IMAGE hold its data, as mcopy reads it, on every geometry" {
	local g img clus
	for g in "${GEOMS[@]}"; do
		img=$(fixture $g)
		echo "# $img"
		clus=$(fatls --info "$img" | sed -n 's/^cluster size: //p')
		fatls --chain -R "$img" >chain.out
		check_data "$img" "$clus" chain.out "${DATA_PATHS[@]}"
	done
}

@test "fatls --json: parses, and holds what -l, -s, --chain, -R and --info print, on every geometry" {
	local g img
	for g in "${GEOMS[@]}"; do
		img=$(fixture $g)
		echo "# $img"
		fatls --json --info -R "$img" / >json
		fatls --info "$img" >info
		fatls -R "$img" >paths
		fatls -l -R "$img" >long
		fatls -s -R "$img" >short
		fatls --chain -R "$img" >chain
		"$FK_PYTHON" - <<'EOF'
import json, re
doc = json.load(open("json", encoding="utf-8"))
assert set(doc) == {"volume", "entries"}, doc.keys()
vol, ents = doc["volume"], doc["entries"]
info = [l.rstrip("\n").split(": ", 1) for l in open("info", encoding="utf-8")]
assert list(vol) == [k.replace(" ", "_") for k, _ in info], list(vol)
for k, v in info:
    assert str(vol[k.replace(" ", "_")]) == v, (k, v, vol)
clus = vol["cluster_size"]
lines = lambda f: open(f, encoding="utf-8").read().splitlines()
paths, long, short, chain = (lines(f) for f in ("paths", "long", "short", "chain"))
assert [e["path"] for e in ents] == paths
assert len(paths) == len(long) == len(short) == len(chain) > 1130
names = {"read-only": "r", "hidden": "h", "system": "s", "archive": "a"}
for e, l, s, c in zip(ents, long, short, chain):
    p = e["path"]
    assert e["name"] == p.rsplit("/", 1)[1], e
    attrs, size, alloc, mtime, lpath = re.fullmatch(
        r"(\S{5}) +(\d+) +(\d+) (\S+) (.*)", l).groups()
    assert lpath == p, (l, p)
    a = "d" if "directory" in e["attributes"] else \
        "v" if "volume" in e["attributes"] else "-"
    a += "".join(v if k in e["attributes"] else "-" for k, v in names.items())
    assert a == attrs, (e, l)
    assert e["size"] == int(size) and e["allocated"] == int(alloc), (e, l)
    assert e["mtime"] == (None if mtime == "-" else mtime), (e, l)
    sh, spath = s.split(" /", 1)
    assert e["short_name"] == sh.rstrip() and "/" + spath == p, (e, s)
    first, frags, runs, cpath = re.fullmatch(
        r"first=(\d+) fragments=(\d+) runs=(\S+) (?:aligned=\S+ )?(.*)", c).groups()
    assert cpath == p, (c, p)
    assert e["first_cluster"] == int(first), (e, c)
    assert e["fragments"] == int(frags) == len(e["runs"]), (e, c)
    text = ",".join("%d-%d@%d+%d" % (r["first"], r["last"], r["offset"],
                                     r["length"]) for r in e["runs"])
    assert (text or "-") == runs, (e, c)
    for r in e["runs"]:
        assert r["clusters"] == r["last"] - r["first"] + 1, e
        assert r["length"] == r["clusters"] * clus, e
    assert e["clusters"] == sum(r["clusters"] for r in e["runs"]), e
    assert e["allocated"] == e["clusters"] * clus, e
EOF
		# Without --info there is no volume object.
		fatls --json "$img" /DATA | "$FK_PYTHON" -c '
import json, sys
doc = json.load(sys.stdin)
assert list(doc) == ["entries"], doc
assert [e["name"] for e in doc["entries"]] == ["rand-100000.bin", "rand-512.bin", "rand-4096.bin", "rand-0.bin", "rand-1.bin", "rand-511.bin", "rand-513.bin"], doc
assert doc["entries"][0]["size"] == 100000
assert doc["entries"][0]["path"] == "/DATA/rand-100000.bin"
'
	done
}

@test "fatls --json: still one JSON document when a PATH fails" {
	img=$(fixture 12 512 512 2)
	run -1 --separate-stderr fatls --json "$img" /nope /README.TXT
	[ "$stderr" = "fatls: $img:/nope: No such file or directory" ]
	"$FK_PYTHON" -c '
import json, sys
doc = json.loads(sys.argv[1])
assert [e["path"] for e in doc["entries"]] == ["/README.TXT"], doc
' "$output"
}

@test "fatls: a file PATH prints the path; several directories get headers and blank lines, as ls" {
	img=$(fixture 16 512 2K 2)
	run -0 --separate-stderr fatls "$img" /README.TXT
	[ "$output" = /README.TXT ]
	run -0 --separate-stderr fatls "$img" "/Mixed Case Dir"
	[ "$output" = lower.txt ]
	run -0 --separate-stderr fatls "$img" /EMPTYDIR "/Mixed Case Dir" /deep1
	[ "$output" = $'/EMPTYDIR:\n\n/Mixed Case Dir:\nlower.txt\n\n/deep1:\ndeep2' ]
	run -0 --separate-stderr fatls "$img" /
	assert_line --index 0 'A long file name for testing.txt'
	assert_line --index 11 FRAG
	[ "${#lines[@]}" -eq 12 ]
	# Trailing slashes name the directory itself.
	run -0 fatls "$img" /deep1/
	[ "$output" = deep2 ]
	# -R with a PATH prints full paths under it.
	run -0 fatls -R "$img" /deep1/deep2/deep3/deep4
	[ "$output" = $'/deep1/deep2/deep3/deep4/deep5\n/deep1/deep2/deep3/deep4/deep5/deep6\n/deep1/deep2/deep3/deep4/deep5/deep6/leaf.txt' ]
}

@test "fatls -l: ATTRS SIZE ALLOCATED MTIME NAME; allocated is whole clusters; mtime is ISO 8601" {
	img=$(fixture 16 4096 8K 1)
	run -0 --separate-stderr fatls -l "$img" /DATA
	assert_line --index 0 '----a     100000     106496 2024-01-02T03:04:06 rand-100000.bin'
	assert_line --index 3 '----a          0          0 2024-01-02T03:04:06 rand-0.bin'
	assert_line --index 4 '----a          1       8192 2024-01-02T03:04:06 rand-1.bin'
	assert_line --index 6 '----a        513       8192 2024-01-02T03:04:06 rand-513.bin'
	run -0 fatls -l "$img" /
	assert_line 'd----          0       8192 2024-01-02T03:04:06 EMPTYDIR'
	# 1102 slots of 32 bytes in 8 KiB clusters: 5 clusters.
	run -0 fatls -l "$img" /BIG
	assert_line --regexp '^d----          0      40960 [0-9T:-]{19} sub$'
	# Each line of every geometry has the shape the contract gives.
	local g
	for g in "${GEOMS[@]}"; do
		run -0 fatls -l -R "$(fixture $g)"
		[ "${#lines[@]}" -gt 1130 ]
		printf '%s\n' "${lines[@]}" | grep -vE '^[-dv][-r][-h][-s][-a] +[0-9]+ +[0-9]+ ([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}|-) /.+$' >bad || true
		[ ! -s bad ] || { cat bad; false; }
	done
}

@test "fatls -l, --json: a date of 0 prints as - and null" {
	mkimg fat16 16M img
	populate img
	local off
	off=$("$FK_PYTHON" "$FATPOKE" slot img 'README  TXT')
	# DIR_WrtTime and DIR_WrtDate (bytes 22..25 of the slot) to zero.
	printf '\0\0\0\0' | dd of=img bs=1 seek=$((off + 22)) conv=notrunc status=none
	run -0 mdir -i img ::/README.TXT
	run -0 --separate-stderr fatls -l img /README.TXT
	[ "$output" = '----a         19        512 -                   /README.TXT' ]
	run -0 fatls --json img /README.TXT
	"$FK_PYTHON" -c '
import json, sys
e = json.loads(sys.argv[1])["entries"][0]
assert e["mtime"] is None and e["name"] == "README.TXT", e
' "$output"
}

@test "fatls -s: 8.3 names padded to 12 columns, as mdir shows them" {
	img=$(fixture 32 512 1K 1)
	run -0 --separate-stderr fatls -s "$img" /
	assert_line 'ALONGF~1.TXT A long file name for testing.txt'
	assert_line 'GRÜßE.TXT    Grüße.txt'
	assert_line 'README.TXT   README.TXT'
	assert_line 'deep1        deep1'
	assert_line 'NAMEWI~1.DAT name with spaces.dat'
	assert_line '___.TXT      日本語.txt'
	# Options combine in the order of the contract.
	local first
	first=$(mshowfat -i "$img" ::/README.TXT | sed 's/.*<\([0-9]*\)>.*/\1/')
	run -0 fatls -l -s --chain "$img" /README.TXT
	[[ $output == "----a         19       1024 2024-01-02T03:04:06 README.TXT   first=$first fragments=1 runs=$first-$first@"*"+1024 aligned="*" /README.TXT" ]]
}

@test "fatls -a: hidden and system entries, . and .., and the label; hidden without -a, as mdir hides them" {
	mkimg fat16 16M img -n FATKITVOL
	populate img
	mattrib -i img +h ::/README.TXT
	mattrib -i img +s ::/empty.bin
	mattrib -i img +r ::/DATA/rand-1.bin
	run -0 fatls img /
	refute_line README.TXT
	refute_line empty.bin
	refute_line FATKITVOL
	assert_line DATA
	diff -u <(mdir_entries img /) <(fatls_entries img /)
	run -0 --separate-stderr fatls -a -l img /
	assert_line '--h-a         19        512 2024-01-02T03:04:06 README.TXT'
	assert_line '---sa          0          0 2024-01-02T03:04:06 empty.bin'
	assert_line --regexp '^v----          0          0 [0-9T:-]{19} FATKITVOL$'
	[ "${#lines[@]}" -eq 11 ]
	run -0 fatls -a img /DATA
	assert_line --index 0 .
	assert_line --index 1 ..
	[ "${#lines[@]}" -eq 9 ]
	run -0 fatls -l img /DATA
	assert_line '-r--a          1        512 2024-01-02T03:04:06 rand-1.bin'
	# -R -a lists . and .. but does not descend into them.
	run -0 fatls -R -a img
	assert_line /DATA/.
	assert_line /DATA/..
	assert_line /README.TXT
	# The label, README.TXT, empty.bin, and . and .. of 9 directories.
	[ "${#lines[@]}" -eq $(($(fatls -R img | wc -l) + 3 + 2 * 9)) ]
	run -0 fatls --json -a img /
	"$FK_PYTHON" -c '
import json, sys
ents = {e["name"]: e for e in json.loads(sys.argv[1])["entries"]}
assert ents["README.TXT"]["attributes"] == ["hidden", "archive"], ents
assert ents["empty.bin"]["attributes"] == ["system", "archive"], ents
assert ents["FATKITVOL"]["attributes"] == ["volume"], ents
assert ents["DATA"]["attributes"] == ["directory"], ents
' "$output"
}

@test "fatls -a, --info: an 11-character label is shown whole, as mlabel shows it" {
	mkimg fat12 2M img
	mlabel -i img ::ABCDEFGHIJK
	run -0 mdir -i img ::/
	assert_line --partial 'is ABCDEFGHIJK'
	run -0 fatls -a img
	[ "$output" = ABCDEFGHIJK ]
	run -0 fatls --info img
	assert_line 'label: ABCDEFGHIJK'
	assert_line 'root label: ABCDEFGHIJK'
	run -0 fatls -a --json img
	"$FK_PYTHON" -c '
import json, sys
e = json.loads(sys.argv[1])["entries"][0]
assert e["name"] == e["short_name"] == "ABCDEFGHIJK", e
' "$output"
}

@test "fatls: PATHs match long and short names case-insensitively, as mtools does" {
	img=$(fixture 16 512 2K 2)
	local spec want n=0
	while IFS='|' read -r spec want; do
		n=$((n + 1))
		run -0 --separate-stderr fatls --json "$img" "$spec"
		printf '%s\n' "$want" "$output" >"lookup.$n"
		# mtools finds a file by the same name.
		mdir -i "$img" "::$spec" >/dev/null
	done <<'EOF'
/readme.txt|README.TXT
/README.TXT|README.TXT
/ReadMe.Txt|README.TXT
/ALONGF~1.TXT|A long file name for testing.txt
/alongf~1.txt|A long file name for testing.txt
/a LONG file NAME for testing.TXT|A long file name for testing.txt
/GRÜßE.TXT|Grüße.txt
/grüße.txt|Grüße.txt
/日本語.txt|日本語.txt
/___.TXT|日本語.txt
/NAMEWI~1.DAT|name with spaces.dat
/Name With Spaces.DAT|name with spaces.dat
/mixed case dir/LOWER.TXT|lower.txt
/MIXEDC~1/lower.txt|lower.txt
/data/RAND-1~1.BIN|rand-100000.bin
/Data/Rand-100000.Bin|rand-100000.bin
/DEEP1/Deep2/deep3/DEEP4/deep5/DEEP6/LEAF.TXT|leaf.txt
/big/SUB/F1100.TXT|f1100.txt
EOF
	[ "$n" -eq 18 ]
	"$FK_PYTHON" - "$n" <<'EOF'
import json, sys
for i in range(1, int(sys.argv[1]) + 1):
    want, doc = open("lookup.%d" % i, encoding="utf-8").read().split("\n", 1)
    ents = json.loads(doc)["entries"]
    assert [e["name"] for e in ents] == [want], (want, ents)
EOF
	# A directory found by its short name lists its contents.
	run -0 fatls "$img" /MIXEDC~1
	[ "$output" = lower.txt ]
	run -0 fatls "$img" /DEEP1/./DEEP2/../deep2/deep3
	[ "$output" = deep4 ]
	# The root is its own parent, as for mdir ::/.. and POSIX.
	run -0 fatls "$img" /..
	[ "$output" = "$(fatls "$img" /)" ]
	run -0 fatls "$img" /deep1/../../DATA/..
	[ "$output" = "$(fatls "$img" /)" ]
	run -0 mdir -i "$img" ::/..
}

@test "fatls: a long name whose checksum does not match falls back to the 8.3 name, as mdir shows it" {
	mkimg fat16 16M img
	populate img
	local off
	off=$("$FK_PYTHON" "$FATPOKE" slot img 'ALONGF~1TXT')
	# The checksum byte (13) of the long-name slot just before it.
	printf '\0' | dd of=img bs=1 seek=$((off - 32 + 13)) conv=notrunc status=none
	run -0 fatls img /
	assert_line ALONGF~1.TXT
	refute_line 'A long file name for testing.txt'
	diff -u <(mdir_entries img /) <(fatls_entries img /)
	run -0 fatls -l img /alongf~1.txt
	[[ $output == "----a         24 "* ]]
	run -1 --separate-stderr fatls img "/A long file name for testing.txt"
	[ "$stderr" = "fatls: img:/A long file name for testing.txt: No such file or directory" ]
}

@test "fatls: the NT lower-case flags lower code page letters too, as mdir shows them" {
	mkimg fat12 2M img
	echo hi >RESUME.DOC
	mcopy -i img RESUME.DOC ::RESUME.DOC
	local off
	off=$("$FK_PYTHON" "$FATPOKE" slot img 'RESUME  DOC')
	# The name R\x90SUM\x90 DOC (0x90 is E acute in code page 850) with
	# both flags, base (0x08) and extension (0x10), in the NT byte (12).
	printf 'R\x90SUM\x90  DOC\0\x18' |
		dd of=img bs=1 seek="$off" conv=notrunc status=none
	run -0 mdir -i img ::/
	assert_line --regexp '^résumé +doc '
	run -0 fatls img /
	assert_output 'résumé.doc'
	run -0 fatls img /résumé.doc
	run -0 fatls img /RÉSUMÉ.DOC
}

@test "fatls: a missing PATH, a file used as a directory, a relative PATH" {
	img=$(fixture 12 512 512 2)
	run -1 --separate-stderr fatls "$img" /nope
	[ "$stderr" = "fatls: $img:/nope: No such file or directory" ]
	[ -z "$output" ]
	run -1 --separate-stderr fatls "$img" /README.TXT/x
	[ "$stderr" = "fatls: $img:/README.TXT/x: Not a directory" ]
	run -1 --separate-stderr fatls "$img" /readme.txt2
	[ "$stderr" = "fatls: $img:/readme.txt2: No such file or directory" ]
	run -1 --separate-stderr fatls "$img" /DATA/nope.bin
	[ "$stderr" = "fatls: $img:/DATA/nope.bin: No such file or directory" ]
	# Like ls, the other PATHs are still listed.
	run -1 --separate-stderr fatls "$img" /nope /README.TXT
	[ "$stderr" = "fatls: $img:/nope: No such file or directory" ]
	[ "$output" = /README.TXT ]
	run -2 --separate-stderr fatls "$img" README.TXT
	[[ $stderr == "fatls: "*"README.TXT"* ]]
	[ "${#stderr_lines[@]}" -eq 1 ]
	[ -z "$output" ]
}

@test "fatls: never changes the image" {
	img=$(fixture 32 512 512 2)
	local before
	before=$(img_sha "$img")
	fatls "$img" >/dev/null
	fatls -l -a -R -s --chain "$img" >/dev/null
	fatls --json --info -R "$img" >/dev/null
	fatls --info "$img" / /DATA /nope >/dev/null 2>&1 || true
	[ "$(img_sha "$img")" = "$before" ]
}

# Partition tables.

# same_listing IMG_SPEC...: every spec (IMAGE, IMAGE@@OFF or -P N IMAGE,
# word-split) gives the same -l -R and --chain -R output, which is not
# empty.
same_listing()
{
	local spec first=
	for spec in "$@"; do
		# shellcheck disable=SC2086
		fatls -l -R $spec >ls.out
		# shellcheck disable=SC2086
		fatls --chain -R $spec >>ls.out
		[ "$(wc -l <ls.out)" -gt 40 ]
		if [[ -z $first ]]; then
			first=$spec
			mv ls.out ls.first
		else
			diff -u ls.first ls.out || {
				echo "$spec differs from $first" >&2
				return 1
			}
		fi
	done
}

# check_partition DISK: a disk image whose one FAT volume starts at 1 MiB.
check_partition()
{
	local disk=$1 clus
	local -a paths
	same_listing "$disk@@1M" "$disk@@1MiB" "$disk@@1048576" "-P 1 $disk" \
		"--partition 1 $disk" "$disk"
	diff -u <(mdir_entries "$disk@@1M" /) <(fatls_entries "$disk" /)
	diff -u <(mdir_entries "$disk@@1M" /DATA) \
		<(fatls_entries "$disk" /DATA -P 1)
	run -0 fatls --info "$disk"
	assert_line 'volume offset: 1048576'
	clus=$(sed -n 's/^cluster size: //p' <<<"$output")
	# Offsets count from the start of the disk, partition included
	# (same_listing showed they do not depend on how the volume is
	# named): against the BPB, mshowfat, and the files' bytes.
	fatls --chain -R "$disk" >chain.out
	mapfile -t paths < <(sed 's/^first=[0-9]* fragments=[0-9]* runs=[^ ]* \(aligned=[^ ]* \)\{0,1\}//' chain.out)
	[ "${#paths[@]}" -eq 24 ]
	mshowfat -i "$disk@@1M" "${paths[@]/#/::}" </dev/null >mshowfat.out
	check_chains "$disk@@1M" chain.out mshowfat.out 1048576
	check_data "$disk@@1M" "$clus" chain.out "${DATA_PATHS[@]:0:15}"
}

@test "fatls: an MBR-partitioned disk through IMAGE@@1M, -P 1, and on its own (lone FAT partition)" {
	mkpartimg disk 64M fat32
	populate disk@@1M
	check_partition disk
}

@test "fatls: a GPT-partitioned disk, the same ways" {
	truncate -s 40M disk
	if ! printf 'label: gpt\nlabel-id: 12345678-1234-1234-1234-123456789ABC\nstart=2048, size=61440, type=EBD0A0A2-B9E5-4433-87C0-68B6B72699C7\n' |
		sfdisk -q --no-reread --no-tell-kernel disk >/dev/null 2>&1; then
		skip "sfdisk cannot make a GPT here"
	fi
	run -0 sfdisk -d disk
	assert_line --partial 'label: gpt'
	mkimg fat16 30M part -h 2048
	dd if=part of=disk bs=1M seek=1 conv=notrunc status=none
	populate disk@@1M
	check_partition disk
}

# two_fat_disk FILE: MBR, partition 1 FAT16 at 1 MiB, 2 FAT12 at 16 MiB.
two_fat_disk()
{
	truncate -s 40M "$1"
	printf 'label: dos\nlabel-id: 0x1234abcd\nstart=2048, size=30720, type=6\nstart=32768, type=1\n' |
		sfdisk -q --no-reread --no-tell-kernel "$1"
	mkimg fat16 15M p1 -h 2048
	mkimg fat12 4M p2 -h 32768
	dd if=p1 of="$1" bs=1M seek=1 conv=notrunc status=none
	dd if=p2 of="$1" bs=1M seek=16 conv=notrunc status=none
	echo one >one.txt
	echo two >two.txt
	mcopy -i "$1@@1M" one.txt ::/
	mcopy -i "$1@@16M" two.txt ::/
}

@test "fatls: two FAT partitions and no -P: an error that lists them" {
	two_fat_disk disk
	run -1 --separate-stderr fatls disk
	[ "$stderr" = "fatls: disk: an MBR partition table with more than one FAT partition; choose one with -P: 1 (FAT16) at 1 MiB, 2 (FAT12) at 16 MiB" ]
	[ -z "$output" ]
	run -0 fatls -P 1 disk
	[ "$output" = one.txt ]
	run -0 fatls -P 2 disk
	[ "$output" = two.txt ]
	run -0 fatls --info -P 2 disk
	assert_line 'fat type: FAT12'
	assert_line "volume offset: $((16 << 20))"
	run -0 fatls --chain disk@@16M /two.txt
	local data
	data=$(fat_geometry disk@@16M | sed -n 's/^data_start_sec=//p')
	[[ $output == "first=2 fragments=1 runs=2-2@$(((16 << 20) + data * 512))+"* ]]
	run -1 --separate-stderr fatls -P 3 disk
	[ "$stderr" = "fatls: disk: no partition 3 (partitions: 1 (FAT16) at 1 MiB, 2 (FAT12) at 16 MiB)" ]
}

@test "fatls: a partition table without a FAT partition is an error that lists it" {
	truncate -s 8M disk
	printf 'label: dos\nstart=2048, type=83\n' |
		sfdisk -q --no-reread --no-tell-kernel disk
	run -1 --separate-stderr fatls disk
	[ "$stderr" = "fatls: disk: an MBR partition table with no FAT partition: 1 (no filesystem) at 1 MiB" ]
	run -1 --separate-stderr fatls -P 1 disk
	[[ $stderr == "fatls: disk: "* ]]
	[ "${#stderr_lines[@]}" -eq 1 ]
}

@test "fatls: a loop device reads as the image file does" {
	if ((EUID != 0)); then
		skip "needs root for losetup"
	fi
	img=$(fixture 16 512 2K 2)
	if ! LOOPDEV=$(losetup -f --show -r "$img" 2>/dev/null) || [[ ! -b $LOOPDEV ]]; then
		LOOPDEV=
		skip "losetup -f --show does not work here"
	fi
	fatls -l -R --chain "$img" >file.out
	fatls -l -R --chain "$LOOPDEV" >dev.out
	[ "$(wc -l <dev.out)" -gt 1130 ]
	diff -u file.out dev.out
	fatls --info "$img" >file.out
	fatls --info "$LOOPDEV" >dev.out
	diff -u file.out dev.out
	run -0 fatls "$LOOPDEV" /README.TXT
	losetup -d "$LOOPDEV"
	LOOPDEV=
	# A partitioned disk on a loop device (no partition scan): -P 1 and
	# automatic choice, offsets from the start of the device.
	mkpartimg disk 40M fat16
	populate disk@@1M
	LOOPDEV=$(losetup -f --show -r disk)
	fatls --chain -R disk >file.out
	fatls --chain -R -P 1 "$LOOPDEV" >dev.out
	diff -u file.out dev.out
	fatls --chain -R "$LOOPDEV" >dev.out
	diff -u file.out dev.out
	run -0 fatls --info "$LOOPDEV"
	assert_line 'volume offset: 1048576'
}
