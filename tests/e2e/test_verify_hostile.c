/* tests/e2e/test_verify_hostile.c: `memwall verify`, the verification store and what reads it
 * (run, bundle), against hostile input (issue 43): a perf whose text is not UTF-8 or carries
 * terminal escapes, counts that are no numbers, a stop during perf's window, a FIFO where the
 * store is, -o naming the store or a special file, store entries that lie about themselves,
 * and a record that names a forged store.
 *
 * Everything runs on the simulated PMU over the arrow-lake tree (tests/data/sim/README.md);
 * the counts do not matter here, only what verify, run and bundle make of the rest. Every
 * memwall is run under timeout(1), so a regression that blocks fails instead of hanging, and
 * the scratch folder goes whatever happens.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "record.h"
#include "run.h"
#include "verify_sim.h"
#include "sim_tree.h"
#include "test.h"

#define AL "arrow-lake"
#define LIMIT "60" /* seconds any one memwall may take: a hang detector */

static char scratch[256], state[512], script[512], bindir[512], proto[600];

/* memwall VERB ARGS... under timeout(1), KILL after LIMIT seconds. */
static struct t_output mw(const char *const *args)
{
	const char *argv[32] = { "/usr/bin/timeout", "-s", "KILL", LIMIT, getenv("MEMWALL_BIN") };
	int n = 5;
	for (; *args && n < 31; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	return t_run(argv);
}

/* verify with a small canary and short windows, then extra (NULL-terminated). */
static struct t_output verify(const char *const *extra)
{
	const char *args[24] = { "verify", "--size", "0.001", "--idle-ms", "1", "--perf-seconds",
				 "0.05" };
	int n = 7;
	for (; extra && *extra && n < 23; extra++)
		args[n++] = *extra;
	args[n] = NULL;
	return mw(args);
}

/* A state folder of its own for each test (scratch/state-NAME), so that what one test does
 * to its store never decides another's outcome. */
static void use_state(const char *name)
{
	snprintf(state, sizeof(state), "%s/state-%s", scratch, name);
	setenv("MEMWALL_STATE_DIR", state, 1);
}

static bool has_byte(const char *s, unsigned char b)
{
	return s && memchr(s, b, strlen(s)) != NULL;
}

/* A fake perf first on $PATH: body is its shell text after the #! line. */
static void fake_perf(const char *body)
{
	char path[700], text[16384];
	snprintf(path, sizeof(path), "%s/perf", bindir);
	snprintf(text, sizeof(text), "#!/bin/sh\n# fake perf (tests/e2e/test_verify_hostile.c)\n%s",
		 body);
	t_write_file(path, text);
	chmod(path, 0755);
}

static json_t *load(const char *path)
{
	json_error_t je;
	json_t *doc = json_load_file(path, 0, &je);
	if (!doc)
		fprintf(stderr, "%s: %s\n", path, je.text);
	T_ASSERT(doc != NULL);
	return doc;
}

static bool is_utf8(const char *s)
{
	json_t *j = json_string(s);
	json_decref(j);
	return j != NULL;
}

/* ---- classes 11, 12 and 21: perf's text */

static void test_perf_text(void)
{
	char out[700];
	snprintf(out, sizeof(out), "%s/perf.json", scratch);
	const char *const args[] = { "-o", out, NULL };

	/* an error line with bytes that are not UTF-8 and a terminal's escape: the record is
	 * built (verify used to say "cannot verify here: out of memory", exit 3), perf is not
	 * compared with the line, made UTF-8, and the report shows the escape without obeying */
	fake_perf("printf 'Error: \\377\\376 bad \\033]0;pwn\\007 here\\n' >&2\nexit 1\n");
	struct t_output o = verify(args);
	T_ASSERT(o.status == 0 || o.status == 1);
	T_CONTAINS(o.out, "perf: not compared: ");
	T_CONTAINS(o.out, "\\e]0;pwn\\x07 here");
	T_ASSERT(!has_byte(o.out, 0x1b) && !has_byte(o.out, 0x07) && !has_byte(o.err, 0x1b));
	t_output_free(&o);
	json_t *r = load(out);
	const json_t *perf = json_object_get(r, "perf");
	T_ASSERT(json_is_false(json_object_get(perf, "available")));
	T_CONTAINS(json_string_value(json_object_get(perf, "reason")), "Error: \xef\xbf\xbd\xef\xbf\xbd bad");
	json_decref(r);

	/* a long line of two-byte characters, cut at perf's 300 bytes: still UTF-8 */
	char body[8192] = "printf '";
	for (int i = 0; i < 400; i++)
		strcat(body, "\\303\\251");
	strcat(body, "\\n' >&2\nexit 1\n");
	fake_perf(body);
	o = verify(args);
	T_ASSERT(o.status == 0 || o.status == 1);
	t_output_free(&o);
	r = load(out);
	const char *why = json_string_value(json_object_get(json_object_get(r, "perf"), "reason"));
	T_ASSERT(why && is_utf8(why));
	T_CONTAINS(why, "\xc3\xa9\xc3\xa9");
	json_decref(r);

	/* counts that are no counts perf prints: not UTF-8, "inf", "1e400" (HUGE_VAL). Each
	 * leaves perf not compared, with the count named; never "-nan %" */
	static const char *const counts[] = { "12\\3774", "inf", "1e400", "nan",
					      "1\\033[2J" };
	for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
		snprintf(body, sizeof(body), "for i in 1 2 3 4; do printf '%s,,ev,50000000,100.00,,"
			 "\\n' >&2; done\nexit 0\n", counts[k]);
		fake_perf(body);
		o = verify(args);
		T_ASSERT(o.status == 0 || o.status == 1);
		T_ASSERT(!strstr(o.out, "nan %") && !strstr(o.err, "nan %"));
		T_ASSERT(!has_byte(o.out, 0x1b) && !has_byte(o.err, 0x1b));
		T_CONTAINS(o.out, "perf: not compared: perf ");
		t_output_free(&o);
		r = load(out);
		perf = json_object_get(r, "perf");
		T_ASSERT(json_is_false(json_object_get(perf, "available")));
		why = json_string_value(json_object_get(perf, "reason"));
		T_ASSERT(why && is_utf8(why));
		if (k == 1 || k == 2) /* inf and HUGE_VAL: numbers to strtod, no count to perf */
			T_CONTAINS(why, "which is no count");
		json_decref(r);
	}
}

/* ---- class 13: a stop during perf's window ends perf's whole process group */

static bool group_alive(pid_t pgid)
{
	return kill(-pgid, 0) == 0 || errno != ESRCH;
}

static void test_stop(int sig)
{
	char pidfile[700], errfile[700], store[700], cmd[1600];
	snprintf(pidfile, sizeof(pidfile), "%s/perf.pid", scratch);
	snprintf(errfile, sizeof(errfile), "%s/stop.err", scratch);
	snprintf(store, sizeof(store), "%s/verification.json", state);
	unlink(pidfile);
	/* perf leads its group (spawn.c); its child sleeps in the same group */
	snprintf(cmd, sizeof(cmd), "echo $$ > '%s'\nsleep 60\n", pidfile);
	fake_perf(cmd);
	struct stat before, after;
	bool had_store = stat(store, &before) == 0;
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(fd, 2);
		dup2(open("/dev/null", O_WRONLY), 1);
		execl(getenv("MEMWALL_BIN"), "memwall", "verify", "--size", "0.001", "--idle-ms", "1",
		      "--perf-seconds", "30", (char *)NULL);
		_exit(127);
	}
	/* wait for perf to start (its pid in the file), at most 30 s */
	pid_t pgid = 0;
	for (int i = 0; i < 3000 && pgid <= 0; i++) {
		FILE *f = fopen(pidfile, "r");
		if (f) {
			if (fscanf(f, "%d", &pgid) != 1)
				pgid = 0;
			fclose(f);
		}
		if (pgid <= 0)
			usleep(10000);
	}
	T_ASSERT(pgid > 0);
	kill(pid, sig);
	int st = 0;
	for (int i = 0; i < 2000 && waitpid(pid, &st, WNOHANG) == 0; i++)
		usleep(10000);
	if (waitpid(pid, &st, WNOHANG) == 0) { /* still running after 20 s: a failure */
		T_ASSERT(!"verify ended within 20 s of the stop");
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	}
	/* the shell sees how memwall ended; and the group is gone (killed and reaped) */
	T_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == sig);
	bool alive = pgid > 0;
	for (int i = 0; i < 500 && alive; i++) {
		alive = group_alive(pgid);
		if (alive)
			usleep(10000);
	}
	T_ASSERT(!alive);
	if (pgid > 0)
		kill(-pgid, SIGKILL); /* a regression leaves it: never leave it running */
	int fd = open(errfile, O_RDONLY);
	char *err = fd >= 0 ? t_slurp_fd(fd) : NULL;
	if (fd >= 0)
		close(fd);
	T_CONTAINS(err, "nothing was stored");
	free(err);
	/* nothing stored: the store is as it was */
	bool has_store = stat(store, &after) == 0;
	T_EQ_INT(has_store, had_store);
	if (had_store && has_store)
		T_ASSERT(before.st_mtim.tv_sec == after.st_mtim.tv_sec &&
			 before.st_mtim.tv_nsec == after.st_mtim.tv_nsec && before.st_ino == after.st_ino);
	unlink(pidfile);
	unlink(errfile);
}

/* A stop in a 60 s idle window ends verify at once, by the signal, with nothing stored (the
 * window's sleep looks at the stop request; it slept on before). */
static void test_stop_idle(void)
{
	char errfile[700], store[700];
	snprintf(errfile, sizeof(errfile), "%s/idle.err", scratch);
	snprintf(store, sizeof(store), "%s/verification.json", state);
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(fd, 2);
		dup2(open("/dev/null", O_WRONLY), 1);
		execl(getenv("MEMWALL_BIN"), "memwall", "verify", "--size", "0.001", "--idle-ms",
		      "60000", "--no-perf", (char *)NULL);
		_exit(127);
	}
	/* the idle window begins after the line that announces it */
	bool started = false;
	for (int i = 0; i < 3000 && !started; i++) {
		int fd = open(errfile, O_RDONLY);
		char *err = fd >= 0 ? t_slurp_fd(fd) : NULL;
		if (fd >= 0)
			close(fd);
		started = err && strstr(err, "idle window 60000 ms");
		free(err);
		if (!started)
			usleep(10000);
	}
	T_ASSERT(started);
	usleep(200000);
	kill(pid, SIGTERM);
	int st = 0;
	for (int i = 0; i < 2000 && waitpid(pid, &st, WNOHANG) == 0; i++)
		usleep(10000);
	if (waitpid(pid, &st, WNOHANG) == 0) {
		T_ASSERT(!"verify ended within 20 s of a stop in its idle window");
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	}
	T_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
	struct stat sb;
	T_ASSERT(stat(store, &sb) != 0);
	unlink(errfile);
}

static void test_stops(void)
{
	test_stop(SIGTERM);
	test_stop(SIGINT);
	test_stop_idle();
}

/* ---- classes 4 and 19: the store's path and -o */

static void test_store_and_out(void)
{
	char store[700], fifo[700], out[700], slink[700], dir[700], text[64];
	const char *const none[] = { "--no-perf", NULL };
	snprintf(store, sizeof(store), "%s/verification.json", state);
	snprintf(fifo, sizeof(fifo), "%s/fifo", scratch);
	snprintf(out, sizeof(out), "%s/out.json", scratch);
	snprintf(slink, sizeof(slink), "%s/link.json", scratch);
	snprintf(dir, sizeof(dir), "%s/adir", scratch);

	/* a first verification, so the store exists */
	struct t_output o = verify(none);
	T_ASSERT(o.status == 0 || o.status == 1);
	t_output_free(&o);
	struct stat s0, s1;
	T_EQ_INT(stat(store, &s0), 0);

	/* -o naming the store, a FIFO, a link, a folder, a device: refused, before measuring;
	 * nothing replaced */
	T_EQ_INT(mkfifo(fifo, 0600), 0);
	t_write_file(out, "mine\n");
	T_EQ_INT(symlink(out, slink), 0);
	T_EQ_INT(mkdir(dir, 0700), 0);
	const struct {
		const char *path, *says;
	} refused[] = { { store, "is the verification store" }, { fifo, "is a FIFO" },
			{ slink, "is a symbolic link" }, { dir, "is a directory" },
			{ "/dev/null", "is a character device" } };
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		const char *const args[] = { "--no-perf", "-o", refused[i].path, NULL };
		o = verify(args);
		T_EQ_INT(o.status, 2);
		T_CONTAINS(o.err, refused[i].says);
		T_ASSERT(!strstr(o.err, "stored in"));
		t_output_free(&o);
	}
	T_EQ_INT(stat(store, &s1), 0);
	T_ASSERT(s0.st_ino == s1.st_ino && s0.st_mtim.tv_nsec == s1.st_mtim.tv_nsec);
	T_EQ_INT(lstat(fifo, &s1), 0);
	T_ASSERT(S_ISFIFO(s1.st_mode));
	T_EQ_INT(lstat(slink, &s1), 0);
	T_ASSERT(S_ISLNK(s1.st_mode));
	T_ASSERT(t_read_text(out, text, sizeof(text)) && !strcmp(text, "mine"));
	/* a hard link to the store is the store */
	char hard[700];
	snprintf(hard, sizeof(hard), "%s/hard.json", scratch);
	T_EQ_INT(link(store, hard), 0);
	const char *const ha[] = { "--no-perf", "-o", hard, NULL };
	o = verify(ha);
	T_EQ_INT(o.status, 2);
	T_CONTAINS(o.err, "is the verification store");
	t_output_free(&o);
	unlink(hard);
	/* the store's path before the store exists (a first verify) */
	char fresh[700], fresh_store[760];
	snprintf(fresh, sizeof(fresh), "%s/state-fresh", scratch);
	snprintf(fresh_store, sizeof(fresh_store), "%s/verification.json", fresh);
	setenv("MEMWALL_STATE_DIR", fresh, 1);
	T_EQ_INT(mkdir(fresh, 0700), 0);
	const char *const fa[] = { "--no-perf", "-o", fresh_store, NULL };
	o = verify(fa);
	T_EQ_INT(o.status, 2);
	T_CONTAINS(o.err, "is the verification store");
	t_output_free(&o);
	setenv("MEMWALL_STATE_DIR", state, 1);
	rmdir(fresh);
	/* a regular file is replaced, as before */
	const char *const ok[] = { "--no-perf", "-o", out, NULL };
	o = verify(ok);
	T_ASSERT(o.status == 0 || o.status == 1);
	t_output_free(&o);
	json_t *r = load(out);
	T_CONTAINS(json_string_value(json_object_get(r, "schema")), "memwall-verification/");
	json_decref(r);

	/* a FIFO where the store is: refused by what it is, never blocked on (class 4) */
	char fstate[700], fstore[760];
	snprintf(fstate, sizeof(fstate), "%s/state-fifo", scratch);
	snprintf(fstore, sizeof(fstore), "%s/verification.json", fstate);
	T_EQ_INT(mkdir(fstate, 0700), 0);
	T_EQ_INT(mkfifo(fstore, 0600), 0);
	setenv("MEMWALL_STATE_DIR", fstate, 1);
	o = verify(none);
	T_EQ_INT(o.status, 3);
	T_CONTAINS(o.err, "is a FIFO");
	t_output_free(&o);
	/* and a run says so in its record, as it does for a missing one */
	char dirout[700], path[1024] = "";
	snprintf(dirout, sizeof(dirout), "%s/out-fifo", scratch);
	const char *const run[] = { "run", proto, "-o", dirout, NULL };
	o = mw(run);
	T_EQ_INT(o.status, 0);
	t_written_path(o.err, path, sizeof(path));
	t_output_free(&o);
	r = path[0] ? load(path) : NULL;
	const json_t *dram = json_object_get(json_object_get(r, "counters"), "dram");
	T_ASSERT(json_is_null(json_object_get(dram, "verification")));
	T_CONTAINS(json_string_value(json_object_get(dram, "verification_reason")), "is a FIFO");
	json_decref(r);
	setenv("MEMWALL_STATE_DIR", state, 1);
	T_ASSERT(lstat(fstore, &s1) == 0 && S_ISFIFO(s1.st_mode));
}

/* ---- class 14: store entries that lie about themselves */

/* This machine's entry on the sim layer in the store: the store (new reference) and its sha. */
static json_t *store_entry(char sha[65], json_t **entry)
{
	char store[700];
	snprintf(store, sizeof(store), "%s/verification.json", state);
	json_t *s = load(store);
	const char *key;
	json_t *m;
	*entry = NULL;
	json_object_foreach(json_object_get(s, "machines"), key, m) {
		snprintf(sha, 65, "%s", key);
		*entry = json_object_get(m, "sim");
	}
	T_ASSERT(*entry != NULL);
	return s;
}

/* Runs the protocol; returns the record's counters.dram (the record in *doc). */
static const json_t *run_dram(json_t **doc, const char *name)
{
	char dirout[700], path[1024] = "";
	snprintf(dirout, sizeof(dirout), "%s/out-%s", scratch, name);
	const char *const run[] = { "run", proto, "-o", dirout, NULL };
	struct t_output o = mw(run);
	T_OK(o, "run");
	t_written_path(o.err, path, sizeof(path));
	t_output_free(&o);
	*doc = path[0] ? load(path) : NULL;
	if (path[0]) {
		/* whatever the store said, the run's own record validates */
		const char *const val[] = { "validate", path, NULL };
		o = mw(val);
		T_OK(o, "validate");
		t_output_free(&o);
	}
	return json_object_get(json_object_get(*doc, "counters"), "dram");
}

static void test_entries(void)
{
	char sha[65], store[700], future[32];
	snprintf(store, sizeof(store), "%s/verification.json", state);
	const char *const none[] = { "--no-perf", NULL };
	struct t_output o = verify(none);
	t_output_free(&o);
	json_t *entry, *s = store_entry(sha, &entry);
	if (!entry) {
		json_decref(s);
		return;
	}
	json_t *good = json_deep_copy(entry);
	json_decref(s);
	/* untouched, the entry is taken */
	json_t *doc;
	const json_t *dram = run_dram(&doc, "good");
	T_EQ_STR(json_string_value(json_object_get(json_object_get(dram, "verification"), "verdict")),
		 json_string_value(json_object_get(good, "verdict")));
	json_decref(doc);

	time_t later = time(NULL) + 10 * 86400;
	struct tm tm;
	gmtime_r(&later, &tm);
	strftime(future, sizeof(future), "%Y-%m-%dT%H:%M:%SZ", &tm);
	const struct {
		const char *name, *key, *value; /* the entry's key set to the JSON value */
		const char *says;
	} lies[] = {
		{ "future", "created_utc", NULL, "days after this machine's clock" },
		{ "pass-over-fail", "verdict", "\"pass\"", "is not what its checks give" },
		{ "maybe", "verdict", "\"maybe\"", "neither \"pass\" nor \"fail\"" },
		{ "layer", "layer", "\"syscall\"", "its own layer is not the sim layer" },
		{ "no-checks", "checks", "[]", "holds no checks" },
		{ "sha", "fingerprint_sha256", "\"0000\"", "fingerprint_sha256 is not the machine" },
	};
	for (size_t i = 0; i < sizeof(lies) / sizeof(lies[0]); i++) {
		json_t *e = json_deep_copy(good);
		json_t *v = lies[i].value ? json_loads(lies[i].value, JSON_DECODE_ANY, NULL)
					  : json_string(future);
		json_object_set_new(e, lies[i].key, v);
		if (!strcmp(lies[i].name, "pass-over-fail")) {
			/* every check failed, the verdict still says pass */
			size_t k;
			json_t *c;
			json_array_foreach(json_object_get(e, "checks"), k, c)
				json_object_set_new(c, "verdict", json_string("fail"));
		}
		json_t *st = json_pack("{s:s, s:{s:{s:o}}}", "schema",
				       "memwall-verification-store/1", "machines", sha, "sim", e);
		T_EQ_INT(json_dump_file(st, store, JSON_INDENT(1)), 0);
		json_decref(st);
		dram = run_dram(&doc, lies[i].name);
		T_ASSERT(json_is_null(json_object_get(dram, "verification")));
		const char *why = json_string_value(json_object_get(dram, "verification_reason"));
		T_CONTAINS(why, "missing: ");
		T_CONTAINS(why, lies[i].says);
		json_decref(doc);
	}
	/* the good one back, for what follows */
	json_t *st = json_pack("{s:s, s:{s:{s:O}}}", "schema", "memwall-verification-store/1",
			       "machines", sha, "sim", good);
	T_EQ_INT(json_dump_file(st, store, JSON_INDENT(1)), 0);
	json_decref(st);
	json_decref(good);
}

/* ---- class 23: bundle reads only this machine's store */

static bool tar_has(const char *bundle, const char *member, char **text)
{
	const char *list[] = { "/bin/tar", "tzf", bundle, NULL };
	struct t_output o = t_run(list);
	bool has = o.out && strstr(o.out, member);
	t_output_free(&o);
	if (has && text) {
		const char *x[] = { "/bin/tar", "xzf", bundle, "-O", member, NULL };
		o = t_run(x);
		*text = o.out;
		o.out = NULL;
		t_output_free(&o);
	}
	return has;
}

static void test_bundle(void)
{
	char rec[760], forged[700], bundle[700], sha[65];
	json_t *doc, *entry;
	const char *const none[] = { "--no-perf", NULL };
	struct t_output v = verify(none);
	t_output_free(&v);
	const json_t *dram = run_dram(&doc, "bundle");
	if (!doc)
		return;
	/* a forged store elsewhere, holding a verification of the same machine, layer and
	 * date that says something else; the record is edited to name it */
	json_t *s = store_entry(sha, &entry);
	if (!entry) {
		json_decref(s);
		json_decref(doc);
		return;
	}
	T_EQ_STR(json_string_value(json_object_get(json_object_get(dram, "verification"),
						   "created_utc")),
		 json_string_value(json_object_get(entry, "created_utc")));
	json_object_set_new(entry, "description", json_string("FORGED"));
	snprintf(forged, sizeof(forged), "%s/forged.json", scratch);
	T_EQ_INT(json_dump_file(s, forged, JSON_INDENT(1)), 0);
	json_decref(s);
	json_object_set_new(json_object_get((json_t *)(uintptr_t)dram, "verification"), "source",
			    json_string(forged));
	snprintf(rec, sizeof(rec), "%s/forged-rec.json", scratch);
	T_EQ_INT(json_dump_file(doc, rec, JSON_INDENT(1) | JSON_REAL_PRECISION(17)), 0);
	json_decref(doc);

	/* this machine's store holds the genuine one: that one is packed, never the forgery */
	snprintf(bundle, sizeof(bundle), "%s/b1.tar.gz", scratch);
	const char *const b1[] = { "bundle", rec, "-o", bundle, NULL };
	struct t_output o = mw(b1);
	T_EQ_INT(o.status, 0);
	t_output_free(&o);
	char *text = NULL;
	T_ASSERT(tar_has(bundle, "verification/forged-rec.json", &text));
	T_ASSERT(text && !strstr(text, "FORGED"));
	free(text);

	/* this machine's store without it: nothing packed, though the forged store holds it */
	char other[700];
	snprintf(other, sizeof(other), "%s/state-empty", scratch);
	setenv("MEMWALL_STATE_DIR", other, 1);
	snprintf(bundle, sizeof(bundle), "%s/b2.tar.gz", scratch);
	const char *const b2[] = { "bundle", rec, "-o", bundle, NULL };
	o = mw(b2);
	T_EQ_INT(o.status, 0);
	t_output_free(&o);
	T_ASSERT(!tar_has(bundle, "verification/", NULL));
	text = NULL;
	T_ASSERT(tar_has(bundle, "provenance.md", &text));
	T_CONTAINS(text, "- Verification record: not in the bundle (");
	free(text);
	setenv("MEMWALL_STATE_DIR", state, 1);
}

int main(void)
{
	t_need_memwall();
	if (access("/usr/bin/timeout", X_OK))
		t_skip("/usr/bin/timeout is absent (coreutils): it bounds every memwall here");
	t_scratch(scratch, sizeof(scratch), "vhostile");
	char path[1200];
	snprintf(script, sizeof(script), "%s/sim.script", scratch);
	snprintf(bindir, sizeof(bindir), "%s/bin", scratch);
	snprintf(proto, sizeof(proto), "%s/run.json", scratch);
	mkdir(bindir, 0755);
	t_setenv_in("MEMWALL_CACHE_DIR", scratch, "cache");
	t_sim_env(AL, script);
	const char *old = getenv("PATH");
	snprintf(path, sizeof(path), "%s:%s", bindir, old ? old : "/usr/bin:/bin");
	setenv("PATH", path, 1);
	FILE *f = fopen(script, "w");
	if (!f)
		t_skip("cannot write %s", script);
	for (int i = 0; i < 2; i++) {
		char pmu[64];
		snprintf(pmu, sizeof(pmu), "uncore_imc_free_running_%d", i);
		fprintf(f, "perf type=%u config=0x20ff cpu=* start=1000 step=100000\n",
			t_pmu_type(AL, pmu));
		fprintf(f, "perf type=%u config=0x30ff cpu=* start=1000 step=50000\n",
			t_pmu_type(AL, pmu));
	}
	fclose(f);
	t_vs_run_protocol(proto, "hostile");

	/* VHOSTILE_ONLY=NAME runs one test alone (checking that a test fails without its fix) */
	static const struct {
		const char *name;
		void (*fn)(void);
	} tests[] = { { "perf_text", test_perf_text }, { "stop", test_stops },
		      { "store_and_out", test_store_and_out }, { "entries", test_entries },
		      { "bundle", test_bundle } };
	const char *only = getenv("VHOSTILE_ONLY");
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		if (only && strcmp(only, tests[i].name))
			continue;
		use_state(tests[i].name);
		tests[i].fn();
	}

	return t_done_rm(scratch, 0);
}
