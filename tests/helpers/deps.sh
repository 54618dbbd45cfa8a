#!/usr/bin/env bash
# deps.sh [demo|check]: make sure the tools fatkit needs are present:
# "demo" what building and the demo need, "check" (the default) that and
# the test-only tools too, and on Debian the packaging tools. What counts
# is a command on PATH (or the blkid header through pkg-config, or the
# bats libraries the tests load), so any system with the tools passes,
# quietly. When something is missing:
# on Debian (dpkg-query exists) as root (CI) it installs the packages that
# provide it with apt-get, otherwise it prints the apt-get command and
# exits 1; elsewhere it names what is missing and exits 1. Never reads
# stdin. Bench-only tools are not checked here.
set -euo pipefail

# Each entry is PACKAGE=PROBE[,PROBE...]: a Debian package, then what
# shows it is there: a command, pc:MODULE (pkg-config finds MODULE and
# its header), rt:NAME (clang's runtime library libclang_rt.NAME), or a
# file path.
# shellcheck disable=SC2054 # commas separate the probes of one entry
demo_pkgs=(
	# build
	gcc=cc make=make pkg-config=pkg-config libblkid-dev=pc:blkid
	# the demo makes an image and has it judged by tools we did not write
	dosfstools=mkfs.fat,fsck.fat mtools=mdir,mcopy,minfo,mtype
)
# shellcheck disable=SC2054
check_pkgs=(
	# a second compiler, the format check
	clang=clang clang-format=clang-format
	# fuzzing: clang's libFuzzer (libclang_rt.fuzzer-x86_64.a)
	libclang-rt-14-dev=rt:fuzzer
	# exFAT images and judges
	exfatprogs=mkfs.exfat,fsck.exfat,dump.exfat
	# tests
	bats=bats parallel=parallel
	bats-assert=/usr/lib/bats/bats-assert/load.bash
	bats-support=/usr/lib/bats/bats-support/load.bash
	strace=strace xxd=xxd python3=python3 mandoc=mandoc groff-base=groff
	zsh=zsh
	# sfdisk for partitioned test images, script(1) for the progress test,
	# mkfs.ext4 for a partition that holds another filesystem
	fdisk=sfdisk bsdutils=script e2fsprogs=mkfs.ext4
	# file(1) says the static build is statically linked (static-check)
	file=file
	# openssl's SHA-256 hashes the test images five times as fast as
	# sha256sum (img_sha in tests/helpers/common.bash)
	openssl=openssl
)
# shellcheck disable=SC2054
# Checked on Debian only (where dpkg-query is): the Debian package's tests
# (tests/packaging.bats).  make deb needs dpkg-buildpackage, debhelper's
# dh and build-essential (which dpkg-buildpackage requires of every
# build); lintian judges the packages.
deb_pkgs=(
	dpkg-dev=dpkg-buildpackage debhelper=dh lintian=lintian
	build-essential=/usr/share/build-essential/list
)

case ${1:-check} in
demo) needs=("${demo_pkgs[@]}") ;;
check)
	needs=("${demo_pkgs[@]}" "${check_pkgs[@]}")
	if command -v dpkg-query >/dev/null 2>&1; then
		needs+=("${deb_pkgs[@]}")
	fi
	;;
*)
	echo "usage: deps.sh [demo|check]" >&2
	exit 2
	;;
esac

# has PROBE: is the command, pkg-config module or file there?
has()
{
	case $1 in
	pc:*)
		local dir
		command -v pkg-config >/dev/null 2>&1 &&
			dir=$(pkg-config --variable=includedir "${1#pc:}" 2>/dev/null) &&
			[ -f "${dir:-/usr/include}/${1#pc:}/${1#pc:}.h" ]
		;;
	rt:*)
		local dir
		command -v clang >/dev/null 2>&1 &&
			dir=$(clang --print-runtime-dir 2>/dev/null) &&
			[ -f "$dir/libclang_rt.${1#rt:}-$(uname -m).a" ]
		;;
	/*) [ -f "$1" ] ;;
	*) command -v "$1" >/dev/null 2>&1 ;;
	esac
}

missing=() # what is not there
pkgs=()    # the Debian packages that provide it
for entry in "${needs[@]}"; do
	pkg=${entry%%=*}
	IFS=, read -r -a probes <<<"${entry#*=}"
	lack=()
	for probe in "${probes[@]}"; do
		case $probe in
		pc:*) has "$probe" || lack+=("${probe#pc:}.h") ;;
		rt:*) has "$probe" || lack+=("libclang_rt.${probe#rt:}") ;;
		*) has "$probe" || lack+=("${probe##*/bats/}") ;;
		esac
	done
	if [ ${#lack[@]} -gt 0 ]; then
		missing+=("${lack[@]}")
		pkgs+=("$pkg")
	fi
done

[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v dpkg-query >/dev/null 2>&1; then
	echo "deps.sh: missing: ${missing[*]}" >&2
	echo "deps.sh: install them with your system's package manager" \
		"(Debian packages: ${pkgs[*]})" >&2
	exit 1
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "deps.sh: missing: ${missing[*]}" >&2
	echo "deps.sh: install them with:" >&2
	echo "    sudo apt-get install ${pkgs[*]}" >&2
	exit 1
fi

echo "deps.sh: installing missing packages: ${pkgs[*]}"
export DEBIAN_FRONTEND=noninteractive
# Wait for another apt or dpkg (a second checkout's make check) to finish.
apt-get -o DPkg::Lock::Timeout=600 update </dev/null
apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends \
	"${pkgs[@]}" </dev/null
