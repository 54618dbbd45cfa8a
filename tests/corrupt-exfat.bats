#!/usr/bin/env bats
# corrupt-exfat.bats: hostile exFAT images, the counterpart of corrupt.bats.
# Every case of `exfatref.py corrupt --list` (boot regions, entry sets,
# chains, the bitmap, the up-case table, directories, and the valid=1
# volumes every judge must call clean) on one small populated volume, built
# once.  Each case goes through
#   fatprealloc: refused with the image byte-identical, or a success that
#     adds no finding the input did not have (per fatcheck --json and per
#     fsck.exfat -n) and a new file that exfatref.py and fatls both see;
#   fatcheck -r: no cluster the reference reader counted as owned before is
#     marked free after (but where the repair's own finding says it ends a
#     chain past its DataLength), and a second -r writes nothing;
#   fatls -R: exit 0, or exit 1 with one stderr line; never a crash.
# The judges are exfatref.py (written from Microsoft's specification, no
# code shared with fatkit) and fsck.exfat -n (exfatprogs 1.2.0).

load helpers/common

# judge owned IMG | judge freed IMG LIST: the clusters the reference
# reader finds owned (one a line), or those of file LIST whose bitmap bit
# is clear.  Nothing when the volume cannot be read at all.
judge()
{
	"$FK_PYTHON" - "$FATKIT_HELPERS" "$@" <<'PY'
import contextlib, io, sys
sys.path.insert(0, sys.argv[1])
import exfatref as r
what, img = sys.argv[2], sys.argv[3]
try:
    v = r.Volume(img)
    if what == "owned":
        c = r.Checker(v, img)
        with contextlib.redirect_stdout(io.StringIO()):
            c.run()
        for k in sorted(c.owner):
            print(k)
    else:
        for line in open(sys.argv[4]):
            k = int(line)
            if not v.bit(k):
                print(k)
except r.Fatal:
    pass
PY
}

# findings IMG: fatcheck's findings as "severity code path" lines, sorted.
findings()
{
	timeout 20 fatcheck --json "$1" 2>/dev/null |
		"$FK_PYTHON" -c '
import json, sys
d = json.load(sys.stdin)
for f in d.get("findings", []):
    print(f["severity"], f["code"], f.get("path"))
' | sort -u
}

# fsck_findings IMG: fsck.exfat -n's complaints without offsets and the
# question it asks, sorted.
fsck_findings()
{
	timeout 20 fsck.exfat -n "$1" 2>&1 </dev/null |
		sed -n 's/ at 0x[0-9a-f]*//; s/\. *[A-Z][a-z]* (y\/N)?.*//; /^ERROR/p; /not allowed/p' |
		sort -u
}

# target CASE: where fatprealloc writes: inside the directory the case
# damages, when it damages one.
target()
{
	case $1 in
	dir-chain-long) echo /corrupt-dlong/new.bin ;;
	dir-chain-short) echo /corrupt-dshort/new.bin ;;
	first-cluster-zero) echo /corrupt-fc0/new.bin ;;
	dir-cross-link) echo /corrupt-xd2/new.bin ;;
	set-split-nonadjacent) echo /corrupt-split/new.bin ;;
	vendor-alloc-dir) echo /corrupt-vdir/new.bin ;;
	directory-loop) echo /corrupt-loop/sub/new.bin ;;
	dir-vdl) echo /corrupt-dir/new.bin ;;
	*) echo /new.bin ;;
	esac
}

# The writer fix for this case is made on another branch (directories on
# the path validated against their DataLength); its row says so when it
# fails.
WRITER_PENDING=" dir-chain-long "

setup_file()
{
	local name
	cd "$BATS_FILE_TMPDIR" || return 1
	rm -f base.img
	truncate -s 16M base.img && mkfs.exfat -c 4096 -L card base.img >/dev/null || return 1
	{
		echo "put /frag.bin --size 12388 --fragmented"
		echo "put /nofat.bin --size 20480 --nofatchain --pattern 0x42"
		echo "put /chained.bin --size 8197 --fatchain"
		echo "put /empty --size 0"
		echo "put /vdl.bin --size 12288 --vdl 1000"
		echo "put '/Éé dir/ΣΊΣΥΦΟΣ/name.txt' --size 777"
		echo "put /sub/deeper/deep.txt --size 300"
	} | ref batch base.img || return 1
	ref corrupt --list | cut -d' ' -f1 >cases
	# One damaged image per case, two at a time.
	while read -r name; do
		cp base.img "$name.img" && ref corrupt "$name.img" "$name" >/dev/null ||
			{ echo "corrupt $name failed" >&2; return 1; } &
		(($(jobs -r | wc -l) < 2)) || wait -n
	done <"$BATS_FILE_TMPDIR/cases"
	wait
	ref corrupt --list | sed -n 's/^\([^ ]*\) .* valid=1 .*/\1/p' >valid
	[ -s cases ] && [ -s valid ]
}

# take CASE: ./c.img, a fresh copy of the damaged image of CASE.
take()
{
	cp --sparse=always "$BATS_FILE_TMPDIR/$1.img" c.img
}

# pending CASE: a note for a row whose writer fix is still pending.
pending()
{
	[[ $WRITER_PENDING == *" $1 "* ]] && echo " (writer fix pending: the writer accepts this damage)"
	return 0
}

@test "corrupt-exfat: fatprealloc on every case: refused with the image unchanged, or no new finding and a visible new file" {
	local name path dir sum rc failed=0 ref_ok fatls_ok
	while read -r name; do
		path=$(target "$name")
		take "$name"
		# Damage that already hides the target's directory from a reader
		# (the listing refuses a damaged set, exfatref needs an up-case
		# table) hides the new file too: not the writer's doing.
		ref_ok=0 fatls_ok=0 dir=${path%/*}
		ref ls c.img "${dir:-/}" >/dev/null 2>&1 && ref_ok=1
		timeout 20 fatls c.img "${dir:-/}" >/dev/null 2>&1 && fatls_ok=1
		findings c.img >fc.before
		fsck_findings c.img >fsck.before
		sum=$(img_sha c.img)
		rc=0
		timeout 20 fatprealloc c.img "$path" 64K 2>err || rc=$?
		if ((rc != 0)); then
			if ((rc != 1)) || (($(wc -l <err) != 1)) || ! grep -q '^fatprealloc: ' err; then
				echo "$name: fatprealloc exit $rc, stderr: $(cat err)"
				failed=1
			fi
			[ "$(img_sha c.img)" = "$sum" ] ||
				{ echo "$name: refused, but the image changed"; failed=1; }
			continue
		fi
		findings c.img >fc.after
		fsck_findings c.img >fsck.after
		# A cluster a file owns but the bitmap marks free is one a
		# writer cannot know of without reading every directory: as in
		# fuzz_prealloc's oracle, a cross-link there (and the clusters
		# then lost) is the input's damage, not a new one.
		if grep -q ' bitmap-free ' fc.before; then
			sed -i '/ cross-link \| lost /d' fc.after
			sed -i '/already allocated for the other file/d' fsck.after
		fi
		if [ -n "$(comm -13 fc.before fc.after)" ]; then
			echo "$name: fatprealloc $path succeeded and fatcheck finds more:$(pending "$name")"
			comm -13 fc.before fc.after | sed 's/^/    /'
			failed=1
		fi
		if [ -n "$(comm -13 fsck.before fsck.after)" ]; then
			echo "$name: fatprealloc $path succeeded and fsck.exfat -n finds more:$(pending "$name")"
			comm -13 fsck.before fsck.after | sed 's/^/    /'
			failed=1
		fi
		((!ref_ok)) || ref ls c.img "$path" 2>/dev/null | grep -q $'\tsize=65536\t' ||
			{ echo "$name: exfatref does not see $path:$(pending "$name")"; failed=1; }
		((!fatls_ok)) || timeout 20 fatls c.img "$path" >/dev/null 2>&1 ||
			{ echo "$name: fatls does not see $path:$(pending "$name")"; failed=1; }
	done <"$BATS_FILE_TMPDIR/cases"
	return "$failed"
}

@test "corrupt-exfat: fatcheck -r on every case frees no cluster the reference reader saw owned, and a second -r writes nothing" {
	local name rc out sum failed=0
	while read -r name; do
		take "$name"
		judge owned c.img >owned
		rc=0
		out=$(timeout 20 fatcheck -r c.img 2>&1) || rc=$?
		if grep -qx "$name" "$BATS_FILE_TMPDIR/valid"; then
			((rc == 0)) || { echo "$name: a valid volume, but fatcheck -r exits $rc: $out"; failed=1; }
			cmp -s c.img "$BATS_FILE_TMPDIR/$name.img" ||
				{ echo "$name: a valid volume, but fatcheck -r wrote to it"; failed=1; }
		elif ((rc != 1 && rc != 4 && rc != 0)); then
			echo "$name: fatcheck -r exits $rc: $out"
			failed=1
			continue
		fi
		judge freed c.img owned >freed
		# The repairs that free what the reader counts as owned: a chain
		# past its DataLength, ended (exFAT cannot reserve past the end,
		# and fsck.exfat truncates it too), and a NoFatChain run past the
		# heap, whose length is known to be false (the reader owns every
		# cluster from its start to the heap's end).
		if [ -s freed ] && ! grep -Eq 'chain ended|runs past the last cluster' <<<"$out"; then
			echo "$name: fatcheck -r freed clusters the reference reader saw owned: $(head -20 freed | tr '\n' ' ')"
			echo "$out" | sed 's/^/    /'
			failed=1
		fi
		sum=$(img_sha c.img)
		out=$(timeout 20 fatcheck -r c.img 2>&1) || true
		[ "$(img_sha c.img)" = "$sum" ] ||
			{ echo "$name: a second fatcheck -r wrote: $out"; failed=1; }
	done <"$BATS_FILE_TMPDIR/cases"
	return "$failed"
}

@test "corrupt-exfat: fatls -R on every case exits 0, or 1 with one line on stderr" {
	local name rc failed=0
	while read -r name; do
		take "$name"
		rc=0
		timeout 20 fatls -R -l -a c.img >/dev/null 2>err || rc=$?
		if ((rc > 1)) || grep -qv '^fatls: ' err || { ((rc == 1)) && (($(wc -l <err) != 1)); }; then
			echo "$name: fatls -R -l -a exit $rc, stderr:"
			head -5 err
			failed=1
		fi
	done <"$BATS_FILE_TMPDIR/cases"
	return "$failed"
}

@test "corrupt-exfat: the valid volumes are clean to fatcheck and exfatref; fsck.exfat 1.2.0's only complaint is its Vendor Allocation blind spot" {
	local name out rc
	while read -r name; do
		take "$name"
		run -0 fatcheck c.img
		refute_output --partial "error:"
		refute_output --partial "warning:"
		run -0 ref verify -W c.img
		rc=0
		out=$(timeout 20 fsck.exfat -n c.img 2>&1) || rc=$?
		if ((rc != 0)) && { [[ $name != vendor-alloc-* ]] ||
			grep '^ERROR' <<<"$out" | grep -qv 'failed to get name dentry'; }; then
			echo "$name: fsck.exfat -n: $out"
			return 1
		fi
		run -0 fatls -R c.img
	done <"$BATS_FILE_TMPDIR/valid"
}
