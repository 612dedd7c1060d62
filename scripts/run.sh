#!/bin/sh
# scripts/run.sh [memwall arguments...]: bootstrap, build, then run memwall.
# With no arguments it runs the main job on the embedded default.
set -eu
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
scripts/build.sh build >/dev/null
if [ $# -eq 0 ]; then
	set -- run protocols/stories110m-synthetic.json
fi
exec build/src/memwall "$@"
