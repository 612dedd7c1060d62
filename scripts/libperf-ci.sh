#!/bin/sh
# scripts/libperf-ci.sh: keep memwall's libperf counter layer honest on a system without libperf.
#
# Debian ships no libperf, so this builds the kernel's own (tools/lib/perf) from Debian's
# linux-source package into a local prefix, configures memwall with -Dlibperf=enabled against
# it, and runs the probes suite with MEMWALL_COUNTERS=libperf. Opt-in: CI can call it after
# scripts/test.sh. Measured on the project's 2-core VM: apt-get install linux-source 7 s,
# extracting tools/ from the 138 MB tarball 13 s, building libperf 2 s, memwall ~40 s.
#
#   scripts/libperf-ci.sh [meson test options...]
#
# Work happens in build-libperf/ (source, prefix and build tree); delete it to start over.
set -eu
cd "$(dirname "$0")/.."

work="$PWD/build-libperf"
prefix="$work/prefix"
say() { printf 'libperf-ci: %s\n' "$*"; }

if ! ls /usr/src/linux-source-*.tar.xz >/dev/null 2>&1; then
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	say "installing linux-source (the kernel tarball, for tools/lib/perf)"
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends linux-source
fi
tarball=$(ls /usr/src/linux-source-*.tar.xz | sort -V | tail -n 1)
top=$(basename "$tarball" .tar.xz)

if [ ! -f "$prefix/include/perf/evsel.h" ]; then
	mkdir -p "$work"
	say "extracting $top/tools from $tarball"
	tar -xf "$tarball" -C "$work" "$top/tools"
	say "building libperf into $prefix"
	make -s -j"$(nproc)" -C "$work/$top/tools/lib/perf" prefix="$prefix" \
		install_lib install_headers install_pkgconfig
fi
libdir=$(dirname "$(find "$prefix" -name libperf.pc | head -n 1)")/..

export PKG_CONFIG_PATH="$libdir/pkgconfig"
if [ ! -d "$work/build" ]; then
	meson setup "$work/build" -Dlibperf=enabled -Dwerror=true
fi
ninja -C "$work/build"
# The shared libperf lives in the prefix; the probes pick their counter layer from the environment.
LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" MEMWALL_COUNTERS=libperf \
	meson test -C "$work/build" --suite probes --print-errorlogs "$@"
