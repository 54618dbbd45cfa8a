#!/usr/bin/env bats
# exfat.bats: fatls on exFAT volumes (SDXC cards). Images come from
# mkfs.exfat (exfatprogs) and are filled by tests/helpers/exfatref.py, the
# reference reader and writer written from Microsoft's exFAT specification;
# fatls must agree with `exfatref.py ls` and `info` field by field. Hostile
# boot regions and damaged entry sets get one error line (fatcheck on
# exFAT: fatcheck-exfat.bats; fatprealloc on exFAT: fatprealloc-exfat.bats).

load helpers/common

# mkex FILE SIZE CLUSTER [MKFS_ARGS...]: a fresh exFAT image file.
mkex()
{
	local file=$1 size=$2 clus=$3
	shift 3
	rm -f "$file"
	truncate -s "$size" "$file" &&
		mkfs.exfat -c "$clus" "$@" "$file" >/dev/null
}

# mkex_mbr FILE SIZE CLUSTER: an SD-card-like disk image: an MBR whose one
# partition (type 7) starts at 1 MiB and holds an exFAT volume.
mkex_mbr()
{
	local file=$1 size=$2 clus=$3 kib
	kib=$(size_kib "$size") || return 1
	rm -f "$file"
	truncate -s "${kib}K" "$file" || return 1
	printf 'label: dos\nstart=2048, type=7\n' |
		sfdisk --no-reread --no-tell-kernel --label dos "$file" >/dev/null 2>&1 ||
		return 1
	mkex "$file.part" "$((kib - 1024))K" "$clus" || return 1
	dd if="$file.part" of="$file" bs=1M seek=1 conv=notrunc,sparse status=none
	rm -f "$file.part"
}

LONG_NAME_PY='print(("Ωμέγα-ünï-名前-" * 30)[:255])'

# fill IMG CS: long Unicode names, a deep tree, fragmented, NoFatChain and
# FAT-chained files, empty files, ValidDataLength < DataLength.
fill()
{
	local img=$1 cs=$2 long deep
	long=$("$FK_PYTHON" -c "$LONG_NAME_PY")
	deep=$(printf '/lvl%d' $(seq 1 20))
	{
		echo "put '/$long' --size 777"
		echo "put /frag.bin --size $((3 * cs + 100)) --fragmented"
		echo "put /nofat.bin --size $((5 * cs)) --nofatchain"
		echo "put /chained.bin --size $((2 * cs + 5)) --fatchain"
		echo "put /empty --size 0"
		echo "put /sub/empty2 --size 0"
		echo "put /vdl.bin --size $((5 * cs)) --vdl 1000"
		echo "put '$deep/deep file.txt' --size 777"
		echo "mkdir '/Éé dir/ΣΊΣΥΦΟΣ'"
		echo "put '/Éé dir/ΣΊΣΥΦΟΣ/straße.txt' --size 10"
	} | ref batch "$img"
}

# agree IMG [FATLS_ARGS...]: `fatls --json -R` (whole tree) lists what
# `exfatref.py ls -R` lists, field by field: attributes, size,
# ValidDataLength, first cluster, NoFatChain, runs, mtime, and the full
# path; allocated bytes are the runs' clusters times the cluster size.
agree()
{
	local img=$1
	shift
	ref ls -R "$img" >ref.out
	ref info "$img" >info.out
	fatls --json -R -a "$@" "$img" >ls.json
	"$FK_PYTHON" - ref.out info.out ls.json <<'EOF'
import json, sys
ref = {}
for line in open(sys.argv[1], encoding="utf-8"):
    f = dict(x.split("=", 1) for x in line.rstrip("\n").split("\t"))
    ref[f["path"]] = f
info = dict(l.rstrip("\n").split("=", 1) for l in open(sys.argv[2]))
cs = int(info["cluster_size"])
ls = json.load(open(sys.argv[3], encoding="utf-8"))["entries"]
got = {e["path"]: e for e in ls}
assert sorted(got) == sorted(ref), (sorted(set(got) ^ set(ref)))[:10]
letters = {"read-only": "R", "hidden": "H", "system": "S",
           "directory": "D", "archive": "A"}
for path, r in ref.items():
    e = got[path]
    attr = "".join(c if any(letters[a] == c for a in e["attributes"]) else "-"
                   for c in "RHSDA")
    runs = ",".join("%d-%d" % (x["first"], x["last"]) for x in e["runs"]) or "-"
    want = (r["attr"], int(r["size"]), int(r["vdl"]), int(r["first"]),
            r["nofatchain"] == "1", r["runs"], r["mtime"])
    have = (attr, e["size"], e["valid_data_length"], e["first_cluster"],
            e["contiguous_no_fat_chain"], runs, e["mtime"])
    assert want == have, (path, want, have)
    assert e["short_name"] is None, e
    ncl = sum(x["last"] - x["first"] + 1 for x in e["runs"])
    assert e["allocated"] == ncl * cs and e["clusters"] == ncl, e
    assert e["name"] == path.rsplit("/", 1)[1], e
EOF
}

# info_agrees IMG: fatls --info says what exfatref.py info says.
info_agrees()
{
	ref info "$1" >info.out
	fatls --info "$1" >fatls.info
	"$FK_PYTHON" - info.out fatls.info <<'EOF'
import sys
i = dict(l.rstrip("\n").split("=", 1) for l in open(sys.argv[1]))
f = dict(l.rstrip("\n").split(": ", 1) for l in open(sys.argv[2]))
pairs = [("revision", "revision"), ("sector size", "sector_size"),
         ("cluster size", "cluster_size"), ("fat offset", "fat_offset"),
         ("fat length", "fat_length"), ("fat copies", "number_of_fats"),
         ("cluster heap offset", "cluster_heap_offset"),
         ("total sectors", "volume_length"),
         ("data clusters", "cluster_count"), ("root cluster", "root_cluster"),
         ("free clusters", "free_clusters"),
         ("percent in use", "percent_in_use"),
         ("percent in use computed", "percent_in_use_computed"),
         ("label", "label"), ("upcase checksum", "upcase_checksum"),
         ("upcase checksum computed", "upcase_checksum_computed"),
         ("boot checksum", "boot_checksum")]
bad = [(k, f.get(k), i[r]) for k, r in pairs if f.get(k) != i[r]]
assert not bad, bad
assert f["fat type"] == "exFAT"
s = int(i["serial"], 16)
assert f["serial"] == "%04X-%04X" % (s >> 16, s & 0xFFFF), f["serial"]
assert f["volume flags"].startswith(i["volume_flags"] + " ("), f
dirty = "dirty" if i["volume_dirty"] == "1" else "clean"
assert dirty in f["volume flags"], f
EOF
}

@test "fatls on exFAT, clusters of 512 B to 1 MiB: every entry and --info agree with the reference reader" {
	local cs size
	for cs in 512:16M 4096:48M 32768:64M 1048576:80M; do
		size=${cs#*:} cs=${cs%:*}
		mkex v.img "$size" "$cs" -L "Card$cs"
		fill v.img "$cs"
		ref verify v.img
		agree v.img
		info_agrees v.img
		run -0 fatls --info v.img
		assert_line "label: Card$cs"
		assert_line "cluster size: $cs"
	done
}

@test "fatls on exFAT: -l shows size, allocated bytes, mtime with 10 ms and UTC offset, and ValidDataLength where smaller" {
	mkex v.img 16M 4096
	SOURCE_DATE_EPOCH=1700000001 fill v.img 4096
	run -0 fatls -l v.img /vdl.bin
	# 20480 bytes in 5 clusters; 1000 valid; 2023-11-14 22:13:21 UTC is an
	# odd second: the 10 ms field holds 100.
	assert_output "----a      20480      20480 2023-11-14T22:13:21.00+00:00 /vdl.bin  (valid 1000 of 20480 bytes)"
	run -0 fatls -l v.img /nofat.bin
	assert_output "----a      20480      20480 2023-11-14T22:13:21.00+00:00 /nofat.bin"
	run -0 fatls -l v.img /empty
	assert_output "----a          0          0 2023-11-14T22:13:21.00+00:00 /empty"
	run -0 fatls -l v.img /
	assert_line --regexp '^d----       4096       4096 2023-11-14T22:13:21.00\+00:00 sub$'
}

@test "fatls on exFAT: -l keeps its columns aligned for a 12 GB file on a 64 GiB volume" {
	# Sparse: a 64 GiB volume (11 digits of bytes) costs a few MiB.
	mkex v.img 64G 131072
	run -0 fatprealloc --no-zero v.img /big.bin 12G
	run -0 fatprealloc v.img /small.bin 1K
	run -0 fatls -l v.img /
	assert_line --regexp '^----a 12884901888 12884901888 [^ ]{28} big.bin$'
	assert_line --regexp '^----a        1024      131072 [^ ]{28} small.bin$'
	# every name starts at the same column as big.bin's
	local col
	col=$(printf '%s\n' "${lines[@]}" | awk '{ print index($0, $NF) }' | sort -u)
	[ "$(printf '%s\n' "$col" | wc -l)" -eq 1 ]
}

@test "fatls on exFAT: --chain marks NoFatChain files as one run; FAT chains show their fragments" {
	mkex v.img 16M 4096
	fill v.img 4096
	run -0 fatls --chain v.img /nofat.bin
	assert_output --regexp '^first=([0-9]+) fragments=1 runs=[0-9]+-[0-9]+@[0-9]+\+20480 aligned=[0-9]+[KMG]? NoFatChain /nofat.bin$'
	run -0 fatls --chain v.img /chained.bin
	assert_output --regexp '^first=[0-9]+ fragments=1 runs=[0-9]+-[0-9]+@[0-9]+\+12288 aligned=[0-9]+[KMG]? /chained.bin$'
	run -0 fatls --chain v.img /frag.bin
	assert_output --regexp '^first=[0-9]+ fragments=4 runs=([0-9]+-[0-9]+@[0-9]+\+4096,){3}[0-9]+-[0-9]+@[0-9]+\+4096 aligned=([0-9]+[KMG]?,){3}[0-9]+[KMG]? /frag.bin$'
	# The byte offsets are where the data is: the reference reader's
	# bytes of the NoFatChain file sit at the offset --chain prints.
	local off
	off=$(fatls --chain v.img /nofat.bin | sed 's/.*@\([0-9]*\)+.*/\1/')
	ref cat v.img /nofat.bin >want
	dd if=v.img bs=1 skip="$off" count=20480 status=none | cmp - want
}

@test "fatls on exFAT: a NoFatChain file's FAT entries are never read (garbage there changes nothing)" {
	mkex v.img 16M 4096
	fill v.img 4096
	fatls --chain v.img /nofat.bin >before
	# Fill the FAT entries of the run with links to cluster 2 (a loop
	# and cross-link, were they read).
	"$FK_PYTHON" - v.img "$(sed 's/.*runs=\([0-9]*\)-\([0-9]*\)@.*/\1 \2/' before)" <<'EOF'
import sys
img, (a, b) = sys.argv[1], map(int, sys.argv[2].split())
with open(img, "r+b") as f:
    bs = f.read(512)
    sec = 1 << bs[108]
    fat = int.from_bytes(bs[80:84], "little") * sec
    for c in range(a, b + 1):
        f.seek(fat + 4 * c)
        f.write((2).to_bytes(4, "little"))
EOF
	run -0 fatls --chain v.img /nofat.bin
	assert_output "$(cat before)"
	run -0 fatls -l v.img /nofat.bin
	assert_output --partial " 20480      20480 "
}

@test "fatls on exFAT: -s shows the long name only, -a adds hidden entries, -R prints full paths" {
	mkex v.img 16M 4096
	fill v.img 4096
	run -0 fatls -s v.img /sub
	assert_output "empty2"
	run -0 fatls v.img
	refute_line --partial "lvl2"
	assert_line "lvl1"
	run -0 fatls -R v.img
	assert_line "/lvl1/lvl2/lvl3/lvl4/lvl5/lvl6/lvl7/lvl8/lvl9/lvl10/lvl11/lvl12/lvl13/lvl14/lvl15/lvl16/lvl17/lvl18/lvl19/lvl20/deep file.txt"
	assert_line "/Éé dir/ΣΊΣΥΦΟΣ/straße.txt"
	# No "." and ".." and no label entry among the entries, even with -a.
	run -0 fatls -a v.img /sub
	assert_output "empty2"
}

@test "fatls on exFAT: lookups are case-insensitive through the volume's up-case table, Greek and accented letters too" {
	local long
	mkex v.img 16M 4096
	fill v.img 4096
	run -1 fatls v.img '/éÉ DIR/σίσυφοσ/nothing'
	run -0 fatls v.img '/éÉ DIR/σίσυφοσ'
	assert_output "straße.txt"
	run -0 fatls v.img '/ÉÉ DIR/ΣΊΣΥΦΟΣ/STRAßE.TXT'
	# The last component as the volume spells it, as on FAT.
	assert_output "/ÉÉ DIR/ΣΊΣΥΦΟΣ/straße.txt"
	long=$("$FK_PYTHON" -c "$LONG_NAME_PY")
	run -0 fatls -l v.img "/$("$FK_PYTHON" -c 'import sys; print(sys.argv[1].upper())' "$long")"
	assert_output --partial "        777 "
	assert_output --partial "/$long"
	# The volume's own table decides: once it maps 'a' to itself, "A" and
	# "a" are different names (exfatref rewrites the table and its
	# checksum; the names' NameHash is left as written).
	ref corrupt v.img upcase-mapping >/dev/null
	run -1 fatls v.img /FRAG.BIN
	assert_output "fatls: v.img:/FRAG.BIN: No such file or directory"
	run -0 fatls v.img /frag.bin
}

@test "fatls on exFAT: a directory of 1,100 files spanning clusters lists every name once" {
	mkex v.img 32M 4096
	for i in $(seq 1 1100); do
		echo "put /many/file-$i-éà.txt --size $((i % 3))"
	done | ref batch v.img
	run -0 fatls v.img /many
	[ "${#lines[@]}" -eq 1100 ]
	[ "$(printf '%s\n' "${lines[@]}" | sort -u | wc -l)" -eq 1100 ]
	assert_line "file-1100-éà.txt"
	# The directory spans clusters (3 entries each, 128 per cluster).
	run -0 fatls --chain v.img / 
	assert_line --regexp "^first=[0-9]+ fragments=[0-9]+ runs=[0-9]+-[0-9]+.* many$"
	[ "$(fatls --json v.img / | "$FK_PYTHON" -c 'import json,sys; print([e for e in json.load(sys.stdin)["entries"] if e["name"]=="many"][0]["clusters"])')" -gt 25 ]
	agree v.img
}

@test "fatls on exFAT in an MBR partition: automatic choice, -P 1 and @@1M list alike" {
	mkex_mbr d.img 40M 4096
	fill d.img@@1M 4096
	run -0 fatls -R d.img
	local auto=$output
	run -0 fatls -R -P 1 d.img
	assert_output "$auto"
	run -0 fatls -R d.img@@1M
	assert_output "$auto"
	assert_line "/nofat.bin"
	agree d.img@@1M
	run -0 fatls --info -P 1 d.img
	assert_line "volume offset: 1048576"
	run -2 fatls -P 1 d.img@@1M
}

@test "fatls on exFAT with 4096-byte sectors (losetup -b 4096)" {
	local dev
	[ "$(id -u)" -eq 0 ] || skip "needs root for losetup -b 4096"
	truncate -s 64M s4k.img
	dev=$(losetup -b 4096 -f --show s4k.img 2>/dev/null) || skip "losetup -b 4096 failed"
	if ! mkfs.exfat -c 32768 "$dev" >/dev/null 2>&1; then
		losetup -d "$dev"
		skip "mkfs.exfat on $dev failed"
	fi
	sync
	losetup -d "$dev"
	run -0 fatls --info s4k.img
	assert_line "sector size: 4096"
	fill s4k.img 32768
	agree s4k.img
	info_agrees s4k.img
}

# boot_field IMG OFFSET WIDTH VALUE: set a main boot sector field and
# recompute the main checksum, so the field alone is wrong.
boot_field()
{
	"$FK_PYTHON" - "$@" <<'EOF'
import sys
img, off, width, val = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4], 0)
with open(img, "r+b") as f:
    bs = bytearray(f.read(512))
    sec = 1 << bs[108] if 9 <= bs[108] <= 12 else 512
    f.seek(0)
    reg = bytearray(f.read(12 * sec))
    reg[off:off + width] = val.to_bytes(width, "little")
    s = 0
    for i in range(11 * sec):
        if i in (106, 107, 112):
            continue
        s = ((((s & 1) << 31) | (s >> 1)) + reg[i]) & 0xFFFFFFFF
    reg[11 * sec:12 * sec] = s.to_bytes(4, "little") * (sec // 4)
    f.seek(0)
    f.write(reg)
EOF
}

@test "fatls on exFAT: each hostile boot field is one error line naming the field, exit 1" {
	local spec off width val want
	while IFS='|' read -r off width val want; do
		mkex h.img 8M 4096
		boot_field h.img "$off" "$width" "$val"
		run -1 fatls h.img
		[ "${#lines[@]}" -eq 1 ] || { echo "$off=$val: $output"; false; }
		assert_output --partial "fatls: h.img: "
		assert_output --partial "$want"
	done <<'EOF'
108|1|8|BytesPerSectorShift 8 is not 9 to 12
108|1|13|BytesPerSectorShift 13 is not 9 to 12
109|1|17|SectorsPerClusterShift 17 makes clusters over 32 MiB
110|1|0|NumberOfFats 0 is not 1 or 2
110|1|3|NumberOfFats 3 is not 1 or 2
80|4|10|FatOffset 10 is out of range
84|4|0|FatLength 0 sectors is out of range
88|4|100|ClusterHeapOffset 100 is out of range
92|4|0|ClusterCount 0 is out of range
92|4|0x100000|ClusterCount 1048576 is out of range
96|4|1|FirstClusterOfRootDirectory 1 is out of range
96|4|0x10000|FirstClusterOfRootDirectory 65536 is out of range
104|2|0x200|FileSystemRevision 2.00 is not 1.x
72|8|100|VolumeLength 100 sectors is under 1 MiB
EOF
	# A VolumeLength past the end of the image: a truncated dump, which
	# a reader lists as far as it goes (nothing on it is cut here)
	mkex h.img 8M 4096
	boot_field h.img 72 8 0x100000
	run -0 --separate-stderr fatls h.img
	[ "${stderr_lines[0]}" = "fatls: h.img: image is truncated: the volume needs 536870912 bytes, the image has 8388608; files past its end are named" ]
	run -1 --separate-stderr fatprealloc h.img /a 1K
	[[ $stderr == "fatprealloc: h.img: image is truncated: the volume needs 536870912 bytes"* ]]
}

@test "fatls on exFAT: a bad boot checksum or differing backup is one warning, and the listing reads on (exit 0)" {
	mkex v.img 16M 4096
	fill v.img 4096
	fatls -R v.img >want
	cp v.img c.img
	# A boot-code byte of sector 0 changed, checksum left stale.
	printf '\x42' | dd of=c.img bs=1 seek=200 conv=notrunc status=none
	run -0 --separate-stderr fatls -R c.img
	assert_output "$(cat want)"
	[ "$stderr" != "${stderr/warning: exFAT boot checksum mismatch/}" ]
	[ "$(echo "$stderr" | wc -l)" -eq 1 ]
	cp v.img b.img
	# The backup region's boot code differs (sector 12 + 200).
	printf '\x42' | dd of=b.img bs=1 seek=$((12 * 512 + 200)) conv=notrunc status=none
	run -0 --separate-stderr fatls -R b.img
	assert_output "$(cat want)"
	[ "$stderr" != "${stderr/backup boot region differs/}" ]
	# VolumeFlags and PercentInUse may differ between the copies.
	cp v.img f.img
	printf '\x02' | dd of=f.img bs=1 seek=106 conv=notrunc status=none
	run -0 --separate-stderr fatls --info f.img
	[ -z "$stderr" ]
	assert_line "volume flags: 0x0002 (dirty)"
}

@test "fatls on exFAT: damaged entry sets and chains are one error line, never a crash or a hang" {
	local c
	for c in secondary-count name-length unknown-critical-secondary \
		entry-type-80 chain-loop chain-free-link chain-bad-cluster \
		first-cluster-range nofatchain-past-heap directory-loop; do
		mkex v.img 16M 4096
		ref put v.img /a/b.txt --size 5K
		ref corrupt v.img "$c" >/dev/null
		run -1 --separate-stderr timeout 20 fatls -lR --chain v.img
		[ "$(echo "$stderr" | wc -l)" -eq 1 ] || { echo "$c: $stderr"; false; }
		[[ $stderr == "fatls: v.img:/"* ]] || { echo "$c: $stderr"; false; }
	done
	# Damage a listing can read past (the checker's business) lists.
	for c in set-checksum name-hash vdl-gt-dl bitmap-leak percent-in-use \
		volume-dirty upcase-checksum invalid-name-char label-length; do
		mkex v.img 16M 4096
		ref put v.img /a/b.txt --size 5K
		ref corrupt v.img "$c" >/dev/null
		run -0 timeout 20 fatls -lR --chain v.img
		assert_line --partial "/a/b.txt"
	done
}

@test "fatcheck on a clean exFAT image: exit 0, and -r writes nothing" {
	local sum
	mkex v.img 16M 4096
	fill v.img 4096
	sum=$(img_sha v.img)
	run -0 fatcheck v.img
	run -0 fatcheck -r v.img
	[ "$(img_sha v.img)" = "$sum" ]
}

@test "fatls on exFAT: the bash and zsh path completions drop the ValidDataLength note from names" {
	mkex v.img 16M 4096
	fill v.img 4096
	run -0 bash -c 'source "$1/completions/bash/fatprealloc"; COMPREPLY=()
		_fatprealloc_volume_paths v.img "" /vd; printf "[%s]\n" "${COMPREPLY[@]}"' _ "$BATS_TEST_DIRNAME/.."
	assert_output "[/vdl.bin]"
	command -v zsh >/dev/null || skip "zsh is not installed"
	# zsh's loop, run on its own: the same match strips the note.
	run -0 zsh -c 'fatls -la v.img / | while read -r attrs size alloc mtime name; do
		[[ $name =~ '\''^(.*)  \(valid [0-9]+ of [0-9]+ bytes\)$'\'' ]] && name=$match[1]
		print -r -- "[$name]"; done'
	assert_line "[vdl.bin]"
	grep -qF "[[ \$name =~ '^(.*)  \\(valid [0-9]+ of [0-9]+ bytes\\)\$' ]] &&" "$BATS_TEST_DIRNAME/../completions/zsh/_fatprealloc"
}

@test "fatls on exFAT: a file with reserved attribute bit 0x08 is listed and found, not taken for a volume label" {
	mkex v.img 8M 4096
	printf 'put /a.bin --size 100\nput /b.bin --size 10\n' | ref batch v.img
	# FileAttributes 0x28: ARCHIVE and the reserved bit 3 (0x08 is the
	# volume label bit on FAT, not on exFAT); SetChecksum made anew
	"$FK_PYTHON" - "$FATKIT_HELPERS" v.img <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import exfatref as r
v = r.Volume(sys.argv[2], write=True)
e = v.root_dir().lookup("a.bin")
r.put_le(e.raw, 4, 2, 0x28)
v.rewrite_set(e)
v.flush()
v.f.close()
PY
	run -0 ref ls v.img /a.bin
	assert_output --partial "size=100"
	run -0 fatls v.img /
	assert_line "a.bin"
	assert_line "b.bin"
	run -0 fatls v.img /a.bin
	assert_output --partial "a.bin"
	run -0 fatls -l v.img /a.bin
	assert_output --partial "100"
}

# zero_first IMG: /A (a directory holding /A/in.bin) and /f.bin, both then
# given FirstCluster 0 with their DataLength kept (their clusters freed).
zero_first()
{
	"$FK_PYTHON" - "$FATKIT_HELPERS" "$1" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import exfatref as r
v = r.Volume(sys.argv[2], write=True)
a = v.mkdir("/A")
v.put("/A/in.bin", 100, b"x" * 100)
e, cl = v.put("/f.bin", 5000, b"y" * 5000)
for entry, clusters in ((a.entry, a.clusters), (e, cl)):
    for c in clusters:
        v.set_bit(c, 0)
    entry.set_stream(first=0)
    v.rewrite_set(entry)
v.flush()
v.f.close()
PY
}

@test "fatls on exFAT: an entry with FirstCluster 0 and a length is named for what it is, and its directory is never read as the root" {
	mkex img 8M 4096
	zero_first img
	# the names alone need no cluster
	run -0 fatls img
	assert_output $'A\nf.bin'
	run -1 --separate-stderr fatls -l img
	[ "${stderr_lines[0]}" = "fatls: img:/A: first cluster 0 with a non-zero length" ]
	[ "${stderr_lines[1]}" = "fatls: img:/f.bin: first cluster 0 with a non-zero length" ]
	run -1 --separate-stderr fatls --chain img /f.bin
	[ "$stderr" = "fatls: img:/f.bin: first cluster 0 with a non-zero length" ]
	# not "links to a free cluster after 0", not the root listed again
	run -1 --separate-stderr fatls img /A
	[ "$stderr" = "fatls: img:/A: first cluster 0 with a non-zero length" ]
	run -1 --separate-stderr fatls img /A/in.bin
	[ "$stderr" = "fatls: img:/A/in.bin: first cluster 0 with a non-zero length" ]
	# -R: no false "directory loop" (cluster 0 is not the root's)
	run -1 --separate-stderr fatls -R img
	[ "$stderr" = "fatls: img:/A: first cluster 0 with a non-zero length" ]
	assert_output $'/A\n/f.bin'
}
