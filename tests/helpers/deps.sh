#!/usr/bin/env bash
# deps.sh [demo|check]: make sure the Debian packages fatkit needs are
# installed: "demo" what building and the demo need, "check" (the
# default) that and the test-only tools too. Quiet when nothing is
# missing. As root (CI) it installs what is missing with apt-get;
# otherwise it prints the command to run and exits 1. Never reads stdin.
# Bench-only tools are not installed here.
set -euo pipefail

demo_pkgs=(
	# build
	gcc make pkg-config libblkid-dev
	# the demo makes an image and has it judged by tools we did not write
	dosfstools mtools
)
check_pkgs=(
	# a second compiler, the format check
	clang clang-format
	# fuzzing: clang's libFuzzer (libclang_rt.fuzzer-x86_64.a)
	libclang-rt-14-dev
	# exFAT images and judges (mkfs.exfat, fsck.exfat, dump.exfat)
	exfatprogs
	# tests
	bats bats-assert bats-support strace xxd python3 mandoc groff-base zsh
	# sfdisk for partitioned test images, script(1) for the progress test,
	# mkfs.ext4 for a partition that holds another filesystem
	fdisk bsdutils e2fsprogs
)

case ${1:-check} in
demo) pkgs=("${demo_pkgs[@]}") ;;
check) pkgs=("${demo_pkgs[@]}" "${check_pkgs[@]}") ;;
*)
	echo "usage: deps.sh [demo|check]" >&2
	exit 2
	;;
esac

if ! command -v dpkg-query >/dev/null 2>&1; then
	echo "deps.sh: dpkg-query not found: this script expects Debian or a derivative" >&2
	echo "deps.sh: install by hand: ${pkgs[*]}" >&2
	exit 1
fi

missing=()
for p in "${pkgs[@]}"; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case $status in
	*" ok installed") ;;
	*) missing+=("$p") ;;
	esac
done

[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "deps.sh: missing packages: ${missing[*]}" >&2
	echo "deps.sh: install them with:" >&2
	echo "    sudo apt-get install ${missing[*]}" >&2
	exit 1
fi

echo "deps.sh: installing missing packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update </dev/null
apt-get install -y --no-install-recommends "${missing[@]}" </dev/null
