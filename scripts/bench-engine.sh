#!/bin/sh
# scripts/bench-engine.sh [BUILDDIR]: how close the engine gets to the memory-bandwidth roof.
#
# A benchmark, not a test: it prints figures and never fails on them. It
#   1. builds BUILDDIR (default build; set BENCH_NO_BUILD=1 to use it as it is),
#   2. synthesizes stories110M once into BUILDDIR/bench/ (random weights, the real shape),
#   3. for each thread count (BENCH_THREADS, default "1 2"): BENCH_REPS runs of
#      `memwall generate -n 256 --ids`, each between two read-bandwidth probes
#      (`memwall bandwidth --kernel read`), because this VM's bandwidth drifts;
#   4. reports the engine's effective read bandwidth, engine-accounted bytes per token x tok/s,
#      as a fraction of the mean of its two bracketing probes' best read figures (GB = 1e9
#      bytes), per run, and their median;
#   5. time to first token (model load included) with and without --populate, and the cost of
#      the instrumentation hooks (no-op callbacks, --hooks-bench, against none), at 1 thread.
#
# Engine-accounted bytes per token are computed from the model's header, the way the engine
# accounts them (engine.h, struct eng_step_bytes): every weight matrix and norm, the
# classifier, one embedding row, plus the KV cache read at each decode position, averaged over
# the positions the tok/s figure covers (1 .. n-1: the first token is timed separately).
#
# Environment: BENCH_REPS (default 5), BENCH_STEPS (default 256), BENCH_THREADS (default "1 2"),
# BENCH_PROBE_REPS (default 5), BENCH_NO_BUILD=1.
set -eu
case "${1:-}" in
-h|--help) sed -n '2,22p' "$0"; exit 0 ;;
esac
cd "$(dirname "$0")/.."
builddir=${1:-build}
reps=${BENCH_REPS:-5}
steps=${BENCH_STEPS:-256}
threads_list=${BENCH_THREADS:-1 2}
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

# Best and median read GB/s at $1 threads: prints "best median".
probe() {
	"$mw" bandwidth -t "$1" --kernel read --reps "$probe_reps" --json | python3 -c '
import json, sys
r = json.load(sys.stdin)["roof_read"][0]
print("%.2f %.2f" % (r["best_gbps"], r["median_gbps"]))'
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

echo "memwall engine benchmark: $("$mw" version | head -n 1)"
echo "model: $model (SYNTHETIC stories110M), $steps tokens from BOS, greedy, $reps runs each"
echo "engine-accounted bytes per decode token: $bytes_per_token (weights + mean KV read)"
echo "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) (shared machines drift: read the fractions, not bare tok/s)"
gen -n 8 -t 1 >/dev/null # page cache warm-up: every figure below is with the file cached
echo

# Each generate run is bracketed by two probes (the probe after one run is the probe before
# the next), and its fraction of roof uses the mean of its two brackets: the VM's bandwidth
# drifts between runs, so a pair measured side by side is what can be compared.
printf '%-7s %9s %12s %12s %22s %14s\n' threads "tok/s" "engine GB/s" "probe GB/s" "of roof" \
	"of probe"
printf '%-7s %9s %12s %12s %22s %14s\n' "" "(median)" "(effective)" "(median)" "(median [min, max])" \
	"medians"
for t in $threads_list; do
	prev=$(probe "$t" | tr ' ' ':')
	first=$prev
	rows=""
	for _ in $(seq "$reps"); do
		tps=$(gen -t "$t" | cut -d' ' -f1)
		next=$(probe "$t" | tr ' ' ':')
		rows="$rows $tps:$prev:$next"
		prev=$next
	done
	echo "$rows" | tr ' ' '\n' | grep . | tr ':' ' ' | awk -v t="$t" -v bpt="$bytes_per_token" \
		-v first="${first%%:*}" -v last="${prev%%:*}" '
	function median(a, n,   i, j, x) {
		for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	{
		# $1 tok/s; $2 $3 best and median of the probe before; $4 $5 of the probe after
		tps[NR] = $1; roof[NR] = ($2 + $4) / 2; frac[NR] = $1 * bpt / 1e9 / roof[NR]
		fmed[NR] = $1 * bpt / 1e9 / (($3 + $5) / 2)
		list = list sprintf(" %.1f (%.0f%%)", $1, 100 * frac[NR])
	}
	END {
		lo = hi = frac[1]; for (i = 2; i <= NR; i++) { if (frac[i] < lo) lo = frac[i]; if (frac[i] > hi) hi = frac[i] }
		m = median(tps, NR)
		printf "%-7d %9.2f %12.2f %12.2f %9.1f%% [%.1f, %.1f] %13.1f%%\n", t, m, m * bpt / 1e9,
			median(roof, NR), 100 * median(frac, NR), 100 * lo, 100 * hi, 100 * median(fmed, NR)
		printf "        runs, tok/s (of roof):%s; first probe %.2f, last %.2f GB/s\n", list, first, last
	}'
done
echo "(probe GB/s: best read figure of memwall bandwidth (--kernel read) at that thread count,"
echo " buffers in 2 MiB pages; of roof: engine GB/s / mean of the run's two bracketing probes;"
echo " of probe medians: the same with each probe's median run instead of its best."
echo " The engine's weights are a file mapping in 4 KiB pages, which reads slower than 2 MiB pages"
echo " on this VM: see the last line)"
echo

# The same probe with the buffers left to the system's THP policy (4 KiB pages under "madvise"),
# closer to what a file mapping of the weights gets.
small=$("$mw" bandwidth -t 1 --kernel read --reps "$probe_reps" --no-hugepages --json | python3 -c '
import json, sys
r = json.load(sys.stdin)["roof_read"][0]
print("%.2f GB/s best, %.2f median" % (r["best_gbps"], r["median_gbps"]))')
pages_note="read probe at 1 thread without MADV_HUGEPAGE: $small"

# Time to first token, model load included, page cache warm; interleaved, median of $reps.
plain="" populate=""
for _ in $(seq "$reps"); do
	plain="$plain $(gen -n 2 -t 1 | cut -d' ' -f2)"
	populate="$populate $(gen -n 2 -t 1 --populate | cut -d' ' -f2)"
done
printf 'time to first token (ms, median, 1 thread, file in page cache): %.1f without --populate, %.1f with\n' \
	"$(echo "$plain" | tr ' ' '\n' | grep . | median)" \
	"$(echo "$populate" | tr ' ' '\n' | grep . | median)"

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
echo "$pages_note"
