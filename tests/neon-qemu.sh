#!/bin/sh
# tests/neon-qemu.sh [SOURCE_ROOT [OUT_DIR]]: the NEON kernels, tested for real on an x86 host.
#
# Cross-compiles tests/test_kernels.c with the engine's kernel registry, ref.c, arm/neon.c and
# stream.c for aarch64 (Debian's gcc-aarch64-linux-gnu, statically linked so no aarch64 sysroot
# is needed at run time) and runs it under qemu-aarch64. qemu emulates AdvSIMD, so neon and ref
# both run and are compared exactly as on an ARM machine. Exits 77 (skipped) with the reason
# when the cross tools are absent: `scripts/bootstrap.sh --dev` installs them.
set -eu
src=${1:-$(cd "$(dirname "$0")/.." && pwd)}
out=${2:-${MEMWALL_BUILD_ROOT:-/tmp}/tests}
cc=aarch64-linux-gnu-gcc
qemu=qemu-aarch64

for tool in "$cc" "$qemu"; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "SKIP: $tool not found (scripts/bootstrap.sh --dev installs gcc-aarch64-linux-gnu," \
		     "libc6-dev-arm64-cross and qemu-user)"
		exit 77
	fi
done

mkdir -p "$out"
bin="$out/test_kernels.aarch64"
# The project's warning set, so the NEON path is held to the same bar as the native build.
"$cc" -std=c11 -O2 -D_GNU_SOURCE -DKRN_HAVE_NEON -static -pthread \
	-Wall -Wextra -Wpedantic -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wformat=2 -Wcast-qual -Wwrite-strings -Wvla -Wundef \
	-I"$src/engine" -I"$src/engine/kernels" -I"$src/tests" \
	-o "$bin" \
	"$src/tests/test_kernels.c" \
	"$src/engine/kernels/kernels.c" "$src/engine/kernels/ref.c" "$src/engine/kernels/arm/neon.c" \
	"$src/engine/stream.c" "$src/engine/error.c" \
	-lm
echo "built $bin with $("$cc" -dumpfullversion); running under $("$qemu" --version | head -n 1)"
exec "$qemu" "$bin"
