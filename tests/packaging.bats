#!/usr/bin/env bats
# packaging.bats: how fatkit ships (README, "Install").  The version has
# one home (debian/changelog) and every program prints it; `make dist`
# archives HEAD and the tarball builds and passes the unit tests and a few
# bats files on its own; `make deb` builds fatkit and fatkit-fsck, lintian
# finds no error in them, they install into a throwaway root, run, and
# purge to nothing, and fatkit-fsck will not go beside dosfstools.  On CI
# (CI=true, as root) fatkit is also installed on the machine and purged.
# `make check` runs this file once (not in the sanitizer pass); the static
# build is checked by `make static-check`.

load helpers/common

ROOT=$(cd "$BATS_TEST_DIRNAME/.." && pwd)

# The version as the top entry of debian/changelog spells it.
changelog_version()
{
	sed -n '1s/^fatkit (\([^)]*\)).*/\1/p' "$ROOT/debian/changelog"
}

setup_file()
{
	# A make of our own: not the jobserver or variables of the make that
	# runs this file.
	unset MAKEFLAGS MAKELEVEL MFLAGS
	# One package build for the deb tests (about 30 s), when the Debian
	# tools are here; need_deb reports how it went.
	if command -v dpkg-buildpackage >/dev/null && command -v dh >/dev/null
	then
		local st=0
		make -s -C "$ROOT" deb DEB_OUT="$BATS_FILE_TMPDIR/deb" \
			>"$BATS_FILE_TMPDIR/deb.log" 2>&1 || st=$?
		echo "$st" >"$BATS_FILE_TMPDIR/deb.status"
	fi
}

setup()
{
	common_setup
	unset MAKEFLAGS MAKELEVEL MFLAGS
	VERSION=$(changelog_version)
	DEB=$BATS_FILE_TMPDIR/deb
}

# need_deb: skip without the Debian tools; fail, showing why, if make deb
# failed.  Sets ARCH.
need_deb()
{
	[[ -f $BATS_FILE_TMPDIR/deb.status ]] ||
		skip "make deb needs dpkg-dev and debhelper (deps.sh check installs them)"
	if [[ $(<"$BATS_FILE_TMPDIR/deb.status") != 0 ]]; then
		tail -n 40 "$BATS_FILE_TMPDIR/deb.log"
		echo "make deb failed" >&2
		return 1
	fi
	ARCH=$(dpkg --print-architecture)
}

# empty_dpkg_root DIR: a dpkg database with nothing installed.
empty_dpkg_root()
{
	mkdir -p "$1/var/lib/dpkg/info" "$1/var/lib/dpkg/updates"
	: >"$1/var/lib/dpkg/status"
	: >"$1/var/lib/dpkg/available"
}

# dpkg_root DIR ARGS...: dpkg on the throwaway root DIR (no log on the host).
dpkg_root()
{
	local dir=$1
	shift
	dpkg --root="$dir" --log=/dev/null "$@"
}

@test "version: debian/changelog is its one home; make version and every program's --version print it" {
	[[ $VERSION =~ ^[0-9]+\.[0-9]+\.[0-9]+ ]]
	if command -v dpkg-parsechangelog >/dev/null; then
		[ "$(dpkg-parsechangelog -l "$ROOT/debian/changelog" -SVersion)" = "$VERSION" ]
	fi
	# Not a second copy in the Makefile.
	run grep -nE '^[[:space:]]*VERSION[[:space:]]*:?=[[:space:]]*[0-9]' "$ROOT/Makefile"
	[ "$status" -eq 1 ]
	run -0 make -s -C "$ROOT" version
	[ "$output" = "$VERSION" ]
	local p n=0
	for p in fatls fatprealloc fatcheck; do
		[[ -x $FATKIT_BUILD/$p ]] || continue
		run -0 "$FATKIT_BUILD/$p" --version
		[ "$output" = "$p (fatkit) $VERSION" ]
		n=$((n + 1))
	done
	((n > 0)) || skip "no program built in $FATKIT_BUILD"
}

@test "dist: make dist archives the committed tree, no build output; unpacked alone it builds and passes the unit tests and cli, blockdev and docs.bats" {
	git -C "$ROOT" rev-parse --verify -q HEAD >/dev/null 2>&1 ||
		skip "not a git checkout: make dist archives HEAD"
	run -0 make -s -C "$ROOT" dist DIST_OUT="$PWD"
	local tgz=fatkit-$VERSION.tar.gz
	[ -f "$tgz" ]
	# Exactly the files of HEAD, under fatkit-VERSION/.
	tar -tzf "$tgz" | grep -v '/$' | sort >got
	git -C "$ROOT" ls-tree -r --name-only HEAD |
		sed "s|^|fatkit-$VERSION/|" | sort >want
	diff want got
	run grep -E "^fatkit-$VERSION/(build[^/]*|bench/out)/|\.(o|a|deb)\$" got
	[ "$status" -eq 1 ]
	grep -qx "fatkit-$VERSION/debian/changelog" got

	# A fresh directory, no git: build, unit tests, a few bats files (the
	# whole of make check here would run the suite twice; CI runs it
	# once, from the clone).
	mkdir fresh
	tar -xzf "$tgz" -C fresh
	local tree=$PWD/fresh/fatkit-$VERSION
	run -0 make -s -C "$tree" -j"$(nproc)" all
	run -0 "$tree/build/unit-tests"
	run -0 "$tree/build/fatls" --version
	[ "$output" = "fatls (fatkit) $VERSION" ]
	FATKIT_BUILD=$tree/build run -0 bats "$tree/tests/cli.bats" \
		"$tree/tests/blockdev.bats" "$tree/tests/docs.bats"
	echo "$output"
	[[ $output != *"not ok"* ]]
}

@test "deb: make deb builds fatkit_VERSION_ARCH.deb and fatkit-fsck_VERSION_all.deb, and lintian finds no error in them" {
	need_deb
	[ -f "$DEB/fatkit_${VERSION}_$ARCH.deb" ]
	[ -f "$DEB/fatkit-fsck_${VERSION}_all.deb" ]
	command -v lintian >/dev/null ||
		skip "lintian is not installed (deps.sh check installs it)"
	# Errors fail; warnings and notes are printed for whoever reads.
	run lintian --fail-on error "$DEB/fatkit_${VERSION}_$ARCH.deb" \
		"$DEB/fatkit-fsck_${VERSION}_all.deb"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output != *"E: "* ]]
}

@test "deb: fatkit holds the programs, man pages and completions; the fsck names are only in fatkit-fsck, which conflicts with dosfstools and exfatprogs" {
	need_deb
	local main=$DEB/fatkit_${VERSION}_$ARCH.deb fsck=$DEB/fatkit-fsck_${VERSION}_all.deb
	dpkg-deb -c "$main" | awk '{ print $6 }' | sed 's|^\./||' >main.list
	local f
	for f in usr/bin/fatls usr/bin/fatprealloc usr/bin/fatcheck \
		usr/share/man/man1/fatls.1.gz usr/share/man/man1/fatprealloc.1.gz \
		usr/share/man/man1/fatcheck.1.gz usr/share/man/man7/fatkit.7.gz \
		usr/share/bash-completion/completions/fatls \
		usr/share/bash-completion/completions/fatprealloc \
		usr/share/bash-completion/completions/fatcheck \
		usr/share/zsh/vendor-completions/_fatls \
		usr/share/zsh/vendor-completions/_fatprealloc \
		usr/share/zsh/vendor-completions/_fatcheck \
		usr/share/doc/fatkit/copyright; do
		grep -qx "$f" main.list || {
			echo "fatkit lacks $f" >&2
			return 1
		}
	done
	run grep -E 'fsck\.|sbin' main.list
	[ "$status" -eq 1 ]
	# ${shlibs:Depends} became the libraries the programs link; libblkid1,
	# which they open when they first probe, is named in debian/control.
	run -0 dpkg-deb -f "$main" Depends
	[[ $output == *libblkid1* && $output == *libc6* && $output != *'${'* ]]
	run -0 dpkg-deb -f "$main" Version
	[ "$output" = "$VERSION" ]
	grep -q 'MIT license' <(dpkg-deb --fsys-tarfile "$main" |
		tar -xOf - ./usr/share/doc/fatkit/copyright)

	dpkg-deb -c "$fsck" | awk '{ print $6, $7, $8 }' | sed 's|^\./||' >fsck.list
	for f in fsck.fat fsck.vfat fsck.exfat; do
		grep -qx "usr/sbin/$f -> ../bin/fatcheck" fsck.list
		grep -qx "usr/share/man/man8/$f.8.gz -> ../man1/fatcheck.1.gz" fsck.list
	done
	run grep -E 'usr/bin/' fsck.list
	[ "$status" -eq 1 ]
	run -0 dpkg-deb -f "$fsck" Conflicts
	[ "$output" = "dosfstools, exfatprogs" ]
	run -0 dpkg-deb -f "$fsck" Depends
	[[ $output == "fatkit (>= $VERSION)"* ]]
}

@test "deb: both install into an empty root and run from there, remove and purge leave nothing, and fatkit-fsck refuses to go beside a dosfstools" {
	need_deb
	[ "$(id -u)" -eq 0 ] || skip "dpkg --root needs root"
	local main=$DEB/fatkit_${VERSION}_$ARCH.deb fsck=$DEB/fatkit-fsck_${VERSION}_all.deb
	empty_dpkg_root r
	# Nothing else is in this root: libc and libblkid come from the host.
	run -0 dpkg_root r --force-depends -i "$main" "$fsck"
	run -0 r/usr/bin/fatls --version
	[ "$output" = "fatls (fatkit) $VERSION" ]
	local n
	for n in fsck.fat fsck.vfat fsck.exfat; do
		[ "$(readlink -f "r/usr/sbin/$n")" = "$(readlink -f r/usr/bin/fatcheck)" ]
	done
	# Run as fsck.exfat, it checks an exFAT volume and speaks fsck's -n.
	truncate -s 64M img.exfat
	mkfs.exfat img.exfat >/dev/null
	run -0 r/usr/sbin/fsck.exfat -n img.exfat
	# Removing (-r) leaves nothing already: there are no conffiles.
	run -0 dpkg_root r -r fatkit-fsck fatkit
	run -0 find r -mindepth 1 -path r/var -prune -o -print
	[ -z "$output" ]
	run -0 dpkg_root r --purge fatkit-fsck fatkit
	run -0 dpkg_root r -l
	[[ $output != *fatkit* ]]

	# A stand-in dosfstools owning /sbin/fsck.fat, as bookworm's does.
	mkdir -p fake/DEBIAN fake/sbin
	printf '%s\n' 'Package: dosfstools' 'Version: 99' 'Architecture: all' \
		'Maintainer: test <test@example.org>' 'Description: stand-in' \
		' stand-in' >fake/DEBIAN/control
	ln -s /bin/true fake/sbin/fsck.fat
	dpkg-deb -b --root-owner-group fake dosfstools.deb >/dev/null
	run -0 dpkg_root r --force-depends -i dosfstools.deb "$main"
	run -1 dpkg_root r -i "$fsck"
	[[ $output == *"fatkit-fsck conflicts with dosfstools"* ]]
	[ "$(readlink r/sbin/fsck.fat)" = /bin/true ]
	[ ! -e r/usr/sbin/fsck.fat ]
}

@test "deb: on CI as root, fatkit installs on this machine, fatls --version runs, and purge removes every file" {
	need_deb
	[[ ${CI:-} == true || ${FK_PACKAGE_INSTALL:-} == 1 ]] ||
		skip "changes the machine: only on CI (CI=true) or with FK_PACKAGE_INSTALL=1"
	[ "$(id -u)" -eq 0 ] || skip "installing needs root"
	if dpkg-query -W -f '${db:Status-Status}' fatkit 2>/dev/null |
		grep -qx installed; then
		skip "fatkit is installed here already: not touching it"
	fi
	# One install at a time on this machine; apt waits for dpkg's lock
	# while another apt (deps.sh) holds it.
	exec {lock}>/run/lock/fatkit-packaging-test.lock
	flock -w 600 "$lock"
	touch "$BATS_TEST_TMPDIR/installed"
	run -0 apt-get -o DPkg::Lock::Timeout=600 install -y \
		--no-install-recommends "$DEB/fatkit_${VERSION}_$ARCH.deb" </dev/null
	dpkg-query -L fatkit >files
	run -0 /usr/bin/fatls --version
	[ "$output" = "fatls (fatkit) $VERSION" ]
	run -0 apt-get -o DPkg::Lock::Timeout=600 purge -y fatkit </dev/null
	rm -f "$BATS_TEST_TMPDIR/installed"
	run --separate-stderr dpkg-query -W -f '${db:Status-Status}' fatkit
	[[ $output == "" || $output == not-installed ]]
	local f left=0
	while IFS= read -r f; do
		[[ -d $f && ! -L $f ]] && [[ $f != */fatkit ]] && continue
		if [[ -e $f || -L $f ]]; then
			echo "left behind: $f" >&2
			left=1
		fi
	done <files
	grep -qx /usr/bin/fatls files
	[ "$left" -eq 0 ]
}

teardown()
{
	# A failed install test must not leave fatkit on the machine.
	if [[ -f $BATS_TEST_TMPDIR/installed ]]; then
		apt-get -o DPkg::Lock::Timeout=600 purge -y fatkit \
			</dev/null >/dev/null 2>&1 || true
	fi
}
