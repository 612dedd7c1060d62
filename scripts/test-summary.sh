#!/bin/sh
# scripts/test-summary.sh BUILDDIR...: one closing line over the meson test logs of the given
# build trees, "memwall: N passed, N failed, N skipped" (a missing log counts as one failure).
set -eu
python3 - "$@" <<'PY'
import json, sys
counts = {"passed": 0, "failed": 0, "skipped": 0}
for builddir in sys.argv[1:]:
    try:
        f = open(builddir + "/meson-logs/testlog.json")
    except OSError:
        counts["failed"] += 1
        continue
    with f:
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
