#!/bin/sh
# scripts/bench-peers.sh [BUILDDIR]: memwall's defaults against natively built peers, side by
# side in one interleaved run (issue 16).
#
# A benchmark, not a test: it prints figures and never fails on them. Run it on a quiet
# machine; on a shared one read the ratios, not the absolute figures. It
#   1. synthesizes stories110M (random weights, the real shape) as GGUF of each BENCH_QUANTS
#      (default "q4_0 q8_0 q4_k_m f32") and as a llama2.c f32 checkpoint, into BENCH_DIR;
#   2. measures the read roof (`memwall bandwidth --kernel read`, median GB/s) at each thread
#      count, before everything and again after, and prints both;
#   3. load: per model, the whole-file `cat FILE > /dev/null` on the cached file against
#      memwall's repack load (one parallel pass into 2 MiB pages), as GB/s of the file's
#      size, and memwall's time to first token (the verb's start to the first token, with the
#      default --load overlap);
#   4. per thread count (BENCH_THREADS, default "1 2") and round (BENCH_ROUNDS, default 5),
#      interleaved so every engine sees the same machine: on each GGUF, prompt processing
#      (pp: a BENCH_PP-token prompt, default 128) and decode (tg: BENCH_TG tokens, default 128)
#      by memwall (`generate`, its defaults: --load overlap, --pin cpus; pp: a prompt that
#      long runs on the repacked image; tg: decode_after_switch_tok_s, the rate on the image,
#      without the wait for it, with --switch-at 1 so that the image is built even where the
#      threads take every CPU, which the default skips), llama.cpp
#      (`llama-bench -p PP -n 0 -t T` and `-p 0 -n TG -t T`) and ik_llama.cpp (the same, decode
#      with `-rtr 1 -fa 0`, its best decode setting here); on the llama2.c checkpoint, decode by
#      memwall and by llama2.c's run.c (`run_st`, single-threaded: run at 1 thread only; it
#      reads the legacy layout, so it gets the same tensors rewritten in it);
#   5. batched decode: `generate --batch B` at 1 thread for B = 1 and each of BENCH_BATCH
#      (default "2 4"; empty: none) on every GGUF model, as tokens of all sequences per second
#      and the ratio to batch 1, with the quant table each x8 weight type ran on at B tokens a
#      call (the default's, or this machine's `memwall bench-kernels` choice);
#   6. the pool's barrier cost: decode per token on stories260K (the model fits in L2, so the
#      step is mostly synchronisation) at 1 and at 2 threads, pinned and unpinned; the
#      difference per token bounds what the barriers cost;
#   7. prints per cell the medians, memwall's ratio to each peer, and decode as a % of the read
#      roof measured before the runs and after them (memwall's engine-accounted bytes per token
#      x tok/s over each roof, GB = 1e9 bytes: the two differ by as much as the roof moved),
#      and the median over the rounds of each decode run's % of a roof probed right before it
#      (BENCH_PROBE_REPS repetitions, as the others; BENCH_PROBE_EACH=0 leaves these probes
#      out, where a time limit is tight), which follows the roof as it moves.
#   Stopped by SIGTERM or SIGINT (a `timeout` around it, Ctrl-C), it prints the tables of the
#   runs made so far, says so, and exits 143 or 130: a run cut short by a time limit on a lent
#   machine still leaves its figures.
#
# Peers are found through LLAMA_BENCH, IK_LLAMA_BENCH and LLAMA2C_RUN (paths), for example
#   LLAMA_BENCH=/work/peers/llama.cpp/build/bin/llama-bench
#   IK_LLAMA_BENCH=/work/peers/ik_llama.cpp/build/bin/llama-bench
#   LLAMA2C_RUN=/work/peers/llama2c/run_st
# (those are the defaults; ../shared/peers/build.sh DIR [--ik] builds them). A missing peer is
# skipped with a message. run.c needs a tokenizer: LLAMA2C_TOKENIZER (default
# ../shared/models/tokenizer.bin).
#
# Environment: BENCH_ROUNDS (5), BENCH_THREADS ("1 2"), BENCH_QUANTS, BENCH_PP (128), BENCH_BATCH,
# BENCH_TG (128), BENCH_DIR (/tmp/memwall-bench-peers), BENCH_NO_BUILD=1, BENCH_PROBE_REPS (5),
# BENCH_PROBE_EACH (1),
# BENCH_MODELS (GGUF files to run besides the synthetic ones, each as PATH or NAME=PATH: a real
# model, or a large synthetic shape such as `memwall synth --shape falcon-7b --quant q4_k_m`'s),
# BENCH_LLAMA2C (1; 0 leaves out the llama2.c checkpoint and run.c). BENCH_QUANTS="" with
# BENCH_MODELS runs only the given models.
set -eu
case "${1:-}" in
-h|--help) sed -n '2,/^set -eu/p' "$0" | sed '$d'; exit 0 ;;
esac
cd "$(dirname "$0")/.."
builddir=${1:-build}
rounds=${BENCH_ROUNDS:-5}
threads_list=${BENCH_THREADS:-1 2}
quants=${BENCH_QUANTS-q4_0 q8_0 q4_k_m f32}
pp=${BENCH_PP:-128}
tg=${BENCH_TG:-128}
dir=${BENCH_DIR:-/tmp/memwall-bench-peers}
probe_reps=${BENCH_PROBE_REPS:-5}
probe_each=${BENCH_PROBE_EACH:-1}
llama_bench=${LLAMA_BENCH:-/work/peers/llama.cpp/build/bin/llama-bench}
ik_bench=${IK_LLAMA_BENCH:-/work/peers/ik_llama.cpp/build/bin/llama-bench}
l2c_run=${LLAMA2C_RUN:-/work/peers/llama2c/run_st}
l2c_tok=${LLAMA2C_TOKENIZER:-../shared/models/tokenizer.bin}

if [ "${BENCH_NO_BUILD:-0}" != 1 ]; then
	scripts/build.sh "$builddir" >/dev/null
fi
mw="$builddir/src/memwall"
mkdir -p "$dir"
raw="$dir/raw.tsv" # kind engine model threads value
: >"$raw"

have() { # have NAME PATH: 1 when PATH is executable, else a message and 0
	if [ -x "$2" ]; then echo 1; else
		echo "note: $1 not found at $2 (set the variable named in --help): skipped" >&2
		echo 0
	fi
}
have_ll=$(have llama.cpp "$llama_bench")
have_ik=$(have ik_llama.cpp "$ik_bench")
have_l2c=$(have "llama2.c run.c" "$l2c_run")
if [ "$have_l2c" = 1 ] && [ ! -f "$l2c_tok" ]; then
	echo "note: run.c's tokenizer $l2c_tok is absent (LLAMA2C_TOKENIZER): run.c skipped" >&2
	have_l2c=0
fi

# legacy V1 OUT: the llama2.c "ak42" version-1 checkpoint V1 rewritten in the legacy layout,
# the one run.c reads (export.py legacy_export: the 7-int header, a negative vocabulary for an
# unshared classifier, the tensors in the legacy order with run.c's unused RoPE tables zeroed).
legacy() {
	python3 - "$1" "$2" <<'PY'
import struct, sys
src, out = sys.argv[1], sys.argv[2]
b = open(src, "rb").read()
magic, version = struct.unpack_from("<Ii", b, 0)
assert magic == 0x616B3432 and version == 1, "not an ak42 version-1 checkpoint"
d, h, L, nh, nkv, V, S = struct.unpack_from("<7i", b, 8)
shared = b[36]
kv = d * nkv // nh
f = 4
sizes = [("rms_att", L * d), ("rms_ffn", L * d), ("rms_final", d), ("tok", V * d),
         ("wq", L * d * d), ("wk", L * kv * d), ("wv", L * kv * d), ("wo", L * d * d),
         ("w1", L * h * d), ("w2", L * d * h), ("w3", L * h * d)]
t, pos = {}, 256
for name, n in sizes:
    t[name] = b[pos:pos + n * f]
    pos += n * f
wcls = b"" if shared else b[pos:pos + V * d * f]
zeros = bytes(S * (d // nh // 2) * f)
with open(out + ".tmp", "wb") as o:
    o.write(struct.pack("<7i", d, h, L, nh, nkv, V if shared else -V, S))
    for name in ("tok", "rms_att", "wq", "wk", "wv", "wo", "rms_ffn", "w1", "w2", "w3", "rms_final"):
        o.write(t[name])
    o.write(zeros + zeros + wcls)
import os
os.rename(out + ".tmp", out)
PY
}

# synth FORMAT QUANT: the model's path, written on first use.
synth() {
	if [ "$1" = llama2c ]; then path="$dir/stories110M-f32.bin"; else path="$dir/stories110M-$2.gguf"; fi
	if [ ! -f "$path" ]; then
		echo "synthesizing $path ..." >&2
		if [ "$1" = llama2c ]; then
			"$mw" synth --shape stories110M --format llama2c -o "$path" >&2
		else
			"$mw" synth --shape stories110M --format gguf --quant "$2" -o "$path" >&2
		fi
	fi
	echo "$path"
}

now_ns() { date +%s%N; }
rec() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$raw"; }

# The tables, from the cells recorded in $raw so far.
summary() {
python3 - "$raw" <<'PY'
import statistics, sys
from collections import defaultdict
cells = defaultdict(list)
texts = defaultdict(set) # cells that hold words: the kernel tables a batch ran
for line in open(sys.argv[1]):
    kind, eng, model, t, v = line.rstrip("\n").split("\t")
    try:
        cells[(kind, eng, model, t)].append(float(v))
    except ValueError:
        if v:
            texts[(kind, eng, model, t)].add(v)
med = {k: statistics.median(v) for k, v in cells.items() if v}
def get(*k): return med.get(k)
threads = sorted({k[3] for k in med if k[0] == "roof_before"}, key=int)
def gbs(v): return "not measured" if v is None else f"{v} GB/s"
for t in threads:
    print(f"read roof at t={t}: before {gbs(get('roof_before', '-', '-', t))}, "
          f"after {gbs(get('roof_after', '-', '-', t))} (memwall bandwidth --kernel read, median)")
print("\nload (median GB/s of the file's size, cached file):")
for m in sorted({k[2] for k in med if k[0] == "load_gbs"}):
    c, w = get("load_gbs", "cat", m, "1"), get("load_gbs", "memwall", m, "1")
    ratio = f"{w / c:.2f}x cat" if c and w else "n/a"
    print(f"  {m:14s} cat {c or float('nan'):6.2f}  memwall default load {w or float('nan'):6.2f}  {ratio}")
peers = ["llama.cpp", "ik_llama.cpp", "run.c"]
for kind, title in (("pp", "prompt processing"), ("tg", "decode")):
    print(f"\n{title} (median tok/s; ratio = memwall / peer):")
    for m in sorted({k[2] for k in med if k[0] == kind}):
        for t in threads:
            w = get(kind, "memwall", m, t)
            if w is None:
                continue
            parts = [f"  {m:14s} t={t} memwall {w:8.1f}"]
            for p in peers:
                v = get(kind, p, m, t)
                if v:
                    parts.append(f"{p} {v:8.1f} ({w / v:4.2f}x)")
            b, roof = get("bytes", "memwall", m, t), get("roof_before", "-", "-", t)
            after = get("roof_after", "-", "-", t)
            if kind == "tg" and b and roof:
                # against both probes: the roof itself moves on a shared machine (20-25 % within
                # one run on the 2-vCPU VM this was written on), and one figure would hide it
                pct = f"{100 * b * w / (roof * 1e9):3.0f}%"
                if after:
                    pct += f" / {100 * b * w / (after * 1e9):.0f}%"
                parts.append(f"{pct} of roof before / after ({b / 1e6:.1f} MB/token)")
                # each run against the probe made right before it, the median of the rounds
                adj = get("tg_roof_pct", "memwall", m, t)
                if adj:
                    parts.append(f"{adj:.0f}% of the roof probed just before each run")
            tt = get("ttft", "memwall", m, t)
            if kind == "tg" and tt:
                parts.append(f"ttft {tt:.1f} ms")
            print("  ".join(parts))
bmodels = sorted({k[2] for k in med if k[0] == "batch"})
if bmodels:
    print("\nbatched decode at t=1 (median tok/s of all sequences; ratio to batch 1: of the medians,"
          "\nthen the median of each round's own ratio, the figure to trust on a noisy machine;"
          "\n[the quant table that ran each x8 weight type at that batch's tokens a call]):")
    def tables(k, m):
        t = texts.get(("batch_table", k, m, "1"))
        return f" [{' | '.join(sorted(t))}]" if t else ""
    for m in bmodels:
        one = get("batch", "b1", m, "1")
        parts = [f"  {m:14s} batch 1 {one or float('nan'):7.1f}{tables('b1', m)}"]
        for k in sorted({k[1] for k in med if k[0] == "batch" and k[2] == m} - {"b1"},
                        key=lambda e: int(e[1:])):
            v = get("batch", k, m, "1")
            # each round ran batch 1 then this batch: paired, unless a run failed
            b1, bk = cells[("batch", "b1", m, "1")], cells[("batch", k, m, "1")]
            pr = (f"; per round {statistics.median(x / y for x, y in zip(bk, b1)):.2f}x"
                  if len(b1) == len(bk) else "")
            parts.append((f"batch {k[1:]} {v:7.1f} ({v / one:.2f}x{pr})" if one else f"batch {k[1:]} {v:7.1f}")
                         + tables(k, m))
        print("  ".join(parts))
steps = {k: v for k, v in med.items() if k[0] == "step_us"}
if steps:
    print("\npool barrier cost (stories260K, decode per token, median us; fits in cache):")
    for pin in ("pin-cpus", "pin-none"):
        one, two = get("step_us", pin, "stories260K", "1"), get("step_us", pin, "stories260K", "2")
        if one and two:
            print(f"  {pin}: t=1 {one:.1f}  t=2 {two:.1f}  (t=2 - t=1/2: {two - one / 2:.1f} us of "
                  f"synchronisation per token at most)")
PY
}

# Cut short: the tables of what ran, then the signal's exit status. The shell runs this once
# the command in progress (one run) has returned.
stopped() {
	trap - TERM INT
	echo "bench-peers: stopped by SIG$1 before the end: the tables below hold only the runs" \
		"made so far"
	summary || true
	exit "$2"
}
trap 'stopped TERM 143' TERM
trap 'stopped INT 130' INT

# Median read GB/s at $1 threads, as memwall bandwidth measures the roof.
probe() {
	"$mw" bandwidth -t "$1" --kernel read --reps "$probe_reps" --json 2>/dev/null | python3 -c '
import json, sys
print("%.2f" % json.load(sys.stdin)["roof_read"][0]["median_gbps"])' || echo nan
}

# A field KEY=VALUE from memwall's --report-line lines on stdin.
field() { tr ' ' '\n' | sed -n "s/^$1=//p" | head -n 1; }

ids=1
i=1
while [ "$i" -lt "$pp" ]; do ids="$ids,$((100 + i))"; i=$((i + 1)); done

# memwall pp and tg on MODEL at T threads; also the bytes per token and time to first token.
run_mw() {
	name=$1 model=$2 t=$3
	out=$("$mw" generate -m "$model" --prompt-ids "$ids" -n 1 --temperature 0 --ids \
		--report-line -t "$t" 2>&1 >/dev/null) || { echo "memwall pp failed: $out" >&2; return 0; }
	ms=$(echo "$out" | grep memwall-tokens | field prompt_ms)
	rec pp memwall "$name" "$t" "$(python3 -c "print($pp / ($ms / 1e3))")"
	# the read roof right before the run, for its own % of roof (the roof moves)
	roof=nan
	[ "$probe_each" = 0 ] || roof=$(probe "$t")
	out=$("$mw" generate -m "$model" --prompt-ids 1 -n "$tg" --temperature 0 --ids \
		--switch-at 1 --report-line -t "$t" 2>&1 >/dev/null) ||
		{ echo "memwall tg failed: $out" >&2; return 0; }
	line=$(echo "$out" | grep memwall-tokens)
	# The decode steps include token 2's wait for the image: the rate on it.
	tgs=$(echo "$out" | grep memwall-load | field decode_after_switch_tok_s)
	[ -n "$tgs" ] || tgs=$(python3 -c "print($(echo "$line" | field decode_steps) * 1e3 / $(echo "$line" | field decode_ms))")
	rec tg memwall "$name" "$t" "$tgs"
	rec ttft memwall "$name" "$t" "$(echo "$out" | grep memwall-load | field ttft_ms)"
	# bytes read per step: weights and KV read (memwall-bytes; the KV written is not a read)
	b=$(echo "$out" | grep memwall-bytes)
	bytes=$(($(echo "$b" | field weights_per_token) + $(echo "$b" | field kv_read_per_token)))
	rec bytes memwall "$name" "$t" "$bytes"
	[ "$roof" = nan ] || rec tg_roof_pct memwall "$name" "$t" \
		"$(python3 -c "print(100 * $bytes * $tgs / ($roof * 1e9))")"
}

# llama-bench BIN ENGINE NAME MODEL T EXTRA_TG...: pp and tg tok/s (its avg_ts, one repetition).
run_lb() {
	bin=$1 eng=$2 name=$3 model=$4 t=$5
	shift 5
	for kind in pp tg; do
		if [ "$kind" = pp ]; then args="-p $pp -n 0"; else args="-p 0 -n $tg $*"; fi
		# shellcheck disable=SC2086
		v=$("$bin" -m "$model" $args -t "$t" -r 1 -o json 2>/dev/null | python3 -c '
import json, sys
print(json.load(sys.stdin)[0]["avg_ts"])' 2>/dev/null) || v=""
		[ -n "$v" ] && rec "$kind" "$eng" "$name" "$t" "$v" ||
			echo "note: $eng $kind on $name failed" >&2
	done
}

# run.c decode tok/s on the llama2.c checkpoint (it prints "achieved tok/s: X" on stderr).
run_l2c() {
	v=$("$l2c_run" "$1" -z "$l2c_tok" -t 0 -n "$tg" -i "" 2>&1 >/dev/null |
		sed -n 's/.*achieved tok\/s: \([0-9.]*\).*/\1/p')
	[ -n "$v" ] && rec tg run.c f32-llama2c 1 "$v" || echo "note: run.c failed" >&2
}

echo "memwall vs peers: $("$mw" version | head -n 1)"
echo "rounds $rounds, threads $threads_list, pp $pp, tg $tg; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "(synthetic models: random weights, real shapes; every figure indicative of this machine)"
models=""
for q in $quants; do models="$models $q:$(synth gguf "$q")"; done
for m in ${BENCH_MODELS:-}; do
	case "$m" in
	*=*) name=${m%%=*} file=${m#*=} ;;
	*) file=$m name=$(basename "$m" .gguf) ;;
	esac
	[ -f "$file" ] || { echo "BENCH_MODELS: $file is not a file: give GGUF paths" >&2; exit 2; }
	models="$models $name:$file"
done
with_l2c=${BENCH_LLAMA2C:-1}
[ "$with_l2c" = 1 ] || have_l2c=0
l2c=""
[ "$with_l2c" = 1 ] && l2c=$(synth llama2c f32)
l2c_legacy="$dir/stories110M-f32-legacy.bin"
if [ "$have_l2c" = 1 ] && [ ! -f "$l2c_legacy" ]; then
	legacy "$l2c" "$l2c_legacy" || { echo "note: no legacy checkpoint: run.c skipped" >&2; have_l2c=0; }
fi

for t in $threads_list; do rec roof_before - - "$t" "$(probe "$t")"; done

# Load: cat against memwall's default load, interleaved, on the cached files.
r=0
while [ "$r" -lt "$rounds" ]; do
	for m in $models ${l2c:+"f32-llama2c:$l2c"}; do
		name=${m%%:*} file=${m#*:}
		cat "$file" >/dev/null
		a=$(now_ns); cat "$file" >/dev/null; b=$(now_ns)
		bytes=$(stat -c %s "$file")
		rec load_gbs cat "$name" 1 "$(python3 -c "print($bytes / (($b - $a) / 1e9) / 1e9)")"
		# --load repack: the default (overlap) maps the file at load and builds the image later.
		out=$("$mw" generate -m "$file" --prompt-ids 1 -n 1 --temperature 0 --ids --report-line \
			--load repack 2>&1 >/dev/null)
		ms=$(echo "$out" | grep memwall-load | field load_ms)
		rec load_gbs memwall "$name" 1 "$(python3 -c "print($bytes / ($ms / 1e3) / 1e9)")"
		echo "$out" | grep -q 'huge_page_bytes=0 ' && echo "note: $name: no 2 MiB pages" >&2
	done
	r=$((r + 1))
done

for t in $threads_list; do
	r=0
	while [ "$r" -lt "$rounds" ]; do
		for m in $models; do
			name=${m%%:*} file=${m#*:}
			run_mw "$name" "$file" "$t"
			[ "$have_ll" = 1 ] && run_lb "$llama_bench" llama.cpp "$name" "$file" "$t"
			[ "$have_ik" = 1 ] && run_lb "$ik_bench" ik_llama.cpp "$name" "$file" "$t" -rtr 1 -fa 0
		done
		[ -n "$l2c" ] && run_mw f32-llama2c "$l2c" "$t"
		[ "$have_l2c" = 1 ] && [ "$t" = 1 ] && run_l2c "$l2c_legacy"
		r=$((r + 1))
	done
done

# Batched decode (issue 30): `generate --batch B` at 1 thread, B = 1 and each of BENCH_BATCH,
# on every GGUF model, interleaved per round; the figure is tokens of all sequences per second
# (memwall-tokens' decode_steps counts them all). --batch loads with repack, so B = 1 runs the
# same path.
batches=${BENCH_BATCH-2 4}
if [ -n "$batches" ]; then
	r=0
	while [ "$r" -lt "$rounds" ]; do
		for m in $models; do
			name=${m%%:*} file=${m#*:}
			for b in 1 $batches; do
				out=$("$mw" generate -m "$file" --prompt-ids 1 -n "$tg" --batch "$b" \
					--temperature 0 --ids --report-line -t 1 2>&1 >/dev/null) &&
					line=$(echo "$out" | grep memwall-tokens) ||
					{ echo "note: batch $b on $name failed" >&2; continue; }
				# decode_steps counts the tokens of all sequences
				rec batch "b$b" "$name" 1 "$(python3 -c "print($(echo "$line" | field decode_steps) * 1e3 / $(echo "$line" | field decode_ms))")"
				# the quant table of each x8 weight type at b tokens a call (issue 42: the
				# measured kernel choice, or the default)
				rec batch_table "b$b" "$name" 1 "$(echo "$out" |
					sed -n 's/^memwall generate: quant kernels at [0-9]* tokens a call: //p')"
			done
		done
		r=$((r + 1))
	done
fi

# Barrier cost: a model that fits in cache, per-token decode time at 1 and 2 threads.
tiny=../shared/models/stories260K.bin
if [ -f "$tiny" ]; then
	r=0
	while [ "$r" -lt "$rounds" ]; do
		for pin in cpus none; do
			for t in 1 2; do
				line=$("$mw" generate -m "$tiny" --prompt-ids 1 -n 256 --temperature 0 --ids \
					--report-line -t "$t" --pin "$pin" 2>&1 >/dev/null | grep memwall-tokens)
				rec step_us "pin-$pin" stories260K "$t" "$(python3 -c "print($(echo "$line" | field decode_ms) * 1e3 / $(echo "$line" | field decode_steps))")"
			done
		done
		r=$((r + 1))
	done
else
	echo "note: $tiny absent: no barrier-cost step" >&2
fi

for t in $threads_list; do rec roof_after - - "$t" "$(probe "$t")"; done

summary
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
