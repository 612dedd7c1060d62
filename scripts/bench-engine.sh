#!/bin/sh
# scripts/bench-engine.sh [BUILDDIR]: how close the engine gets to the memory-bandwidth roof.
#
# A benchmark, not a test: it prints figures and never fails on them. It
#   1. builds BUILDDIR (default build; set BENCH_NO_BUILD=1 to use it as it is),
#   2. synthesizes stories110M once into BUILDDIR/bench/ (random weights, the real shape),
#   3. for each thread count (BENCH_THREADS, default "1 2"): BENCH_REPS rounds of
#      `memwall generate -n 256 --ids`, once per load mode (BENCH_LOADS, default
#      "mmap huge-copy": the zero-copy file mapping in 4 KiB pages, and the anonymous copy in
#      2 MiB pages), each run between two read-bandwidth probes, because this VM's bandwidth
#      drifts; a probe is `memwall bandwidth --kernel read` twice: buffers in 2 MiB pages (the
#      roof) and with --no-hugepages (4 KiB pages, like-for-like with the file mapping);
#   4. reports the engine's effective read bandwidth, engine-accounted bytes per token x tok/s,
#      as a fraction of the mean of its two bracketing probes' best read figures (GB = 1e9
#      bytes), per run, and their median, against both probes;
#   5. time to first token (model load included) with and without --populate and with
#      --load huge-copy, and the cost of the instrumentation hooks (no-op callbacks,
#      --hooks-bench, against none), at 1 thread;
#   6. prompt processing, pp128: a 128-token prompt (-n 1) at each thread count, on GGUF
#      stories110M of each BENCH_PP_QUANTS (default "q4_0 q8_0", synthesized into BUILDDIR/bench/,
#      plus the f32 llama2.c model), per load mode, in the engine's default prefill chunks
#      against --prefill-chunk 1 (token by token, the path before eng_session_prefill),
#      interleaved, median of BENCH_REPS: the prompt tok/s the summary line reports.
#
# Engine-accounted bytes per token are computed from the model's header, the way the engine
# accounts them (engine.h, struct eng_step_bytes): every weight matrix and norm, the
# classifier, one embedding row, plus the KV cache read at each decode position, averaged over
# the positions the tok/s figure covers (1 .. n-1: the first token is timed separately).
#
# Environment: BENCH_REPS (default 5), BENCH_STEPS (default 256), BENCH_THREADS (default "1 2"),
# BENCH_LOADS (default "mmap huge-copy"), BENCH_PROBE_REPS (default 5), BENCH_NO_BUILD=1,
# BENCH_PP_QUANTS (default "q4_0 q8_0"), BENCH_PP_LOADS (default "mmap repack"), BENCH_PP_ONLY=1
# (step 6 alone).
set -eu
case "${1:-}" in
-h|--help) sed -n '2,34p' "$0"; exit 0 ;;
esac
cd "$(dirname "$0")/.."
builddir=${1:-build}
reps=${BENCH_REPS:-5}
steps=${BENCH_STEPS:-256}
threads_list=${BENCH_THREADS:-1 2}
loads=${BENCH_LOADS:-mmap huge-copy}
probe_reps=${BENCH_PROBE_REPS:-5}

if [ "${BENCH_NO_BUILD:-0}" != 1 ]; then
	scripts/build.sh "$builddir" >/dev/null
fi
mw="$builddir/src/memwall"
model="$builddir/bench/stories110M.bin"
mkdir -p "$builddir/bench"
if [ ! -f "$model" ]; then
	"$mw" synth --shape stories110M -o "$model" >&2
fi

# Engine-accounted bytes per decode token, from the llama2.c header (ak42 v1 or legacy).
bytes_per_token=$(python3 - "$model" "$steps" <<'PY'
import struct, sys
path, steps = sys.argv[1], int(sys.argv[2])
with open(path, "rb") as f:
    head = f.read(64)
off = 8 if struct.unpack_from("<I", head)[0] == 0x616B3432 else 0  # "ak42" magic
dim, hidden, layers, heads, kv_heads, vocab, seq = struct.unpack_from("<7i", head, off)
vocab = abs(vocab)  # legacy: negative means an unshared classifier, same bytes read
kv_dim = dim * kv_heads // heads
per_layer = dim + dim * dim + 2 * dim * kv_dim + dim * dim + dim + 3 * dim * hidden
weights = 4 * (layers * per_layer + dim + vocab * dim + dim)  # + final norm, classifier, 1 row
# KV read at position p: every layer reads keys and values for positions 0..p.
positions = range(1, steps)
kv = 4 * layers * 2 * kv_dim * sum(p + 1 for p in positions) / len(positions)
print(int(weights + kv))
PY
)

# Best and median read GB/s at $1 threads, in 2 MiB pages and in 4 KiB pages (--no-hugepages):
# prints "best median best4k median4k".
probe_one() {
	"$mw" bandwidth -t "$1" --kernel read --reps "$probe_reps" --json ${2:-} | python3 -c '
import json, sys
r = json.load(sys.stdin)["roof_read"][0]
print("%.2f %.2f" % (r["best_gbps"], r["median_gbps"]))'
}
probe() {
	echo "$(probe_one "$1") $(probe_one "$1" --no-hugepages)"
}

# The median of the numbers on stdin.
median() {
	sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# One generate run: prints "tok/s first_token_ms".
gen() {
	"$mw" generate -m "$model" -n "$steps" --ids --temperature 0 "$@" 2>&1 >/dev/null |
		sed -n 's/.* \([0-9.]*\) tok\/s decode, first token \([0-9.]*\) ms.*/\1 \2/p'
}

# Step 6, pp128: prints a table of prompt tok/s, chunked against token by token.
pp_quants=${BENCH_PP_QUANTS:-q4_0 q8_0}
pp_loads=${BENCH_PP_LOADS:-mmap repack}
pp128() {
	ids=1
	for i in $(seq 127); do ids="$ids,$((100 + (i * 37) % 3000))"; done
	set --
	for q in $pp_quants; do
		f="$builddir/bench/stories110M-$q.gguf"
		[ -f "$f" ] || "$mw" synth --shape stories110M --quant "$q" -o "$f" >&2
		set -- "$@" "$f"
	done
	set -- "$@" "$model"
	echo "prompt processing, pp128 (tok/s, median of $reps, 128-token prompt, -n 1):"
	printf '  %-22s %-7s %-7s %10s %10s %7s\n' model threads load chunked "1 by 1" ratio
	for f in "$@"; do
		for t in $threads_list; do
			for load in $pp_loads; do
				a="" b=""
				for _ in $(seq "$reps"); do
					a="$a $(pp_one "$f" "$t" "$load")"
					b="$b $(pp_one "$f" "$t" "$load" --prefill-chunk 1)"
				done
				ma=$(echo "$a" | tr ' ' '\n' | grep . | median)
				mb=$(echo "$b" | tr ' ' '\n' | grep . | median)
				printf '  %-22s %-7s %-7s %10.1f %10.1f %6.2fx\n' "$(basename "$f")" "$t" \
					"$load" "$ma" "$mb" "$(echo "$ma $mb" | awk '{ print $1 / $2 }')"
			done
		done
	done
}
pp_one() {
	"$mw" generate -m "$1" -t "$2" --load "$3" --prompt-ids "$ids" -n 1 --ids \
		--temperature 0 ${4:-} ${5:-} 2>&1 >/dev/null | sed -n 's/.*, prompt \([0-9.]*\) tok\/s.*/\1/p'
}
if [ "${BENCH_PP_ONLY:-0}" = 1 ]; then
	pp128
	exit 0
fi

echo "memwall engine benchmark: $("$mw" version | head -n 1)"
echo "model: $model (SYNTHETIC stories110M), $steps tokens from BOS, greedy, $reps runs each"
echo "engine-accounted bytes per decode token: $bytes_per_token (weights + mean KV read)"
echo "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) (shared machines drift: read the fractions, not bare tok/s)"
gen -n 8 -t 1 >/dev/null # page cache warm-up: every figure below is with the file cached
echo

# Each generate run is bracketed by two probes (the probe after one run is the probe before
# the next), and its fraction of roof uses the mean of its two brackets: the VM's bandwidth
# drifts between runs, so a pair measured side by side is what can be compared. The load modes
# alternate within each round, so drift hits both alike.
printf '%-7s %-9s %8s %11s %9s %9s %22s %9s %9s\n' threads load "tok/s" "engine GB/s" "roof 2M" \
	"roof 4K" "of roof 2M" "of same" "of 2M"
printf '%-7s %-9s %8s %11s %9s %9s %22s %9s %9s\n' "" "" "(median)" "(effective)" "(median)" \
	"(median)" "(median [min, max])" "pages" "medians"
for t in $threads_list; do
	prev=$(probe "$t" | tr ' ' ':')
	first=$prev
	rows=""
	for _ in $(seq "$reps"); do
		for load in $loads; do
			tps=$(gen -t "$t" --load "$load" | cut -d' ' -f1)
			next=$(probe "$t" | tr ' ' ':')
			rows="$rows $load:$tps:$prev:$next"
			prev=$next
		done
	done
	for load in $loads; do
		echo "$rows" | tr ' ' '\n' | grep "^$load:" | tr ':' ' ' | awk -v t="$t" \
			-v bpt="$bytes_per_token" -v load="$load" '
		function median(a, n,   i, j, x) {
			for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
			return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		}
		{
			# $2 tok/s; $3-$6 the probe before: best, median (2 MiB), best, median (4 KiB);
			# $7-$10 the probe after
			eng = $2 * bpt / 1e9
			tps[NR] = $2; roof[NR] = ($3 + $7) / 2; roof4[NR] = ($5 + $9) / 2
			# like for like: the file mapping (4 KiB pages here) against the 4 KiB probe
			frac[NR] = eng / roof[NR]; same[NR] = load == "mmap" ? eng / roof4[NR] : frac[NR]
			fmed[NR] = eng / (($4 + $8) / 2)
			list = list sprintf(" %.1f (%.0f%%)", $2, 100 * frac[NR])
		}
		END {
			lo = hi = frac[1]; for (i = 2; i <= NR; i++) { if (frac[i] < lo) lo = frac[i]; if (frac[i] > hi) hi = frac[i] }
			m = median(tps, NR)
			printf "%-7d %-9s %8.2f %11.2f %9.2f %9.2f %9.1f%% [%.1f, %.1f] %8.1f%% %8.1f%%\n", t, load, m,
				m * bpt / 1e9, median(roof, NR), median(roof4, NR), 100 * median(frac, NR),
				100 * lo, 100 * hi, 100 * median(same, NR), 100 * median(fmed, NR)
			printf "                  runs, tok/s (of roof 2M):%s\n", list
		}'
	done
	echo "        probes 2M/4K: first ${first%%:*}/$(echo "$first" | cut -d: -f3), last ${prev%%:*}/$(echo "$prev" | cut -d: -f3) GB/s"
done
echo "(roof 2M: best read figure of memwall bandwidth (--kernel read) at that thread count,"
echo " buffers in 2 MiB pages; roof 4K: the same with --no-hugepages (the system's THP policy,"
echo " 4 KiB pages under \"madvise\"); of roof 2M: engine GB/s / mean of the run's two"
echo " bracketing probes; of same pages: the same against the probe in the pages the weights"
echo " have (mmap: the file mapping, 4 KiB pages on file systems without huge file pages, against"
echo " roof 4K; huge-copy: an anonymous copy in 2 MiB pages, against roof 2M); of 2M medians:"
echo " of roof 2M with each probe's median run instead of its best). The 4 KiB probe is a floor,"
echo " not a twin, for the file mapping: where the page cache holds large folios the mapping reads"
echo " faster than it (of same pages above 100%), and roof 2M is the figure to read)"
echo

# Time to first token, model load included, page cache warm; interleaved, median of $reps.
plain="" populate="" huge=""
for _ in $(seq "$reps"); do
	plain="$plain $(gen -n 2 -t 1 --load mmap | cut -d' ' -f2)"
	populate="$populate $(gen -n 2 -t 1 --load mmap --populate | cut -d' ' -f2)"
	huge="$huge $(gen -n 2 -t 1 --load huge-copy | cut -d' ' -f2)"
done
printf 'time to first token (ms, median, 1 thread, file in page cache): %.1f mmap, %.1f mmap --populate, %.1f --load huge-copy\n' \
	"$(echo "$plain" | tr ' ' '\n' | grep . | median)" \
	"$(echo "$populate" | tr ' ' '\n' | grep . | median)" \
	"$(echo "$huge" | tr ' ' '\n' | grep . | median)"

# Hook cost: no hooks against no-op hooks, interleaved so drift hits both alike.
none="" hooked=""
for _ in $(seq "$reps"); do
	none="$none $(gen -t 1 | cut -d' ' -f1)"
	hooked="$hooked $(gen -t 1 --hooks-bench | cut -d' ' -f1)"
done
n=$(echo "$none" | tr ' ' '\n' | grep . | median)
h=$(echo "$hooked" | tr ' ' '\n' | grep . | median)
echo "$n $h" | awk '{ printf "hooks (1 thread, median tok/s): %.2f without, %.2f with no-op callbacks: %+.2f%% (goal: cost <= 0.5%%)\n", $1, $2, 100 * ($1 - $2) / $1 }'
echo "  runs without:$none; with:$hooked"
echo
pp128
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
