#!/bin/sh
# tests/fuzz/run.sh MODE TARGET BINARY SEEDGEN CORPUS SEEDS: one fuzz target's test.
#
# Writes the seed corpus made from the fixtures into CORPUS (fuzz_seeds), then
#   MODE replay: runs BINARY (built with replay.c) once over CORPUS and SEEDS;
#   MODE fuzz:   runs BINARY (built with libFuzzer) for $MEMWALL_FUZZ_SECONDS (default 5)
#                seconds over CORPUS (where it adds what it finds) and SEEDS, then says how many
#                runs it made. A crash leaves its input in CORPUS/../artifacts/.
set -eu
mode=$1 target=$2 bin=$3 seedgen=$4 corpus=$5 seeds=$6
mkdir -p "$corpus" "$seeds"
"$seedgen" "$target" "$corpus"
case "$mode" in
replay)
	exec "$bin" "$corpus" "$seeds"
	;;
fuzz)
	artifacts=$(dirname "$corpus")/artifacts
	mkdir -p "$artifacts"
	# -rss_limit_mb: a parser that allocates without bound fails here, not on a user's machine
	# -timeout: a hang fails in 10 s
	exec "$bin" -max_total_time="${MEMWALL_FUZZ_SECONDS:-5}" -rss_limit_mb=2048 -timeout=10 \
		-print_final_stats=1 -artifact_prefix="$artifacts/$target-" ${MEMWALL_FUZZ_ARGS:-} \
		"$corpus" "$seeds"
	;;
*)
	echo "run.sh: unknown mode '$mode' (replay or fuzz)" >&2
	exit 2
	;;
esac
