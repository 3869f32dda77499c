# Build, install and uninstall the seven Rivet & Rastrillo tools with their man pages, shell
# completions and the systemd user units for rivetd (the service and its socket).
#
#   make                                  # = make build: swift build -c release (see STATIC_TOOLS)
#   make install PREFIX=/usr/local        # DESTDIR= for staged (package) installs
#   make uninstall PREFIX=/usr/local      # removes exactly the files install wrote
#   make check                            # build, then run the test suite (what CI runs)
#
# Only the seven tools are installed (rivet-generate is a schema author's tool): never the
# examples, tests, benchmarks or fuzzers.
# `install` does not build: run `make build` first (as an ordinary user), then install.

SWIFT ?= swift
# Extra `swift build` flags, e.g. BUILD_FLAGS="--scratch-path /tmp/rivet-build" (then set
# RELEASE_DIR=/tmp/rivet-build/release for install).
BUILD_FLAGS ?=
PREFIX ?= /usr/local
DESTDIR ?=
RELEASE_DIR ?= .build/release

TOOLS := rivetd rivet-pair rivet-browse rivet-generate rastrillo-fetch rastrillo-stream rastrillo-download
# The HTTP tools link neither Foundation nor a Swift runtime library at run time: the Swift
# runtime goes into the executable, and no $ORIGIN search path is added (there is no library of
# ours beside them to find). They start faster that way (bench/fetch builds them the same way)
# and run without /opt/swift. The other four use Foundation, whose static copy would make
# each about 80 MB, and keep the toolchain's shared runtime.
STATIC_TOOLS := rastrillo-fetch rastrillo-stream rastrillo-download
STATIC_FLAGS := --static-swift-stdlib --disable-local-rpath

BIN_DIR := $(DESTDIR)$(PREFIX)/bin
MAN_DIR := $(DESTDIR)$(PREFIX)/share/man/man1
BASH_DIR := $(DESTDIR)$(PREFIX)/share/bash-completion/completions
ZSH_DIR := $(DESTDIR)$(PREFIX)/share/zsh/site-functions
FISH_DIR := $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
UNIT_DIR := $(DESTDIR)$(PREFIX)/lib/systemd/user

# Every installed file, one list: install writes these and uninstall removes these.
INSTALLED := $(TOOLS:%=$(BIN_DIR)/%) \
	$(TOOLS:%=$(MAN_DIR)/%.1) \
	$(TOOLS:%=$(BASH_DIR)/%) \
	$(TOOLS:%=$(ZSH_DIR)/_%) \
	$(TOOLS:%=$(FISH_DIR)/%.fish) \
	$(UNIT_DIR)/rivetd.service \
	$(UNIT_DIR)/rivetd.socket

.PHONY: all build check install uninstall print-tools print-installed print-static-flags

all: build

# One product per invocation: `swift build` honours only the last of several --product flags.
build:
	for tool in $(filter-out $(STATIC_TOOLS),$(TOOLS)); do \
		$(SWIFT) build -c release $(BUILD_FLAGS) --product $$tool || exit 1; \
	done
	for tool in $(STATIC_TOOLS); do \
		$(SWIFT) build -c release $(STATIC_FLAGS) $(BUILD_FLAGS) --product $$tool || exit 1; \
	done

# The tests include installing the release build into a temporary prefix, so build first.
# They run in parallel, at most TEST_WIDTH at a time (Swift Testing's
# SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH): unbounded, Swift Testing starts every test at
# once, and on two cores the tests that wait on real servers, tools and avahi-daemon then wait so
# long for a thread that bounds meant for a loaded machine are missed (README.md, "Running the
# tests"). `make check TEST_WIDTH=N` sets another width.
# A failed run ends with its failing tests listed again, so the tail of a long log names them.
TEST_WIDTH ?= 4
check: build
	@log="$${TMPDIR:-/tmp}/rivet-check.$$$$.log"; \
	( SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=$(TEST_WIDTH) $(SWIFT) test; echo "$$?" > "$$log.status" ) 2>&1 | tee "$$log"; \
	status=$$(cat "$$log.status"); \
	if [ "$$status" != 0 ]; then \
		echo "== make check: the test run failed (status $$status); its failures:"; \
		grep -a -E '✘|error:|fatal error|Fatal error|Crash|signal [0-9]+' "$$log" | grep -a -v -E '✘ Test run with|^◇' | head -60; \
	fi; \
	rm -f "$$log" "$$log.status"; exit "$$status"

install:
	@for tool in $(TOOLS); do \
		test -x "$(RELEASE_DIR)/$$tool" || { echo "make install: $(RELEASE_DIR)/$$tool is missing; run 'make build' first" >&2; exit 1; }; \
	done
	install -d -m 755 "$(BIN_DIR)" "$(MAN_DIR)" "$(BASH_DIR)" "$(ZSH_DIR)" "$(FISH_DIR)" "$(UNIT_DIR)"
	for tool in $(TOOLS); do \
		install -m 755 "$(RELEASE_DIR)/$$tool" "$(BIN_DIR)/$$tool" && \
		install -m 644 "man/man1/$$tool.1" "$(MAN_DIR)/$$tool.1" && \
		install -m 644 "completions/bash/$$tool" "$(BASH_DIR)/$$tool" && \
		install -m 644 "completions/zsh/_$$tool" "$(ZSH_DIR)/_$$tool" && \
		install -m 644 "completions/fish/$$tool.fish" "$(FISH_DIR)/$$tool.fish" || exit 1; \
	done
	sed 's|/usr/local/bin/rivetd|$(PREFIX)/bin/rivetd|' examples/systemd/rivetd.service > "$(UNIT_DIR)/rivetd.service"
	chmod 644 "$(UNIT_DIR)/rivetd.service"
	install -m 644 examples/systemd/rivetd.socket "$(UNIT_DIR)/rivetd.socket"

uninstall:
	rm -f $(INSTALLED)

print-tools:
	@echo $(TOOLS)

print-installed:
	@printf '%s\n' $(INSTALLED)

# The benchmarks build the HTTP tools with these, so they measure what `make build` ships.
print-static-flags:
	@echo $(STATIC_FLAGS)
