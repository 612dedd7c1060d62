#!/bin/sh
# scripts/test.sh [--sanitize] [meson test options...]: bootstrap, build and run the test suite.
#
# The default suite is everything but `slow`. --sanitize builds a second tree (build-asan) with
# AddressSanitizer and UndefinedBehaviorSanitizer and runs the suite there, less `neon` (its
# aarch64 binaries are cross-built without the sanitizers). Prints one closing
# line "memwall: N passed, N failed, N skipped" and exits non-zero on any failure.
set -eu
cd "$(dirname "$0")/.."

builddir=build
setup=""
if [ "${1:-}" = "--sanitize" ]; then
	shift
	builddir=build-asan
	setup="-Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized"
	# The NEON test cross-builds its own aarch64 binaries without the host's sanitizers: the
	# plain run has already run it (tests/meson.build).
	set -- --no-suite neon "$@"
fi

scripts/bootstrap.sh --dev

# Real llama.cpp for tests/test_external_llama.c and test_llama_node.c: node-llama-cpp's
# prebuilt x86-64 CPU binary (about 10 s and 85 MB, once; it runs offline afterwards). Without
# node, npm or an x86-64 machine, or when the install fails, those tests skip with the reason.
if [ "$(uname -m)" = x86_64 ] && command -v node >/dev/null 2>&1 &&
	command -v npm >/dev/null 2>&1 &&
	[ ! -f scripts/llama-node/node_modules/node-llama-cpp/package.json ]; then
	npm install --prefix scripts/llama-node --omit=optional --no-audit --no-fund ||
		echo "test.sh: node-llama-cpp did not install: the real-llama.cpp tests will skip"
fi
# shellcheck disable=SC2086
scripts/build.sh "$builddir" $setup

status=0
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
	meson test -C "$builddir" --print-errorlogs --num-processes 2 "$@" || status=$?

scripts/test-summary.sh "$builddir"
exit "$status"
