#!/bin/sh
# scripts/run.sh [memwall arguments...]: bootstrap, build, then run memwall with the arguments
# as given, from the current folder (`scripts/run.sh run stories260k-smoke`, `scripts/run.sh
# report RECORD`). With no arguments it runs the main job, the embedded default
# (protocols/stories110m-synthetic.json), from the checkout, writing to results/runs/.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/bootstrap.sh"
# The build's progress goes to stderr: stdout stays the summary of the run.
"$root/scripts/build.sh" build >&2
if [ $# -eq 0 ]; then
	cd "$root"
	set -- run protocols/stories110m-synthetic.json
fi
exec "$root/build/src/memwall" "$@"
