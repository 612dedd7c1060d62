#!/bin/sh
# tests/avx512-simde.sh [SOURCE_ROOT [OUT_DIR [PART]]]: the AVX-512 tables, tested on a CPU
# without AVX-512.
#
# The machines memwall is built and tested on have been AVX2-only since the one with Zen 4, so
# the AVX-512 tables (engine/quants/x86/avx512*.c, engine/kernels/x86/avx512.c), which the
# engine picks on Ice Lake, Sapphire Rapids and Zen 4 and later, would otherwise go untested
# by every suite. Here they are compiled with KRN_SIMDE against SIMDe (Debian's libsimde-dev,
# engine/kernels/x86/simd.h): the same intrinsics computed in portable C, so the tests compare
# them with ref (and the AVX2 tables, compiled as memwall compiles them) bit for bit, as they
# do on an AVX-512 machine. What they cannot tell is speed: SIMDe's C is far slower than the
# instructions, and says nothing of them.
#
# PART: quants (tests/test_quants.c: hand-built blocks, every table against ref, the x8 layout
# and its kernels, the multi-token path, ggml's vectors where ../shared has them), kernels
# (tests/test_kernels.c) or engine (tests/test_gguf_engine.c: the whole engine, which then picks
# the AVX-512 tables, against llama.cpp's logits for ../shared's GGUF fixtures, on the mapping
# and repacked; it links the engine's libraries from the build, $MEMWALL_BUILD_ROOT or else
# SOURCE_ROOT/build); all three when absent. tests/simde_cpu.c stands in for the CPU checks and
# says yes to all: SIMDe runs anywhere, and this script has checked /proc/cpuinfo for the AVX2
# tables' flags (the AVX-512 tables fall back on them, natively). Exits 77 (skipped), saying
# why, without SIMDe or without those flags.
set -eu
src=${1:-$(cd "$(dirname "$0")/.." && pwd)}
out=${2:-${MEMWALL_BUILD_ROOT:-/tmp}/tests}/avx512-simde
part=${3:-all}
case "$part" in
all | quants | kernels | engine) ;;
*)
	echo "avx512-simde.sh: unknown part '$part' (quants, kernels, engine)" >&2
	exit 2
	;;
esac
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

mkdir -p "$out"
# The project's warning set. -Wno-psabi: GCC notes that 64-byte vectors are passed by value
# differently since GCC 4.6, once per SIMDe function that takes one; nothing here crosses an
# ABI boundary built by another compiler.
cflags="-std=c11 -O2 -D_GNU_SOURCE -pthread
	-Wall -Wextra -Wpedantic -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
	-Wformat=2 -Wcast-qual -Wwrite-strings -Wvla -Wundef -Wno-psabi"
avx2="-mavx2 -mfma -mf16c -mno-avx512f"
# The AVX-512 tables' code is SIMDe's C: AVX2 code generation, so that GCC may vectorise it,
# and never an AVX-512 instruction. -O1 for the unit tests: half the compile time of -O2
# (SIMDe's inline headers are most of it; 32 s against 58 s of CPU here), for 10 s of
# test_quants against 8. The engine part runs them far more: 80 s of test_gguf_engine at -O1,
# 43 s at -O2, so it takes -O2 ($simde_engine).
simde="-DKRN_SIMDE $avx2 -O1"
simde_engine="-DKRN_SIMDE $avx2 -O2"
echo "compiler $("$cc" -dumpfullversion); SIMDe $(sed -n 's/^#define SIMDE_VERSION_\(MAJOR\|MINOR\|MICRO\) \([0-9]*\).*/\2/p' \
	/usr/include/simde/simde-common.h 2>/dev/null | paste -sd. -)"

# obj DIR FLAGS FILE...: each FILE compiled into DIR with FLAGS, its object added to $objs (sh has
# no local variables: obj sets d, f, s and ob)
obj() {
	d=$1 f=$2
	shift 2
	mkdir -p "$d"
	for s in "$@"; do
		ob="$d/$(basename "$s" .c).o"
		# shellcheck disable=SC2086 # the flags are lists of words
		"$cc" $cflags $f -I"$src/engine" -I"$src/engine/quants" -I"$src/engine/kernels" \
			-I"$src/tests" -c "$s" -o "$ob"
		objs="$objs $ob"
	done
}

q="$src/engine/quants"
quants() {
	o="$out/quants" objs=
	# ref.c's dequantizers round as ggml's only without contraction (engine/quants/meson.build)
	obj "$o/ref" -ffp-contract=off "$q/ref.c" "$q/ref_quantize.c" "$q/fp16.c" "$q/x8.c" \
		"$q/x8_legacy.c" "$q/x8_kquants.c" "$q/x8_float.c"
	obj "$o/avx2" "$avx2" "$q/x86/avx2.c" "$q/x86/avx2_x8l.c" "$q/x86/avx2_x8k.c" "$q/x86/avx2_x8f.c"
	obj "$o/avx512" "$simde" "$q/x86/avx512.c" "$q/x86/avx512_x8l.c" "$q/x86/avx512_x8k.c" \
		"$q/x86/avx512_x8f.c"
	obj "$o/main" "-DKRN_QUANTS_HAVE_AVX2=1 -DKRN_QUANTS_HAVE_AVX512=1" "$q/quants.c" \
		"$src/tests/simde_cpu.c" "$src/tests/test_quants.c"
	# shellcheck disable=SC2086 # objs is a list of paths
	"$cc" -pthread -o "$out/test_quants" $objs -ljansson -lm
	echo "== test_quants (avx512 under SIMDe, avx2 native)"
	"$out/test_quants"
}

k="$src/engine/kernels"
kernels() {
	o="$out/kernels" objs=
	obj "$o/ref" "" "$k/ref.c" "$src/engine/roof/stream.c" "$src/engine/error.c"
	obj "$o/avx2" "$avx2" "$k/x86/avx2.c"
	obj "$o/avx512" "$simde" "$k/x86/avx512.c"
	obj "$o/main" "-DKRN_HAVE_AVX2 -DKRN_HAVE_AVX512" "$k/kernels.c" "$src/tests/simde_cpu.c" \
		"$src/tests/test_kernels.c"
	# shellcheck disable=SC2086
	"$cc" -pthread -o "$out/test_kernels" $objs -lm
	echo "== test_kernels (avx512 under SIMDe, avx2 native)"
	"$out/test_kernels"
}

# The engine's own libraries from the build, less the AVX-512 tables and the CPU checks: the
# SIMDe objects and tests/simde_cpu.c stand in for them.
engine() {
	b=${MEMWALL_BUILD_ROOT:-$src/build}
	if [ ! -f "$b/engine/libengine.a" ]; then
		echo "avx512-simde.sh: $b/engine/libengine.a not found: the engine part links the" \
		     "build's engine libraries (meson compile -C build, or set MEMWALL_BUILD_ROOT" \
		     "to a built tree; meson test sets it)" >&2
		exit 2
	fi
	if [ ! -f "$b/engine/quants/libquants_avx2.a" ]; then
		echo "SKIP: $b was built without the x86 tables (-Dkernels=ref-only): its engine" \
		     "would never pick the AVX-512 ones"
		exit 77
	fi
	o="$out/engine" objs=
	obj "$o/avx512" "$simde_engine" "$q/x86/avx512.c" "$q/x86/avx512_x8l.c" "$q/x86/avx512_x8k.c" \
		"$q/x86/avx512_x8f.c"
	obj "$o/krn_avx512" "$simde_engine" "$k/x86/avx512.c"
	obj "$o/main" "-O1" "$src/tests/simde_cpu.c" "$src/tests/test_gguf_engine.c"
	libs=
	for a in "$b"/engine/kernels/lib*.a "$b"/engine/quants/lib*.a; do
		case "$(basename "$a")" in
		*avx512* | *x86_cpu*) ;;
		*) libs="$libs $a" ;;
		esac
	done
	# shellcheck disable=SC2086
	"$cc" -pthread -o "$out/test_gguf_engine" $objs "$b/engine/libengine.a" $libs -ljansson -lm
	echo "== test_gguf_engine (avx512 under SIMDe, avx2 native)"
	"$out/test_gguf_engine"
}

if [ "$part" = all ] || [ "$part" = quants ]; then
	quants
fi
if [ "$part" = all ] || [ "$part" = kernels ]; then
	kernels
fi
if [ "$part" = all ] || [ "$part" = engine ]; then
	engine
fi
