#!/bin/sh
# tests/e2e/test_ci_example.sh: runs the commands of scripts/ci-example/memwall-regression.yml as
# the runner would, and checks their exit codes.
#
# The run: blocks of the steps "Run" and "Compare" are extracted from the YAML and run with
# sh -e, as GitHub Actions runs them (bash -e there), with the job's env pointed here: the
# built memwall, protocols/stories260k-smoke.json (seconds per run) and the simulated PMU on
# the recorded Arrow Lake tree, so DRAM is "measured" as on the bare-metal runner. The
# "Build" block is only checked to build with meson and ninja: meson test has built memwall
# already, and a build inside a test would rebuild the tree the test runs from.
#
# Cases: the new record against a copy of itself (exit 0), against a baseline that ran 4x
# faster, i.e. a regression fixture (exit 1, a JUnit failure for tok_per_s), and against a
# record made with --threads 2 (exit 2).
set -u
src=${MEMWALL_SOURCE_ROOT:?run under meson test}
bin=${MEMWALL_BIN:?run under meson test}
fixture=${MEMWALL_COMPARE_FIXTURE:?run under meson test}
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

for s in Build Run Compare; do
	step "$s" >"$tmp/$s.sh"
	[ -s "$tmp/$s.sh" ] || fail "$yml: no run: block in the step named $s"
done
grep -q 'ninja -C build' "$tmp/Build.sh" || fail "Build step does not run ninja -C build"
grep -q 'compare "$BASELINE" "$NEW" --format junit' "$tmp/Compare.sh" ||
	fail "Compare step does not run compare --format junit"

# The simulated PMU: both free-running IMC instances of the Arrow Lake tree count steadily
# (types 24 and 25 from its sysfs files; config = umask << 8 | event, tests/data/sim/README.md).
cat >"$tmp/sim.txt" <<SIM
perf type=24 config=0x20ff cpu=* start=0 step=16384
perf type=24 config=0x30ff cpu=* start=0 step=1638
perf type=25 config=0x20ff cpu=* start=0 step=16384
perf type=25 config=0x30ff cpu=* start=0 step=1638
SIM
export MEMWALL_COUNTERS=sim MEMWALL_SIM_SCRIPT="$tmp/sim.txt"
export MEMWALL_SYSFS_ROOT="$src/tests/data/sysfs/arrow-lake" MEMWALL_CACHE_DIR="$tmp/cache"
# The smoke protocol, with its tok/s CV limit and drift probe relaxed: its runs take about a
# millisecond, so on a loaded machine tok/s varies by more than 50 % and compare would rightly
# call the records "not comparable" (exit 3). This test is about the workflow's exit codes.
sed -e 's/"max_cv_tok_s_pct": [0-9.]*/"max_cv_tok_s_pct": 100000.0/' -e 's/"probe_ms": 20/"probe_ms": 0/' \
	-e 's/"runs": 3,/"runs": 8,/' \
	"$src/protocols/stories260k-smoke.json" >"$tmp/stories260k-smoke.json"
grep -q '"probe_ms": 0' "$tmp/stories260k-smoke.json" || fail "could not relax the smoke protocol"
export MEMWALL="$bin" PROTOCOL="$tmp/stories260k-smoke.json" OUT="$tmp/ci-out"
export GITHUB_STEP_SUMMARY="$tmp/summary.md"
cd "$tmp" || exit 1

sh -e "$tmp/Run.sh" >"$tmp/run.log" 2>&1
rc=$?
[ $rc -eq 0 ] || { cat "$tmp/run.log" >&2; fail "Run step exited $rc, want 0"; exit 1; }
new=$(cat "$OUT/record-path")
grep -q '"measured": true' "$new" || fail "the sim PMU did not measure DRAM in $new"
cp "$new" "$tmp/new.json"

# compare: runs the Compare step against $1; checks the exit code is $2.
compare() {
	BASELINE=$1 sh -e "$tmp/Compare.sh" >"$tmp/compare.log" 2>&1
	rc=$?
	[ "$rc" -eq "$2" ] || { cat "$tmp/compare.log" "$OUT/compare.xml" >&2;
		fail "Compare against $1 exited $rc, want $2"; }
	grep -q '<testsuite name="memwall compare"' "$OUT/compare.xml" ||
		fail "no JUnit testsuite in $OUT/compare.xml"
}

# 1. Against itself: nothing changed.
cp "$tmp/new.json" "$tmp/baseline-same.json"
compare "$tmp/baseline-same.json" 0
grep -q '<failure' "$OUT/compare.xml" && fail "a failure comparing a record with itself"

# 2. The regression fixture: a baseline whose every token took a quarter as long, so NEW's
#    tok/s is 75 % lower; it must fail the job. (8 runs and a large step keep the verdict a
#    regression, not "inconclusive", when millisecond runs vary by 50 % on a loaded machine.)
"$fixture" "$tmp/new.json" "$tmp/baseline-fast.json" 0.25 || fail "compare-fixture failed"
"$bin" validate "$tmp/baseline-fast.json" >/dev/null || fail "the regression fixture is invalid"
compare "$tmp/baseline-fast.json" 1
grep -q 'name="tok_per_s"' "$OUT/compare.xml" || fail "no tok_per_s testcase"
grep -q 'type="regression"' "$OUT/compare.xml" || fail "no regression failure in the JUnit"

# 3. A baseline made with --threads 2: the settings differ, compare refuses.
"$bin" run "$PROTOCOL" -o "$tmp/t2" --threads 2 >/dev/null 2>&1
compare "$(ls "$tmp"/t2/*.json | head -n 1)" 2
grep -q 'engine.threads' "$tmp/compare.log" || fail "the refusal does not name engine.threads"

[ $fails -eq 0 ] && echo "ci example: all cases passed"
exit $((fails > 0))
