#!/bin/sh
# tests/engine/neon-qemu.sh [SOURCE_ROOT [OUT_DIR [PART]]]: the NEON kernels, tested for real on an x86
# host.
#
# Cross-compiles for aarch64 (Debian's gcc-aarch64-linux-gnu, statically linked so no aarch64
# sysroot is needed at run time) and runs under qemu-aarch64:
#  - tests/engine/test_kernels.c with the engine's kernel registry, ref.c, arm/neon.c and stream.c;
#  - tests/engine/test_quants.c (parts 1 and 2: hand-built blocks, every table against ref, the x8
#    layout and its kernels, the multi-token path) with the quant registry, ref.c and the
#    NEON quant files, for ARMv8.0 (byte dots by widening multiplies) and for ARMv8.2 with the
#    dotprod extension (SDOT), the two ways arm/x8_drive.h's dot4x4 is compiled, and with
#    clang where it is installed.
# qemu emulates AdvSIMD and dotprod (its default CPU for user mode is "max"), so neon and ref
# both run and are compared exactly as on an ARM machine; timings under qemu say nothing about
# an ARM CPU's speed. Exits 77 (skipped) with the reason when the cross tools are absent:
# `scripts/bootstrap.sh --dev` installs them.
# PART runs one of the four builds: kernels, gcc-armv8, gcc-armv8.2-dotprod or
# clang-armv8.2-dotprod (all four when absent). tests/meson.build makes each its own test, so
# meson runs them side by side: each test_quants build is some 90 s of CPU under qemu, and one
# after the other they were the suite's longest test by minutes.
set -eu
src=${1:-$(cd "$(dirname "$0")/.." && pwd)}
out=${2:-${MEMWALL_BUILD_ROOT:-/tmp}/tests}
part=${3:-all}
case "$part" in
all | kernels | gcc-armv8 | gcc-armv8.2-dotprod | clang-armv8.2-dotprod) ;;
*)
	echo "neon-qemu.sh: unknown part '$part' (kernels, gcc-armv8, gcc-armv8.2-dotprod," \
	     "clang-armv8.2-dotprod)" >&2
	exit 2
	;;
esac
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
# The project's warning set, so the NEON path is held to the same bar as the native build.
cflags="-std=c11 -O2 -D_GNU_SOURCE -static -pthread
	-Wall -Wextra -Wpedantic -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
	-Wformat=2 -Wcast-qual -Wwrite-strings -Wvla -Wundef"
echo "cross compiler $("$cc" -dumpfullversion); $("$qemu" --version | head -n 1)"

kernels() {
	bin="$out/test_kernels.aarch64"
	# shellcheck disable=SC2086 # cflags is a list of words
	"$cc" $cflags -DKRN_HAVE_NEON \
		-I"$src/engine" -I"$src/engine/kernels" -I"$src/tests/lib" \
		-o "$bin" \
		"$src/tests/engine/test_kernels.c" \
		"$src/tests/lib/test.c" "$src/tests/lib/files.c" \
		"$src/engine/kernels/kernels.c" "$src/engine/kernels/ref.c" "$src/engine/kernels/arm/neon.c" \
		"$src/engine/roof/stream.c" "$src/engine/error.c" \
		-lm
	echo "== test_kernels (armv8-a)"
	"$qemu" "$bin"
}

q="$src/engine/quants"
# -ffp-contract=off as engine/quants/meson.build builds the NEON table: the x8 kernels' bits
# are vec_dot's only so. clang (when installed: it cross-compiles with the same binutils)
# contracts by default where GCC in C11 mode does not, so it is the build that shows the flag
# is there.
quants() { # compiler, -march value, output name
	bin="$out/test_quants.$3.aarch64"
	# no jansson for the target: -DT_NO_JANSSON leaves out part 3 (ggml's vectors)
	# shellcheck disable=SC2086
	$1 $cflags -march="$2" -ffp-contract=off -DT_NO_JANSSON -DKRN_QUANTS_HAVE_NEON=1 \
		-I"$src/engine" -I"$q" -I"$src/tests/lib" \
		-o "$bin" \
		"$src/tests/engine/test_quants.c" \
		"$src/tests/lib/test.c" "$src/tests/lib/files.c" \
		"$q/quants.c" "$q/ref.c" "$q/ref_quantize.c" "$q/fp16.c" "$q/x8.c" "$q/x8_legacy.c" "$q/x8_kquants.c" "$q/x8_float.c" \
		"$q/arm/neon.c" "$q/arm/neon_x8l.c" "$q/arm/neon_x8k.c" "$q/arm/neon_x8f.c" \
		-lm
	echo "== test_quants ($3)"
	"$qemu" "$bin"
}
if [ "$part" = all ] || [ "$part" = kernels ]; then
	kernels
fi
if [ "$part" = all ] || [ "$part" = gcc-armv8 ]; then
	quants "$cc" armv8-a gcc-armv8
fi
if [ "$part" = all ] || [ "$part" = gcc-armv8.2-dotprod ]; then
	quants "$cc" armv8.2-a+dotprod gcc-armv8.2-dotprod
fi
if [ "$part" = all ] || [ "$part" = clang-armv8.2-dotprod ]; then
	ld=$(command -v aarch64-linux-gnu-ld || true)
	if command -v clang >/dev/null 2>&1 && [ -n "$ld" ]; then
		quants "clang --target=aarch64-linux-gnu --ld-path=$ld" armv8.2-a+dotprod \
			clang-armv8.2-dotprod
	elif [ "$part" = all ]; then
		echo "NOTE: clang or aarch64-linux-gnu-ld absent: the clang build of test_quants not run"
	else
		echo "SKIP: clang or aarch64-linux-gnu-ld absent (scripts/bootstrap.sh --dev installs" \
		     "clang): the clang build of test_quants not run"
		exit 77
	fi
fi
