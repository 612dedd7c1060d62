#!/bin/sh
# scripts/test.sh [--sanitize] [meson test options...]: bootstrap, build and run the test suite.
#
# The default suite is everything but `slow`. --sanitize builds a second tree (build-asan) with
# AddressSanitizer and UndefinedBehaviorSanitizer and runs the suite there. Prints one closing
# line "memwall: N passed, N failed, N skipped" and exits non-zero on any failure.
set -eu
cd "$(dirname "$0")/.."

builddir=build
setup=""
if [ "${1:-}" = "--sanitize" ]; then
	shift
	builddir=build-asan
	setup="-Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized"
fi

scripts/bootstrap.sh --dev
# shellcheck disable=SC2086
scripts/build.sh "$builddir" $setup

status=0
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
	meson test -C "$builddir" --print-errorlogs --num-processes 2 "$@" || status=$?

python3 - "$builddir/meson-logs/testlog.json" <<'PY'
import json, sys
counts = {"passed": 0, "failed": 0, "skipped": 0}
with open(sys.argv[1]) as f:
    for line in f:
        r = json.loads(line).get("result")
        if r in ("OK", "EXPECTEDFAIL"):
            counts["passed"] += 1
        elif r == "SKIP":
            counts["skipped"] += 1
        else:
            counts["failed"] += 1
print("memwall: %(passed)d passed, %(failed)d failed, %(skipped)d skipped" % counts)
PY
exit "$status"
