#!/usr/bin/env bats
# cli.bats: the contract every program shares (fatkit(7), "Common to all
# programs"): help, version, usage errors and their exit codes, sizes in
# IMAGE@@OFFSET, a missing image, partitions, and the image lock.  Each
# test runs for whichever of fatls, fatprealloc and fatcheck are built.

load helpers/common

ALL_PROGS=(fatls fatprealloc fatcheck)

# The programs built; a test needs at least one.
built_progs()
{
	local p
	for p in "${ALL_PROGS[@]}"; do
		[[ -x $FATKIT_BUILD/$p ]] && echo "$p"
	done
}

setup()
{
	common_setup
	mapfile -t PROGS < <(built_progs)
	((${#PROGS[@]})) || skip "none of ${ALL_PROGS[*]} is built in $FATKIT_BUILD"
}

teardown()
{
	# Release a lock holder a failed test left behind (see hold_lock).
	if [[ -n ${HOLDER:-} ]]; then
		rm -f held
		wait "$HOLDER" || true
	fi
}

# Exit codes: fatcheck follows fsck, the others 0/1/2 (fatkit(7)).
fail_code()
{
	[[ $1 == fatcheck ]] && echo 8 || echo 1
}

usage_code()
{
	[[ $1 == fatcheck ]] && echo 16 || echo 2
}

# args_for PROG IMAGE...: set ARGS to a run of PROG on IMAGE... that
# succeeds on a sound volume and writes nothing.
args_for()
{
	local p=$1
	shift
	case $p in
	fatls) ARGS=("$@" /) ;;
	fatprealloc) ARGS=(--dry-run "$@" /cli.bin 4K) ;;
	fatcheck) ARGS=("$@") ;;
	esac
}

# The version the Makefile stamps into the programs: the top entry of
# debian/changelog, its one home (packaging.bats checks that make agrees).
make_version()
{
	sed -n '1s/^fatkit (\([^)]*\)).*/\1/p' \
		"$BATS_TEST_DIRNAME/../debian/changelog"
}

@test "cli: -h and --help print usage on stdout and exit 0" {
	local p opt
	for p in "${PROGS[@]}"; do
		for opt in -h --help; do
			run -0 --separate-stderr "$p" "$opt"
			[ -z "$stderr" ]
			[[ ${lines[0]} == "Usage: $p "* ]]
			assert_output --partial '--partition'
			assert_output --partial '--version'
		done
	done
}

@test "cli: -V and --version print exactly 'PROGRAM (fatkit) VERSION'" {
	local p opt version
	version=$(make_version)
	[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+ ]]
	for p in "${PROGS[@]}"; do
		for opt in -V --version; do
			run -0 --separate-stderr "$p" "$opt"
			[ "$output" = "$p (fatkit) $version" ]
			[ -z "$stderr" ]
		done
	done
}

@test "cli: an unknown option is a usage error: one stderr line, nothing on stdout" {
	local p opt code
	mkimg fat12 1M img
	for p in "${PROGS[@]}"; do
		code=$(usage_code "$p")
		for opt in -Z --no-such-option --help=x; do
			args_for "$p" img
			run "-$code" --separate-stderr "$p" "$opt" "${ARGS[@]}"
			[ "${#stderr_lines[@]}" -eq 1 ]
			[[ $stderr == "$p: "* ]]
			[ -z "$output" ]
		done
		# An option without its argument.
		args_for "$p" img
		run "-$code" --separate-stderr "$p" "${ARGS[@]}" --partition
		[ "${#stderr_lines[@]}" -eq 1 ]
		[[ $stderr == "$p: "* ]]
		# No IMAGE at all.
		run "-$code" --separate-stderr "$p"
		[ "${#stderr_lines[@]}" -eq 1 ]
		[[ $stderr == "$p: "* ]]
	done
}

@test "cli: -P takes a partition number from 1; anything else is a usage error" {
	local p n code
	mkimg fat12 1M img
	for p in "${PROGS[@]}"; do
		code=$(usage_code "$p")
		for n in 0 -1 x 1x '' 99999999999999999999; do
			args_for "$p" -P "$n" img
			run "-$code" --separate-stderr "$p" "${ARGS[@]}"
			[ "${#stderr_lines[@]}" -eq 1 ]
			[[ $stderr == "$p: "* ]]
		done
	done
}

@test "cli: IMAGE@@OFFSET takes bytes, K M G T, KiB MiB, and KB MB as powers of 1000" {
	local p spec code
	mkpartimg disk 8M fat12
	populate disk@@1M
	for p in "${PROGS[@]}"; do
		# 1 MiB, however it is written, finds the volume.
		for spec in 1M 1MiB 1048576 1024K 1024KiB; do
			args_for "$p" "disk@@$spec"
			run -0 --separate-stderr "$p" "${ARGS[@]}"
		done
		if [[ $p == fatls ]]; then
			run -0 fatls disk@@1M /README.TXT
			[ "$output" = /README.TXT ]
		fi
		# 1MB is 1000000 bytes (util-linux): no volume there, one line.
		code=$(fail_code "$p")
		# A fraction with a suffix is a size too: 1.5M is 1572864.
		for spec in 1MB 1000000 1000KB 1G 1T 1GB 1.5M; do
			args_for "$p" "disk@@$spec"
			run "-$code" --separate-stderr "$p" "${ARGS[@]}"
			[ "${#stderr_lines[@]}" -eq 1 ]
			[[ $stderr == "$p: disk"* ]]
		done
		# Garbage, negative, bare-fraction or overflowing offsets are
		# usage errors.
		code=$(usage_code "$p")
		for spec in 1X '' -1 1.5 .5M 0x100 ' 1M' 1M2 M 1MiBB 99999999999999999999 \
			16777216T 18446744073709551616; do
			args_for "$p" "disk@@$spec"
			run "-$code" --separate-stderr "$p" "${ARGS[@]}"
			[ "${#stderr_lines[@]}" -eq 1 ]
			[[ $stderr == "$p: "* ]]
			[ -z "$output" ]
		done
	done
}

@test "cli: a volume at offset 0 is used as it is; IMAGE@@0 too" {
	local p
	mkimg fat16 16M img
	for p in "${PROGS[@]}"; do
		args_for "$p" img
		run -0 "$p" "${ARGS[@]}"
		args_for "$p" img@@0
		run -0 "$p" "${ARGS[@]}"
	done
}

@test "cli: a missing image is one line 'PROGRAM: PATH: No such file or directory'" {
	local p code
	for p in "${PROGS[@]}"; do
		code=$(fail_code "$p")
		for img in nothere.img nodir/nothere.img nothere.img@@1M; do
			args_for "$p" "$img"
			run "-$code" --separate-stderr "$p" "${ARGS[@]}"
			[ "$stderr" = "$p: ${img%@@*}: No such file or directory" ]
			[ -z "$output" ]
		done
		# A directory is neither a file nor a block device.
		mkdir -p adir
		args_for "$p" adir
		run "-$code" --separate-stderr "$p" "${ARGS[@]}"
		[ "${#stderr_lines[@]}" -eq 1 ]
		[[ $stderr == "$p: adir: "* ]]
	done
}

@test "cli: an offset past the end of the image is one line" {
	local p code
	mkimg fat12 1M img
	for p in "${PROGS[@]}"; do
		code=$(fail_code "$p")
		for spec in 1M 2M 1G; do
			args_for "$p" "img@@$spec"
			run "-$code" --separate-stderr "$p" "${ARGS[@]}"
			[ "${#stderr_lines[@]}" -eq 1 ]
			[[ $stderr == "$p: img: "* ]]
		done
	done
}

# hold_lock MODE FILE: another process takes flock MODE (-x or -s) on
# FILE and keeps it until teardown (or release_lock); returns once the
# lock is held.
hold_lock()
{
	rm -f held
	flock "$1" "$2" sh -c 'touch held; while [ -e held ]; do sleep 0.05; done' &
	HOLDER=$!
	local i
	for ((i = 0; i < 100; i++)); do
		[[ -e held ]] && return 0
		sleep 0.05
	done
	echo "hold_lock: flock $1 $2 did not take the lock" >&2
	return 1
}

release_lock()
{
	rm -f held
	wait "$HOLDER"
	HOLDER=
}

@test "cli: while another process holds an exclusive lock, every program fails at once: image is in use" {
	local p code start
	mkimg fat16 16M img
	local before
	before=$(img_sha img)
	hold_lock -x img
	for p in "${PROGS[@]}"; do
		code=$(fail_code "$p")
		args_for "$p" img
		start=$SECONDS
		run "-$code" --separate-stderr timeout 10 "$p" "${ARGS[@]}"
		# /proc/locks names the holder: flock(1) itself.
		[ "$stderr" = "$p: img: image is in use by process $HOLDER (flock)" ]
		[ -z "$output" ]
		# At once: no waiting for the lock (a wait would last until
		# release_lock, so timeout would end it with 124).
		((SECONDS - start <= 5))
	done
	release_lock
	# Once the lock is gone, the same runs succeed.
	for p in "${PROGS[@]}"; do
		args_for "$p" img
		run -0 "$p" "${ARGS[@]}"
	done
	[ "$(img_sha img)" = "$before" ]
}

@test "cli: readers share the lock: a shared holder does not stop fatls or fatcheck" {
	local p
	mkimg fat16 16M img
	hold_lock -s img
	for p in "${PROGS[@]}"; do
		[[ $p == fatprealloc ]] && continue
		args_for "$p" img
		run -0 --separate-stderr timeout 10 "$p" "${ARGS[@]}"
	done
	release_lock
}

@test "cli: a lock on a partitioned disk counts whatever the offset or partition" {
	local p code spec
	mkpartimg disk 8M fat12
	hold_lock -x disk
	for p in "${PROGS[@]}"; do
		code=$(fail_code "$p")
		for spec in "disk@@1M" "-P 1 disk"; do
			# shellcheck disable=SC2086
			args_for "$p" $spec
			run "-$code" --separate-stderr timeout 10 "$p" "${ARGS[@]}"
			[ "$stderr" = "$p: disk: image is in use by process $HOLDER (flock)" ]
		done
	done
	release_lock
}
