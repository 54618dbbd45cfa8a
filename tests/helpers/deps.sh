#!/usr/bin/env bash
# deps.sh: make sure the Debian packages fatkit needs to build and test are
# installed. Quiet when nothing is missing. As root (CI) it installs what is
# missing with apt-get; otherwise it prints the command to run and exits 1.
# Never reads stdin. Bench-only tools are not installed here.
set -euo pipefail

pkgs=(
	# build
	gcc clang make pkg-config libblkid-dev clang-format
	# fuzzing: clang's libFuzzer (libclang_rt.fuzzer-x86_64.a)
	libclang-rt-14-dev
	# oracles: images and independent judges for the tests and the demo
	dosfstools mtools
	# tests
	bats bats-assert bats-support strace xxd python3 mandoc groff-base zsh
	# sfdisk, for partitioned test images
	fdisk
)

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
