# fatkit: mtools-style tools for FAT12/16/32 and exFAT volumes.  See README.md.
#
#   make            build build/fatls, build/fatprealloc, build/fatcheck
#   make check      set up, unit + bats tests, layer check, then again
#                   under ASan/UBSan
#   make fuzz       run each libFuzzer target FUZZ_SECONDS (60) seconds
#   make differential  mutated images judged by fsck.fat, fsck.exfat, mtools
#                   and the reference reader, DIFF_SECONDS (600), DIFF_SEED
#   make demo       set up, build, make a demo image, run the main job
#   make install    PREFIX=/usr/local DESTDIR= [FSCK_LINKS=1: the fsck.* links]
#   make deb        Debian packages in build/deb/ (fatkit, fatkit-fsck)
#   make static     statically linked programs in build/static/
#   make dist       fatkit-VERSION.tar.gz of the committed tree (git archive)

# The version has one home, the top entry of debian/changelog: the
# package, the tarball's name and every program's --version take it
# from there, so a release is one `dch -v X.Y.Z` (or edit) away.
VERSION   := ${shell sed -n '1s/^fatkit (\([^)]*\)).*/\1/p' \
		 debian/changelog 2>/dev/null}
ifeq ($(VERSION),)
$(error no version: debian/changelog must start with "fatkit (X.Y.Z) ...")
endif
PREFIX    ?= /usr/local
BINDIR    ?= $(PREFIX)/bin
SBINDIR   ?= $(PREFIX)/sbin
MANDIR    ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR  ?= $(PREFIX)/share/zsh/site-functions

CC        ?= cc
BUILD     ?= build
BLKID_CFLAGS := $(shell pkg-config --cflags blkid 2>/dev/null || echo -I/usr/include/blkid)
BLKID_LIBS   := $(shell pkg-config --libs blkid 2>/dev/null || echo -lblkid)

WARN      := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
	     -Wmissing-prototypes -Wwrite-strings -Wvla -Wformat=2
CFLAGS    ?= -O2 -g
# The programs open libblkid when they first probe (src/io/window.c), so a
# run that never does (a volume at offset 0) does not load it: it was a
# third of what a check of an empty card costs above /bin/true.
# BLKID_DLOPEN=0 links it as before.
BLKID_DLOPEN ?= 1
ifeq ($(BLKID_DLOPEN),1)
BLKID_MODE := -DFK_BLKID_DLOPEN
else
BLKID_MODE :=
LDLIBS    += $(BLKID_LIBS)
endif
ALL_CFLAGS = -std=c11 -D_POSIX_C_SOURCE=200809L -D_FILE_OFFSET_BITS=64 \
	     -DFK_VERSION='"$(VERSION)"' $(WARN) $(BLKID_CFLAGS) $(BLKID_MODE) \
	     $(EXTRA_CFLAGS) $(CFLAGS)

# ---- the folders of src/, one per layer ---------------------------------
# src/ROOM/NAME.[ch]: each module sits in the folder of its layer, lowest
# first lib, io, volume, table, iface, fat and exfat (side by side),
# mount (the list of families), engine, tools; tests/helpers/layers.py (make layers-check) keeps the
# rules.  Includes name the folder ("io/device.h", against -Isrc), so a
# crossing shows in the source.  Module names are unique across folders:
# objects stay flat in $(BUILD)/ and sources are found through vpath.
SRC_DIRS  := $(sort $(dir $(wildcard src/*/*.c src/*/*.h)))
vpath %.c $(SRC_DIRS)
ALL_CFLAGS += -Isrc
SRC_LOOSE := $(wildcard $(addprefix src/,*.c *.h))
ifneq ($(SRC_LOOSE),)
$(error $(SRC_LOOSE): in no folder; move it into the \
	folder of its layer, src/ROOM/ (README.md, tests/helpers/layers.py))
endif
SRC_NAMES := $(notdir $(wildcard src/*/*.c src/*/*.h))
ifneq ($(words $(SRC_NAMES)),$(words $(sort $(SRC_NAMES))))
$(error two files of src/*/ share a name: objects are flat in $(BUILD)/)
endif
# ---- end of the folders of src/ -----------------------------------------

PROGS     := $(filter $(basename $(sort $(notdir $(wildcard src/*/*.c)))),fatls fatprealloc fatcheck)
# The programs' own layer (option parsing, usage text, the JSON writer)
# prints; it is a library of its own so that libfatkit.a never does.
APP       := cli json
CORE      := $(filter-out $(PROGS) $(APP),$(basename $(sort $(notdir $(wildcard src/*/*.c)))))
UNIT      := $(patsubst tests/unit/%.c,%,$(wildcard tests/unit/test_*.c))

CORE_OBJS := $(CORE:%=$(BUILD)/%.o)
APP_OBJS  := $(APP:%=$(BUILD)/%.o)
LIBS      := $(BUILD)/libfatkit-app.a $(BUILD)/libfatkit.a
PROG_BINS := $(PROGS:%=$(BUILD)/%)
HDR_CHECK := $(patsubst src/%.h,$(BUILD)/hdr/%.ok,$(wildcard src/*/*.h))

# Objects depend on the compiler and its flags, archives on which modules
# they hold: a stamp that changes only when these do, so `make CC=clang`
# after `make` rebuilds everything.
FLAGS_STAMP := $(BUILD)/flags.stamp
FLAGS_NOW   := $(CC) $(ALL_CFLAGS) $(LDFLAGS) $(LDLIBS) core: $(CORE)
# Goals that build nothing leave the stamp alone (`make test BUILD=X`
# must not make X's next build start over).
NOBUILD_GOALS := test format format-check deps deps-demo deps-check clean \
		 version deb dist clean-packaging \
		 clean-coverage coverage-report fuzz-check-%
ifneq ($(filter-out $(NOBUILD_GOALS),$(or $(MAKECMDGOALS),all)),)
ifneq ($(file <$(FLAGS_STAMP)),$(FLAGS_NOW))
$(shell mkdir -p $(BUILD))
$(file >$(FLAGS_STAMP),$(FLAGS_NOW))
endif
endif

all: $(PROG_BINS) $(BUILD)/unit-tests

$(BUILD)/%.o: %.c $(wildcard src/*/*.h) $(FLAGS_STAMP) | $(BUILD)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(BUILD)/libfatkit.a: $(CORE_OBJS) $(FLAGS_STAMP)
	rm -f $@ && ar rcs $@ $(CORE_OBJS)

$(BUILD)/libfatkit-app.a: $(APP_OBJS) $(FLAGS_STAMP)
	rm -f $@ && ar rcs $@ $(APP_OBJS)

# The core never prints or exits: no stdio output call, no stdout or
# stderr, no exit may be linked into it.
CORE_PRINTS   := f?printf|v?fprintf|vprintf|dprintf|__.*printf_chk|f?puts
CORE_PRINTS   := $(CORE_PRINTS)|fputc|putc|putchar|fwrite|perror
CORE_FORBIDDEN := $(CORE_PRINTS)|stdout|stderr|_?exit
core-check: $(BUILD)/libfatkit.a
	@if nm $< | grep -E ' U ($(CORE_FORBIDDEN))$$'; then \
		echo "core-check: libfatkit.a must not print or exit"; exit 1; fi

# The layers of src/ (tests/helpers/layers.py says which): no module uses
# one of a room above it, the families never use each other, nothing
# loops.  The breaks of today are listed in tests/layers-known.txt, which
# may only shrink.
layers-check: $(CORE_OBJS) $(APP_OBJS)
	python3 tests/helpers/layers.py src $(BUILD) tests/layers-known.txt

$(PROG_BINS): $(BUILD)/%: $(BUILD)/%.o $(LIBS) $(FLAGS_STAMP)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< $(LIBS) $(LDLIBS)

# Every header, with or without a .c of its own, must compile alone.
$(BUILD)/hdr/%.ok: src/%.h $(FLAGS_STAMP) | $(BUILD)
	@mkdir -p $(@D)
	echo '#include "$*.h"' | $(CC) $(ALL_CFLAGS) -x c -fsyntax-only -
	@touch $@

$(BUILD)/unit/%.o: tests/unit/%.c $(wildcard tests/unit/*.h src/*/*.h) \
		  $(FLAGS_STAMP) | $(BUILD)
	@mkdir -p $(BUILD)/unit
	$(CC) $(ALL_CFLAGS) -Itests/unit -c -o $@ $<

$(BUILD)/unit-tests: $(UNIT:%=$(BUILD)/unit/%.o) $(BUILD)/unit/runner.o \
		     $(LIBS) $(HDR_CHECK)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $(filter %.o,$^) $(LIBS) $(LDLIBS)

$(BUILD):
	mkdir -p $@

.PRECIOUS: $(BUILD)/%.o $(BUILD)/unit/%.o

# ---- set-up, tests, demo --------------------------------------------------
# The demo needs build tools, libblkid and the oracles; the tests more.
deps: deps-check
deps-demo:
	@tests/helpers/deps.sh demo
deps-check:
	@tests/helpers/deps.sh check

SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all \
	     -fno-omit-frame-pointer

# Builds and bats files use every CPU: bats runs test files and tests side
# by side through GNU parallel (each test has its own directory).
JOBS ?= $(shell nproc 2>/dev/null || echo 1)
BATS_JOBS = $(if $(filter-out 0 1,$(JOBS)),$(if $(shell parallel --version \
	    2>/dev/null | grep -q 'GNU parallel' && echo gnu),--jobs $(JOBS)))

check: deps-check
	$(MAKE) -j$(JOBS) all
	$(MAKE) -j$(JOBS) all BUILD=build-clang CC=clang # warning-clean with clang too
	$(MAKE) test BUILD=build
	$(MAKE) static-check # STATIC_BATS against the static build
	$(MAKE) core-check
	$(MAKE) layers-check
	$(MAKE) -j$(JOBS) all BUILD=build-san \
		EXTRA_CFLAGS="$(SAN_FLAGS) -DFK_FAULT_INJECTION" LDFLAGS="$(SAN_FLAGS)"
	$(MAKE) test BUILD=build-san BATS_FILES="$(SAN_BATS)"
	$(MAKE) fuzz-check
	$(MAKE) format-check

# bats hands the files to GNU parallel in this order: the longest (in CPU
# seconds, measured in both passes) first, so that none of them starts
# last and runs alone while the other CPUs have nothing left to do.  An
# order only: a file not named here runs after them.
BATS_LONG := tests/fatcheck.bats tests/fatcheck-exfat.bats \
	     tests/fatcheck-repair.bats tests/fatprealloc.bats \
	     tests/packaging.bats tests/corrupt-exfat.bats tests/align.bats \
	     tests/fatprealloc-exfat.bats tests/corrupt.bats \
	     tests/exfat-writer-hostile.bats tests/exfatref.bats
BATS_ALL := $(BATS_LONG) $(filter-out $(BATS_LONG),$(wildcard tests/*.bats))
BATS_FILES ?= $(BATS_ALL)
# The sanitizer pass runs what executes fatkit's C again; the docs, the
# shell helpers, the exFAT reference reader and the packaging are judged
# once.
SAN_BATS := $(filter-out tests/docs.bats tests/helpers.bats \
	      tests/exfatref.bats tests/packaging.bats,$(BATS_ALL))

test:
	$(BUILD)/unit-tests
	FATKIT_BUILD=$(abspath $(BUILD)) bats $(BATS_JOBS) $(BATS_FILES)

demo: deps-demo all
	@tests/helpers/demo.sh $(BUILD)

FORMAT_FILES = $(wildcard src/*/*.[ch] tests/unit/*.[ch] tests/fuzz/*.[ch])

format:
	clang-format -i $(FORMAT_FILES)

format-check:
	@out=$$(for f in $(FORMAT_FILES); do \
		clang-format "$$f" | diff -q "$$f" - >/dev/null || echo "$$f"; \
	done); if [ -n "$$out" ]; then \
		echo "format-check: run 'make format' for:"; echo "$$out"; exit 1; fi

install: $(PROG_BINS)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(MANDIR)/man7 \
		$(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR)
	install -m 755 $(PROG_BINS) $(DESTDIR)$(BINDIR)
	install -m 644 $(PROGS:%=man/%.1) $(DESTDIR)$(MANDIR)/man1
	install -m 644 man/fatkit.7 $(DESTDIR)$(MANDIR)/man7
	for p in $(PROGS); do \
		install -m 644 completions/bash/$$p $(DESTDIR)$(BASHCOMPDIR)/$$p; \
		install -m 644 completions/zsh/_$$p $(DESTDIR)$(ZSHCOMPDIR)/_$$p; \
	done
# FSCK_LINKS=1: fsck(8) runs fsck.vfat for FAT and fsck.exfat for exFAT
# (from /sbin, then PATH); only when asked, as the links take the names
# dosfstools' and exfatprogs' checkers have.
ifeq ($(FSCK_LINKS),1)
	install -d $(DESTDIR)$(SBINDIR)
	for n in fsck.fat fsck.vfat fsck.exfat; do \
		ln -sf $(BINDIR)/fatcheck $(DESTDIR)$(SBINDIR)/$$n; \
	done
endif

clean:
	rm -rf build build-san build-clang build-fuzz build-diff

# ---- fuzzing (tests/fuzz/README.md) ---------------------------------------
# libFuzzer targets, built with clang into build-fuzz/ against a libfatkit.a
# compiled with the same sanitizers plus fuzzer coverage.  `make fuzz`
# fuzzes each target FUZZ_SECONDS seconds, keeping what it finds in
# build-fuzz/corpus/; `make fuzz-check` (part of `make check`) replays the
# seeds and regression inputs, then fuzzes each target briefly with a
# fixed seed.  A timeout, a blow-up past the RSS limit, a sanitizer report
# or an oracle's abort() fails either.
FUZZ_BUILD    := build-fuzz
FUZZ_CC       := clang
FUZZ_SECONDS  ?= 60
# fuzz-check fuzzes a fixed number of inputs, not a time: with -seed=1 the
# same inputs on every machine, so a slower or faster CI runs what was
# run here (a time bound made the run, and what it may find, depend on
# the machine's speed).
FUZZ_CHECK_RUNS ?= 1500
FUZZ_TARGETS  := $(patsubst tests/fuzz/%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_SAN      := -fsanitize=address,undefined -fno-sanitize-recover=all \
		 -fno-omit-frame-pointer
# -timeout: the largest geometries take a few seconds per input; a loop
# that costs a walk per cluster takes far longer.
FUZZ_OPTS     := -dict=tests/fuzz/fat.dict -max_len=524288 -timeout=15 \
		 -rss_limit_mb=2048 -print_final_stats=1

$(BUILD)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/image.c tests/fuzz/image.h \
		 $(BUILD)/libfatkit.a
	$(CC) $(ALL_CFLAGS) -fsanitize=fuzzer -o $@ \
		tests/fuzz/fuzz_$*.c tests/fuzz/image.c $(BUILD)/libfatkit.a \
		$(LDLIBS)

fuzz-build:
	$(MAKE) -j$(JOBS) $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/%) BUILD=$(FUZZ_BUILD) \
		CC=$(FUZZ_CC) EXTRA_CFLAGS="$(FUZZ_SAN) -fsanitize=fuzzer-no-link"

fuzz: fuzz-build
	@for t in $(FUZZ_TARGETS); do \
		mkdir -p $(FUZZ_BUILD)/corpus/$$t || exit 1; \
		echo "fuzz: $$t for $(FUZZ_SECONDS) s"; \
		$(FUZZ_BUILD)/$$t $(FUZZ_OPTS) -max_total_time=$(FUZZ_SECONDS) \
			-artifact_prefix=$(FUZZ_BUILD)/$$t- \
			$(FUZZ_BUILD)/corpus/$$t tests/fuzz/corpus/$$t \
			$(wildcard tests/fuzz/regress) || exit 1; \
	done

# Each target is checked by a rule of its own, so that make -j runs them
# side by side (each fuzzer runs on one CPU): the same inputs, in half
# the time on two CPUs.
FUZZ_CHECKS := $(FUZZ_TARGETS:%=fuzz-check-%)

fuzz-check: fuzz-build
	$(MAKE) -j$(JOBS) --output-sync=target --no-print-directory \
		$(FUZZ_CHECKS)

$(FUZZ_CHECKS): fuzz-check-%:
	@t=$*; \
	echo "fuzz-check: $$t: seeds and regression inputs"; \
	$(FUZZ_BUILD)/$$t $(FUZZ_OPTS) \
		-artifact_prefix=$(FUZZ_BUILD)/$$t- \
		tests/fuzz/corpus/$$t/* $(wildcard tests/fuzz/regress/*) \
		>$(FUZZ_BUILD)/$$t-replay.log 2>&1 || \
		{ tail -n 40 $(FUZZ_BUILD)/$$t-replay.log; exit 1; }; \
	echo "fuzz-check: $$t: $(FUZZ_CHECK_RUNS) inputs with -seed=1"; \
	rm -rf $(FUZZ_BUILD)/check-corpus/$$t && \
	mkdir -p $(FUZZ_BUILD)/check-corpus/$$t || exit 1; \
	$(FUZZ_BUILD)/$$t $(FUZZ_OPTS) -seed=1 \
		-runs=$(FUZZ_CHECK_RUNS) \
		-artifact_prefix=$(FUZZ_BUILD)/$$t- \
		$(FUZZ_BUILD)/check-corpus/$$t tests/fuzz/corpus/$$t \
		>$(FUZZ_BUILD)/$$t-check.log 2>&1 || \
		{ tail -n 40 $(FUZZ_BUILD)/$$t-check.log; exit 1; }; \
	grep -h '^stat::number_of_executed_units\|^#.*DONE' \
		$(FUZZ_BUILD)/$$t-check.log | tail -n 1 | \
		sed "s/^/fuzz-check: $$t: /"

.PHONY: fuzz fuzz-build fuzz-check $(FUZZ_CHECKS)
# ---- end of fuzzing --------------------------------------------------------

# ---- differential run (tests/fuzz/README.md, "Differential run") ----------
# Not part of `make check`: it runs for DIFF_SECONDS and its findings are
# for a person to read.  Disagreements (images and reasons) and the
# summary go to build-diff/; the programs are those of $(BUILD).
DIFF_SECONDS ?= 600
DIFF_SEED    ?= 1
differential: all
	nice python3 tests/fuzz/differential.py --build $(BUILD) \
		--seconds $(DIFF_SECONDS) --seed $(DIFF_SEED) --out build-diff

.PHONY: differential

.PHONY: all deps deps-demo deps-check check test demo format format-check install clean \
	core-check layers-check

# ---- coverage ---------------------------------------------------------------
# `make coverage`: a gcov build in build-cov/ (with fault injection, so the
# failed-write loops reach the writers' error paths), the unit and bats tests
# against it, then lines executed per src/*/*.c file and the core functions left
# uncovered (tests/helpers/coverage.py: plain gcov, no gcovr). COVERAGE_MIN
# names the core modules under the goal; a report, not a gate, unless
# COVERAGE_STRICT=1. Test failures still fail the target, after the report.
COV_BUILD    := build-cov
COVERAGE_MIN ?= 90
COV_CFLAGS   := -O0 -g --coverage -DFK_FAULT_INJECTION

coverage: deps
	rm -f $(COV_BUILD)/*.gcda $(COV_BUILD)/unit/*.gcda
	$(MAKE) all BUILD=$(COV_BUILD) CFLAGS="$(COV_CFLAGS)" LDFLAGS=--coverage \
		HDR_CHECK=	# the plain build checks headers; here it leaves a--.gcno
	@st=0; $(COV_BUILD)/unit-tests >$(COV_BUILD)/unit.tap || st=1; \
	grep '^not ok' $(COV_BUILD)/unit.tap; tail -n 1 $(COV_BUILD)/unit.tap; \
	FATKIT_BUILD=$(abspath $(COV_BUILD)) FK_SLOW_BUILD=20 nice bats tests/ \
		|| st=1; \
	python3 tests/helpers/coverage.py $(COV_BUILD) $(COVERAGE_MIN) || st=1; \
	exit $$st

coverage-report:
	@python3 tests/helpers/coverage.py $(COV_BUILD) $(COVERAGE_MIN) --uncovered

clean: clean-coverage
clean-coverage:
	rm -rf $(COV_BUILD)

.PHONY: coverage coverage-report clean-coverage

# ---- packaging: make deb, make static, make dist ---------------------------
# `make deb`: fatkit_VERSION_ARCH.deb and fatkit-fsck_VERSION_all.deb in
# DEB_OUT, built by dpkg-buildpackage from a copy of this tree (its build
# outputs left out), so that nothing is written beside the tree and
# debian/ keeps no build state.  debian/control says why the fsck names
# are a package of their own that conflicts with dosfstools and exfatprogs.
# `make static`: the programs linked statically (libblkid.a, libc.a) from
# this build's objects, in $(BUILD)/static/, for initramfs, recovery and
# factory images; `make static-check` runs STATIC_BATS against them.
# `make dist`: fatkit-VERSION.tar.gz in DIST_OUT, `git archive` of HEAD
# (what is committed; uncommitted changes are not in it).
# tests/packaging.bats checks make deb, make dist and the version.
DEB_OUT    ?= build/deb
DIST_OUT   ?= .
STATIC_DIR := $(BUILD)/static
STATIC_BINS := $(PROGS:%=$(STATIC_DIR)/%)
STATIC_LDFLAGS ?= -static
STATIC_LIBS := $(shell pkg-config --static --libs blkid 2>/dev/null || \
		 echo -lblkid)
# The static programs are this build's objects linked against libc.a and
# libblkid.a, so what can differ is what those libraries do: file and
# device I/O, locks and /proc/locks, partition probing, the terminal,
# messages.  STATIC_BATS runs the files that exercise that through all
# three programs (options, usage errors, partitions, block and loop
# devices, locks, progress, exFAT): 43 tests, 20 to 28 s of CPU.  Not the
# per-program suites that test the checker's and the allocator's logic
# case by case with the same objects, already tested: those take ten
# times as long.  `make static-check STATIC_BATS=tests/` runs every file.
STATIC_BATS ?= tests/cli.bats tests/blockdev.bats tests/everyday.bats \
	       tests/exfat.bats

version:
	@echo $(VERSION)

deb:
	@command -v dpkg-buildpackage >/dev/null && command -v dh >/dev/null || \
		{ echo "deb: needs dpkg-dev and debhelper:" \
			"apt-get install dpkg-dev debhelper"; exit 1; }
	rm -rf $(DEB_OUT) && mkdir -p $(DEB_OUT)/fatkit-$(VERSION)
	tar -cf - --exclude=./.git --exclude=./build --exclude='./build-*' \
		--exclude=./bench/out --exclude='*.img' \
		--exclude='./fatkit-*' . | \
		tar -xf - -C $(DEB_OUT)/fatkit-$(VERSION)
	cd $(DEB_OUT)/fatkit-$(VERSION) && \
		dpkg-buildpackage -b -uc -us -j$(JOBS) \
		>../build.log 2>&1 || { tail -n 40 ../build.log; exit 1; }
	@ls $(DEB_OUT)/*.deb

static: $(STATIC_BINS)

# Relink when the static link flags change (-static-pie after -static).
STATIC_STAMP := $(STATIC_DIR)/flags.stamp
STATIC_NOW   := $(STATIC_LDFLAGS) $(STATIC_LIBS)
ifneq ($(filter static static-check $(STATIC_BINS),$(MAKECMDGOALS)),)
ifneq ($(file <$(STATIC_STAMP)),$(STATIC_NOW))
$(shell mkdir -p $(STATIC_DIR))
$(file >$(STATIC_STAMP),$(STATIC_NOW))
endif
endif
$(STATIC_STAMP):
	@mkdir -p $(@D)
	$(file >$@,$(STATIC_NOW))

# Their window.o calls libblkid.a directly (no dlopen in a static
# program): linked before the archives, it is the one they use.
$(STATIC_DIR)/window.o: src/io/window.c $(wildcard src/*/*.h) $(FLAGS_STAMP)
	@mkdir -p $(STATIC_DIR)
	$(CC) $(filter-out -DFK_BLKID_DLOPEN,$(ALL_CFLAGS)) -c -o $@ $<

$(STATIC_BINS): $(STATIC_DIR)/%: $(BUILD)/%.o $(STATIC_DIR)/window.o $(LIBS) \
		$(FLAGS_STAMP) $(STATIC_STAMP)
	@mkdir -p $(STATIC_DIR)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) $(STATIC_LDFLAGS) -o $@ $< \
		$(STATIC_DIR)/window.o $(LIBS) $(STATIC_LIBS)

static-check: static
	@for p in $(STATIC_BINS); do \
		file -L $$p | grep -Eq 'statically linked|static-pie linked' || \
		{ echo "static-check: $$p is not statically linked:"; \
		  file -L $$p; exit 1; }; \
	done
	FATKIT_BUILD=$(abspath $(STATIC_DIR)) bats $(BATS_JOBS) $(STATIC_BATS)

dist:
	@git rev-parse --verify -q HEAD >/dev/null || \
		{ echo "dist: needs a git checkout (it archives HEAD)"; exit 1; }
	@git diff --quiet HEAD -- || \
		echo "dist: note: uncommitted changes are not in the tarball"
	git archive --format=tar.gz --prefix=fatkit-$(VERSION)/ \
		-o $(DIST_OUT)/fatkit-$(VERSION).tar.gz HEAD

clean: clean-packaging
clean-packaging:
	rm -f fatkit-*.tar.gz

.PHONY: version deb static static-check dist clean-packaging
# ---- end of packaging -------------------------------------------------------
