/* tests/e2e/test_crash.c: `memwall run` killed with SIGKILL at random points, and run twice at
 * once into one folder, never leaves a damaged or clobbered result record.
 *
 * What the results folder may hold afterwards, and why:
 *   - NAME.json, NAME-N.json: whole records that `memwall validate` accepts. src/record/result.c writes
 *     a record to a temporary file, fsyncs it and renames it into place with RENAME_NOREPLACE
 *     (or link(), which refuses an existing name too), so a record name only ever points at a
 *     complete file, and a second run never replaces a first one's record.
 *   - .NAME.XXXXXX.tmp: the temporary file of a run killed while writing. It is tolerated: a
 *     dot file is hidden from `ls` and from the shell's `*.json`, no verb lists folders, and its
 *     name says what it is. Anything else in the folder fails the test.
 * SIGKILL cannot be caught, so no record marked incomplete can come of it (SIGINT and SIGTERM
 * give one: tests/e2e/test_run_e2e.c). The synthetic model's cache is written the same way
 * (CACHE/synth/NAME.bin.PID.tmp renamed into place), and a run after the kills must still
 * succeed from it. */
#include <dirent.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "record.h"
#include "run.h"
#include "test.h"

#define N_KILLS 20

static char scratch[256], proto[4096];

/* Starts `memwall run PROTO -o DIR` with its output thrown away. */
static pid_t start_run(const char *dir)
{
	return t_start((const char *[]){ "memwall", "run", proto, "-o", dir, NULL });
}

/* Exit code of pid, or 128 + signal. */
static int wait_for(pid_t pid)
{
	int st = 0;
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && !strcmp(s + a - b, suffix);
}

/* Checks every entry of dir; returns the number of records, counting temporaries in *n_tmp. */
static int check_folder(const char *dir, int *n_tmp)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;
	*n_tmp = 0;
	if (!d)
		return 0; /* a run killed before it wrote anything creates no folder */
	while ((de = readdir(d))) {
		const char *name = de->d_name;
		char path[1024];
		if (!strcmp(name, ".") || !strcmp(name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		if (name[0] == '.' && ends_with(name, ".tmp")) {
			(*n_tmp)++;
			continue;
		}
		if (name[0] == '.' || !ends_with(name, ".json")) {
			T_FAIL_AT(__FILE__, __LINE__, "%s: neither a record nor a writer's temporary",
				  path);
			continue;
		}
		t_validates(path, "test_crash");
		n++;
	}
	closedir(d);
	return n;
}

static void test_kills(double run_s)
{
	char dir[512];
	int statuses[N_KILLS], killed = 0, finished = 0, n_tmp = 0;
	snprintf(dir, sizeof(dir), "%s/killed", scratch);
	/* Kill points spread over the whole run, a little past its usual end, so some land in
	 * synthesis, the runs, the record's writing and the rename. */
	srand((unsigned)time(NULL) ^ (unsigned)getpid());
	for (int i = 0; i < N_KILLS; i++) {
		/* Half of the kills hit a cold cache, so some land while the model is made. */
		if (i % 2 == 0) {
			char cmd[600];
			snprintf(cmd, sizeof(cmd), "rm -f '%s'/cache/synth/*.bin", scratch);
			T_EQ_INT(system(cmd), 0);
		}
		double at = run_s * 1.2 * (double)rand() / (double)RAND_MAX;
		pid_t pid = start_run(dir);
		usleep((useconds_t)(at * 1e6));
		kill(pid, SIGKILL);
		statuses[i] = wait_for(pid);
		if (statuses[i] == 128 + SIGKILL)
			killed++;
		else
			finished++;
		/* A run that finished first passed or failed acceptance; anything else is a bug. */
		T_ASSERT(statuses[i] == 128 + SIGKILL || statuses[i] == 0 || statuses[i] == 1);
	}
	int n = check_folder(dir, &n_tmp);
	printf("%d runs killed, %d finished first; %d records (all valid), %d writer's "
	       "temporaries left by kills\n", killed, finished, n, n_tmp);
	T_ASSERT(killed > 0);
	/* Every run that finished wrote its own record: none was lost or overwritten. */
	T_ASSERT(n >= finished);

	/* The cache survives: a run now completes and adds one more valid record. */
	pid_t pid = start_run(dir);
	int st = wait_for(pid);
	T_ASSERT(st == 0 || st == 1);
	T_EQ_INT(check_folder(dir, &n_tmp), n + 1);
}

/* Two runs into one folder at the same second: two records under two names, both whole. */
static void test_concurrent(void)
{
	char dir[512], cmd[600];
	int n_tmp = 0;
	snprintf(dir, sizeof(dir), "%s/together", scratch);
	/* A cold cache: both make the synthetic model at once too. */
	snprintf(cmd, sizeof(cmd), "rm -f '%s'/cache/synth/*.bin", scratch);
	T_EQ_INT(system(cmd), 0);
	/* What a generation killed mid-write leaves: a temporary named for a writer that is gone
	 * (a child that has exited and been reaped). Kills above rarely land in the millisecond
	 * the smoke model takes to make, so plant one. */
	pid_t gone = fork();
	if (gone == 0)
		_exit(0);
	waitpid(gone, NULL, 0);
	snprintf(cmd, sizeof(cmd), "touch '%s'/cache/synth/stories260K-seed42.bin.%d.tmp",
		 scratch, (int)gone);
	T_EQ_INT(system(cmd), 0);
	pid_t a = start_run(dir), b = start_run(dir);
	int sa = wait_for(a), sb = wait_for(b);
	T_ASSERT(sa == 0 || sa == 1);
	T_ASSERT(sb == 0 || sb == 1);
	T_EQ_INT(check_folder(dir, &n_tmp), 2);
	T_EQ_INT(n_tmp, 0);

	/* Generating the model again cleared what the kills left half-written in the cache:
	 * a temporary whose writer is dead never survives the next generation. */
	snprintf(cmd, sizeof(cmd), "%s/cache/synth", scratch);
	DIR *d = opendir(cmd);
	struct dirent *e;
	int stale = 0;
	while (d && (e = readdir(d)))
		if (strstr(e->d_name, ".tmp")) {
			fprintf(stderr, "left in the cache: %s\n", e->d_name);
			stale++;
		}
	if (d)
		closedir(d);
	T_EQ_INT(stale, 0);
}

int main(void)
{
	char cache[512];
	/* The smoke protocol without its drift probe (tests/lib/run.h): the probe was most of a
	 * run's time and CPU, so most kills landed in it; now they land in synthesis, the runs,
	 * the record's writing and the rename. */
	t_smoke_scratch("crash", scratch, sizeof(scratch), proto, sizeof(proto), cache,
			sizeof(cache));

	/* One whole run first: it fills the cache and times a run on this machine now. */
	char warm[512];
	snprintf(warm, sizeof(warm), "%s/warm", scratch);
	double t0 = t_now();
	int st = wait_for(start_run(warm));
	double run_s = t_now() - t0;
	T_ASSERT(st == 0 || st == 1);
	printf("one smoke run takes %.2f s here\n", run_s);

	test_kills(run_s);
	test_concurrent();

	return t_done_rm(scratch, 0);
}
