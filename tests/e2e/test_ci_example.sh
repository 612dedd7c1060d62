#!/bin/sh
# tests/e2e/test_ci_example.sh: runs the commands of scripts/ci-example/memwall-regression.yml as
# the runner would, and checks their exit codes and what they leave.
#
# The run: blocks of the steps "Run", "Check", "Import" and "Trend site" are extracted from the
# YAML and run with sh -e, as GitHub Actions runs them (bash -e there), with the job's env
# pointed here: the built memwall, a results store in a scratch folder, a 2-token protocol on
# the synthetic stories260K model and the simulated PMU on the recorded Arrow Lake tree, so
# DRAM is "measured" as on the bare-metal runner, with bytes per token set by a script
# (tests/lib/sim_series.h explains the plan of reads it follows). The "Build" block is only
# checked to build with meson and ninja: meson test has built memwall already, and a build
# inside a test would rebuild the tree the test runs from. The gate judges MB/token alone
# (CHECK_METRICS): the tok/s of millisecond runs on a busy machine is noise.
#
# Cases, as main's pushes (Import runs) and pull requests (it does not):
#   main 1, main 2   no history yet (0, then 1 earlier record): Check warns "not comparable"
#                    and passes (exit 0)
#   main 3           against the 2 before it, the same bytes per token: exit 0, no failure
#   pull request     15 % more bytes per token: exit 1, a JUnit failure for dram_MB_per_token,
#                    not imported
#   pull request     another protocol, so a new series: warns, exit 0
# After each, the Trend site step writes ci-out/site; at the end it shows 1 series of 3 records
# (the pull requests' records are not in the store) and its page.
set -u
src=${MEMWALL_SOURCE_ROOT:?run under meson test}
bin=${MEMWALL_BIN:?run under meson test}
yml=$src/scripts/ci-example/memwall-regression.yml
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

tmp=$(mktemp -d /tmp/mw-test-ci-XXXXXX) || { echo "SKIP: no scratch folder"; exit 77; }
trap 'rm -rf "$tmp"' EXIT

# The body of the run: | block of the step named $1, de-indented.
step() {
	awk -v want="$1" '
	/^ *- name: / { name = $0; sub(/^ *- name: */, "", name); inrun = 0; next }
	name == want && /^ *run: \|/ { inrun = 1; match($0, /^ */); ind = RLENGTH + 2; next }
	inrun {
		match($0, /^ */)
		if ($0 !~ /^ *$/ && RLENGTH < ind) { inrun = 0; next }
		print substr($0, ind + 1)
	}' "$yml"
}

for s in Build Run Check Import "Trend site"; do
	f="$tmp/$(echo "$s" | tr -d ' ').sh"
	step "$s" >"$f"
	[ -s "$f" ] || fail "$yml: no run: block in the step named $s"
done
grep -q 'ninja -C build' "$tmp/Build.sh" || fail "Build step does not run ninja -C build"
grep -q 'db --db "$STORE" check "$NEW" --against last:10' "$tmp/Check.sh" ||
	fail "Check step does not run db check --against last:10"
grep -q -- '--format junit' "$tmp/Check.sh" || fail "Check step writes no JUnit"
grep -q 'db --db "$STORE" import' "$tmp/Import.sh" || fail "Import step does not import"
grep -q 'site -o "$OUT/site"' "$tmp/Trendsite.sh" || fail "Trend site step does not write the site"
grep -q "IMPORT: \${{ github.event_name == 'push' && github.ref == 'refs/heads/main' }}" "$yml" ||
	fail "the job imports other records than main's"

# The simulated PMU: per run 6 reads (idle start and end, prefill start and its one chunk, 2
# decode tokens); the idle window gets 1 count, every other window X counts of data_read on
# each of the tree's two free-running IMC instances (types 24 and 25 from its sysfs files;
# config = umask << 8 | event, tests/data/sim/README.md) and X / 100 of data_write.
script() { # X FILE
	for type in 24 25; do
		for cfg in 0x20ff 0x30ff; do
			s=$1
			[ "$cfg" = 0x30ff ] && s=$(($1 / 100))
			printf 'perf type=%s config=%s cpu=* start=0 steps=%s,1,%s,%s,%s,%s,%s,1,%s,%s,%s,%s,%s,1,%s,%s,%s,%s\n' \
				"$type" "$cfg" "$s" "$s" "$s" "$s" "$s" "$s" "$s" "$s" "$s" "$s" "$s" "$s" "$s" "$s" "$s"
		done
	done >"$2"
}
script 15625 "$tmp/a.txt"
script 17969 "$tmp/b.txt" # 15 % more bytes per token
protocol() { # NAME
	cat >"$tmp/$1.json" <<JSON
{"name": "$1", "description": "tests/e2e/test_ci_example.sh",
 "model": {"format": "llama2c", "synth": {"shape": "stories260K", "seed": 42}}, "tokenizer": null,
 "engine": {"kind": "builtin", "threads": 1, "kernels": "auto", "load": "mmap"},
 "prompt_tokens": [1, 5, 9], "decode_tokens": 2, "runs": 3, "warmup_runs": 0,
 "sampling": {"temperature": 0, "seed": 42},
 "counters": {"dram": "required", "backend": "auto", "energy": "off"}, "idle_baseline_ms": 1,
 "acceptance": {"max_cv_mb_per_token_pct": 5.0, "min_tokens": 2},
 "drift": {"max_bandwidth_change_pct": 50, "probe_ms": 0},
 "roofline": {"bandwidth_gbps": null, "llc_bytes": null}}
JSON
}
protocol ci-sim
protocol ci-other
export MEMWALL_COUNTERS=sim MEMWALL_SYSFS_ROOT="$src/tests/data/sysfs/arrow-lake"
mkdir -p "$tmp/runner"
export MEMWALL="$bin" STORE="$tmp/runner/results.db" OUT="$tmp/ci-out"
export CHECK_METRICS="--metric dram_MB_per_token" GITHUB_STEP_SUMMARY="$tmp/summary.md"
cd "$tmp" || exit 1

# ci NAME SCRIPT PROTOCOL MAIN WANT: one run of the job; MAIN=1 imports (a push to main); the
# Check step must exit WANT.
ci() {
	export MEMWALL_SIM_SCRIPT="$tmp/$2" PROTOCOL="$tmp/$3.json"
	sh -e "$tmp/Run.sh" >"$tmp/$1.log" 2>&1
	rc=$?
	[ "$rc" -eq 0 ] || { cat "$tmp/$1.log" >&2; fail "$1: Run exited $rc"; }
	grep -q '"measured": true' "$(cat "$OUT/record-path")" || fail "$1: DRAM not measured"
	store=0
	[ -e "$STORE" ] && store=1
	sh -e "$tmp/Check.sh" >"$tmp/$1.check.log" 2>&1
	rc=$?
	[ "$rc" -eq "$5" ] || { cat "$tmp/$1.check.log" "$OUT/check.xml" >&2;
		fail "$1: Check exited $rc, want $5"; }
	# A fresh runner has no store yet: db check cannot open it and writes no JUnit.
	[ "$store" -eq 0 ] || grep -q '<testsuite name="memwall db check"' "$OUT/check.xml" ||
		fail "$1: no JUnit testsuite"
	if [ "$4" -eq 1 ]; then
		sh -e "$tmp/Import.sh" >>"$tmp/$1.log" 2>&1 || fail "$1: Import exited $?"
	fi
	sh -e "$tmp/Trendsite.sh" >>"$tmp/$1.log" 2>&1 || fail "$1: Trend site exited $?"
	[ -f "$OUT/site/index.html" ] || fail "$1: no $OUT/site/index.html"
}

ci main1 a.txt ci-sim 1 0
grep -q '::warning::memwall db check: not comparable' "$tmp/main1.check.log" ||
	fail "main1: no warning for a store without history"
ci main2 a.txt ci-sim 1 0
grep -q '::warning::' "$tmp/main2.check.log" || fail "main2: 1 earlier record, no warning"
ci main3 a.txt ci-sim 1 0
grep -q '::warning::' "$tmp/main3.check.log" && fail "main3: a warning with 2 earlier records"
grep -q '<failure' "$OUT/check.xml" && fail "main3: a failure for the same bytes per token"
ci pr-regression b.txt ci-sim 0 1
grep -q 'name="dram_MB_per_token"' "$OUT/check.xml" || fail "pr-regression: no dram_MB_per_token testcase"
grep -q 'type="regression"' "$OUT/check.xml" || fail "pr-regression: no regression in the JUnit"
grep -q 'REGRESSION' "$GITHUB_STEP_SUMMARY" || fail "the step summary shows no regression"
ci pr-new-series a.txt ci-other 0 0
grep -q '::warning::' "$tmp/pr-new-series.check.log" || fail "pr-new-series: no warning"

# The artifact: main's 3 records, one series, its page.
grep -q 'memwall: 1 series, 3 records' "$OUT/site/index.html" ||
	fail "the trend site does not show 1 series of 3 records"
ls "$OUT"/site/series/*.html >/dev/null 2>&1 || fail "the trend site has no series page"
[ "$(ls "$OUT"/site/records | wc -l)" -eq 3 ] || fail "the trend site does not hold 3 records"

[ $fails -eq 0 ] && echo "ci example: all cases passed"
exit $((fails > 0))
