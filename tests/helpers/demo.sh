#!/usr/bin/env bash
# demo.sh BUILD_DIR: make a demo SD-card-like FAT32 image in BUILD_DIR/demo
# with mkfs.fat and mtools, then show fatkit's main job on it: preallocate a
# 64 MiB video file in one batched run, list it, check it, and let fsck.fat
# and mdir judge the result independently. Programs not built yet are
# skipped with a note. Exits non-zero if any step that ran failed.
set -uo pipefail

build=${1:-build}
if [ ! -d "$build" ]; then
	echo "demo.sh: build directory $build not found: run 'make' first" >&2
	exit 1
fi
build=${build%/}
dir=$build/demo
img=$dir/sd.img

export MTOOLS_SKIP_CHECK=1 MTOOLSRC=/dev/null LC_ALL=C.UTF-8 TZ=UTC

failed=()
skipped=()

# step CMD ARGS...: echo the command, run it, note a failure.
step()
{
	local prog=$1 rc
	echo
	echo "\$ $*"
	if [[ $prog == "$build"/* && ! -x $prog ]]; then
		echo "(skipped: ${prog##*/} is not built yet)"
		[[ " ${skipped[*]} " == *" ${prog##*/} "* ]] ||
			skipped+=("${prog##*/}")
		return 0
	fi
	"$@" </dev/null 2>&1
	rc=$?
	if [ $rc -ne 0 ]; then
		echo "(exit status $rc)"
		failed+=("$*")
	fi
}

for tool in mkfs.fat mmd mcopy mdir fsck.fat; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "demo.sh: $tool not found: run tests/helpers/deps.sh" >&2
		exit 1
	fi
done

rm -rf "$dir" && mkdir -p "$dir/src" || exit 1
echo "== making $img: 512 MiB FAT32, 512-byte sectors, 4 KiB clusters"
mkfs.fat --invariant -F 32 -S 512 -s 8 -n FATKITDEMO -C "$img" 524288 \
	>/dev/null || exit 1
printf 'Camera card made by the fatkit demo.\n' >"$dir/src/README.TXT"
printf 'Holiday notes: beach, hills, rain.\n' \
	>"$dir/src/Holiday notes from the summer of 2024.txt"
head -c 300000 /dev/zero | tr '\0' 'x' >"$dir/src/IMG_0001.JPG"
head -c 150000 /dev/zero | tr '\0' 'y' >"$dir/src/IMG_0002.JPG"
mmd -i "$img" ::/DCIM ::/DCIM/100CANON ::/MISC || exit 1
mcopy -i "$img" "$dir/src/README.TXT" \
	"$dir/src/Holiday notes from the summer of 2024.txt" ::/MISC || exit 1
mcopy -i "$img" "$dir/src/IMG_0001.JPG" "$dir/src/IMG_0002.JPG" \
	::/DCIM/100CANON || exit 1
rm -rf "$dir/src"

step "$build/fatprealloc" --stats -p "$img" /VIDEO/clip.mp4 64M
step "$build/fatls" -l -R "$img"
step "$build/fatls" --chain "$img" /VIDEO
step "$build/fatls" --info "$img"
step "$build/fatcheck" "$img"
step fsck.fat -n "$img"
# /VIDEO exists only once fatprealloc has made it.
if [ -x "$build/fatprealloc" ]; then
	step mdir -i "$img" ::/VIDEO
fi

echo
if [ ${#skipped[@]} -gt 0 ]; then
	echo "demo: skipped (not built yet): ${skipped[*]}"
fi
if [ ${#failed[@]} -gt 0 ]; then
	echo "demo: FAILED steps:"
	printf '  %s\n' "${failed[@]}"
	exit 1
fi
echo "demo: all steps that ran succeeded; image kept at $img"
