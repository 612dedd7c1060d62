#!/bin/sh
# scripts/build.sh [BUILDDIR [meson options...]]: configure (once) and compile.
# Used by scripts/run.sh and scripts/test.sh; safe to run again at any time.
set -eu
cd "$(dirname "$0")/.."
builddir=${1:-build}
[ $# -gt 0 ] && shift
if [ ! -f "$builddir/build.ninja" ]; then
	meson setup "$builddir" -Dwerror=true "$@"
elif [ $# -gt 0 ]; then
	meson configure "$builddir" "$@"
fi
meson compile -C "$builddir"
