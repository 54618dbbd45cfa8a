# common.bash: loaded by every bats file with `load helpers/common`.
#
# Puts the fatkit build first on PATH, pins the environment of the oracles
# (mtools, dosfstools) so a user's configuration never changes a result, and
# provides helpers that build, fill and inspect FAT images. The helpers use
# only tools we did not write (mkfs.fat, mtools, sfdisk, fsck.fat) and
# tests/helpers/fatimg.py, an independent reader of the on-disk format.
#
# Helpers (see each for details):
#   mkimg TYPE SIZE FILE [MKFS_ARGS...]          mkimg_geom FAT SECSIZE CLUSSIZE NFATS SIZE FILE
#   mkpartimg FILE SIZE FATTYPE                  populate FILE    populate_big_dir FILE DIR N
#   mkimg_dcim T FILE [SRC DEST]...
#   gen_bytes N [SEED]                           check_sums FILE
#   tree_sums_ok TREE WHO <MANIFEST
#   img_sha FILE     fsck_clean FILE             fat_copies_equal FILE
#   once_for FILE... -- JUDGE ARGS... (a judge, once per distinct bytes)
#   fat_type FILE    fat_geometry FILE           count_free_clusters FILE
#   fsinfo_free FILE fsinfo_next FILE            size_kib SIZE
#   py_run SCRIPT ARGS... (a python helper)      ref ARGS... (exfatref.py)
# and $FK_PYTHON, a fast-starting python3 for parsing --json output.
# FILE may be IMAGE@@OFFSET wherever mtools or fatimg.py reads it (not for
# img_sha, fsck_clean).

bats_require_minimum_version 1.5.0

# _fk_load DIR: what `load DIR/load.bash` sources, without its fork of
# dirname a file (fifteen for the two libraries, 20 ms of CPU in every
# test); a line of another form hands the whole file to bats' load.
_fk_load()
{
	local dir=$1 line
	local -a lines
	mapfile -t lines <"$dir/load.bash" || return 1
	for line in "${lines[@]}"; do
		case $line in
		'' | '#'*) ;;
		'source "$(dirname "${BASH_SOURCE[0]}")/'*'"')
			line=${line#'source "$(dirname "${BASH_SOURCE[0]}")/'}
			source "$dir/${line%'"'}" || return 1
			;;
		*)
			load "$dir/load.bash"
			return
			;;
		esac
	done
}
_fk_load /usr/lib/bats/bats-support
_fk_load /usr/lib/bats/bats-assert

FATKIT_BUILD=${FATKIT_BUILD:-$BATS_TEST_DIRNAME/../build}
FATKIT_BUILD=$(cd "$FATKIT_BUILD" 2>/dev/null && pwd || echo "$FATKIT_BUILD")
export FATKIT_BUILD
export PATH="$FATKIT_BUILD:$PATH"
# (bats loads this file by its absolute path: no dirname, cd and pwd)
FATKIT_HELPERS=${BASH_SOURCE[0]%/*}
[[ ${BASH_SOURCE[0]} == */* ]] || FATKIT_HELPERS=.
[[ $FATKIT_HELPERS == /* ]] || FATKIT_HELPERS=$(cd "$FATKIT_HELPERS" && pwd)

# Debian's python3 (deps.sh installs it) starts in a tenth of the time of a
# pyenv shim; tests may use "$FK_PYTHON" for JSON parsing too.
if [[ -z ${FK_PYTHON:-} ]]; then
	if [[ -x /usr/bin/python3 ]]; then
		FK_PYTHON=/usr/bin/python3
	else
		FK_PYTHON=python3
	fi
fi
export FK_PYTHON

# The helpers' bytecode is cached for the run, outside the tree, even where
# PYTHONDONTWRITEBYTECODE is set: exfatref.py takes 20 ms of CPU to compile,
# more than most of its runs take after that, and the tests start it
# thousands of times (each bats run compiles it once).
if [[ -n ${BATS_RUN_TMPDIR:-} ]]; then
	export PYTHONPYCACHEPREFIX=$BATS_RUN_TMPDIR/pycache
	unset PYTHONDONTWRITEBYTECODE
fi

# py_run SCRIPT ARGS...: "$FK_PYTHON" SCRIPT ARGS..., with SCRIPT's bytecode
# from that cache too (a script run by name is compiled at every start; this
# loads it as __main__ the way an import would, so the cache applies).
py_run()
{
	"$FK_PYTHON" -c '
import importlib.util, os, sys
path = sys.argv.pop(1)
sys.argv[0] = path
sys.path[0] = os.path.dirname(path)
spec = importlib.util.spec_from_file_location("__main__", path)
sys.modules["__main__"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sys.modules["__main__"])
' "$@"
}

# mtools: no drive-geometry sanity checks on images, no user config
# (MTOOLSRC replaces ~/.mtoolsrc), VFAT long names on. UTF-8 so Unicode
# names round-trip; UTC so timestamps do not depend on the machine.
export MTOOLS_SKIP_CHECK=1
export MTOOLSRC=/dev/null
unset MTOOLS_NO_VFAT MTOOLS_LOWER_CASE MTOOLS_TWENTY_FOUR_HOUR 2>/dev/null || true
export LC_ALL=C.UTF-8
export TZ=UTC

# Fixed modification time of every file populate writes (mcopy -m keeps it).
FK_FIXED_MTIME='2024-01-02 03:04:06'

common_setup()
{
	cd "$BATS_TEST_TMPDIR" || return 1
}

# Default; a file that defines its own setup() should call common_setup.
setup()
{
	common_setup
}

# size_kib SIZE: SIZE (bytes, or N with K/M/G, powers of 1024) in KiB.
size_kib()
{
	local s=$1 n mult
	case $s in
	*[Kk]) n=${s%?} mult=1 ;;
	*[Mm]) n=${s%?} mult=1024 ;;
	*[Gg]) n=${s%?} mult=$((1024 * 1024)) ;;
	*) n=$s mult=0 ;;
	esac
	if [[ ! $n =~ ^[0-9]+$ ]]; then
		echo "size_kib: bad size: $s" >&2
		return 1
	fi
	if ((mult == 0)); then
		if ((n % 1024)); then
			echo "size_kib: $s bytes is not a whole KiB" >&2
			return 1
		fi
		echo $((n / 1024))
	else
		echo $((n * mult))
	fi
}

# The FAT type's cluster-count limits (Microsoft FAT spec).
fat_max_clusters()
{
	case $1 in
	fat12) echo 4084 ;;
	fat16) echo 65524 ;;
	fat32) echo 268435444 ;;
	*) echo "unknown FAT type: $1 (want fat12, fat16 or fat32)" >&2; return 1 ;;
	esac
}

# _mkfs TYPE KIB FILE ARGS...: run mkfs.fat --invariant, check the type that
# came out by cluster count, and remove FILE on any failure.
_mkfs()
{
	local type=$1 kib=$2 file=$3 out got
	shift 3
	rm -f "$file"
	if ! out=$(mkfs.fat --invariant -F "${type#fat}" "$@" -C "$file" "$kib" 2>&1); then
		rm -f "$file"
		echo "mkfs.fat -F ${type#fat} $* -C $file $kib failed:" >&2
		echo "$out" >&2
		return 1
	fi
	got=$(fat_type "$file") || { rm -f "$file"; return 1; }
	if [[ $got != "$type" ]]; then
		rm -f "$file"
		echo "mkfs.fat -F ${type#fat} $* -C $file $kib made $got by cluster count, not $type:" \
			"pick another size or cluster size" >&2
		echo "$out" >&2
		return 1
	fi
}

# mkimg TYPE SIZE FILE [MKFS_ARGS...]: a fresh FAT image of SIZE (64M, 1G,
# 512K, bytes) with mkfs.fat --invariant (fixed serial 1234-ABCD and times).
# TYPE is fat12, fat16 or fat32. Unless MKFS_ARGS give -S or -s, sectors are
# 512 bytes and the cluster is the smallest power of two sectors that keeps
# the cluster count within TYPE's maximum. Fails (leaving no FILE) when the
# result would not be TYPE by cluster count, e.g. fat32 below about 33 MiB.
mkimg()
{
	local type=$1 size=$2 file=$3 kib secsize=512 spc=1 a max
	shift 3
	kib=$(size_kib "$size") || return 1
	max=$(fat_max_clusters "$type") || return 1
	local has_s=0 has_S=0
	for a in "$@"; do
		case $a in
		-s) has_s=1 ;;
		-S) has_S=1 ;;
		esac
	done
	local -a extra=()
	if ((!has_S)); then
		extra+=(-S 512)
	else
		# Take the caller's sector size for the cluster-size choice.
		local prev=
		for a in "$@"; do
			[[ $prev == -S ]] && secsize=$a
			prev=$a
		done
	fi
	if ((!has_s)); then
		local secs=$((kib * 1024 / secsize))
		while ((secs / spc > max && spc < 128)); do
			spc=$((spc * 2))
		done
		extra+=(-s "$spc")
	fi
	_mkfs "$type" "$kib" "$file" "${extra[@]}" "$@"
}

# mkimg_geom FAT SECSIZE CLUSSIZE NFATS SIZE FILE: an image with every
# geometry choice pinned. FAT is 12, 16, 32 (or fat12...), SECSIZE bytes per
# sector, CLUSSIZE bytes per cluster (4096 or 4K), NFATS FAT copies.
# Note: fsck.fat 4.2 refuses to check a volume with more than 2 FATs.
mkimg_geom()
{
	local fat=${1#fat} secsize=$2 clus=$3 nfats=$4 size=$5 file=$6 kib clus_b
	kib=$(size_kib "$size") || return 1
	if [[ $clus =~ ^[0-9]+$ ]]; then
		clus_b=$clus
	else
		clus_b=$(size_kib "$clus") || return 1
		clus_b=$((clus_b * 1024))
	fi
	if ((clus_b % secsize)); then
		echo "mkimg_geom: cluster size $clus is not a multiple of $secsize" >&2
		return 1
	fi
	_mkfs "fat$fat" "$kib" "$file" -S "$secsize" -s $((clus_b / secsize)) \
		-f "$nfats"
}

# mkpartimg FILE SIZE FATTYPE: a disk image of SIZE with an MBR partition
# table (sfdisk) whose one partition starts at 1 MiB (sector 2048) and fills
# the rest, holding a FAT volume of FATTYPE built as mkimg does, with its
# hidden-sectors field set to 2048. mtools reads it as FILE@@1M.
mkpartimg()
{
	local file=$1 size=$2 type=$3 kib id out
	kib=$(size_kib "$size") || return 1
	case $type in
	fat12) id=1 ;;
	fat16) id=6 ;;
	fat32) id=c ;;
	*) echo "mkpartimg: unknown FAT type: $type" >&2; return 1 ;;
	esac
	if ((kib <= 1024)); then
		echo "mkpartimg: $size leaves no room after the 1 MiB gap" >&2
		return 1
	fi
	rm -f "$file"
	truncate -s "${kib}K" "$file" || return 1
	# A fixed disk identifier keeps the image reproducible.
	if ! out=$(printf 'label: dos\nlabel-id: 0x1234abcd\nstart=2048, type=%s\n' "$id" |
		sfdisk --no-reread --no-tell-kernel --label dos "$file" 2>&1); then
		echo "sfdisk failed on $file:" >&2
		echo "$out" >&2
		rm -f "$file"
		return 1
	fi
	mkimg "$type" "$((kib - 1024))K" "$file.part" -h 2048 || {
		rm -f "$file"
		return 1
	}
	dd if="$file.part" of="$file" bs=1M seek=1 conv=notrunc,sparse status=none || {
		rm -f "$file" "$file.part"
		return 1
	}
	rm -f "$file.part"
}

# mkimg_dcim T FILE [SRC DEST]...: a FAT T image (T is 12, 16 or 32) of
# one-sector (512-byte) clusters, as small as the type allows (1M, 4M,
# 40M), so that a file of a few hundred KiB has a chain past FAT sector 0;
# with a directory /DCIM, then each host file SRC copied to DEST (::/PATH)
# in the order given, which fixes where each chain lies.
mkimg_dcim()
{
	local t=$1 file=$2 size
	shift 2
	case $t in
	12) size=1M ;;
	16) size=4M ;;
	32) size=40M ;;
	*) echo "mkimg_dcim: unknown FAT type: $t" >&2; return 1 ;;
	esac
	mkimg "fat$t" "$size" "$file" -s 1 && mmd -i "$file" ::/DCIM || return 1
	while (($# >= 2)); do
		mcopy -i "$file" "$1" "$2" || return 1
		shift 2
	done
}

# gen_bytes N [SEED]: N deterministic pseudo-random bytes on stdout; the
# same N and SEED always give the same bytes.
gen_bytes()
{
	"$FK_PYTHON" -c '
import hashlib, sys
n, seed = int(sys.argv[1]), sys.argv[2].encode()
out, i = sys.stdout.buffer, 0
while n > 0:
    block = hashlib.sha256(seed + b":" + str(i).encode()).digest()
    out.write(block[:n])
    n -= len(block)
    i += 1
' "$1" "${2:-fatkit}"
}

# _mcopy_tree FILE SRCDIR DEST: copy SRCDIR's contents recursively into
# ::DEST, keeping modification times.
_mcopy_tree()
{
	local file=$1 src=$2 dest=$3 out
	local -a items=("$src"/*)
	[[ -e ${items[0]} ]] || return 0
	if ! out=$(mcopy -i "$file" -s -m -Q -D o "${items[@]}" "::$dest" 2>&1 </dev/null); then
		echo "mcopy into $file::$dest failed:" >&2
		echo "$out" >&2
		return 1
	fi
}

# populate FILE: write a fixed tree into the volume (FILE may be
# IMAGE@@OFFSET), and a manifest IMAGE.sums (sha256sum format, paths in the
# volume) of every file, for check_sums. The tree, with mtime 2024-01-02
# 03:04:06 UTC everywhere (the FAT 2-second grain keeps it exact):
#   /README.TXT                               8.3 name, text
#   /A long file name for testing.txt         long name
#   /name with spaces.dat                     spaces
#   /Grüße.txt, /日本語.txt                   Unicode names
#   /empty.bin                                0 bytes (no cluster)
#   /EMPTYDIR/                                empty directory
#   /Mixed Case Dir/lower.txt
#   /deep1/deep2/deep3/deep4/deep5/deep6/leaf.txt   six levels
#   /DATA/rand-N.bin for N in 0 1 511 512 513 4096 100000 (gen_bytes N rand-N)
# Needs about 1 MiB free.
populate()
{
	local file=$1 src n
	src=$(mktemp -d "${BATS_TEST_TMPDIR:-/tmp}/populate.XXXXXX") || return 1
	printf 'fatkit test volume\n' >"$src/README.TXT"
	printf 'a file with a long name\n' >"$src/A long file name for testing.txt"
	printf 'spaces in the name\n' >"$src/name with spaces.dat"
	printf 'Grüße aus dem Test\n' >"$src/Grüße.txt"
	printf '日本語のテキスト\n' >"$src/日本語.txt"
	: >"$src/empty.bin"
	mkdir -p "$src/EMPTYDIR" "$src/Mixed Case Dir" \
		"$src/deep1/deep2/deep3/deep4/deep5/deep6" "$src/DATA"
	printf 'lower\n' >"$src/Mixed Case Dir/lower.txt"
	printf 'the bottom\n' >"$src/deep1/deep2/deep3/deep4/deep5/deep6/leaf.txt"
	for n in 0 1 511 512 513 4096 100000; do
		gen_bytes "$n" "rand-$n" >"$src/DATA/rand-$n.bin"
	done
	find "$src" -exec touch -h -d "$FK_FIXED_MTIME" {} + || return 1
	_mcopy_tree "$file" "$src" / || return 1
	(cd "$src" && find . -type f -print0 | LC_ALL=C sort -z |
		xargs -0 sha256sum | sed 's|  \./|  /|') >"${file%%@@*}.sums" ||
		return 1
	rm -rf "$src"
}

# check_sums FILE: copy every file named in IMAGE.sums out of the volume
# with mcopy and compare its sha256; fails naming the first mismatch.
check_sums()
{
	local file=$1 sums=${1%%@@*}.sums line sum path got tmp
	tmp=$(mktemp "${BATS_TEST_TMPDIR:-/tmp}/check_sums.XXXXXX") || return 1
	while IFS= read -r line; do
		sum=${line%%  *}
		path=${line#*  }
		rm -f "$tmp"
		if ! mcopy -n -i "$file" "::$path" "$tmp" </dev/null; then
			echo "check_sums: cannot read $path from $file" >&2
			return 1
		fi
		got=$(sha256sum <"$tmp")
		if [[ ${got%% *} != "$sum" ]]; then
			echo "check_sums: $path in $file has sha256 ${got%% *}, want $sum" >&2
			return 1
		fi
	done <"$sums"
	rm -f "$tmp"
}

# tree_sums_ok TREE WHO: every "SHA256  /PATH" line on stdin (a manifest's
# form, as populate writes it) names a file TREE/PATH with that SHA-256, all
# hashed by one sha256sum; otherwise says (as WHO) which path is gone or
# changed, and fails.
tree_sums_ok()
{
	local tree=$1 who=$2 line path got i=0
	local -a sums=() paths=()
	while IFS= read -r line; do
		path=${line#*  }
		if [[ ! -f $tree$path ]]; then
			echo "$who: $path is gone" >&2
			return 1
		fi
		sums+=("${line%%  *}")
		paths+=("$tree$path")
	done
	((${#paths[@]})) || return 0
	while IFS= read -r -d '' got; do
		if [[ ${got%% *} != "${sums[i]}" ]]; then
			echo "$who: ${paths[i]#"$tree"} changed" >&2
			return 1
		fi
		i=$((i + 1))
	done < <(sha256sum --zero -- "${paths[@]}")
	[[ $i -eq ${#paths[@]} ]] || { echo "$who: sha256sum failed" >&2; return 1; }
}

# populate_big_dir FILE DIR N: N files f0001.txt... (each holding its own
# name, so one cluster each) in directory DIR (created with its parents if
# missing), in one mcopy call. 1100 files of one 32-byte slot each span
# several clusters of DIR.
populate_big_dir()
{
	local file=$1 dir=${2%/} n=$3 src part path=
	src=$(mktemp -d "${BATS_TEST_TMPDIR:-/tmp}/bigdir.XXXXXX") || return 1
	local -a parts
	IFS=/ read -ra parts <<<"${dir#/}"
	for part in "${parts[@]}"; do
		[[ -n $part ]] || continue
		path+=/$part
		mdir -i "$file" "::$path" >/dev/null 2>&1 </dev/null ||
			mmd -i "$file" "::$path" </dev/null || return 1
	done
	# in a bash of its own: bats traps each command of a test's shell
	bash -c 'for ((i = 1; i <= $2; i++)); do
		printf -v name "f%04d.txt" "$i"
		echo "$name" >"$1/$name" || exit 1
	done' populate_big_dir "$src" "$n" || return 1
	find "$src" -exec touch -h -d "$FK_FIXED_MTIME" {} + || return 1
	_mcopy_tree "$file" "$src" "${path:-/}" || return 1
	rm -rf "$src"
}

# img_sha FILE: sha256 of the whole image file (hex only). The same
# digest as sha256sum's, through openssl where it is installed (deps.sh
# installs it): its SHA-256 uses the CPU's SHA instructions, a fifth of
# sha256sum's CPU time on a 40 MiB image, and the tests hash images many
# thousands of times ("wrote nothing").
if command -v openssl >/dev/null 2>&1; then
	img_sha()
	{
		local s
		s=$(openssl dgst -sha256 -r <"$1") || return 1
		echo "${s%% *}"
	}
	# files_sha FILE...: one line of each FILE's SHA-256 and name.
	files_sha()
	{
		openssl dgst -sha256 -r -- "$@"
	}
else
	img_sha()
	{
		local s
		s=$(sha256sum <"$1") || return 1
		echo "${s%% *}"
	}
	files_sha()
	{
		sha256sum -- "$@"
	}
fi

# once_for FILE... -- JUDGE [ARG...]: JUDGE ARG..., unless it has passed
# in this test with FILEs of exactly these bytes (by SHA-256).  A judge
# reads nothing but the image and the references it compares it with, so
# the same bytes get the same verdict: name them all as FILEs.  For the
# crash, failed-write and signal loops, whose write numbers end in a few
# distinct images each: every distinct outcome is still judged in full,
# and a failure fails the test as before.  Call it as a statement (not
# in a condition, where set -e would not stop a failing judge midway).
declare -gA FK_PASSED=()
once_for()
{
	local key
	local -a files=()
	while (($# > 0)) && [[ $1 != -- ]]; do
		files+=("$1")
		shift
	done
	shift
	key=$(files_sha "${files[@]}") || return 1
	key+=" $*"
	[[ -z ${FK_PASSED[$key]:-} ]] || return 0
	"$@"
	FK_PASSED[$key]=1
}

# fsck_clean FILE: fsck.fat -n FILE must exit 0; otherwise print its output
# and fail.
fsck_clean()
{
	local out
	if ! out=$(fsck.fat -n "$1" 2>&1 </dev/null); then
		echo "fsck.fat -n $1 is not clean:" >&2
		echo "$out" >&2
		return 1
	fi
}

# fat_type FILE: fat12, fat16 or fat32 by cluster count.
fat_type()
{
	"$FK_PYTHON" "$FATKIT_HELPERS/fatimg.py" type "$1"
}

# fat_geometry FILE: key=value lines (bytes_per_sec sec_per_clus rsvd_secs
# nfats fat_secs root_secs tot_secs data_start_sec nclus type fsinfo_sec).
fat_geometry()
{
	"$FK_PYTHON" "$FATKIT_HELPERS/fatimg.py" geometry "$1"
}

# fat_copies_equal FILE: every FAT copy equals the first, byte for byte;
# otherwise says which copy differs where, and fails.
fat_copies_equal()
{
	"$FK_PYTHON" "$FATKIT_HELPERS/fatimg.py" copies-equal "$1"
}

# count_free_clusters FILE: free entries among clusters 2..N+1 of the first
# FAT, counted independently of FSInfo.
count_free_clusters()
{
	"$FK_PYTHON" "$FATKIT_HELPERS/fatimg.py" free "$1"
}

# fsinfo_free FILE, fsinfo_next FILE: FAT32 FSInfo free count and next-free
# hint (0xFFFFFFFF = unknown prints 4294967295). Fail on FAT12/16.
fsinfo_free()
{
	"$FK_PYTHON" "$FATKIT_HELPERS/fatimg.py" fsinfo-free "$1"
}

fsinfo_next()
{
	"$FK_PYTHON" "$FATKIT_HELPERS/fatimg.py" fsinfo-next "$1"
}

# texfat IMG WHAT, through exfatref's objects: convert (a second FAT, a
# copy of the first; a second allocation bitmap, BitmapFlags 1, a copy of
# the first in clusters both mark; NumberOfFats 2 in both boot regions),
# active1 (ActiveFat = 1), leakN (three free clusters marked in bitmap N
# only), bitmapN / fatN (print the SHA-256 of bitmap N's clusters, FAT N).
texfat()
{
	"$FK_PYTHON" - "$FATKIT_HELPERS" "$@" <<'PY'
import hashlib, sys
sys.path.insert(0, sys.argv[1])
import exfatref as r
img, what = sys.argv[2], sys.argv[3]
v = r.Volume(img, write=True)
bps, cs = v.bps, v.csize
def bitmap(n):
    for _, e in v.special(r.T_BITMAP):
        if e[1] & 1 == n:
            return v.chain(r.le(e, 20, 4))[0]
if what == "convert":
    assert v.fat_offset + 2 * v.fat_length <= v.heap_offset
    v.load_bitmap()
    cl = v.alloc_run(len(v.bitmap_clusters))
    v.claim(cl, True)
    v.flush()
    data = bytes(v.bitmap)
    for k, c in enumerate(cl):
        v.write(v.cluster_off(c), data[k * cs:(k + 1) * cs])
    v.write((v.fat_offset + v.fat_length) * bps,
            v.read(v.fat_offset * bps, v.fat_length * bps))
    raw = bytearray(32)
    raw[0], raw[1] = r.T_BITMAP, 1
    r.put_le(raw, 20, 4, cl[0])
    r.put_le(raw, 24, 8, len(data))
    root = v.root_dir()
    root.write_entries(root.free_slot(1), bytes(raw))
    for first in (0, 12):
        v.write(first * bps + 110, b"\x02")
        r.fix_boot_checksum(v, first)
elif what == "active1":
    # VolumeFlags is outside the boot checksum (3.1.13)
    v.write(106, (r.le(v.boot, 106, 2) | 1).to_bytes(2, "little"))
elif what.startswith("leak"):
    clusters = bitmap(int(what[4:]))
    bm = bytearray(v.read_clusters(clusters))
    free = [c for c in range(v.nclus + 1, 1, -1)
            if not bm[(c - 2) >> 3] >> ((c - 2) & 7) & 1][:3]
    for c in free:
        bm[(c - 2) >> 3] |= 1 << ((c - 2) & 7)
    for k, c in enumerate(clusters):
        v.write(v.cluster_off(c), bytes(bm[k * cs:(k + 1) * cs]))
elif what.startswith("bitmap"):
    print(hashlib.sha256(v.read_clusters(bitmap(int(what[6:])))).hexdigest())
elif what.startswith("fat"):
    n = int(what[3:])
    print(hashlib.sha256(v.read((v.fat_offset + n * v.fat_length) * bps,
                                v.fat_length * bps)).hexdigest())
v.flush()
v.f.close()
PY
}

# signal_repair_ok SIG AGAIN: `run --separate-stderr fatcheck -r` was
# interrupted by signal SIG (AGAIN non-empty: and a second one) after its
# first write: exit 128 + SIG, the findings printed (before the first
# write) and no summary (the check after the repairs is skipped), and one
# line on stderr saying the repairs were completed (with AGAIN, maybe the
# line that the second signal was ignored before it).
signal_repair_ok()
{
	[ "$status" -eq $((128 + $1)) ]
	[ -n "$output" ]
	# (a bare "! cmd" would not fail a bats test)
	if grep -qvE '^(error|warning|note): ' <<<"$output"; then return 1; fi
	[ "${stderr##*$'\n'}" = "fatcheck: img: interrupted after the first repair write; the repairs were completed" ]
	if [[ -n $2 ]]; then
		[[ $stderr == *"fatcheck: signal ignored; finishing the repairs, please wait"* ]] ||
			[ "$(wc -l <<<"$stderr")" -eq 1 ]
	else
		[ "$(wc -l <<<"$stderr")" -eq 1 ]
	fi
}

# ref ARGS...: the exFAT reference reader, writer and corruptor.
ref()
{
	py_run "$FATKIT_HELPERS/exfatref.py" "$@"
}

# release_held: what a test left held, for teardown(): the lock holder
# process $HOLDER, a mount at $MNT, the loop device $LOOPDEV.
release_held()
{
	if [[ -n ${HOLDER:-} ]]; then
		kill "$HOLDER" 2>/dev/null || true
		wait "$HOLDER" 2>/dev/null || true
	fi
	if [[ -n ${MNT:-} ]]; then
		umount "$MNT" 2>/dev/null || true
	fi
	if [[ -n ${LOOPDEV:-} ]]; then
		losetup -d "$LOOPDEV" 2>/dev/null || true
	fi
}

# PC_CUT: the one line of a --per-cluster run a stop cut short;
# BASH_REMATCH then holds the file, the clusters it got, of how many, and
# the later files' count.
PC_CUT='^fatprealloc: c\.img: interrupted; (/.*) got ([0-9]+) of its ([0-9]+) new clusters?(, ([0-9]+) more files? none)?; run again to finish$'

# pc_args: ARGS, a --per-cluster run giving each of PC_PATHS its PC_WANT.
pc_args()
{
	local i
	ARGS=(-p --per-cluster)
	for ((i = 0; i < ${#PC_PATHS[@]}; i++)); do
		ARGS+=("${PC_PATHS[i]}" "${PC_WANT[i]}")
	done
}

# pc_cut_ok IMG LINE: LINE says a stop cut the run short, and IMG passes
# PC_JUDGE (the family's "consistent": not even lost clusters) with the
# sizes the cut gives (the caller's pc_sizes_ok, over PC_PATHS); then the
# same command (ARGS) finishes the run and IMG passes PC_FINAL.
pc_cut_ok()
{
	local img=$1 i cut
	[[ $2 =~ $PC_CUT ]] || return 1
	for ((i = 0; i < ${#PC_PATHS[@]}; i++)); do
		[[ ${PC_PATHS[i]} == "${BASH_REMATCH[1]}" ]] && cut=$i
	done
	[[ -n $cut ]] || return 1
	((BASH_REMATCH[2] < BASH_REMATCH[3])) || return 1
	echo "# cut: ${BASH_REMATCH[1]} got ${BASH_REMATCH[2]} of ${BASH_REMATCH[3]}"
	"$PC_JUDGE" "$img" || return 1
	pc_sizes_ok "$img" "$cut" "${BASH_REMATCH[2]}" || return 1
	fatprealloc "$img" "${ARGS[@]}" || return 1
	"$PC_FINAL" "$img" && pc_sizes_ok "$img"
}

# pc_signal_each SIG...: the signal loop of both families' fatprealloc
# tests.  ARGS run on c.img, a fresh copy of base.img (and of
# base.img.sums where there is one), with a signal raised before write or
# zero call 1, 2, ... in turn (the SIGs by turns).  Each run exits
# 128 + SIG, prints nothing on stdout and one line on stderr: before the
# commit point nothing was changed (the family's PC_ROLLED judges c.img);
# a --per-cluster run stopped between two clusters keeps what they took
# (pc_cut_ok; each call of one cluster leaves the same image); after it
# the run was completed (PC_JUDGE judges c.img, which is byte for byte
# what an uninterrupted run leaves, ref.img).  The outcomes come in that
# order; sets ROLLED, CUT and COMPLETED, the count of each, and
# FIRST_CUT, the first call whose signal cut the run short.
pc_signal_each()
{
	local n total sig line prev= ref_sha
	local -a sigs=("$@")
	ROLLED=0 CUT=0 COMPLETED=0 FIRST_CUT=
	cp base.img ref.img
	run -0 --separate-stderr fatprealloc --json ref.img "${ARGS[@]}"
	total=$(($(json_stat "$output" write_calls) + $(json_stat "$output" zero_calls)))
	ref_sha=$(img_sha ref.img)
	for ((n = 1; n <= total; n++)); do
		sig=${sigs[n % ${#sigs[@]}]}
		echo "# signal $sig before call $n of $total"
		cp base.img c.img
		[[ ! -f base.img.sums ]] || cp base.img.sums c.img.sums
		run --separate-stderr env FK_SIGNAL_BEFORE_WRITE=$n FK_SIGNAL=$sig \
			fatprealloc c.img "${ARGS[@]}"
		[ "$status" -eq $((128 + sig)) ]
		[ -z "$output" ]
		line=$stderr
		if [ "$line" = "fatprealloc: c.img: interrupted; nothing was changed" ]; then
			((CUT + COMPLETED == 0))
			ROLLED=$((ROLLED + 1))
			# each distinct image judged once (once_for)
			once_for c.img base.img -- "$PC_ROLLED" c.img
		elif [[ $line =~ $PC_CUT ]]; then
			((COMPLETED == 0))
			CUT=$((CUT + 1))
			FIRST_CUT=${FIRST_CUT:-$n}
			# Each call of one cluster: the same cut.
			if [[ $line == "$prev" ]]; then
				[ "$(img_sha c.img)" = "$(img_sha prev.img)" ]
				continue
			fi
			prev=$line
			cp c.img prev.img
			pc_cut_ok c.img "$line"
		else
			[ "$line" = "fatprealloc: c.img: interrupted after the commit point; the run was completed" ]
			COMPLETED=$((COMPLETED + 1))
			[ "$(img_sha c.img)" = "$ref_sha" ]
			once_for c.img base.img -- "$PC_JUDGE" c.img
		fi
	done
	echo "# $ROLLED rolled back, $CUT cut short, $COMPLETED completed"
}
