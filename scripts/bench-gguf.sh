#!/bin/sh
# scripts/bench-gguf.sh [BUILDDIR]: memwall's engine against stock llama.cpp on GGUF models,
# side by side.
#
# A benchmark, not a test: it prints figures and never fails on them. It
#   1. synthesizes the models once into BENCH_DIR (`memwall synth`: random weights, the real
#      shapes and llama-quantize's per-tensor types): stories110M-shape Q8_0, Q4_0 and Q4_K_M
#      (arch llama), and, with BENCH_FALCON=1, Falcon-7B Q4_K_M (about 5 GB; deleted at the
#      end unless BENCH_KEEP=1);
#   2. for each model and thread count (BENCH_THREADS, default "1 2"): BENCH_REPS rounds, each
#      one run of `memwall generate` then one of llama.cpp (scripts/llama-node.mjs, the
#      node-llama-cpp package's llama.cpp v0.5.0, when installed: `npm install --prefix
#      scripts/llama-node --omit=optional --no-audit --no-fund`), interleaved so that both see
#      the same machine load; both print src/run/adapters.h's memwall-tokens line, read here;
#   3. reports the median decode tok/s of each and their ratio, memwall's engine-accounted
#      bytes per token, and that times tok/s as a fraction of the median read bandwidth
#      (`memwall bandwidth --kernel read`, GB = 1e9 bytes) measured just before.
#
# Both engines decode greedily with a KV cache of F16, llama.cpp's default: memwall from one
# token (llama: BOS 1; falcon: 11), llama.cpp from the prompt "a" (one or two tokens with the
# synthetic tokenizers), so both decode at nearly the same short context. On a shared machine, read the ratios, not the absolute figures.
#
# memwall loads the models with --load repack by default (BENCH_LOAD: mmap, huge-copy or
# repack): a copy in 2 MiB pages with the matrices interleaved by eight rows for the x8
# kernels, as llama.cpp copies the tensors it repacks into its CPU repack buffers.
#
# Environment: BENCH_REPS (default 3), BENCH_LOAD, BENCH_STEPS (default 128; Falcon: BENCH_FALCON_STEPS,
# default 32), BENCH_THREADS (default "1 2"), BENCH_DIR (default /tmp/memwall-bench-gguf),
# BENCH_FALCON=1, BENCH_STORIES=0 (skip the stories models), BENCH_KEEP=1, BENCH_NO_BUILD=1.
set -eu
cd "$(dirname "$0")/.."
builddir=${1:-build}
reps=${BENCH_REPS:-3}
steps=${BENCH_STEPS:-128}
falcon_steps=${BENCH_FALCON_STEPS:-32}
threads_list=${BENCH_THREADS:-1 2}
dir=${BENCH_DIR:-/tmp/memwall-bench-gguf}
load=${BENCH_LOAD:-repack}

if [ "${BENCH_NO_BUILD:-0}" != 1 ]; then
	scripts/build.sh "$builddir" >/dev/null
fi
mw="$builddir/src/memwall"
mkdir -p "$dir"

have_llama=0
if command -v node >/dev/null 2>&1 &&
	[ -d scripts/llama-node/node_modules/node-llama-cpp ] ||
	[ -n "${MEMWALL_NODE_LLAMA_DIR:-}" ]; then
	have_llama=1
else
	echo "note: llama.cpp not installed (npm install --prefix scripts/llama-node" \
		"--omit=optional --no-audit --no-fund); memwall only" >&2
fi

# synth ARCH SHAPE QUANT: the model's path, generated on first use.
synth() {
	path="$dir/$1-$2-$3.gguf"
	if [ ! -f "$path" ]; then
		echo "synthesizing $path ..." >&2
		"$mw" synth --arch "$1" --shape "$2" --quant "$3" -o "$path" >&2
	fi
	echo "$path"
}

# The median of the numbers on stdin.
median() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; else print "nan" }'
}

# tok/s from a memwall-tokens line on stdin: decode_steps / decode_ms.
rate() {
	sed -n 's/.*memwall-tokens:.*decode_ms=\([0-9.]*\).*decode_steps=\([0-9]*\).*/\2 \1/p;
		s/.*memwall-tokens:.*decode_steps=\([0-9]*\).*decode_ms=\([0-9.]*\).*/\1 \2/p' |
		head -n 1 | awk '{ if ($2 > 0) printf "%.2f\n", $1 * 1000 / $2 }'
}

# Median read GB/s at $1 threads.
probe() {
	"$mw" bandwidth -t "$1" --kernel read --reps 5 --json 2>/dev/null | python3 -c '
import json, sys
r = json.load(sys.stdin)["roof_read"][0]
print("%.2f" % r["median_gbps"])' || echo nan
}

# bench NAME MODEL BOS STEPS
bench() {
	name=$1 model=$2 bos=$3 n=$4
	for t in $threads_list; do
		roof=$(probe "$t")
		: >"$dir/mw.rates"
		: >"$dir/llama.rates"
		bytes=""
		i=0
		while [ "$i" -lt "$reps" ]; do
			out=$("$mw" generate -m "$model" --prompt-ids "$bos" -n "$n" --temperature 0 \
				--ids --report-line -t "$t" --load "$load" 2>&1 >/dev/null)
			echo "$out" | rate >>"$dir/mw.rates"
			bytes=$(echo "$out" | sed -n 's/.*bytes per token: weights \([0-9]*\), kv read \([0-9.]*\).*/\1 \2/p')
			if [ "$have_llama" = 1 ]; then
				node scripts/llama-node.mjs "$model" a "$n" "$t" 42 --ignore-eos \
					2>/dev/null | rate >>"$dir/llama.rates" || true
			fi
			i=$((i + 1))
		done
		mw_rate=$(median <"$dir/mw.rates")
		ll_rate=$(median <"$dir/llama.rates")
		python3 - "$name" "$t" "$mw_rate" "$ll_rate" "$roof" $bytes <<'PY'
import math, sys
name, t, mw, ll, roof = sys.argv[1:6]
weights, kv = (float(sys.argv[6]), float(sys.argv[7])) if len(sys.argv) > 7 else (math.nan, 0.0)
mw, ll, roof = float(mw), float(ll), float(roof)
mb = (weights + kv) / 1e6
ratio = mw / ll if ll == ll and ll > 0 else math.nan
frac = mb * 1e6 * mw / (roof * 1e9) if roof == roof and roof > 0 else math.nan
print(f"{name:24s} t={t}  memwall {mw:8.2f} tok/s  llama.cpp {ll:8.2f} tok/s  "
      f"ratio {ratio:5.2f}  {mb:8.1f} MB/token (weights {weights / 1e6:.1f})  "
      f"roof {roof:.1f} GB/s, memwall at {100 * frac:.0f}%")
PY
	done
}

echo "memwall vs llama.cpp on GGUF: $("$mw" version | head -n 1)"
echo "median of $reps interleaved runs per cell; memwall --load $load; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "(synthetic models: random weights, real shapes and type mixes)"
if [ "${BENCH_STORIES:-1}" = 1 ]; then
	bench "stories110M Q8_0" "$(synth llama stories110M q8_0)" 1 "$steps"
	bench "stories110M Q4_0" "$(synth llama stories110M q4_0)" 1 "$steps"
	bench "stories110M Q4_K_M" "$(synth llama stories110M q4_k_m)" 1 "$steps"
fi
if [ "${BENCH_FALCON:-0}" = 1 ]; then
	falcon=$(synth falcon falcon-7b q4_k_m)
	bench "Falcon-7B Q4_K_M" "$falcon" 11 "$falcon_steps"
	[ "${BENCH_KEEP:-0}" = 1 ] || rm -f "$falcon"
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
