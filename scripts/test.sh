#!/bin/sh
# scripts/test.sh [--all] [--sanitize] [meson test options...]: bootstrap, build and run the
# test suite.
#
# The default suite covers every library and verb and needs nothing beyond the build's own
# packages: 154-180 s of CPU (user + system) from a fresh clone, build included, in five runs
# of `/usr/bin/time scripts/test.sh` on 2 cores (2 min 2 s to 2 min 38 s of wall time;
# scripts/README.md, issue 44).
# --all also installs the test tools (scripts/bootstrap.sh --dev: the aarch64 cross compiler and
# qemu-user, clang, valgrind, node and npm, the PostgreSQL server, chromium) and node-llama-cpp
# (npm, into scripts/llama-node/), and runs the opt-in suites too: neon (NEON kernels under qemu,
# minutes), simde (the AVX-512 tables under SIMDe's portable intrinsics, on CPUs without
# AVX-512), postgresql (the results store and the Grafana dashboard's queries against a
# throwaway server), llama (the real llama.cpp), chromium (the trend site in a headless
# browser; its screenshots land in BUILDDIR/test-site-chromium/).
# --sanitize builds a second tree (build-asan) with AddressSanitizer and
# UndefinedBehaviorSanitizer and runs the --all suite there, less `neon` and `simde` (each
# builds its own binaries, without the sanitizers). .ci/run uses both.
# Prints the skipped tests with their reasons, then one closing line
# "memwall: N passed, N failed, N skipped", and exits non-zero on any failure.
set -eu
cd "$(dirname "$0")/.."

builddir=build
setup=""
all=0
sanitize=0
while [ $# -gt 0 ]; do
	case "$1" in
	--all) all=1 ;;
	--sanitize) sanitize=1 ;;
	*) break ;;
	esac
	shift
done
if [ "$sanitize" -eq 1 ]; then
	all=1
	builddir=build-asan
	# -O1 (with debug info): AddressSanitizer's own advice for its builds, and GCC's
	# instrumentation at -O2 made the x86 quant files the whole step's cost (avx2_x8k.c: 50 s
	# of CPU at -O2, 11 s at -O1; 4.7 s for the plain build's -O3). Warnings are not errors
	# here: the plain build holds the code to -Werror, and GCC's value-range warnings differ
	# by optimization level (at -O1 -Wformat-truncation flags probes/dram.c's snprintf of the
	# 1 KiB list of missing backends into the 768-byte reason, which snprintf cuts short by
	# design; at -O3 it does not).
	setup="-Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug -Doptimization=1
		-Dwerror=false"
	# The NEON and SIMDe tests build their own binaries without the host's sanitizers: the
	# plain run has already run them (tests/meson.build).
	set -- --no-suite neon --no-suite simde "$@"
fi

if [ "$all" -eq 1 ]; then
	scripts/bootstrap.sh --dev
	# Real llama.cpp for tests/e2e/test_external_llama.c and test_llama_node.c: node-llama-cpp's
	# prebuilt x86-64 CPU binary (about 10 s and 85 MB, once, into scripts/llama-node/; it
	# runs offline afterwards). Without node, npm or an x86-64 machine, or when the install
	# fails, those tests skip with the reason.
	if [ "$(uname -m)" = x86_64 ] && command -v node >/dev/null 2>&1 &&
		command -v npm >/dev/null 2>&1 &&
		[ ! -f scripts/llama-node/node_modules/node-llama-cpp/package.json ]; then
		echo "test.sh: installing node-llama-cpp into scripts/llama-node/node_modules (npm, 85 MB, once)"
		npm install --prefix scripts/llama-node --omit=optional --no-audit --no-fund --loglevel=error ||
			echo "test.sh: node-llama-cpp did not install: the real-llama.cpp tests will skip"
	fi
	set -- --setup full "$@"
else
	scripts/bootstrap.sh
fi
# shellcheck disable=SC2086
scripts/build.sh "$builddir" $setup

status=0
# --no-rebuild: build.sh has just built everything, quietly; meson test would print ninja's
# "no work to do" lines again. Timeouts: tests/meson.build (each setup multiplies them by 4).
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
	meson test -C "$builddir" --no-rebuild --print-errorlogs --num-processes 2 "$@" || status=$?

# The notes first: the output ends with the summary's counts line, as the README says.
if [ "$all" -eq 0 ]; then
	echo "test.sh: the opt-in suites (neon under qemu, AVX-512 under SIMDe, postgresql, the real llama.cpp, chromium) did not run:" \
	     "scripts/test.sh --all installs their tools and runs them"
fi
echo "test.sh: synthetic models the tests made are cached in $builddir/test-cache (removed with $builddir)"
scripts/test-summary.sh "$builddir"
exit "$status"
