#!/usr/bin/env bats
# docs.bats: the man pages are lint-clean, and every option a program's
# --help defines is documented in the OPTIONS section of its man page and
# offered by its bash and zsh completions. The --help checks skip a program
# that is not built yet; the rest needs only the files in man/ and
# completions/.

bats_require_minimum_version 1.5.0

ROOT=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
FATKIT_BUILD=${FATKIT_BUILD:-$BATS_TEST_DIRNAME/../build}
export LC_ALL=C.UTF-8

# An option word: "-x" or "--long-name".
OPT_RE='--?[[:alnum:]][[:alnum:]-]*'

# help_opts PROG: the options PROG --help defines, one a line, sorted. Only
# the option list that opens a help line counts ("  -P, --partition N  ..."),
# so an option of another program named in a description is not taken.
help_opts()
{
	local bin=$FATKIT_BUILD/$1 out arg='([ =][^[:space:],]+)?'
	out=$("$bin" --help 2>&1) || {
		echo "$1 --help failed: $out" >&2
		return 1
	}
	grep -oE "^[[:space:]]*$OPT_RE$arg(,[[:space:]]*$OPT_RE$arg)*" \
		<<<"$out" | grep -oE -- "(^|[[:space:],])$OPT_RE" |
		grep -oE -- "$OPT_RE" | sort -u
}

# man_options PROG: the OPTIONS section of man/PROG.1 as plain text, with
# the roff escapes that may sit inside an option name removed.
man_options()
{
	sed -n '/^\.SH OPTIONS/,/^\.SH /p' "$ROOT/man/$1.1" |
		sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\f(..//g' \
			-e 's/\\f\[[^]]*\]//g' -e 's/\\[&%]//g'
}

# completion_text bash|zsh PROG: the completion script without comments.
completion_text()
{
	local f
	case $1 in
	bash) f=$ROOT/completions/bash/$2 ;;
	zsh) f=$ROOT/completions/zsh/_$2 ;;
	esac
	[ -f "$f" ] || {
		echo "no such file: $f" >&2
		return 1
	}
	grep -v '^[[:space:]]*#' "$f"
}

# doc_text man|bash|zsh PROG
doc_text()
{
	case $1 in
	man) man_options "$2" ;;
	*) completion_text "$1" "$2" ;;
	esac
}

# missing_opts DOC PROG OPT...: print each OPT that DOC for PROG lacks as a
# whole word; fail if any does.
missing_opts()
{
	local doc=$1 prog=$2 text opt bad=0
	shift 2
	text=$(doc_text "$doc" "$prog") || return 1
	for opt; do
		if ! grep -qE -- "(^|[^[:alnum:]-])$opt([^[:alnum:]-]|\$)" \
			<<<"$text"; then
			echo "$opt"
			bad=1
		fi
	done
	return $bad
}

# check_help_opts_in DOC PROG: every option PROG --help defines is in DOC.
check_help_opts_in()
{
	local doc=$1 prog=$2 opts missing
	[ -x "$FATKIT_BUILD/$prog" ] || skip "$prog not built yet"
	opts=$(help_opts "$prog") || return 1
	# The contract gives every program these two; finding them shows the
	# help was parsed, so the check below cannot pass on an empty list.
	for opt in --help --version -h -V; do
		grep -qx -- "$opt" <<<"$opts" || {
			echo "$prog --help: $opt not found in the option list;" \
				"help_opts parsed: $(echo $opts)" >&2
			return 1
		}
	done
	if ! missing=$(missing_opts "$doc" "$prog" $opts); then
		echo "$prog: options in --help but not in $doc:" $missing >&2
		return 1
	fi
}

# The options a document defines, one a line, sorted: the .TP tags of the
# man page's OPTIONS section, the compgen word list of the bash completion,
# the option specs given to _arguments in the zsh completion.
defined_opts()
{
	case $1 in
	man)
		man_options "$2" | sed -n '/^\.TP/{n;p}' |
			grep -oE -- "(^|[^[:alnum:]-])$OPT_RE" ;;
	bash)
		completion_text bash "$2" |
			sed -n "/compgen -W '-/,/'/p" | sed 's/.*compgen -W//' |
			grep -oE -- "(^|[^[:alnum:]-])$OPT_RE" ;;
	zsh)
		completion_text zsh "$2" |
			grep -oP -- "(?<=[{'),])--?[[:alnum:]][[:alnum:]-]*(?=[+=]?[[,}])" ;;
	esac | grep -oE -- "$OPT_RE" | sort -u
}

check_lint()
{
	local f=$ROOT/man/$1.${2:-1}
	command -v mandoc >/dev/null ||
		{ echo "mandoc is not installed (tests/helpers/deps.sh)" >&2; return 1; }
	run -0 mandoc -Tlint -W warning "$f"
	[ -z "$output" ] || { echo "$output" >&2; return 1; }
}

check_groff()
{
	command -v groff >/dev/null || skip "groff is not installed"
	run -0 groff -man -ww -z "$ROOT/man/$1.${2:-1}"
	[ -z "$output" ] || { echo "$output" >&2; return 1; }
}

check_same_opts()
{
	local prog=$1 man bash zsh
	man=$(defined_opts man "$prog")
	bash=$(defined_opts bash "$prog")
	zsh=$(defined_opts zsh "$prog")
	[ -n "$man" ] || { echo "no options found in man/$prog.1" >&2; return 1; }
	if [ "$man" != "$bash" ] || [ "$man" != "$zsh" ]; then
		echo "option lists differ for $prog:" >&2
		diff <(echo "$man") <(echo "$bash") | sed 's/^/man|bash: /' >&2
		diff <(echo "$man") <(echo "$zsh") | sed 's/^/man|zsh: /' >&2
		return 1
	fi
}

# ---- the checker itself -------------------------------------------------

@test "docs: the option check rejects an option a document lacks" {
	for doc in man bash zsh; do
		run -1 missing_opts "$doc" fatls --no-such-option --chain
		[ "$output" = --no-such-option ]
		# a longer option that merely contains it does not count
		run -1 missing_opts "$doc" fatprealloc --zero
		[ "$output" = --zero ]
		run -0 missing_opts "$doc" fatprealloc --no-zero -n
	done
}

@test "docs: help_opts takes option lists, not options named in prose" {
	FATKIT_BUILD=$BATS_TEST_TMPDIR
	cat >"$BATS_TEST_TMPDIR/fake" <<-'EOF'
	#!/bin/sh
	cat <<'HELP'
	Usage: fake [OPTIONS] IMAGE
	  -r, --repair          repair; see fatcheck --trim-prealloc
	      --json            JSON output
	  -P, --partition N     use partition N
	  -x N                  a short option with an argument
	  -h, --help            print this help
	  -V, --version         print the version
	HELP
	EOF
	chmod +x "$BATS_TEST_TMPDIR/fake"
	run -0 help_opts fake
	[ "$output" = "$(printf '%s\n' --help --json --partition --repair \
		--version -P -V -h -r -x | sort)" ]
}

# ---- fatls ---------------------------------------------------------------

@test "fatls.1: mandoc -Tlint -W warning is silent" {
	check_lint fatls
}

@test "fatls.1: groff -man -ww is silent" {
	check_groff fatls
}

@test "fatls: every --help option is in fatls.1 OPTIONS" {
	check_help_opts_in man fatls
}

@test "fatls: every --help option is in the bash completion" {
	check_help_opts_in bash fatls
}

@test "fatls: every --help option is in the zsh completion" {
	check_help_opts_in zsh fatls
}

@test "fatls: man page and completions list the same options" {
	check_same_opts fatls
}

# ---- fatprealloc ---------------------------------------------------------

@test "fatprealloc.1: mandoc -Tlint -W warning is silent" {
	check_lint fatprealloc
}

@test "fatprealloc.1: groff -man -ww is silent" {
	check_groff fatprealloc
}

@test "fatprealloc: every --help option is in fatprealloc.1 OPTIONS" {
	check_help_opts_in man fatprealloc
}

@test "fatprealloc: every --help option is in the bash completion" {
	check_help_opts_in bash fatprealloc
}

@test "fatprealloc: every --help option is in the zsh completion" {
	check_help_opts_in zsh fatprealloc
}

@test "fatprealloc: man page and completions list the same options" {
	check_same_opts fatprealloc
}

@test "fatprealloc.1: --keep-size caveats are all spelled out" {
	local text
	text=$(sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\[&%]//g' \
		"$ROOT/man/fatprealloc.1" | tr '\n' ' ')
	[[ $text == *"fsck.fat"*"truncates"* ]]
	[[ $text == *"Linux 6.1"*"clusters badly computed"*"read-only"* ]]
	[[ $text == *"Windows frees"* ]]
	[[ $text == *"fatcheck -r --trim-prealloc"* ]]
	[[ $text == *SOURCE_DATE_EPOCH* ]]
}

# ---- fatcheck ------------------------------------------------------------

@test "fatcheck.1: mandoc -Tlint -W warning is silent" {
	check_lint fatcheck
}

@test "fatcheck.1: groff -man -ww is silent" {
	check_groff fatcheck
}

@test "fatcheck: every --help option is in fatcheck.1 OPTIONS" {
	check_help_opts_in man fatcheck
}

@test "fatcheck: every --help option is in the bash completion" {
	check_help_opts_in bash fatcheck
}

@test "fatcheck: every --help option is in the zsh completion" {
	check_help_opts_in zsh fatcheck
}

@test "fatcheck: man page and completions list the same options" {
	check_same_opts fatcheck
}

# ---- fatkit.7 and the repository as a whole -----------------------------

@test "fatkit.7: mandoc -Tlint -W warning is silent" {
	check_lint fatkit 7
}

@test "fatkit.7: groff -man -ww is silent" {
	check_groff fatkit 7
}

@test "fatkit.7: covers the programs, IMAGE syntax, sizes, exit codes, locks, JSON, progress, signals and an example" {
	local text
	text=$(sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\[&%]//g' \
		"$ROOT/man/fatkit.7" | tr '\n' ' ')
	for want in "fatprealloc (1)" "fatls (1)" "fatcheck (1)" "@@" "-P" \
		"1.5G" "130" "143" "129" "image is in use" "mtools does not take this lock" \
		"--json" "--progress" "--no-progress" ".SH EXAMPLES" "sfdisk"; do
		[[ $text == *"$want"* ]] || { echo "fatkit.7 lacks: $want" >&2; return 1; }
	done
}

@test "docs: every man page says that mtools does not honour the lock" {
	local f text
	for f in fatls.1 fatprealloc.1 fatcheck.1 fatkit.7; do
		text=$(sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' "$ROOT/man/$f" | tr '\n' ' ')
		[[ $text == *"mtools does not"* ]] || { echo "$f: no mtools lock note" >&2; return 1; }
	done
}

@test "docs: the repository stands alone: no file points outside it" {
	local re='CLI\.md|STYLE\.md|\.\./shared|shared notes'
	if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		run -1 git -C "$ROOT" grep -nE "$re" -- . ':!tests/docs.bats'
	else # an unpacked release tarball
		run -1 grep -rnE --exclude=docs.bats --exclude-dir='build*' \
			"$re" "$ROOT"
	fi
	[ -z "$output" ]
}

@test "docs: make install installs fatkit.7 beside the section 1 pages" {
	local b=$BATS_TEST_TMPDIR/b p
	mkdir -p "$b"
	for p in fatls fatprealloc fatcheck; do
		cp "$FATKIT_BUILD/$p" "$b/" || skip "$p not built yet"
	done
	# Copies, installed as they are (-o): a build of the tested
	# binaries with other flags must not happen in the middle of a run.
	run -0 make -C "$ROOT" -s install DESTDIR="$BATS_TEST_TMPDIR/dest" \
		PREFIX=/usr BUILD="$b" -o "$b/fatls" -o "$b/fatprealloc" \
		-o "$b/fatcheck"
	[ -f "$BATS_TEST_TMPDIR/dest/usr/share/man/man7/fatkit.7" ]
	[ -f "$BATS_TEST_TMPDIR/dest/usr/share/man/man1/fatls.1" ]
}

@test "deps.sh: demo asks for build tools and oracles only; check adds the test tools" {
	local demo check
	demo=$(sed -n '/^demo_pkgs=(/,/^)/p' "$ROOT/tests/helpers/deps.sh" | grep -v '^[[:space:]]*#')
	check=$(sed -n '/^check_pkgs=(/,/^)/p' "$ROOT/tests/helpers/deps.sh" | grep -v '^[[:space:]]*#')
	for p in gcc make libblkid-dev dosfstools mtools; do
		[[ $demo == *" $p"* || $demo == *"	$p"* ]] || { echo "demo lacks $p" >&2; return 1; }
	done
	for p in bats clang strace zsh mandoc; do
		[[ $demo != *"$p"* ]] || { echo "demo has test tool $p" >&2; return 1; }
		[[ $check == *"$p"* ]] || { echo "check lacks $p" >&2; return 1; }
	done
	grep -q '^demo: deps-demo ' "$ROOT/Makefile"
	grep -q '^check: deps-check' "$ROOT/Makefile"
	run -2 "$ROOT/tests/helpers/deps.sh" nonsense
}

# ---- completion scripts --------------------------------------------------

@test "completions: bash scripts parse and register their function" {
	local prog
	for prog in fatls fatprealloc fatcheck; do
		run -0 bash -n "$ROOT/completions/bash/$prog"
		run -0 bash -c 'source "$1" && complete -p "$2"' _ \
			"$ROOT/completions/bash/$prog" "$prog"
		[[ $output == "complete -F _$prog $prog" ]]
	done
}

@test "completions: bash offers the long options" {
	local prog
	for prog in fatls fatprealloc fatcheck; do
		run -0 bash -c '
			source "$1"
			COMP_WORDS=("$2" --) COMP_CWORD=1
			COMP_LINE="$2 --" COMP_POINT=${#COMP_LINE}
			"_$2" "$2" -- "$2"
			printf "%s\n" "${COMPREPLY[@]}"' _ \
			"$ROOT/completions/bash/$prog" "$prog"
		[[ $output == *--help*--version* ]]
		[[ $output != *$'\n'-[!-]* ]]	# only long ones after "--"
	done
}

@test "completions: zsh scripts parse" {
	command -v zsh >/dev/null || skip "zsh is not installed"
	local prog
	for prog in fatls fatprealloc fatcheck; do
		run -0 zsh -n "$ROOT/completions/zsh/_$prog"
		run -0 head -n 1 "$ROOT/completions/zsh/_$prog"
		[ "$output" = "#compdef $prog" ]
	done
}

# ---- EXAMPLES run as pasted ------------------------------------------------

# example_images: the images the EXAMPLES sections and README name, as a
# user would have them: sd.img, a 3 GiB card with an MBR and one FAT32
# partition at 1 MiB holding /BOOT.BIN; disk.img, a 6 GiB disk whose
# partition 1 is Linux and partition 2 FAT32 with a camera's
# /DCIM/100CANON; sdxc.img, an 8 GiB exFAT card with /DCIM; boot.bin.
# All sparse.
example_images()
{
	truncate -s 3G sd.img
	printf 'label: dos\nstart=2048, type=c\n' |
		sfdisk -q --no-reread --no-tell-kernel sd.img
	mkfs.fat -F 32 --offset 2048 sd.img $(((3 << 20) - 1024)) >/dev/null
	fatprealloc -c sd.img@@1M /BOOT.BIN 8M
	truncate -s 6G disk.img
	printf 'label: dos\nstart=2048, size=16384, type=83\nstart=18432, type=c\n' |
		sfdisk -q --no-reread --no-tell-kernel disk.img
	mkfs.fat -F 32 --offset 18432 disk.img $(((6 << 20) - 9216)) >/dev/null
	fatprealloc -p disk.img /DCIM/100CANON/IMG_0001.JPG 3M
	truncate -s 8G sdxc.img
	mkfs.exfat sdxc.img >/dev/null
	fatprealloc -p sdxc.img /DCIM/100CANON/C0001.MP4 1M
	head -c 1M /dev/zero >boot.bin
}

# run_examples FILE: every example of FILE behaves as shown, run in the
# test's own directory with the programs just built first in PATH.
run_examples()
{
	run python3 "$ROOT/tests/helpers/examples.py" run "$1"
	[ -z "$output" ] || echo "$output" >&2
	[ "$status" -eq 0 ]
}

# in_tmp: work in the test's own directory, the programs just built
# first in PATH (the examples call them by name).
in_tmp()
{
	cd "$BATS_TEST_TMPDIR" || return 1
	export PATH="$FATKIT_BUILD:$PATH" MTOOLS_SKIP_CHECK=1
	[ -x "$FATKIT_BUILD/fatprealloc" ] || skip "fatprealloc is not built"
}

@test "EXAMPLES of fatprealloc(1) run as pasted on fresh images" {
	in_tmp
	example_images
	run_examples "$ROOT/man/fatprealloc.1"
}

@test "EXAMPLES of fatls(1) run as pasted on fresh images" {
	in_tmp
	example_images
	run_examples "$ROOT/man/fatls.1"
}

@test "EXAMPLES of fatcheck(1) run as pasted on fresh images" {
	in_tmp
	example_images
	run_examples "$ROOT/man/fatcheck.1"
}

@test "EXAMPLES of fatkit(7) run as pasted (they make their own image), failures with the lines shown" {
	in_tmp
	run_examples "$ROOT/man/fatkit.7"
}

@test "README's usage examples run as pasted on fresh images" {
	in_tmp
	example_images
	run_examples "$ROOT/README.md"
}
