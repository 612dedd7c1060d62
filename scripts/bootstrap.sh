#!/bin/sh
# scripts/bootstrap.sh: install what memwall needs to build, run and test.
#
#   scripts/bootstrap.sh         build and run dependencies (and the sqlite3 shell the README
#                                pipes into)
#   scripts/bootstrap.sh --dev   also the test tools: the aarch64 cross compiler and qemu-user
#                                (NEON kernel tests), SIMDe's headers (the AVX-512 tables
#                                tested on CPUs without AVX-512), clang and its runtime (fuzzing), valgrind,
#                                node and npm (the real-llama.cpp tests, via node-llama-cpp),
#                                the PostgreSQL server (the results store's PostgreSQL tests;
#                                Debian's package also starts its own server, which the tests
#                                do not use: they start a throwaway one in a temporary folder),
#                                and chromium (the trend site `memwall db site` writes, loaded
#                                headless by tests/e2e/test_site_chromium.c)
#
# Idempotent: it installs only what is missing and says what it installs, in one line; the
# package manager's output goes to $TMPDIR/memwall-bootstrap.log (/tmp without TMPDIR; the last
# run that installed something: a run with nothing to install leaves it alone), whose
# tail is printed, with its path, only when something fails. Exit 1 on a failed install.
# Only the Debian/Ubuntu branch is tested by the project; the Fedora and Arch branches are
# best effort. The perf tool (linux-perf) is not installed: memwall opens the counters itself.
set -eu

dev=0
for arg in "$@"; do
	case "$arg" in
	--dev) dev=1 ;;
	-h|--help) sed -n '2,16p' "$0"; exit 0 ;;
	*) echo "bootstrap: unknown option '$arg'" >&2; exit 2 ;;
	esac
done

if [ "$(id -u)" -eq 0 ]; then
	sudo=""
elif command -v sudo >/dev/null 2>&1; then
	sudo="sudo"
else
	# Said only when something is missing (no_sudo, below): a user without sudo whose machine
	# has everything (an admin installed it) sees no warning.
	sudo="no_sudo"
fi
no_sudo() { # the packages
	echo "bootstrap: not root and no sudo: install these packages by hand (or as root):$*" >&2
	exit 1
}

say() { printf 'bootstrap: %s\n' "$*"; }

# Package managers' output goes to a log, not the terminal: one line says what is installed,
# and only a failure prints the log's tail and its path. The log is the last install's: it is
# emptied when a run starts installing, never by a run that has nothing to install (which
# emptied a failed install's log before anyone read it).
# Another user's log (root ran bootstrap before) is not ours to write: then one with our user
# id in its name. The subshell matters: a failed redirection on ':' (a special built-in) ends a
# POSIX shell, so a second user's run.sh stopped here with exit 2.
log="${TMPDIR:-/tmp}/memwall-bootstrap.log"
if ! (: >>"$log") 2>/dev/null; then
	log="${TMPDIR:-/tmp}/memwall-bootstrap-$(id -u).log"
	(: >>"$log") 2>/dev/null || log=/dev/null
fi
log_started=0
quietly() {
	if [ "$log_started" -eq 0 ] && [ "$log" != /dev/null ]; then
		printf '# scripts/bootstrap.sh, %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ 2>/dev/null)" >"$log"
		log_started=1
	fi
	printf '+ %s\n' "$*" >>"$log"
	if ! "$@" >>"$log" 2>&1; then
		echo "bootstrap: failed: $*" >&2
		[ "$log" != /dev/null ] && { tail -n 20 "$log" >&2; echo "bootstrap: full log: $log" >&2; }
		exit 1
	fi
}

# node and npm (--dev: the real-llama.cpp tests run node-llama-cpp) are checked by command, not
# by package: NodeSource's nodejs ships npm inside it and conflicts with Debian's npm package.
node_pkgs=""
if [ "$dev" -eq 1 ] && ! { command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; }; then
	node_pkgs="nodejs npm"
fi

if command -v apt-get >/dev/null 2>&1; then
	pkgs="git meson ninja-build pkg-config gcc libc6-dev libjansson-dev libpfm4-dev libsqlite3-dev libpq-dev zlib1g-dev libssl-dev gnuplot-nox python3 sqlite3"
	[ "$dev" -eq 1 ] && pkgs="$pkgs gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user libsimde-dev clang libclang-rt-dev valgrind postgresql chromium"
	missing=""
	for p in $pkgs; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
	done
	missing="$missing${node_pkgs:+ $node_pkgs}"
	if [ -z "$missing" ]; then
		say "all packages present"
		exit 0
	fi
	[ "$sudo" = no_sudo ] && no_sudo "$missing"
	say "installing:$missing (apt-get; details in $log)"
	case " $missing " in
	*" postgresql "*) say "postgresql: Debian starts its own server on install (the tests use a" \
		"throwaway one; 'sudo systemctl disable --now postgresql' stops it)" ;;
	esac
	export DEBIAN_FRONTEND=noninteractive
	quietly $sudo apt-get update -qq
	# shellcheck disable=SC2086
	quietly $sudo apt-get install -y -qq --no-install-recommends $missing
elif command -v dnf >/dev/null 2>&1; then
	pkgs="git meson ninja-build pkgconf-pkg-config gcc jansson-devel libpfm-devel sqlite-devel libpq-devel zlib-devel openssl-devel gnuplot python3 libperf-devel sqlite"
	[ "$dev" -eq 1 ] && pkgs="$pkgs gcc-aarch64-linux-gnu qemu-user simde-devel clang compiler-rt valgrind postgresql-server chromium"
	pkgs="$pkgs${node_pkgs:+ $node_pkgs}"
	[ "$sudo" = no_sudo ] && no_sudo " $pkgs"
	say "installing (dnf, untested by the project): $pkgs (details in $log)"
	# shellcheck disable=SC2086
	quietly $sudo dnf install -y $pkgs
elif command -v pacman >/dev/null 2>&1; then
	pkgs="git meson ninja pkgconf gcc jansson libpfm4 sqlite postgresql-libs zlib gnuplot python"
	[ "$dev" -eq 1 ] && pkgs="$pkgs aarch64-linux-gnu-gcc qemu-user simde clang compiler-rt valgrind postgresql chromium"
	pkgs="$pkgs${node_pkgs:+ $node_pkgs}"
	[ "$sudo" = no_sudo ] && no_sudo " $pkgs"
	say "installing (pacman, untested by the project): $pkgs (details in $log)"
	# shellcheck disable=SC2086
	quietly $sudo pacman -S --needed --noconfirm $pkgs
else
	echo "bootstrap: no apt-get, dnf or pacman found; install meson, ninja, pkg-config, gcc," \
	     "jansson, libpfm4 and gnuplot by hand" >&2
	exit 3
fi
say "done"
