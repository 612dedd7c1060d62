#!/bin/sh
# scripts/test-summary.sh BUILDDIR...: the skipped tests of the given build trees, one line each
# with its reason, then one closing line over their meson test logs,
# "memwall: N passed, N failed, N skipped" (a missing log counts as one failure).
#
# The log is the newest meson-logs/testlog*.json: meson names it after a setup other than the
# default (`--setup full`: testlog-full.json).
#
# A skipping test prints its reason before it exits 77 (tests/lib/test.h's t_skip: "SKIP: why");
# meson's testlog.json keeps each test's output, and the reason is its last "SKIP" line, else
# its last line of output.
set -eu
python3 - "$@" <<'PY'
import glob, json, os, sys
counts = {"passed": 0, "failed": 0, "skipped": 0}
skips = []

def reason(r):
    out = (r.get("stdout") or "") + "\n" + (r.get("stderr") or "")
    lines = [l.strip() for l in out.splitlines() if l.strip()]
    marked = [l for l in lines if "SKIP" in l]
    why = (marked or lines or ["no reason printed"])[-1]
    return why[5:].strip() if why.startswith("SKIP:") else why

for builddir in sys.argv[1:]:
    logs = sorted(glob.glob(builddir + "/meson-logs/testlog*.json"), key=os.path.getmtime)
    try:
        f = open(logs[-1] if logs else builddir + "/meson-logs/testlog.json")
    except OSError:
        counts["failed"] += 1
        continue
    with f:
        for line in f:
            r = json.loads(line)
            res = r.get("result")
            if res in ("OK", "EXPECTEDFAIL"):
                counts["passed"] += 1
            elif res == "SKIP":
                counts["skipped"] += 1
                skips.append("skipped: %s: %s" % (r.get("name", "?"), reason(r)))
            else:
                counts["failed"] += 1
for s in skips:
    print(s)
print("memwall: %(passed)d passed, %(failed)d failed, %(skipped)d skipped" % counts)
PY
