#!/bin/sh
# scripts/check-layout.sh SOURCE_ROOT BUILD_ROOT [ALLOW_FILE]
# scripts/check-layout.sh --self-test
#
# Checks the shape of the code, which no compiler does (issue 13):
#   cycle     two or more files of src/, probes/ or engine/ that depend on each other, by
#             `#include "x.h"` lines or by calls (symbols one object file needs and another
#             defines, read with nm from BUILD_ROOT). A .c and its own .h are one node, and so
#             is a private header named for it (a_impl.h, a_internal.h, a_private.h beside
#             a.c), so "a.c includes b.h, b.c calls a()" and "b.c includes a_impl.h, a.c
#             calls b()" are cycles; a library's shared private header (internal.h) is a node
#             of its own. An include is found as the compiler finds it: beside the including
#             file, then in each folder above it (a library's include folder), then by its
#             path's ending. Every strongly connected component with more than one node is
#             reported, with the edges that close it.
#   include   an `#include "x.h"` that names a file of the tree the rules above cannot tell
#             from another of the same name: its edges would go unseen, so write the path
#             that says which (as probes/pmu/ writes "../internal.h").
#   function  a function of src/, probes/ or engine/ longer than 150 lines, from the line
#             holding its name to its closing `}` at column 0 (kernel style: a function's
#             braces are at column 0, so no C parser is needed).
#   file      a file of src/, probes/ or engine/ longer than 1,000 lines.
#   prefix    a symbol a library exports (nm) without its prefix: libmw mw_, libengine eng_,
#             the kernel and quant libraries krn_, libprobes prb_.
#   readme    README.md's fenced block under "## Layout and data flow" must list every folder
#             of src/, probes/ and engine/ to depth 2, and no folder that does not exist;
#             README.md is a guide of at most 300 lines (the reference lives in the folders'
#             READMEs), and no heading of README.md or a folder's README names an issue.
# ALLOW_FILE (default SOURCE_ROOT/scripts/check-layout.allow) lists known offenders someone is
# already fixing; they are reported as allowed and do not fail the check.
# --self-test plants cycles (by includes, through a private header, through a folder above,
# by calls), an include it cannot place, a long function and a long file in a temporary tree
# and fails unless this script catches each of them (and passes a clean tree).
#
# POSIX sh, awk and nm only: it runs where the build runs, with no python.
set -u

MAX_FUNCTION=150
MAX_FILE=1000
MAX_README=300

die() {
	echo "check-layout: $*" >&2
	exit 2
}

self_test() {
	script=$1
	t=$(mktemp -d) || die "mktemp failed"
	trap 'rm -rf "$t"' EXIT
	cc=${CC:-cc}
	mkdir -p "$t/src/base" "$t/probes" "$t/engine" "$t/build/src/libmw.a.p" "$t/scripts"
	cat >"$t/README.md" <<-'EOF'
	# x
	## Layout and data flow
	```
	engine/    the engine
	probes/    the probes
	src/       the command
	  base/      the base
	```
	EOF
	: >"$t/scripts/check-layout.allow"
	printf '#include "b.h"\nint mw_a(void);\nint mw_a(void)\n{\n\treturn 1;\n}\n' >"$t/src/base/a.c"
	printf 'int mw_a(void);\n' >"$t/src/base/a.h"
	printf 'int mw_b(void);\n' >"$t/src/base/b.h"
	printf '#include "b.h"\nint mw_b(void)\n{\n\treturn 2;\n}\n' >"$t/src/base/b.c"
	calls=no
	if "$cc" -c -o "$t/build/src/libmw.a.p/base_a.c.o" "$t/src/base/a.c" 2>/dev/null &&
	   "$cc" -c -o "$t/build/src/libmw.a.p/base_b.c.o" "$t/src/base/b.c" 2>/dev/null; then
		calls=yes
	else
		CHECK_LAYOUT_NO_OBJECTS=1
		export CHECK_LAYOUT_NO_OBJECTS
	fi
	if ! sh "$script" "$t" "$t/build" >"$t/out" 2>&1; then
		cat "$t/out"
		die "self-test: a clean tree failed the check"
	fi

	# A cycle by includes (a.h <-> c.h) and, when a compiler is here, one by calls (b <-> d).
	printf '#include "c.h"\nint a(void);\n' >"$t/src/base/a.h"
	printf '#include "a.h"\nint c(void);\n' >"$t/src/base/c.h"
	printf 'int d(void);\nint b(void);\nint b(void)\n{\n\treturn d();\n}\n' >"$t/src/base/b.c"
	printf 'int b(void);\nint d(void);\nint d(void)\n{\n\treturn b();\n}\n' >"$t/src/base/d.c"
	if [ $calls = yes ]; then
		"$cc" -c -o "$t/build/src/libmw.a.p/base_b.c.o" "$t/src/base/b.c" 2>/dev/null &&
			"$cc" -c -o "$t/build/src/libmw.a.p/base_d.c.o" "$t/src/base/d.c" 2>/dev/null ||
			calls=no
	fi
	# A cycle through a private header named for its .c (f.c includes e_impl.h, e.c f.h); one
	# through a header found in the folder above (sub/g.c includes "h.h", which is
	# src/base/h.h, not src/other/h.h); and an include the rules cannot place (m.h is in two
	# folders, neither above k.c).
	mkdir -p "$t/src/base/sub" "$t/src/other" "$t/src/x" "$t/src/y"
	printf 'int e(void);\n' >"$t/src/base/e_impl.h"
	printf '#include "f.h"\nint e(void);\n' >"$t/src/base/e.c"
	printf 'int f(void);\n' >"$t/src/base/f.h"
	printf '#include "e_impl.h"\nint f(void);\n' >"$t/src/base/f.c"
	printf '#include "sub/g.h"\n' >"$t/src/base/h.h"
	: >"$t/src/other/h.h"
	printf 'int g(void);\n' >"$t/src/base/sub/g.h"
	printf '#include "h.h"\n' >"$t/src/base/sub/g.c"
	: >"$t/src/x/m.h"
	: >"$t/src/y/m.h"
	printf '#include "m.h"\n' >"$t/src/base/sub/k.c"
	# A 151-line function and a 1,001-line file.
	{
		printf 'int f(void);\nint f(void)\n{\n\tint x = 0;\n'
		i=0
		while [ $i -lt 146 ]; do
			printf '\tx++;\n'
			i=$((i + 1))
		done
		printf '\treturn x;\n}\n'
	} >"$t/probes/long_function.c"
	awk 'BEGIN { for (i = 0; i < 1001; i++) print "/* filler */" }' >"$t/probes/long_file.h"
	# A folder the README does not list; a README past its limit; a heading naming an issue
	# (one inside a fenced block is not a heading).
	mkdir -p "$t/src/extra"
	awk 'BEGIN { for (i = 0; i < 300; i++) print "filler" }' >>"$t/README.md"
	printf '# src\n```\n# see issue 1\n```\n## Verbs (issue 7)\n' >"$t/src/README.md"
	if sh "$script" "$t" "$t/build" >"$t/out" 2>&1; then
		cat "$t/out"
		die "self-test: a tree with planted offenders passed the check"
	fi
	for want in 'cycle.*src/base/a.*src/base/c' 'function.*probes/long_function.c:2 f() is 151 lines' \
		    'file.*probes/long_file.h is 1001 lines' 'readme.*src/extra/' \
		    'cycle.*src/base/e <-> src/base/f' 'cycle.*src/base/h <-> src/base/sub/g' \
		    'include.*src/base/sub/k.c.*"m.h"' 'readme: README.md is 308 lines' \
		    'readme: src/README.md:5: the heading'; do
		grep -q "$want" "$t/out" || { cat "$t/out"; die "self-test: no report matching '$want'"; }
	done
	grep -q 'src/README.md:3:' "$t/out" &&
		{ cat "$t/out"; die "self-test: a line in a fenced block was taken for a heading"; }
	if [ $calls = yes ]; then
		grep -q 'cycle.*src/base/b.*src/base/d' "$t/out" ||
			{ cat "$t/out"; die "self-test: the call cycle b <-> d was not reported"; }
		grep -q 'prefix: src/base/d.c exports d(), outside the prefix of libmw' "$t/out" ||
			{ cat "$t/out"; die "self-test: d(), exported without mw_, was not reported"; }
	else
		echo "check-layout: self-test: no C compiler ($cc), call cycles not exercised"
	fi
	echo "check-layout: self-test passed (clean tree passes; planted offenders are caught)"
	exit 0
}

if [ "${1:-}" = "--self-test" ]; then
	self_test "$0"
fi

[ $# -ge 2 ] || die "usage: $0 SOURCE_ROOT BUILD_ROOT [ALLOW_FILE] | $0 --self-test"
root=$1
build=$2
allow=${3:-$root/scripts/check-layout.allow}
[ -d "$root/src" ] || die "$root/src: not a memwall source tree (pass the source root first)"
[ -d "$build" ] || die "$build: no such build tree (pass the build root second)"
[ -f "$allow" ] || allow=/dev/null
command -v nm >/dev/null 2>&1 || die "nm not found: install binutils (it reads the calls)"

tmp=$(mktemp -d) || die "mktemp failed"
trap 'rm -rf "$tmp"' EXIT

cd "$root" || die "cannot enter $root"
find src probes engine \( -name '*.c' -o -name '*.h' \) -type f 2>/dev/null | sort >"$tmp/files"
find src probes engine -mindepth 1 -maxdepth 2 -type d 2>/dev/null | sort >"$tmp/dirs"

# ---- Edges: includes ------------------------------------------------------------------------
# "from to why" per line; from/to are nodes (a path without its .c/.h).
awk -v list="$tmp/files" '
function norm(p,   n, i, parts, out, k, stack) {
	n = split(p, parts, "/")
	k = 0
	for (i = 1; i <= n; i++) {
		if (parts[i] == "." || parts[i] == "")
			continue
		if (parts[i] == ".." && k > 0) { k--; continue }
		stack[++k] = parts[i]
	}
	out = ""
	for (i = 1; i <= k; i++)
		out = out (i > 1 ? "/" : "") stack[i]
	return out
}
# A file'"'"'s node: its path without .c/.h, and a private header named for a .c beside it
# (a_impl.h, a_internal.h, a_private.h) is that .c'"'"'s.
function node(p,   q) {
	sub(/\.[ch]$/, "", p)
	q = p
	if (sub(/_(impl|internal|private)$/, "", q) && ((q ".c") in have))
		return q
	return p
}
function top(p) { sub(/\/.*/, "", p); return p }
BEGIN {
	while ((getline f < list) > 0) {
		have[f] = 1
		b = f; sub(/.*\//, "", b)
		nbase[b]++; base[b, nbase[b]] = f
	}
}
/^[ \t]*#[ \t]*include[ \t]*"/ {
	inc = $0
	sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
	dir = FILENAME; sub(/\/[^\/]*$/, "", dir)
	to = norm(dir "/" inc)
	# Then the folders above, nearest first: a library'"'"'s include folder (quants/ for
	# quants/x86/*.c, engine/ for "model/arch.h").
	for (up = dir; !(to in have) && up ~ /\//; ) {
		sub(/\/[^\/]*$/, "", up)
		to = norm(up "/" inc)
	}
	if (!(to in have)) {
		# Through an include directory: the one file of that name ending in "/inc", in the
		# same top folder first.
		b = inc; sub(/.*\//, "", b)
		to = ""; same = 0; any = 0
		for (i = 1; i <= nbase[b]; i++) {
			f = base[b, i]
			if (substr(f, length(f) - length(inc)) != "/" inc)
				continue
			any++; anyf = f
			if (top(f) == top(FILENAME)) { same++; samef = f }
		}
		if (same == 1) to = samef
		else if (any == 1) to = anyf
		if (to == "" && any > 1) {
			print "AMBIGUOUS", FILENAME, inc, any
			next
		}
		if (to == "")
			next # generated (config.h, version.h) or system
	}
	if (node(to) != node(FILENAME))
		print node(FILENAME), node(to), FILENAME " includes " to
}' $(cat "$tmp/files") >"$tmp/edges0"
grep -v '^AMBIGUOUS ' "$tmp/edges0" >"$tmp/edges"

# ---- Edges: calls ---------------------------------------------------------------------------
# Meson names an object <lib>.a.p/<path relative to its meson.build, / as _>.c.o; map each
# source file to that name to find its object.
: >"$tmp/objects"
for d in src probes engine; do
	[ -d "$build/$d" ] || continue
	find "$build/$d" -path '*.a.p/*' -name '*.o' -type f
done | sort >"$tmp/objlist"
# One awk for all objects, not one per object: ~120 objects' worth of processes took 40 s of a
# busy 2-core machine (issue 29).
awk -v build="$build/" '
NR == FNR { files[++nf] = $0; next }
{
	o = $0
	srcdir = o; sub(/\/[^\/]*$/, "", srcdir); sub(/\/[^\/]*$/, "", srcdir) # BUILD/engine/kernels
	if (index(srcdir, build) == 1) srcdir = substr(srcdir, length(build) + 1) # engine/kernels
	obj = o; sub(/.*\//, "", obj); sub(/\.o$/, "", obj)                     # x86_avx2.c
	d = srcdir "/"
	for (i = 1; i <= nf; i++) {
		if (index(files[i], d) != 1) continue
		m = substr(files[i], length(d) + 1); gsub(/\//, "_", m)
		if (m == obj) { src = files[i]; sub(/\.[ch]$/, "", src); print o, src; break }
	}
	# no match: generated (embedded.c)
}' "$tmp/files" "$tmp/objlist" >"$tmp/objects"
# Without objects the call graph would be empty and every call cycle would pass unseen.
if [ ! -s "$tmp/objects" ] && [ -z "${CHECK_LAYOUT_NO_OBJECTS:-}" ]; then
	die "$build: no object files of src/, probes/ or engine/ (build first: ninja -C $build)"
fi
# Two nm runs over all objects (-A: each line starts "OBJECT:"), regrouped per object in the
# objects' order: each object's definitions, then its undefined symbols.
: >"$tmp/nm-d"
: >"$tmp/nm-u"
if [ -s "$tmp/objects" ]; then
	cut -d' ' -f1 "$tmp/objects" | xargs nm -A --defined-only -g >"$tmp/nm-d" 2>/dev/null
	cut -d' ' -f1 "$tmp/objects" | xargs nm -A -u >"$tmp/nm-u" 2>/dev/null
fi
awk '
FILENAME == ARGV[1] { name[$1] = $2; order[++k] = $1; next }
{
	c = index($0, ":"); o = substr($0, 1, c - 1); $0 = substr($0, c + 1)
	if (!(o in name)) next
	if (FILENAME == ARGV[2] && NF >= 3) d[o] = d[o] "D " name[o] " " $3 "\n"
	if (FILENAME == ARGV[3] && $1 == "U") u[o] = u[o] "U " name[o] " " $2 "\n"
}
END { for (i = 1; i <= k; i++) printf "%s%s", d[order[i]], u[order[i]] }
' "$tmp/objects" "$tmp/nm-d" "$tmp/nm-u" >"$tmp/symbols"
awk '
$1 == "D" && !($3 in def) { def[$3] = $2 }
$1 == "U" { nu++; un[nu] = $2; us[nu] = $3 }
END {
	for (i = 1; i <= nu; i++)
		if ((us[i] in def) && def[us[i]] != un[i] && !seen[un[i], def[us[i]]]++)
			print un[i], def[us[i]], un[i] ".c calls " us[i] "() in " def[us[i]] ".c"
}' "$tmp/symbols" >>"$tmp/edges"

# ---- Findings -------------------------------------------------------------------------------
# One line each: "kind subject text". The subject is what the allow-list names.

# Cycles: Tarjan's strongly connected components over the union of both kinds of edges.
awk '
function strong(v,   i, w, comp, members, k, a, b) {
	idx[v] = low[v] = ++counter
	stack[++sp] = v; on[v] = 1
	for (i = 1; i <= nadj[v]; i++) {
		w = adj[v, i]
		if (!(w in idx)) {
			strong(w)
			if (low[w] < low[v]) low[v] = low[w]
		} else if (on[w] && idx[w] < low[v]) {
			low[v] = idx[w]
		}
	}
	if (low[v] != idx[v])
		return
	k = 0
	do {
		w = stack[sp--]; on[w] = 0
		members[++k] = w; incomp[w] = v
	} while (w != v)
	if (k < 2)
		return
	sortv(members, k)
	comp = members[1]
	for (i = 2; i <= k; i++) comp = comp " " members[i]
	text = ""
	for (i = 1; i <= ne; i++) {
		a = ef[i]; b = et[i]
		if (incomp[a] == v && incomp[b] == v)
			text = text "; " ew[i]
	}
	gsub(/ /, ",", comp)
	print "cycle", comp, substr(text, 3)
}
function sortv(arr, n,   i, j, x) {
	for (i = 2; i <= n; i++) {
		x = arr[i]
		for (j = i - 1; j >= 1 && arr[j] > x; j--) arr[j + 1] = arr[j]
		arr[j + 1] = x
	}
}
{
	if (!seen[$1, $2]++) { nadj[$1]++; adj[$1, nadj[$1]] = $2 }
	ne++; ef[ne] = $1; et[ne] = $2
	w = $0; sub(/^[^ ]* [^ ]* /, "", w); ew[ne] = w
	nodes[$1] = 1; nodes[$2] = 1
}
END {
	n = 0
	for (x in nodes) order[++n] = x
	sortv(order, n)
	for (i = 1; i <= n; i++)
		if (!(order[i] in idx))
			strong(order[i])
}' "$tmp/edges" >"$tmp/findings"

# Prefixes: every symbol a library exports starts with its prefix (libmw mw_, libengine eng_,
# the kernel and quant libraries krn_, libprobes prb_), so a name says where it lives and none
# can collide with a library memwall links (libpfm4's pfm_, jansson's json_).
awk '
FILENAME == ARGV[1] { src[$1] = $2; next }
{
	c = index($0, ":"); o = substr($0, 1, c - 1); $0 = substr($0, c + 1)
	if (!(o in src) || NF < 3 || $2 !~ /^[TDBRCGSV]$/) next
	# symbols the compiler adds (AddressSanitizer: __odr_asan.NAME), not the code
	if ($3 ~ /^__/) next
	if (o ~ /\/libmw\.a\.p\//) { lib = "libmw"; pre = "mw_" }
	else if (o ~ /\/libengine\.a\.p\//) { lib = "libengine"; pre = "eng_" }
	else if (o ~ /\/libprobes\.a\.p\//) { lib = "libprobes"; pre = "prb_" }
	else if (o ~ /\/lib(krn|quants)[a-z0-9_]*\.a\.p\//) { lib = "the kernel libraries"; pre = "krn_" }
	else next
	if (index($3, pre) == 1) next
	print "prefix " src[o] ".c " src[o] ".c exports " $3 "(), outside the prefix of " lib ", " pre \
	      ": rename it " pre $3 ", or make it static"
}' "$tmp/objects" "$tmp/nm-d" >>"$tmp/findings"

# Includes whose file the rules cannot tell (their edges are missing from the graph above).
grep '^AMBIGUOUS ' "$tmp/edges0" | while read -r _ f inc n; do
	echo "include $f $f: \"$inc\" names one of $n files of that name and none is beside it or in a folder above: write its path (\"../$inc\", \"folder/$inc\")"
done >>"$tmp/findings"

# Long functions: from the line holding the name to the `}` at column 0 closing the `{` at
# column 0 that opens the body.
awk -v max=$MAX_FUNCTION '
FNR == 1 { name = ""; start = 0; body = 0 }
/^[A-Za-z_].*\(/ && !body { name_line = FNR; name_text = $0 }
/^\{/ && !body { body = 1; start = name_line; fn = name_text
	sub(/\(.*/, "", fn); sub(/.*[ *]/, "", fn) }
/^\}/ && body { body = 0
	if (FNR - start + 1 > max)
		printf "function %s:%s %s:%d %s() is %d lines (limit %d): split it into named helpers\n",
			FILENAME, fn, FILENAME, start, fn, FNR - start + 1, max
}' $(cat "$tmp/files") >>"$tmp/findings"

# Long files.
grep -E '^(src|probes|engine)/' "$tmp/files" | while read -r f; do
	n=$(wc -l <"$f")
	[ "$n" -gt $MAX_FILE ] &&
		echo "file $f $f is $n lines (limit $MAX_FILE): split it by what its parts do"
done >>"$tmp/findings"

# README's layout block against the folders.
if [ -f README.md ]; then
	awk '
	/^## Layout and data flow/ { in_section = 1; next }
	in_section && /^## / { exit }
	in_section && /^```/ { if (fence) exit; fence = 1; next }
	fence {
		line = $0
		match(line, /^ */); indent = RLENGTH
		sub(/^ +/, "", line)
		if (line !~ /^[A-Za-z0-9_.\/-]+\/([ \t]|$)/)
			next
		sub(/\/[ \t].*$/, "", line); sub(/\/$/, "", line)
		if (indent == 0) { top = line; mid = ""; print line; next }
		if (top == "") next
		if (indent <= 2) { mid = line; print top "/" line; next }
		if (mid != "") print top "/" mid "/" line
	}' README.md | sort -u >"$tmp/listed"
else
	: >"$tmp/listed"
fi
grep -E '^(src|probes|engine)(/|$)' "$tmp/listed" | grep -vxE 'src|probes|engine' >"$tmp/listed_sub"
while read -r d; do
	grep -qxF "$d" "$tmp/listed" ||
		echo "readme $d/ README.md's layout block (## Layout and data flow) does not list $d/: add a line saying what it holds"
done <"$tmp/dirs" >>"$tmp/findings"
while read -r d; do
	[ -d "$d" ] ||
		echo "readme $d/ README.md's layout block lists $d/, which does not exist: remove or rename it"
done <"$tmp/listed_sub" >>"$tmp/findings"
if [ -f README.md ] && [ "$(wc -l <README.md)" -gt $MAX_README ]; then
	echo "readme README.md README.md is $(wc -l <README.md) lines (limit $MAX_README): it guides; move reference into the README of the folder it describes"
fi >>"$tmp/findings"
for f in README.md */README.md; do
	[ -f "$f" ] || continue
	awk -v f="$f" '
	/^```/ { fence = !fence; next }
	!fence && /^#/ && tolower($0) ~ /issue/ {
		print "readme " f ":" NR " " f ":" NR ": the heading \"" $0 "\" names an issue: say what the section holds (an issue number may stand in the text)"
	}' "$f"
done >>"$tmp/findings"

# ---- Verdict --------------------------------------------------------------------------------
# An allow-list line is "kind subject" (comments after #). A subject ending in / allows
# everything under that folder; a cycle is allowed when each of its nodes is allowed.
sed 's/#.*//' "$allow" | awk 'NF >= 2 { print $1, $2 }' >"$tmp/allow"
awk -v allowf="$tmp/allow" '
function allowed1(kind, s,   i) {
	for (i = 1; i <= na; i++) {
		if (ak[i] != kind) continue
		if (s == as[i]) return 1
		if (substr(as[i], length(as[i])) == "/" && index(s, as[i]) == 1) return 1
	}
	return 0
}
function allowed(kind, subj,   n, parts, i, f) {
	if (kind == "function") {
		f = subj; sub(/:.*/, "", f)
		return allowed1(kind, subj) || allowed1(kind, f)
	}
	if (kind != "cycle") return allowed1(kind, subj)
	n = split(subj, parts, ",")
	for (i = 1; i <= n; i++)
		if (!allowed1(kind, parts[i])) return 0
	return 1
}
BEGIN { while ((getline l < allowf) > 0) { split(l, p, " "); na++; ak[na] = p[1]; as[na] = p[2] } }
{
	kind = $1; subj = $2; text = $0; sub(/^[^ ]* [^ ]* /, "", text)
	if (kind == "cycle") { s = subj; gsub(/,/, " <-> ", s); text = s ": " text }
	if (allowed(kind, subj)) { nallow++; print "check-layout: allowed " kind ": " text }
	else { nbad++; print "check-layout: " kind ": " text }
}
END {
	if (nbad) {
		printf "check-layout: %d problem(s)%s; fix them, or list a known offender someone is already fixing in scripts/check-layout.allow\n", nbad, nallow ? " (and " nallow " allowed)" : ""
		exit 1
	}
	printf "check-layout: ok%s\n", nallow ? " (" nallow " allowed offender(s) in scripts/check-layout.allow)" : ""
}' "$tmp/findings"
