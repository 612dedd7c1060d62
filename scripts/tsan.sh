#!/bin/sh
# scripts/tsan.sh: ThreadSanitizer over the engine's thread pool and the runner's per-token
# callbacks. Fails on any report.
#
# Builds BUILDDIR (default build-tsan; $MEMWALL_TSAN_BUILDDIR overrides) once with
# -fsanitize=thread (clang where present, else gcc: both work on Debian 12 with the kernel's
# default vm.mmap_rnd_bits of 28; a kernel with 32 bits of mmap randomisation makes older TSan
# runtimes abort with "unexpected memory mapping", which `setarch -R` works around), then runs
# test_pool, test_engine, test_golden and test_gen_overlap, the smoke protocol end to end with 2
# engine threads, so the pool's workers and the runner's token hook run side by side, and
# `memwall generate` in its default load (overlap: the image thread, then the session moved
# onto the image) at 2 threads.
set -eu
cd "$(dirname "$0")/.."

builddir=${MEMWALL_TSAN_BUILDDIR:-build-tsan}
cc=gcc
command -v clang >/dev/null 2>&1 && cc=clang
if [ ! -f "$builddir/build.ninja" ]; then
	CC=$cc meson setup "$builddir" -Dwerror=true -Db_sanitize=thread -Db_lundef=false \
		-Dbuildtype=debugoptimized
fi
ninja -C "$builddir" src/memwall tests/test_pool tests/test_engine tests/test_golden tests/test_gen_overlap

# halt_on_error: the first race ends the program with exitcode, so nothing passes over one.
TSAN_OPTIONS="halt_on_error=1:exitcode=66:second_deadlock_stack=1${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
export TSAN_OPTIONS
meson test -C "$builddir" --no-rebuild --print-errorlogs --num-processes 2 pool engine golden gen_overlap

tmp=$(mktemp -d /tmp/mw-tsan-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
status=0
MEMWALL_CACHE_DIR="$tmp/cache" "$builddir/src/memwall" run protocols/stories260k-smoke.json \
	--threads 2 -o "$tmp/results" >"$tmp/out" 2>"$tmp/err" || status=$?
# 0 done, 1 an acceptance limit missed (TSan slows the run ~10x, so tok/s varies): both are
# fine here; 66 is a TSan report and anything else a failure of the run.
if [ "$status" -gt 1 ] || grep -q "ThreadSanitizer" "$tmp/err"; then
	cat "$tmp/err"
	echo "tsan.sh: memwall run under ThreadSanitizer failed (exit $status)"
	exit 1
fi
# generate's default load mode at 1 thread: prompt and first token on the mapping, the image
# built by its own thread on the CPUs after the session's one while decoding goes on, the
# session moved onto it once it is ready (the image thread's done flag polled every step;
# under TSan's slowdown the run may end first: image=used or image=unused are both fine, and
# a one-CPU machine skips the image). Then --switch-at 1 at 2 threads, which builds the image
# even with no CPU left for it and waits for it before token 2, so the move itself always runs
# here (image=used). (status starts again: the smoke run's 1, a missed acceptance limit, is no
# failure of these.)
status=0
"$builddir/src/memwall" synth --shape stories260K --format gguf --quant f16 -o "$tmp/m.gguf" \
	>/dev/null 2>"$tmp/err" || status=$?
for how in "default" "--switch-at 1"; do
	[ "$status" -eq 0 ] || break
	t=2
	[ "$how" = default ] && t=1
	# shellcheck disable=SC2046
	"$builddir/src/memwall" generate -m "$tmp/m.gguf" --prompt-ids 1 -n 16 -t "$t" --ids \
		--report-line $( [ "$how" = default ] || echo "$how" ) >"$tmp/out" 2>>"$tmp/err" ||
		status=$?
	want="mode=overlap .*image=\(used\|unused\|skipped\)"
	[ "$how" = default ] || want="mode=overlap .*image=used"
	if [ "$status" -ne 0 ] || grep -q "ThreadSanitizer" "$tmp/err" ||
		! tail -n 5 "$tmp/err" | grep -q "$want"; then
		cat "$tmp/err"
		echo "tsan.sh: memwall generate (--load overlap, $how) under ThreadSanitizer failed" \
		     "(exit $status)"
		exit 1
	fi
done
echo "tsan.sh: no ThreadSanitizer reports (test_pool, test_engine, test_golden, test_gen_overlap," \
     "2-thread smoke run, generate with --load overlap, default at 1 thread and --switch-at 1" \
     "at 2)"
