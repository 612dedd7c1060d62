#!/bin/sh
# tests/lib/pg-server.sh start|stop DIR: a throwaway PostgreSQL server for tests/src/test_store.c.
#
# start: initdb into DIR/data and start the server listening only on a unix socket in DIR (no
# TCP port, so parallel test runs and a system server do not collide); prints the connection URL.
# stop: stops it (immediate mode: the data is thrown away). Exit 77 with the reason on stdout when
# no server can be installed or started here: Debian's postgresql package puts initdb and pg_ctl
# under /usr/lib/postgresql/VERSION/bin (scripts/bootstrap.sh --dev installs it).
#
# initdb and postgres refuse to run as root: as root (CI), the server runs as the 'postgres' user
# the package creates, through runuser, and DIR is handed to that user.
set -u
cmd=${1:-}
dir=${2:-}
[ -n "$dir" ] && [ -d "$dir" ] || { echo "usage: pg-server.sh start|stop DIR (an existing folder)"; exit 2; }

bin=""
for b in /usr/lib/postgresql/*/bin /usr/pgsql-*/bin /usr/bin; do
	[ -x "$b/initdb" ] && [ -x "$b/pg_ctl" ] && bin=$b
done
if [ -z "$bin" ]; then
	echo "no PostgreSQL server here: initdb and pg_ctl not found under /usr/lib/postgresql/*/bin" \
	     "(scripts/bootstrap.sh --dev installs Debian's postgresql package)"
	exit 77
fi

as=""
if [ "$(id -u)" -eq 0 ]; then
	if ! id postgres >/dev/null 2>&1; then
		echo "running as root, and there is no 'postgres' user to run the server as" \
		     "(the postgresql package creates it)"
		exit 77
	fi
	if ! command -v runuser >/dev/null 2>&1; then
		echo "running as root without runuser (util-linux): cannot start the server as 'postgres'"
		exit 77
	fi
	as="runuser -u postgres --"
	chown postgres "$dir"
fi

case "$cmd" in
start)
	if ! $as "$bin/initdb" -D "$dir/data" -U memwall -A trust --no-sync -E UTF8 \
		>"$dir/initdb.log" 2>&1; then
		echo "initdb failed ($bin/initdb):"
		sed 's/^/  /' "$dir/initdb.log"
		exit 77
	fi
	if ! $as "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
		-o "-k $dir -h '' -c fsync=off" start >"$dir/pg_ctl.log" 2>&1; then
		echo "the PostgreSQL server did not start ($bin/pg_ctl):"
		sed 's/^/  /' "$dir/pg_ctl.log" "$dir/server.log" 2>/dev/null
		exit 77
	fi
	echo "postgresql:///postgres?host=$dir&user=memwall"
	;;
stop)
	$as "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1
	;;
*)
	echo "usage: pg-server.sh start|stop DIR"
	exit 2
	;;
esac
