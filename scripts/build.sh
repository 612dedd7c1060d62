#!/bin/sh
# scripts/build.sh [BUILDDIR [meson options...]]: configure (once) and compile.
# Used by scripts/run.sh and scripts/test.sh; safe to run again at any time.
#
# The compile shows ninja's progress ([N/M] on one line on a terminal, a line per step
# otherwise), so a first build (about 30 s) is never silent. meson's configure output goes to
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
echo "build: compiling $builddir"
meson compile -C "$builddir"
