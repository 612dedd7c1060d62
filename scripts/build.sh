#!/bin/sh
# scripts/build.sh [BUILDDIR [meson options...]]: configure (once) and compile.
# Used by scripts/run.sh and scripts/test.sh; safe to run again at any time.
#
# On a terminal, or with MEMWALL_VERBOSE=1, the compile shows ninja's progress ([N/M] on one
# line on a terminal, a line per step otherwise). Elsewhere (a CI log, a pipe) it says one line
# before and one after, and ninja's output goes to BUILDDIR/meson-logs/compile-log.txt, whose
# tail is printed only when the compile fails. meson's configure output goes to
# BUILDDIR/meson-logs/meson-log.txt; its own summary is printed only when it fails.
set -eu
cd "$(dirname "$0")/.."
builddir=${1:-build}
[ $# -gt 0 ] && shift
configure() {
	echo "build: configuring $builddir (meson $1)"
	out=$(mktemp "${TMPDIR:-/tmp}/memwall-meson-XXXXXX")
	if ! meson "$@" >"$out" 2>&1; then
		cat "$out" >&2
		rm -f "$out"
		echo "build: meson $1 failed; details in $builddir/meson-logs/meson-log.txt" >&2
		exit 1
	fi
	rm -f "$out"
}
if [ ! -f "$builddir/build.ninja" ]; then
	configure setup "$builddir" -Dwerror=true "$@"
elif [ $# -gt 0 ]; then
	configure configure "$builddir" "$@"
fi
if [ -t 1 ] || [ "${MEMWALL_VERBOSE:-0}" = 1 ]; then
	echo "build: compiling $builddir"
	meson compile -C "$builddir"
	exit 0
fi
log="$builddir/meson-logs/compile-log.txt"
mkdir -p "$builddir/meson-logs"
echo "build: compiling $builddir (ninja's output: $log; MEMWALL_VERBOSE=1 shows it)"
t0=$(date +%s)
if ! meson compile -C "$builddir" >"$log" 2>&1; then
	tail -n 40 "$log" >&2
	echo "build: compile failed; ninja's full output: $log" >&2
	exit 1
fi
echo "build: $builddir compiled in $(($(date +%s) - t0)) s"
