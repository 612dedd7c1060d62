#!/bin/sh
# scripts/bootstrap.sh: install what memwall needs to build, run and test.
#
#   scripts/bootstrap.sh         build and run dependencies
#   scripts/bootstrap.sh --dev   also the test tools: the aarch64 cross compiler and qemu-user
#                                (NEON kernel tests), clang and its runtime (fuzzing), valgrind, and the
#                                PostgreSQL server (the results store's PostgreSQL tests)
#
# Idempotent: it installs only what is missing and says what it installs. Only the Debian/Ubuntu
# branch is tested by the project; the Fedora and Arch branches are best effort.
set -eu

dev=0
for arg in "$@"; do
	case "$arg" in
	--dev) dev=1 ;;
	-h|--help) sed -n '2,10p' "$0"; exit 0 ;;
	*) echo "bootstrap: unknown option '$arg'" >&2; exit 2 ;;
	esac
done

if [ "$(id -u)" -eq 0 ]; then
	sudo=""
elif command -v sudo >/dev/null 2>&1; then
	sudo="sudo"
else
	echo "bootstrap: not root and no sudo: install the packages below by hand" >&2
	sudo="false"
fi

say() { printf 'bootstrap: %s\n' "$*"; }

if command -v apt-get >/dev/null 2>&1; then
	pkgs="git meson ninja-build pkg-config gcc libc6-dev libjansson-dev libpfm4-dev libsqlite3-dev libpq-dev zlib1g-dev gnuplot-nox python3"
	[ "$dev" -eq 1 ] && pkgs="$pkgs gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user clang libclang-rt-dev valgrind postgresql"
	missing=""
	for p in $pkgs; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
	done
	# linux-perf (the perf tool) is useful but not required; Ubuntu names it differently.
	perf_pkg=""
	if ! command -v perf >/dev/null 2>&1; then
		perf_pkg="linux-perf"
	fi
	if [ -z "$missing" ] && [ -z "$perf_pkg" ]; then
		say "all packages present"
		exit 0
	fi
	say "installing:$missing${perf_pkg:+ (and $perf_pkg if available)}"
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update -qq
	if [ -n "$missing" ]; then
		# shellcheck disable=SC2086
		$sudo apt-get install -y -qq --no-install-recommends $missing
	fi
	if [ -n "$perf_pkg" ]; then
		$sudo apt-get install -y -qq --no-install-recommends "$perf_pkg" 2>/dev/null ||
			say "linux-perf is not available here; memwall does not need it"
	fi
elif command -v dnf >/dev/null 2>&1; then
	pkgs="git meson ninja-build pkgconf-pkg-config gcc jansson-devel libpfm-devel sqlite-devel libpq-devel zlib-devel gnuplot python3 perf libperf-devel"
	[ "$dev" -eq 1 ] && pkgs="$pkgs gcc-aarch64-linux-gnu qemu-user clang compiler-rt valgrind postgresql-server"
	say "installing (dnf, untested by the project): $pkgs"
	# shellcheck disable=SC2086
	$sudo dnf install -y $pkgs
elif command -v pacman >/dev/null 2>&1; then
	pkgs="git meson ninja pkgconf gcc jansson libpfm4 sqlite postgresql-libs zlib gnuplot python perf"
	[ "$dev" -eq 1 ] && pkgs="$pkgs aarch64-linux-gnu-gcc qemu-user clang compiler-rt valgrind postgresql"
	say "installing (pacman, untested by the project): $pkgs"
	# shellcheck disable=SC2086
	$sudo pacman -S --needed --noconfirm $pkgs
else
	echo "bootstrap: no apt-get, dnf or pacman found; install meson, ninja, pkg-config, gcc," \
	     "jansson, libpfm4 and gnuplot by hand" >&2
	exit 3
fi
say "done"
