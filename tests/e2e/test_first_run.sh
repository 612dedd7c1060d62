#!/bin/sh
# tests/e2e/test_first_run.sh: what a newcomer sees on the first run, without installing or
# rebuilding anything:
#   bootstrap  with apt-get, dpkg-query and sudo stubbed: quiet on success (no package manager
#              output), never asks for linux-perf, --dev asks for nodejs and npm when node is
#              absent; on failure the log's tail and its path, exit 1
#   build      scripts/build.sh with meson stubbed: off a terminal ninja's lines go to
#              BUILDDIR/meson-logs/compile-log.txt (two lines said), with MEMWALL_VERBOSE=1 to
#              the output, and a failed compile prints their tail; scripts/run.sh does not throw
#              the build's output away
#   summary    scripts/test-summary.sh on a planted testlog.json lists each skip with its reason
#   acceptance a run that fails a CV limit says what to do, in one line, and exits 1
set -u
src=${MEMWALL_SOURCE_ROOT:?run under meson test}
bin=${MEMWALL_BIN:?run under meson test}
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

tmp=$(mktemp -d /tmp/mw-test-first-XXXXXX) || { echo "SKIP: no scratch folder"; exit 77; }
trap 'rm -rf "$tmp"' EXIT

# --- bootstrap ---------------------------------------------------------------------------
# A PATH of stubs and the few real tools bootstrap needs: no node, no npm, no perf.
stub=$tmp/stub
mkdir -p "$stub"
for t in id grep tail sed cat; do
	p=$(command -v "$t") || { echo "SKIP: no $t"; exit 77; }
	ln -s "$p" "$stub/$t"
done
cat >"$stub/dpkg-query" <<'S'
#!/bin/sh
exit 1
S
cat >"$stub/sudo" <<'S'
#!/bin/sh
exec "$@"
S
cat >"$stub/apt-get" <<'S'
#!/bin/sh
echo "apt-get $*" >>"$STUB_ARGS"
i=0
while [ $i -lt 500 ]; do echo "Unpacking package-$i ..."; i=$((i + 1)); done
case "$*" in *install*) [ -n "${STUB_FAIL:-}" ] && { echo "E: Unable to locate package nope"; exit 100; } ;; esac
exit 0
S
chmod +x "$stub"/dpkg-query "$stub"/sudo "$stub"/apt-get
sh_bin=$(command -v sh)

STUB_ARGS=$tmp/args TMPDIR=$tmp PATH=$stub "$sh_bin" "$src/scripts/bootstrap.sh" --dev \
	>"$tmp/boot.out" 2>&1
rc=$?
[ "$rc" -eq 0 ] || { cat "$tmp/boot.out" >&2; fail "bootstrap with a working apt-get: exit $rc"; }
[ "$(wc -l <"$tmp/boot.out")" -le 3 ] ||
	fail "bootstrap printed $(wc -l <"$tmp/boot.out") lines on success (want at most 3)"
grep -q Unpacking "$tmp/boot.out" && fail "bootstrap let the package manager's output through"
grep -q "Unpacking" "$tmp/memwall-bootstrap.log" 2>/dev/null ||
	fail "bootstrap kept no log in \$TMPDIR/memwall-bootstrap.log"
grep -q "linux-perf" "$tmp/args" && fail "bootstrap asks apt-get for linux-perf"
grep "install" "$tmp/args" | grep -q " nodejs npm" ||
	fail "bootstrap --dev without node does not install nodejs and npm"
rm -f "$tmp/args"
STUB_ARGS=$tmp/args TMPDIR=$tmp PATH=$stub "$sh_bin" "$src/scripts/bootstrap.sh" \
	>/dev/null 2>&1
grep -q "nodejs" "$tmp/args" && fail "bootstrap without --dev installs nodejs"

STUB_FAIL=1 STUB_ARGS=$tmp/args TMPDIR=$tmp PATH=$stub "$sh_bin" "$src/scripts/bootstrap.sh" \
	>"$tmp/bootf.out" 2>&1
rc=$?
[ "$rc" -eq 1 ] || fail "bootstrap with a failing apt-get: exit $rc, want 1"
grep -q "Unable to locate package nope" "$tmp/bootf.out" ||
	fail "a failed bootstrap does not print the log's tail"
grep -q "full log: $tmp/memwall-bootstrap.log" "$tmp/bootf.out" ||
	fail "a failed bootstrap does not name its log"
[ "$(wc -l <"$tmp/bootf.out")" -le 30 ] ||
	fail "a failed bootstrap printed $(wc -l <"$tmp/bootf.out") lines (want the tail only)"

# A user without sudo: a missing package is named, and nothing is attempted; with every
# package present, no warning at all. Also a log another user owns (root ran bootstrap
# before): a POSIX shell ends on a failed redirection of ':', so this once stopped with exit 2.
nosudo=$tmp/nosudo
mkdir -p "$nosudo"
for t in grep tail sed cat; do ln -s "$stub/$t" "$nosudo/$t"; done
cp "$stub/apt-get" "$nosudo/apt-get"
printf '#!/bin/sh\n[ "$1" = -u ] && { echo 1000; exit 0; }\nexit 1\n' >"$nosudo/id"
printf '#!/bin/sh\n[ -n "${STUB_PRESENT:-}" ] && { printf "install ok installed"; exit 0; }\nexit 1\n' \
	>"$nosudo/dpkg-query"
chmod +x "$nosudo/id" "$nosudo/dpkg-query"
mkdir -p "$tmp/ro"
: >"$tmp/ro/memwall-bootstrap.log"
chmod 0444 "$tmp/ro/memwall-bootstrap.log"
rm -f "$tmp/args"
STUB_ARGS=$tmp/args TMPDIR=$tmp PATH=$nosudo "$sh_bin" "$src/scripts/bootstrap.sh" \
	>"$tmp/nosudo.out" 2>&1
rc=$?
[ "$rc" -eq 1 ] || fail "bootstrap without sudo and a missing package: exit $rc, want 1"
grep -q "not root and no sudo: install these packages by hand.* meson" "$tmp/nosudo.out" ||
	fail "bootstrap without sudo does not name the missing packages: $(cat "$tmp/nosudo.out")"
[ -f "$tmp/args" ] && fail "bootstrap without sudo ran apt-get"
STUB_PRESENT=1 TMPDIR=$tmp/ro PATH=$nosudo "$sh_bin" "$src/scripts/bootstrap.sh" \
	>"$tmp/nosudo.out" 2>&1
rc=$?
if [ "$(id -u)" -ne 0 ]; then # root writes through 0444: the case needs another user's file
	[ "$rc" -eq 0 ] || fail "bootstrap with a log it cannot write: exit $rc: $(cat "$tmp/nosudo.out")"
fi
STUB_PRESENT=1 TMPDIR=$tmp PATH=$nosudo "$sh_bin" "$src/scripts/bootstrap.sh" \
	>"$tmp/nosudo.out" 2>&1
rc=$?
[ "$rc" -eq 0 ] || fail "bootstrap without sudo, everything present: exit $rc"
grep -q "sudo" "$tmp/nosudo.out" && fail "bootstrap warns about sudo with nothing to install"
# The failed install's log survives the runs after it that install nothing (issue 44: each
# run emptied it first, so the failure's log was gone by the time one looked).
grep -q "Unable to locate package nope" "$tmp/memwall-bootstrap.log" ||
	fail "a later bootstrap that installed nothing emptied the failed install's log"

# --- build -------------------------------------------------------------------------------
mkdir -p "$tmp/mstub"
cat >"$tmp/mstub/meson" <<'S'
#!/bin/sh
case "$1" in
setup) echo "The Meson build system"; mkdir -p "$2"; : >"$2/build.ninja" ;;
compile) echo "[1/2] Compiling C object a.o"; echo "[2/2] Linking target memwall"
	if [ -n "${STUB_FAIL:-}" ]; then echo "a.c:1: error: planted"; exit 1; fi ;;
esac
S
chmod +x "$tmp/mstub/meson"
PATH=$tmp/mstub:$PATH "$src/scripts/build.sh" "$tmp/b" >"$tmp/build.out" 2>&1 ||
	fail "build.sh with a stub meson: exit $?"
grep -q "Compiling C object" "$tmp/build.out" && fail "build.sh off a terminal prints ninja's lines"
[ "$(wc -l <"$tmp/build.out")" -le 3 ] ||
	fail "build.sh off a terminal printed $(wc -l <"$tmp/build.out") lines (want at most 3)"
grep -q "^\[1/2\] Compiling" "$tmp/b/meson-logs/compile-log.txt" 2>/dev/null ||
	fail "build.sh kept no ninja output in BUILDDIR/meson-logs/compile-log.txt"
grep -q "The Meson build system" "$tmp/build.out" && fail "build.sh prints meson setup's chatter"
MEMWALL_VERBOSE=1 PATH=$tmp/mstub:$PATH "$src/scripts/build.sh" "$tmp/b" >"$tmp/build.out" 2>&1 ||
	fail "build.sh MEMWALL_VERBOSE=1 with a stub meson: exit $?"
grep -q "^\[1/2\] Compiling" "$tmp/build.out" || fail "build.sh MEMWALL_VERBOSE=1 hides ninja's progress"
STUB_FAIL=1 PATH=$tmp/mstub:$PATH "$src/scripts/build.sh" "$tmp/b" >"$tmp/build.out" 2>&1 &&
	fail "build.sh with a failing compile: exit 0"
grep -q "error: planted" "$tmp/build.out" || fail "a failed compile does not print ninja's tail"
grep -q "build.sh[^#]*>/dev/null" "$src/scripts/run.sh" &&
	fail "scripts/run.sh sends the build's progress to /dev/null"

# --- summary -----------------------------------------------------------------------------
mkdir -p "$tmp/tree/meson-logs"
cat >"$tmp/tree/meson-logs/testlog.json" <<'S'
{"name": "memwall:unit / ok_one", "result": "OK", "stdout": "fine\n"}
{"name": "memwall:e2e / llama_node", "result": "SKIP", "stdout": "checking\nSKIP: node-llama-cpp is not installed (npm install --prefix scripts/llama-node)\n"}
{"name": "memwall:e2e / quiet_skip", "result": "SKIP", "stdout": "no frobnicator on this machine\n"}
{"name": "memwall:unit / broken", "result": "FAIL", "stdout": "boom\n"}
S
"$src/scripts/test-summary.sh" "$tmp/tree" >"$tmp/sum.out" 2>&1
grep -qx "skipped: memwall:e2e / llama_node: node-llama-cpp is not installed (npm install --prefix scripts/llama-node)" \
	"$tmp/sum.out" || fail "the summary does not list llama_node's skip with its reason"
grep -qx "skipped: memwall:e2e / quiet_skip: no frobnicator on this machine" "$tmp/sum.out" ||
	fail "the summary does not fall back to a skipping test's last line"
[ "$(tail -n 1 "$tmp/sum.out")" = "memwall: 1 passed, 1 failed, 2 skipped" ] ||
	fail "the summary's closing line: $(tail -n 1 "$tmp/sum.out")"
# test.sh --all runs `meson test --setup full`, whose log is testlog-full.json: the newest log
# counts, not an older testlog.json (nor a missing one, counted as a failure).
mkdir -p "$tmp/full/meson-logs"
echo '{"name": "memwall:unit / old", "result": "FAIL"}' >"$tmp/full/meson-logs/testlog.json"
touch -d '2020-01-01' "$tmp/full/meson-logs/testlog.json"
printf '%s\n' '{"name": "memwall:unit / a", "result": "OK"}' \
	'{"name": "memwall:kernels+neon / neon-qemu", "result": "OK"}' \
	>"$tmp/full/meson-logs/testlog-full.json"
[ "$("$src/scripts/test-summary.sh" "$tmp/full" | tail -n 1)" = "memwall: 2 passed, 0 failed, 0 skipped" ] ||
	fail "the summary does not read the newest log (testlog-full.json)"

# --- test.sh ends with its counts line (README; issue 44: two notes came after it) --------
# A copy of the scripts in a scratch tree, with bootstrap, build and meson stubbed, and a
# planted log of one passed and one skipped test.
tree=$tmp/tree
mkdir -p "$tree/scripts" "$tree/build/meson-logs" "$tmp/tstub"
cp "$src/scripts/test.sh" "$src/scripts/test-summary.sh" "$tree/scripts/"
printf '#!/bin/sh\necho "bootstrap: all packages present"\n' >"$tree/scripts/bootstrap.sh"
printf '#!/bin/sh\necho "build: compiled"\n' >"$tree/scripts/build.sh"
printf '#!/bin/sh\nexit 0\n' >"$tmp/tstub/meson"
chmod +x "$tree/scripts/"*.sh "$tmp/tstub/meson"
printf '%s\n' '{"name": "memwall:unit / a", "result": "OK"}' \
	'{"name": "memwall:unit / b", "result": "SKIP", "stdout": "SKIP: no frobnicator"}' \
	>"$tree/build/meson-logs/testlog.json"
PATH=$tmp/tstub:$PATH "$sh_bin" "$tree/scripts/test.sh" >"$tmp/testsh.out" 2>&1 ||
	fail "test.sh with a passing suite: exit $?: $(cat "$tmp/testsh.out")"
[ "$(tail -n 1 "$tmp/testsh.out")" = "memwall: 1 passed, 0 failed, 1 skipped" ] ||
	fail "test.sh does not end with its counts line: $(tail -n 1 "$tmp/testsh.out")"
tail -n 2 "$tmp/testsh.out" | head -n 1 | grep -q "no frobnicator" ||
	fail "test.sh's skipped tests do not come just before the counts line"

# --- acceptance --------------------------------------------------------------------------
# The smoke protocol with a CV limit no machine meets.
# (Without the drift probe: a second of CPU this test does not look at.)
sed -e 's/"max_cv_tok_s_pct": [0-9.]*/"max_cv_tok_s_pct": 0.000001/' -e 's/"probe_ms": [0-9]*/"probe_ms": 0/' \
	"$src/protocols/stories260k-smoke.json" >"$tmp/strict.json"
grep -q '"max_cv_tok_s_pct": 0.000001' "$tmp/strict.json" || fail "could not plant the CV limit"
# The verdict and the advice close stdout (issue 29: on stderr they printed some 55 lines
# before the end of a piped run's output).
MEMWALL_CACHE_DIR=$tmp/cache "$bin" run "$tmp/strict.json" -o "$tmp/out" >"$tmp/acc.out" \
	2>"$tmp/acc.err"
rc=$?
[ "$rc" -eq 1 ] || fail "a failed CV limit: exit $rc, want 1"
[ "$(grep -c "what to do" "$tmp/acc.out")" -eq 1 ] || fail "a failed CV limit: no one-line advice"
grep "what to do" "$tmp/acc.out" | grep -q "close other programs.*--runs" ||
	fail "the advice does not name other programs and --runs"
# The clock advice is the one that applies here (issue 44): pinning the governor only where a
# cpufreq driver has one that is not performance already; never cpupower without cpufreq.
gov_file=/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor
if [ ! -r "$gov_file" ]; then
	grep "what to do" "$tmp/acc.out" | grep -q "there is no CPU governor here to pin" ||
		fail "no cpufreq here, and the advice does not say there is no governor to pin"
	grep -q "cpupower" "$tmp/acc.out" && fail "cpupower advised on a machine without cpufreq"
elif [ "$(cat "$gov_file")" = performance ]; then
	grep "what to do" "$tmp/acc.out" | grep -q "already performance" ||
		fail "the governor is performance, and the advice does not say so"
else
	grep "what to do" "$tmp/acc.out" | grep -q "pin the CPU governor (it is $(cat "$gov_file"): sudo cpupower" ||
		fail "the advice does not name the governor to change"
fi
# The failed criteria come just before the verdict: the planted one, and on a busy machine
# maybe others (the run's other CV limits), each on its own "acceptance: ... failed" line.
sed '$d' "$tmp/acc.out" | sed '$d' | awk '/acceptance: .* failed/ { n++; next } { n = 0 } END { exit n < 1 }' ||
	fail "the lines before the verdict are not the failed criteria: $(tail -n 3 "$tmp/acc.out" | sed -n 1p)"
sed '$d' "$tmp/acc.out" | sed '$d' | tac | awk '!/acceptance: .* failed/ { exit } /max_cv_tok_s_pct/ { f = 1 } END { exit !f }' ||
	fail "the planted criterion (max_cv_tok_s_pct) is not among the failed ones before the verdict"
tail -n 2 "$tmp/acc.out" | sed -n 1p | grep -qx "memwall run: acceptance: fail (exit 1)" ||
	fail "stdout's second-last line is not the verdict: $(tail -n 2 "$tmp/acc.out" | sed -n 1p)"
tail -n 1 "$tmp/acc.out" | grep -q "^memwall run: what to do: " ||
	fail "stdout does not end with what to do: $(tail -n 1 "$tmp/acc.out")"

[ "$fails" -eq 0 ] || exit 1
echo "ok: bootstrap, build, summary and acceptance advice"
