#!/bin/sh
# tests/engine/avx512-simde.sh [SOURCE_ROOT [BUILD_ROOT]]: the AVX-512 tables, tested on a CPU without
# AVX-512.
#
# The machines memwall is built and tested on have been AVX2-only since the one with Zen 4, so
# the AVX-512 tables (engine/quants/x86/avx512*.c, engine/kernels/x86/avx512.c), which the
# engine picks on Ice Lake, Sapphire Rapids and Zen 4 and later, would otherwise go untested
# by every suite. Here they are compiled with KRN_SIMDE against SIMDe (Debian's libsimde-dev,
# engine/kernels/x86/simd.h): the same intrinsics computed in portable C, so the tests compare
# them with ref and the AVX2 tables bit for bit, as they do on an AVX-512 machine. What they
# cannot tell is speed: SIMDe's C is far slower than the instructions, and says nothing of them.
#
# Each test program is linked with those objects, tests/lib/simde_cpu.c (in place of the CPU
# checks, it says yes to all), the tests' helpers (the build's tests/libtestlib.a) and the
# build's own libraries, less its AVX-512 tables and CPU checks; the rest (ref, the AVX2
# tables, the registries, the engine) is what memwall is built from. In turn:
#  - tests/engine/test_kernels.c;
#  - tests/engine/test_quants.c: hand-built blocks, every table against ref, the x8 layouts and their
#    kernels, the multi-token path, ggml's vectors where ../shared has them;
#  - tests/engine/test_kernel_choice.c: the avx512 table's x8 kernels against avx2's, bit for
#    bit (what lets a session run some token counts on the other table), and sessions that
#    do so;
#  - tests/engine/test_gguf_engine.c: the whole engine, which then picks the AVX-512 tables, against
#    llama.cpp's logits for ../shared's GGUF fixtures, on the mapping and repacked.
# BUILD_ROOT: $MEMWALL_BUILD_ROOT (meson test sets it), else SOURCE_ROOT/build. Exits 77
# (skipped), saying why, without SIMDe, on a CPU without the AVX2 tables' flags (the AVX-512
# tables fall back on them), or on a build without the x86 tables (-Dkernels=ref-only).
set -eu
src=${1:-$(cd "$(dirname "$0")/.." && pwd)}
b=${2:-${MEMWALL_BUILD_ROOT:-$src/build}}
out="$b/tests/avx512-simde"
cc=${CC:-cc}

if ! printf '#include <simde/x86/avx512.h>\n' | "$cc" -E -x c - >/dev/null 2>&1; then
	echo "SKIP: SIMDe's headers not found (scripts/bootstrap.sh --dev installs libsimde-dev)"
	exit 77
fi
for flag in avx2 fma f16c; do
	if ! grep -qw "$flag" /proc/cpuinfo; then
		echo "SKIP: this CPU has no $flag: the AVX2 tables, which the AVX-512 ones build on," \
		     "cannot run here"
		exit 77
	fi
done
if [ ! -f "$b/engine/libengine.a" ]; then
	echo "avx512-simde.sh: $b/engine/libengine.a not found: build the tree first" \
	     "(meson compile -C build), or name its build folder" >&2
	exit 2
fi
if [ ! -f "$b/engine/quants/libquants_avx2.a" ]; then
	echo "SKIP: $b was built without the x86 tables (-Dkernels=ref-only): its registries" \
	     "would never pick the AVX-512 ones"
	exit 77
fi

# The project's warning set. -Wno-psabi: GCC notes that 64-byte vectors are passed by value
# differently since GCC 4.6, once per SIMDe function that takes one; nothing here crosses an
# ABI boundary built by another compiler.
cflags="-std=c11 -D_GNU_SOURCE -pthread
	-Wall -Wextra -Wpedantic -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
	-Wformat=2 -Wcast-qual -Wwrite-strings -Wvla -Wundef -Wno-psabi
	-I$src/engine -I$src/engine/quants -I$src/engine/kernels -I$src/tests/lib"
# The AVX-512 tables' code is SIMDe's C, compiled for AVX2 so that GCC may vectorise it (never
# an AVX-512 instruction), at -O2: test_gguf_engine ran 43 s against 80 s at -O1, which would
# save 26 s of the 58 s it takes to compile them. The test programs at -O1, as meson builds them.
simde="-DKRN_SIMDE -mavx2 -mfma -mf16c -mno-avx512f -O2"
echo "compiler $("$cc" -dumpfullversion); SIMDe $(sed -n 's/^#define SIMDE_VERSION_\(MAJOR\|MINOR\|MICRO\) \([0-9]*\).*/\2/p' \
	/usr/include/simde/simde-common.h 2>/dev/null | paste -sd. -)"

mkdir -p "$out"
tables=
for s in "$src"/engine/quants/x86/avx512.c "$src"/engine/quants/x86/avx512_x8l.c \
	"$src"/engine/quants/x86/avx512_x8k.c "$src"/engine/quants/x86/avx512_x8f.c; do
	# shellcheck disable=SC2086 # the flags are lists of words
	"$cc" $cflags $simde -c "$s" -o "$out/quants_$(basename "$s" .c).o"
	tables="$tables $out/quants_$(basename "$s" .c).o"
done
# shellcheck disable=SC2086
"$cc" $cflags $simde -c "$src/engine/kernels/x86/avx512.c" -o "$out/krn_avx512.o"
# shellcheck disable=SC2086
"$cc" $cflags -O1 -c "$src/tests/lib/simde_cpu.c" -o "$out/simde_cpu.o"
# The registries, with the AVX-512 tables in them: a native build on a CPU without AVX-512
# leaves those out of its own (meson.build, isa_left_out). Linked before the libraries, they
# stand for the build's registry objects, which then are never pulled in.
# shellcheck disable=SC2086
"$cc" $cflags -O1 -DKRN_HAVE_AVX512 -DKRN_HAVE_AVX2 -c "$src/engine/kernels/kernels.c" \
	-o "$out/krn_registry.o"
# shellcheck disable=SC2086
"$cc" $cflags -O1 -DKRN_QUANTS_HAVE_AVX512=1 -DKRN_QUANTS_HAVE_AVX2=1 \
	-c "$src/engine/quants/quants.c" -o "$out/quants_registry.o"
tables="$tables $out/krn_avx512.o $out/simde_cpu.o $out/krn_registry.o $out/quants_registry.o"

# The build's libraries, in an order a one-pass linker resolves: the engine, then the kernel
# registry and tables, then the quant ones.
libs="$b/engine/libengine.a"
for a in "$b"/engine/kernels/lib*.a "$b"/engine/quants/lib*.a; do
	case "$(basename "$a")" in
	*avx512* | *x86_cpu*) ;;
	*) libs="$libs $a" ;;
	esac
done

for t in kernels quants kernel_choice gguf_engine; do
	# shellcheck disable=SC2086
	"$cc" $cflags -O1 -o "$out/test_$t" "$src/tests/engine/test_$t.c" $tables \
		"$b/tests/libtestlib.a" $libs -ljansson -lm
	echo "== test_$t (the AVX-512 tables under SIMDe)"
	# without MEMWALL_BIN: test_gguf_engine's CLI checks run the memwall binary, whose tables
	# are the build's, already tested by its own run
	env -u MEMWALL_BIN "$out/test_$t"
done
