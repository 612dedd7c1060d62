#!/bin/sh
# tests/e2e/test_install.sh: `meson install` into a DESTDIR, then the installed memwall, run from
# another folder, finds its shipped protocols by name.
#
# No rebuild: meson test has built the tree already (`meson install --no-rebuild`). The installed
# binary sits under DESTDIR, so its compiled-in data directory (PREFIX/DATADIR/memwall) does not
# exist yet: MEMWALL_DATA_DIR points it at DESTDIR's copy, and one case checks that without the
# variable the compiled-in path is the one searched.
set -u
build=${MEMWALL_BUILD_ROOT:?run under meson test}
datadir=${MEMWALL_INSTALL_DATADIR:?run under meson test}
bindir=${MEMWALL_INSTALL_BINDIR:?run under meson test}
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

command -v meson >/dev/null 2>&1 || { echo "SKIP: meson is not in PATH"; exit 77; }
tmp=$(mktemp -d /tmp/mw-test-install-XXXXXX) || { echo "SKIP: no scratch folder"; exit 77; }
trap 'rm -rf "$tmp"' EXIT

if ! meson install -C "$build" --destdir "$tmp/dest" --no-rebuild >"$tmp/install.log" 2>&1; then
	cat "$tmp/install.log" >&2
	echo "FAIL: meson install --destdir failed" >&2
	exit 1
fi
dest=$tmp/dest$datadir
bin=$tmp/dest$bindir/memwall
[ -x "$bin" ] || fail "no installed binary at $bin"
for f in protocols/stories260k-smoke.json protocols/stories110m-synthetic.json \
	protocols/protocol.schema.json protocols/calibration/stories.txt \
	protocols/projections/aios.json results/result.schema.json \
	results/reference/aios-falcon7b-q4km.json scripts/roofline.gp scripts/mb_per_token.gp; do
	[ -f "$dest/$f" ] || fail "not installed: $datadir/$f"
done

mkdir -p "$tmp/elsewhere" "$tmp/cache"
cd "$tmp/elsewhere" || exit 1
export MEMWALL_CACHE_DIR="$tmp/cache"

# 1. By name, from the installed data directory (MEMWALL_DATA_DIR: the DESTDIR copy), without
# -o: the record goes to results/runs/ under the current folder, and the run says so, with the
# folder it created (issue 44: it was made silently in whatever folder the user was in).
MEMWALL_DATA_DIR=$dest "$bin" run stories260k-smoke --format json \
	>"$tmp/run.out" 2>"$tmp/run.err"
rc=$?
[ "$rc" -eq 0 ] || [ "$rc" -eq 1 ] || { cat "$tmp/run.err" >&2; fail "run by name: exit $rc"; }
here=$(pwd)
grep -qF "memwall run: created the folder results/runs (in $here) for the record" "$tmp/run.err" ||
	fail "run from another folder did not say it created results/runs there"
rec=$(ls "$here"/results/runs/stories260k-smoke-*.json 2>/dev/null | head -n 1)
if [ -z "$rec" ]; then
	fail "run by name wrote no record in $here/results/runs"
else
	grep -qF "result written to results/runs/$(basename "$rec") (in $here)" "$tmp/run.err" ||
		fail "run did not say where the record went: $(grep 'written to' "$tmp/run.err")"
	grep -q "\"source\": *\"$dest/protocols/stories260k-smoke.json\"" "$rec" ||
		fail "the record's protocol.source is not the installed file ($dest/protocols/...)"
fi

# 1b. The installed binary's results store and formats (issue 19's path from a fresh install):
# the record goes into an SQLite store that then holds a row, and the sql output loads into
# SQLite (through the store's own library: `memwall db` runs the statements of a file).
if [ -n "$rec" ]; then
	db="$tmp/results.db"
	"$bin" db --db "$db" import "$rec" >"$tmp/db.out" 2>&1 || { cat "$tmp/db.out" >&2; fail "db import: exit $?"; }
	"$bin" db --db "$db" list --format csv >"$tmp/dblist.out" 2>&1 || fail "db list: exit $?"
	grep -q "stories260k-smoke" "$tmp/dblist.out" || { cat "$tmp/dblist.out" >&2; fail "the store holds no row for the record"; }
	"$bin" report "$rec" --format jsonl >"$tmp/r.jsonl" 2>&1 || fail "report --format jsonl: exit $?"
	[ "$(grep -c '^{.*}$' "$tmp/r.jsonl")" -gt 0 ] || fail "report --format jsonl printed no JSON lines"
	"$bin" report "$rec" --format sql >"$tmp/r.sql" 2>&1 || fail "report --format sql: exit $?"
	if command -v sqlite3 >/dev/null 2>&1; then
		n=$(sqlite3 "$tmp/loaded.db" <"$tmp/r.sql" >/dev/null 2>&1 &&
		    sqlite3 "$tmp/loaded.db" "select count(*) from sqlite_master where type='table';")
		[ "${n:-0}" -gt 0 ] || fail "report --format sql did not load into sqlite3"
	fi
fi

# 2. --list names the installed protocols with a description, under the data directory.
MEMWALL_DATA_DIR=$dest "$bin" run --list >"$tmp/list.out" 2>&1 || fail "run --list: exit $?"
grep -q "^$dest/protocols:" "$tmp/list.out" || fail "run --list: no header for $dest/protocols"
grep -A1 "^  stories260k-smoke$" "$tmp/list.out" | grep -q "^      A seconds-long smoke run" ||
	fail "run --list: no stories260k-smoke line with its description under it"
# Whole sentences, not a first one cut to nothing (issue 44: "The embedded default").
grep -A1 "^  stories110m-synthetic$" "$tmp/list.out" | grep -q "The embedded default. A synthetic" ||
	fail "run --list: stories110m-synthetic's description stops at its first three words"
awk 'length > 80 { exit 1 }' "$tmp/list.out" || fail "run --list: a line wider than 80 columns"
grep -q "schema" "$tmp/list.out" && fail "run --list lists the schema as a protocol"
# An installed binary never falls back to the source tree.
[ "$(grep -c '^[^ ]' "$tmp/list.out")" -eq 1 ] || fail "run --list searched more than one folder"

# 3. Relative paths inside an installed protocol resolve against its installed folder.
MEMWALL_DATA_DIR=$dest "$bin" run stories110m >/dev/null 2>"$tmp/rel.err"
rc=$?
[ "$rc" -eq 2 ] || fail "stories110m without its weights: exit $rc, want 2"
grep -q "$dest/protocols/../models/stories110M.bin" "$tmp/rel.err" ||
	{ cat "$tmp/rel.err" >&2; fail "model.path did not resolve against the installed protocols/"; }

# 4. A file of that name in the current folder comes first (a path before a name).
echo 'not json' >stories260k-smoke
MEMWALL_DATA_DIR=$dest "$bin" run stories260k-smoke >/dev/null 2>"$tmp/path.err"
rc=$?
[ "$rc" -eq 2 ] && grep -q "not valid JSON" "$tmp/path.err" ||
	fail "a file named like the protocol was not preferred (exit $rc)"
rm -f stories260k-smoke

# 5. Without MEMWALL_DATA_DIR the compiled-in PREFIX/DATADIR/memwall is searched.
env -u MEMWALL_DATA_DIR "$bin" run --list >"$tmp/list0.out" 2>&1
head -n 1 "$tmp/list0.out" | grep -q "^$datadir/protocols:" ||
	fail "without MEMWALL_DATA_DIR, run --list does not search $datadir/protocols"
if [ ! -f "$datadir/protocols/stories260k-smoke.json" ]; then
	env -u MEMWALL_DATA_DIR "$bin" run stories260k-smoke >/dev/null 2>"$tmp/nodata.err"
	rc=$?
	[ "$rc" -eq 2 ] && grep -q "$datadir/protocols" "$tmp/nodata.err" ||
		fail "without MEMWALL_DATA_DIR and no install: exit $rc, the error does not name $datadir"
fi

[ "$fails" -eq 0 ] || exit 1
echo "ok: installed under $tmp/dest, ran stories260k-smoke by name from another folder"
