#!/bin/sh
# scripts/fuzz.sh [SECONDS [meson test options...]]: runs every fuzz target (tests/fuzz/) for
# SECONDS each (default 5), two at a time, from seed corpora made from the fixtures.
#
# Builds BUILDDIR (default build-fuzz; $MEMWALL_FUZZ_BUILDDIR overrides) once with clang,
# libFuzzer, AddressSanitizer and UndefinedBehaviorSanitizer, every library instrumented for
# coverage. Without clang it says so and exits 0: the targets still replay their corpus in the
# ordinary test suite (suite fuzz). A crash fails the run and leaves its input in
# BUILDDIR/tests/fuzz/artifacts/; copy it to tests/fuzz/seeds/TARGET/ once fixed.
#
#   scripts/fuzz.sh          the CI run: about 40 s on 2 cores
#   scripts/fuzz.sh 600      a 10-minute campaign per target
set -eu
cd "$(dirname "$0")/.."

secs=${1:-5}
[ $# -gt 0 ] && shift
builddir=${MEMWALL_FUZZ_BUILDDIR:-build-fuzz}
if ! command -v clang >/dev/null 2>&1; then
	echo "fuzz.sh: clang not found (scripts/bootstrap.sh --dev installs it): not fuzzing"
	exit 0
fi
# -Dkernels=ref-only: no target calls a kernel (they parse), and the x86 ISA files were half
# of this build's CPU time for nothing.
if [ ! -f "$builddir/build.ninja" ]; then
	CC=clang meson setup "$builddir" -Dfuzz=enabled -Db_sanitize=address,undefined \
		-Db_lundef=false -Dbuildtype=debugoptimized -Dkernels=ref-only \
		-Dc_args="-fsanitize=fuzzer-no-link -fno-sanitize-recover=all"
fi
# Every target file in tests/fuzz/ (a list kept here fell behind tests/fuzz/meson.build once).
targets=$(for f in tests/fuzz/fuzz_*.c; do t=${f#tests/fuzz/fuzz_}; t=${t%.c}; \
	[ "$t" = seeds ] || echo "$t"; done)
# shellcheck disable=SC2046
ninja -C "$builddir" tests/fuzz/fuzz_seeds $(for t in $targets; do echo "tests/fuzz/fuzz_$t"; done)
# Each test has 120 s; a longer campaign stretches it.
mult=$((secs / 100 + 1))
MEMWALL_FUZZ_SECONDS=$secs UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	meson test -C "$builddir" --no-rebuild --suite fuzz --num-processes 2 \
	--timeout-multiplier "$mult" --print-errorlogs "$@"
# The figures of each run: executions, coverage (cov: edges, ft: features), corpus size.
for t in $targets; do
	log="$builddir/meson-logs/testlog.txt"
	printf 'fuzz-%s: ' "$t"
	awk -v t="fuzz-$t" '
		/^=+ [0-9]+\/[0-9]+ =+/ { name = "" }
		$0 ~ "test: +memwall:fuzz / " t "$" { name = t }
		name != "" && /^#[0-9]+[ \t]+DONE/ { line = $0 }
		END { print line ? line : "(no final stats)" }' "$log"
done
