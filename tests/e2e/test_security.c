/* tests/e2e/test_security.c: what `memwall run` and `memwall generate` do with a hostile or
 * starved environment.
 *
 *   - A secret in the environment never reaches the result record: memwall records an
 *     allow-list of variables (src/base/machine.c, results/README.md), never the environment.
 *   - A protocol's relative paths resolve against the protocol's folder, whatever the current
 *     directory (the loader's side: tests/src/test_protocol.c).
 *   - A prompt longer than the model's context is refused with exit 2, by run and generate.
 *   - A model larger than the available memory is refused with exit 3 before it is mapped,
 *     unless --force; swap in use before the runs, or growing during them, is recorded with
 *     a warning. /proc/meminfo is faked through $MEMWALL_MEMINFO (src/base/machine.h).
 * External engines' commands are expanded into argv without a shell, so prompt text cannot
 * inject a command: tests/e2e/test_external.c (test_injection) checks that. */
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mw.h"
#include "redact.h"
#include "run.h"
#include "test.h"

#include <jansson.h>

static char scratch[256], smoke[4096], model[600];

/* The only record in dir (the test gives each run its own folder), loaded; NULL if none. */
static json_t *record_in(const char *dir, char *path, size_t n)
{
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "ls '%s'/*.json 2>/dev/null | head -1", dir);
	FILE *p = popen(cmd, "r");
	path[0] = '\0';
	if (p) {
		if (fgets(path, (int)n, p))
			path[strcspn(path, "\n")] = '\0';
		pclose(p);
	}
	return path[0] ? json_load_file(path, 0, NULL) : NULL;
}

/* The smoke protocol with changes: a short run from a file model, written to scratch/name. */
static void write_protocol(const char *name, const char *model_path, int n_prompt, char *out,
			   size_t n)
{
	json_t *doc = json_load_file(smoke, 0, NULL);
	T_ASSERT(doc != NULL);
	if (!doc)
		return;
	json_object_set_new(doc, "name", json_string(name));
	json_object_set_new(doc, "model", json_pack("{s:s, s:s}", "format", "llama2c", "path",
						    model_path));
	json_t *ids = json_array();
	for (int i = 0; i < n_prompt; i++)
		json_array_append_new(ids, json_integer(1 + i % 500));
	json_object_set_new(doc, "prompt_tokens", ids);
	json_object_set_new(doc, "decode_tokens", json_integer(8));
	json_object_set_new(doc, "runs", json_integer(2));
	json_object_set_new(doc, "warmup_runs", json_integer(0));
	json_object_set_new(json_object_get(doc, "acceptance"), "min_tokens", json_integer(8));
	snprintf(out, n, "%s/%s.json", scratch, name);
	T_EQ_INT(json_dump_file(doc, out, JSON_INDENT(2)), 0);
	json_decref(doc);
}

static void write_meminfo(const char *path, long avail_kb, long swap_total_kb, long swap_free_kb)
{
	FILE *f = fopen(path, "w");
	fprintf(f, "MemTotal:       25165824 kB\nMemFree:        %ld kB\nMemAvailable:   %ld kB\n"
		"SwapTotal:      %ld kB\nSwapFree:       %ld kB\n", avail_kb, avail_kb,
		swap_total_kb, swap_free_kb);
	fclose(f);
}

/* A secret in the environment of a run appears nowhere in its record. */
static void test_secret(void)
{
	char dir[600], path[1024];
	snprintf(dir, sizeof(dir), "%s/secret", scratch);
	setenv("MY_SECRET_TOKEN", "hunter2", 1);
	const char *argv[] = { "memwall", "run", smoke, "-o", dir, NULL };
	struct t_output o = t_run(argv);
	unsetenv("MY_SECRET_TOKEN");
	T_ASSERT(o.status == 0 || o.status == 1);
	T_ASSERT(!strstr(o.out, "hunter2") && !strstr(o.err, "hunter2"));
	t_output_free(&o);
	json_t *doc = record_in(dir, path, sizeof(path));
	T_ASSERT(doc != NULL);
	json_decref(doc);
	char *text = path[0] ? t_slurp(path, NULL) : NULL;
	T_ASSERT(text != NULL);
	if (text) {
		T_ASSERT(!strstr(text, "hunter2"));
		T_ASSERT(!strstr(text, "MY_SECRET_TOKEN"));
	}
	free(text);
	/* The allow-list is recorded: the cache folder this test set. */
	doc = path[0] ? json_load_file(path, 0, NULL) : NULL;
	const json_t *env = json_object_get(json_object_get(doc, "memwall"), "environment");
	T_ASSERT(json_is_object(env));
	T_CONTAINS(json_string_value(json_object_get(env, "MEMWALL_CACHE_DIR")), scratch);
	T_ASSERT(!json_object_get(env, "HOME") && !json_object_get(env, "PATH"));
	json_decref(doc);
}

/* The model named "model.bin" in a protocol is the one beside the protocol, run from "/". */
static void test_relative(void)
{
	char proto[700], dir[600], path[1024], want[700], cwd[4096];
	write_protocol("relative", "model.bin", 3, proto, sizeof(proto));
	snprintf(dir, sizeof(dir), "%s/relative-out", scratch);
	snprintf(want, sizeof(want), "%s/model.bin", scratch);
	T_ASSERT(getcwd(cwd, sizeof(cwd)) != NULL);
	T_EQ_INT(chdir("/"), 0);
	const char *argv[] = { "memwall", "run", proto, "-o", dir, NULL };
	struct t_output o = t_run(argv);
	T_EQ_INT(chdir(cwd), 0);
	if (o.status > 1)
		fprintf(stderr, "%s\n", o.err);
	T_ASSERT(o.status == 0 || o.status == 1);
	t_output_free(&o);
	json_t *doc = record_in(dir, path, sizeof(path));
	T_ASSERT(doc != NULL);
	T_EQ_STR(json_string_value(json_object_get(json_object_get(doc, "model"), "path")), want);
	json_decref(doc);
}

/* Prompts longer than the model's context (512 positions): exit 2 naming the context. */
static void test_huge_prompt(void)
{
	char proto[700];
	write_protocol("huge-prompt", "model.bin", 600, proto, sizeof(proto));
	const char *argv[] = { "memwall", "run", proto, "-o", scratch, NULL };
	T_RUN_EXPECT(argv, 2, NULL, T_LIST("context of 512"));

	/* generate: 50000 ids, far past the context, parsed within bounds and refused. */
	size_t n = 50000; /* 100 kB: under the kernel's 128 KiB limit on one argument */
	char *ids = malloc(2 * n + 1);
	for (size_t i = 0; i < n; i++) {
		ids[2 * i] = '1';
		ids[2 * i + 1] = ',';
	}
	ids[2 * n - 1] = '\0';
	const char *gargv[] = { "memwall", "generate", "-m", model, "--prompt-ids", ids, "-n", "4",
				NULL };
	T_RUN_EXPECT(gargv, 2, NULL, T_LIST("context of 512"));
	free(ids);
}

/* 100 KiB available for a 1 MB model: refused before mapping (exit 3) unless --force. */
static void test_memory(void)
{
	char meminfo[600], proto[700], dir[600], path[1024];
	snprintf(meminfo, sizeof(meminfo), "%s/meminfo-small", scratch);
	write_meminfo(meminfo, 100, 0, 0);
	write_protocol("small-memory", "model.bin", 3, proto, sizeof(proto));
	snprintf(dir, sizeof(dir), "%s/memory-out", scratch);
	setenv("MEMWALL_MEMINFO", meminfo, 1);

	const char *argv[] = { "memwall", "run", proto, "-o", dir, NULL };
	struct t_output o = t_run(argv);
	T_EQ_INT(o.status, 3);
	T_CONTAINS(o.err, "MemAvailable");
	T_CONTAINS(o.err, "--force");
	T_ASSERT(!strstr(o.err, "hashing")); /* refused before the model is read, let alone mapped */
	t_output_free(&o);
	/* refused: no record written (the folder itself is made before the first run) */
	json_t *none = record_in(dir, path, sizeof(path));
	T_ASSERT(none == NULL);
	json_decref(none);

	const char *fargv[] = { "memwall", "run", proto, "-o", dir, "--force", NULL };
	o = t_run(fargv);
	T_ASSERT(o.status == 0 || o.status == 1);
	t_output_free(&o);
	json_t *doc = record_in(dir, path, sizeof(path));
	T_ASSERT(doc != NULL);
	const json_t *pre = json_object_get(doc, "preflight");
	T_EQ_INT(json_integer_value(json_object_get(pre, "mem_available_bytes")), 100 * 1024);
	char *warnings = json_dumps(json_object_get(pre, "warnings"), 0);
	T_CONTAINS(warnings, "--force");
	free(warnings);
	json_decref(doc);

	const char *gargv[] = { "memwall", "generate", "-m", model, "--ids", "-n", "4", NULL };
	T_RUN_EXPECT(gargv, 3, NULL, T_LIST("MemAvailable", "--force"));
	const char *gfargv[] = { "memwall", "generate", "-m", model, "--ids", "-n", "4", "--force",
				 NULL };
	T_RUN_EXPECT(gfargv, 0, NULL, NULL);
	unsetenv("MEMWALL_MEMINFO");
}

/* 1 GiB of 2 GiB swap in use: recorded, with a warning. */
static void test_swap(void)
{
	char meminfo[600], proto[700], dir[600], path[1024];
	snprintf(meminfo, sizeof(meminfo), "%s/meminfo-swap", scratch);
	write_meminfo(meminfo, 20000000, 2097152, 1048576);
	write_protocol("swapping", "model.bin", 3, proto, sizeof(proto));
	snprintf(dir, sizeof(dir), "%s/swap-out", scratch);
	setenv("MEMWALL_MEMINFO", meminfo, 1);
	const char *argv[] = { "memwall", "run", proto, "-o", dir, NULL };
	struct t_output o = t_run(argv);
	unsetenv("MEMWALL_MEMINFO");
	T_ASSERT(o.status == 0 || o.status == 1);
	T_CONTAINS(o.err, "1024 MiB of swap is in use");
	t_output_free(&o);
	json_t *doc = record_in(dir, path, sizeof(path));
	const json_t *pre = json_object_get(doc, "preflight");
	T_EQ_INT(json_integer_value(json_object_get(pre, "swap_used_bytes")), 1073741824);
	char *warnings = json_dumps(json_object_get(pre, "warnings"), 0);
	T_CONTAINS(warnings, "swap is in use");
	free(warnings);
	json_decref(doc);
}

/* Swap that comes into use during the runs: the closing check records it. The fake meminfo
 * changes once the first run is reported, so the preflight saw none. */
static void test_swap_growth(void)
{
	char meminfo[600], tmp[700], proto[700], dir[600], path[1024], line[1024];
	snprintf(meminfo, sizeof(meminfo), "%s/meminfo-growing", scratch);
	snprintf(tmp, sizeof(tmp), "%s.new", meminfo);
	write_meminfo(meminfo, 20000000, 2097152, 2097152);
	write_protocol("swap-growing", "model.bin", 3, proto, sizeof(proto));
	snprintf(dir, sizeof(dir), "%s/swap-growing-out", scratch);
	setenv("MEMWALL_MEMINFO", meminfo, 1);
	int pfd[2];
	T_EQ_INT(pipe(pfd), 0);
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		int nul = open("/dev/null", O_WRONLY);
		dup2(nul, 1);
		dup2(pfd[1], 2);
		close(pfd[0]);
		execl(getenv("MEMWALL_BIN"), "memwall", "run", proto, "--runs", "4", "-o", dir,
		      (char *)NULL);
		_exit(127);
	}
	unsetenv("MEMWALL_MEMINFO");
	close(pfd[1]);
	FILE *err = fdopen(pfd[0], "r");
	bool changed = false, warned = false;
	while (err && fgets(line, sizeof(line), err)) {
		if (!changed && strstr(line, "run 1/")) {
			/* Replaced whole (rename), so the reader never sees half a file. */
			write_meminfo(tmp, 20000000, 2097152, 1048576);
			T_EQ_INT(rename(tmp, meminfo), 0);
			changed = true;
		}
		warned |= strstr(line, "swap in use grew by 1024 MiB during the runs") != NULL;
	}
	if (err)
		fclose(err);
	int st = 0;
	waitpid(pid, &st, 0);
	T_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) <= 1);
	T_ASSERT(changed);
	T_ASSERT(warned);
	json_t *doc = record_in(dir, path, sizeof(path));
	const json_t *pre = json_object_get(doc, "preflight");
	T_EQ_INT(json_integer_value(json_object_get(pre, "swap_used_bytes")), 0);
	char *warnings = json_dumps(json_object_get(pre, "warnings"), 0);
	T_CONTAINS(warnings, "swap in use grew by 1024 MiB");
	free(warnings);
	json_decref(doc);
}

/* ---- issue 15: hardening, round two ---------------------------------------------------- */

static void write_text(const char *path, const char *text, mode_t mode)
{
	t_write_text(path, text);
	chmod(path, mode);
}

/* A pid that ran and is gone: a child that exited and was reaped. */
static pid_t dead_pid(void)
{
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	return pid;
}

/* synth -o never replaces what is not a regular file, and a regular file only with --force. */
static void test_synth_target(void)
{
	char fifo[600], dir[600], file[600], link[600];
	snprintf(fifo, sizeof(fifo), "%s/synth-fifo", scratch);
	snprintf(dir, sizeof(dir), "%s/synth-dir", scratch);
	snprintf(file, sizeof(file), "%s/synth-file.bin", scratch);
	snprintf(link, sizeof(link), "%s/synth-link", scratch);
	T_EQ_INT(mkfifo(fifo, 0600), 0);
	T_EQ_INT(mkdir(dir, 0700), 0);
	T_EQ_INT(symlink("/dev/null", link), 0);
	write_text(file, "precious", 0644);
	const struct { const char *target, *says; bool force; } refused[] = {
		{ "/dev/null", "is a character device", true },
		{ fifo, "is a FIFO", true },
		{ dir, "is a directory", true },
		{ link, "is a symbolic link", true },
		{ file, "--force", false },
	};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		const char *argv[] = { "memwall", "synth", "--shape", "stories260K", "-o",
				       refused[i].target, refused[i].force ? "--force" : NULL, NULL };
		struct t_output o = t_run(argv);
		T_EQ_INT(o.status, 2);
		T_CONTAINS(o.err, refused[i].says);
		t_output_free(&o);
	}
	struct stat st;
	T_ASSERT(stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode));
	T_ASSERT(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));
	T_ASSERT(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
	char *text = t_slurp(file, NULL);
	T_EQ_STR(text, "precious");
	free(text);
	/* --force replaces a regular file; no temporary file is left beside it. */
	const char *fargv[] = { "memwall", "synth", "--shape", "stories260K", "-o", file, "--force",
				NULL };
	T_RUN_EXPECT(fargv, 0, NULL, NULL);
	T_ASSERT(stat(file, &st) == 0 && st.st_size > 1000);
	char cmd[800];
	snprintf(cmd, sizeof(cmd), "ls -a '%s' | grep -q mw-synth", scratch);
	T_ASSERT(system(cmd) != 0);
}

/* The output folder is checked before the first run; stale temporary records of dead
 * writers (and only those) are removed. */
static void test_output_dir(void)
{
	char file[600], sub[700], ro[600], dir[600], path[1024];
	snprintf(file, sizeof(file), "%s/not-a-dir", scratch);
	write_text(file, "x", 0644);
	snprintf(sub, sizeof(sub), "%s/below", file);
	snprintf(ro, sizeof(ro), "%s/read-only", scratch);
	T_EQ_INT(mkdir(ro, 0555), 0);
	const char *bad[] = { file, sub, geteuid() ? ro : NULL };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]) && bad[i]; i++) {
		const char *argv[] = { "memwall", "run", smoke, "-o", bad[i], NULL };
		uint64_t t0 = (uint64_t)time(NULL);
		struct t_output o = t_run(argv);
		T_ASSERT(o.status == 2 || o.status == 3);
		T_CONTAINS(o.err, bad[i]);
		T_ASSERT(!strstr(o.err, "result written"));
		T_ASSERT((uint64_t)time(NULL) - t0 < 5); /* refused up front, not after the runs */
		t_output_free(&o);
	}

	snprintf(dir, sizeof(dir), "%s/stale", scratch);
	T_EQ_INT(mkdir(dir, 0755), 0);
	char dead[800], alive[800], other[800], init[800], bare[800];
	snprintf(dead, sizeof(dead), "%s/.mw-%ld-smoke-20260101T000000Z.Ab12Cd.tmp", dir,
		 (long)dead_pid());
	snprintf(alive, sizeof(alive), "%s/.mw-%ld-smoke-20260101T000000Z.Ef34Gh.tmp", dir,
		 (long)getpid());
	snprintf(init, sizeof(init), "%s/.mw-1-smoke.Ij56Kl.tmp", dir);
	snprintf(other, sizeof(other), "%s/.smoke.Mn78Op.tmp", dir);
	snprintf(bare, sizeof(bare), "%s/mw-%ld-smoke.Qr90St.tmp", dir, (long)dead_pid());
	const char *all[] = { dead, alive, init, other, bare };
	for (size_t i = 0; i < 5; i++)
		write_text(all[i], "{", 0600);
	const char *argv[] = { "memwall", "run", smoke, "-o", dir, NULL };
	struct t_output o = t_run(argv);
	T_ASSERT(o.status == 0 || o.status == 1);
	t_output_free(&o);
	T_ASSERT(access(dead, F_OK) != 0);
	for (size_t i = 1; i < 5; i++)
		T_ASSERT(access(all[i], F_OK) == 0);
	json_t *doc = record_in(dir, path, sizeof(path));
	T_ASSERT(doc != NULL);
	json_decref(doc);
}

/* One thread limit, MW_THREADS_MAX, checked before anything runs, by every verb. */
static void test_threads(void)
{
	char big[16], over[16], proto[700];
	snprintf(big, sizeof(big), "%d", 100000);
	snprintf(over, sizeof(over), "%d", MW_THREADS_MAX + 1);
	const char *const *cases[] = {
		(const char *[]){ "memwall", "run", smoke, "--threads", big, "-o", scratch, NULL },
		(const char *[]){ "memwall", "run", smoke, "--threads", over, "-o", scratch, NULL },
		(const char *[]){ "memwall", "generate", "-m", model, "--threads", over, "-n", "2",
				  NULL },
		(const char *[]){ "memwall", "roofline", "--threads", over, NULL },
		(const char *[]){ "memwall", "bandwidth", "--threads", over, NULL },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		T_RUN_EXPECT(cases[i], 2, NULL, T_LIST("1024"));
	}
	/* The protocol's schema says the same number. */
	snprintf(proto, sizeof(proto), "%s/protocols/protocol.schema.json",
		 getenv("MEMWALL_SOURCE_ROOT"));
	json_t *schema = json_load_file(proto, 0, NULL);
	const json_t *t = json_object_get(json_object_get(json_object_get(json_object_get(
		json_object_get(schema, "properties"), "engine"), "properties"), "threads"),
		"maximum");
	T_EQ_INT((int)json_integer_value(t), MW_THREADS_MAX);
	json_decref(schema);
}

/* A FIFO, a folder or a device named as an input is refused by what it is, at once. */
static void test_special_files(void)
{
	char fifo[600];
	snprintf(fifo, sizeof(fifo), "%s/input-fifo", scratch);
	T_EQ_INT(mkfifo(fifo, 0600), 0);
	const struct { const char *argv[10]; const char *says; } cases[] = {
		{ { "memwall", "run", fifo, "-o", scratch, NULL }, "is a FIFO" },
		{ { "memwall", "run", scratch, "-o", scratch, NULL }, "is a directory" },
		{ { "memwall", "validate", fifo, NULL }, "is a FIFO" },
		{ { "memwall", "report", "/dev/zero", NULL }, "is a character device" },
		{ { "memwall", "generate", "-m", fifo, "-n", "2", NULL }, "is a FIFO" },
		{ { "memwall", "generate", "-m", model, "-z", fifo, "-n", "2", NULL }, "is a FIFO" },
		{ { "memwall", "headroom", model, "--calibration", "/dev/zero", NULL },
		  "is a character device" },
		{ { "memwall", "headroom", fifo, NULL }, "is a FIFO" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		alarm(20); /* a blocked open() ends the test here, not at meson's timeout */
		struct t_output o = t_run(cases[i].argv);
		alarm(0);
		T_EQ_INT(o.status, 2);
		T_CONTAINS(o.err, cases[i].says);
		if (o.status != 2 || !strstr(o.err, cases[i].says))
			fprintf(stderr, "  case %zu: %s\n", i, o.err);
		t_output_free(&o);
	}
	/* $MEMWALL_MEMINFO at /dev/zero: neither a hang nor a spin. */
	char dir[600];
	snprintf(dir, sizeof(dir), "%s/meminfo-zero", scratch);
	setenv("MEMWALL_MEMINFO", "/dev/zero", 1);
	const char *argv[] = { "memwall", "run", smoke, "-o", dir, NULL };
	alarm(60);
	struct t_output o = t_run(argv);
	alarm(0);
	unsetenv("MEMWALL_MEMINFO");
	T_ASSERT(o.status == 0 || o.status == 1);
	t_output_free(&o);
}

/* Secrets named by the environment never reach a record: replaced in the external engine's
 * stderr tail and --version output and in the recorded environment, with "redacted" set. */
static void test_redaction(void)
{
	char script[600], proto[700], dir[600], path[1024], body[2048];
	snprintf(script, sizeof(script), "%s/leaky-engine", scratch);
	write_text(script, "#!/bin/sh\n"
		   "if [ \"$1\" = --version ]; then echo \"leaky 1.0 key=$MY_API_TOKEN\"; exit 0; fi\n"
		   "echo \"auth with $MY_API_TOKEN and $DB_PASSWORD\" >&2\n"
		   "printf 'memwall-tokens: decode=%s\\n[%s]\\n' \"$1\" \"$2\"\n", 0755);
	snprintf(body, sizeof(body),
		 "{\"name\": \"leaky\", \"model\": {\"format\": \"llama2c\", \"synth\": "
		 "{\"shape\": \"stories260K\"}}, \"engine\": {\"kind\": \"external\", \"command\": "
		 "[\"%s\", \"{n}\", \"x\", \"{model}\"], \"adapter\": {\"name\": "
		 "\"memwall-tokens\", \"stream\": \"stdout\"}}, \"decode_tokens\": 8, \"runs\": 1, "
		 "\"warmup_runs\": 0, \"idle_baseline_ms\": 0, \"drift\": {\"probe_ms\": 0}}",
		 script);
	snprintf(proto, sizeof(proto), "%s/leaky.json", scratch);
	write_text(proto, body, 0644);
	snprintf(dir, sizeof(dir), "%s/leaky-out", scratch);
	setenv("MY_API_TOKEN", "tok-5f3a9c1e", 1);
	setenv("DB_PASSWORD", "pw-correct-horse", 1);
	setenv("OMP_NUM_THREADS", "tok-5f3a9c1e", 1); /* an allowed variable holding a secret */
	const char *argv[] = { "memwall", "run", proto, "-o", dir, NULL };
	struct t_output o = t_run(argv);
	unsetenv("MY_API_TOKEN");
	unsetenv("DB_PASSWORD");
	unsetenv("OMP_NUM_THREADS");
	if (o.status > 1)
		fprintf(stderr, "%s\n", o.err);
	T_ASSERT(o.status == 0 || o.status == 1);
	t_output_free(&o);
	json_t *doc = record_in(dir, path, sizeof(path));
	T_ASSERT(doc != NULL);
	json_decref(doc);
	char *text = path[0] ? t_slurp(path, NULL) : NULL;
	T_ASSERT(text != NULL);
	if (text) {
		T_ASSERT(!strstr(text, "tok-5f3a9c1e"));
		T_ASSERT(!strstr(text, "pw-correct-horse"));
		T_CONTAINS(text, "[redacted:MY_API_TOKEN]");
		T_CONTAINS(text, "[redacted:DB_PASSWORD]");
		T_CONTAINS(text, "\"stderr_redacted\": true");
		T_CONTAINS(text, "\"version_redacted\": true");
		T_CONTAINS(text, "\"redacted\": true");
		T_CONTAINS(text, "leaky 1.0 key=[redacted:MY_API_TOKEN]");
	}
	free(text);
	/* The name test itself. */
	const char *secret[] = { "GH_TOKEN", "AWS_SECRET_ACCESS_KEY", "PGPASSWORD", "my_passwd",
				 "X_AUTH", "DB_CREDENTIALS", "SSH_PRIVATE", "api_key" };
	const char *plain[] = { "PATH", "HOME", "PWD", "OLDPWD", "LANG", "OMP_NUM_THREADS" };
	for (size_t i = 0; i < sizeof(secret) / sizeof(secret[0]); i++)
		T_ASSERT(mw_secret_name(secret[i]));
	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
		T_ASSERT(!mw_secret_name(plain[i]));
	bool r;
	setenv("SHORT_KEY", "abc", 1); /* too short to redact: "abc" would blank out text */
	setenv("LONG_SECRET", "s3cr3t-value", 1);
	char *red = mw_redact("abc s3cr3t-values3cr3t-value", 28, NULL, &r);
	T_EQ_STR(red, "abc [redacted:LONG_SECRET][redacted:LONG_SECRET]");
	T_ASSERT(r);
	free(red);
	red = mw_redact("nothing here", 12, NULL, &r);
	T_EQ_STR(red, "nothing here");
	T_ASSERT(!r);
	free(red);
	unsetenv("SHORT_KEY");
	unsetenv("LONG_SECRET");
}

static bool pid_running(pid_t pid)
{
	char path[64], stat[256] = "";
	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	bool ok = fgets(stat, sizeof(stat), f) != NULL;
	fclose(f);
	const char *rp = strrchr(stat, ')');
	return ok && rp && rp[1] == ' ' && rp[2] != 'Z' && rp[2] != 'X';
}

/* A wrapper that starts the real engine as a grandchild: on timeout, and when the wrapper
 * ends on its own, the whole process group goes, grandchild included. */
static void test_process_group(void)
{
	const char *mode[] = { "timeout", "exit" };
	for (int m = 0; m < 2; m++) {
		char script[600], pidfile[600], proto[700], dir[600], body[2048];
		snprintf(script, sizeof(script), "%s/wrapper-%s", scratch, mode[m]);
		snprintf(pidfile, sizeof(pidfile), "%s/grandchild-%s.pid", scratch, mode[m]);
		char sh[1500];
		snprintf(sh, sizeof(sh), "#!/bin/sh\n"
			 "[ \"$1\" = --version ] && exit 0\n"
			 "sleep 600 &\n"
			 "echo $! > '%s'\n"
			 "printf 'memwall-tokens: decode=%%s\\n[1]\\n' \"$1\"\n"
			 "%s\n", pidfile, m == 0 ? "sleep 600" : "exit 0");
		write_text(script, sh, 0755);
		snprintf(body, sizeof(body),
			 "{\"name\": \"wrapper-%s\", \"model\": {\"format\": \"llama2c\", \"synth\": "
			 "{\"shape\": \"stories260K\"}}, \"engine\": {\"kind\": \"external\", "
			 "\"timeout_s\": 2, \"command\": [\"%s\", \"{n}\", \"{model}\"], \"adapter\": "
			 "{\"name\": \"memwall-tokens\", \"stream\": \"stdout\"}}, \"decode_tokens\": 8, "
			 "\"runs\": 1, \"warmup_runs\": 0, \"idle_baseline_ms\": 0, \"drift\": "
			 "{\"probe_ms\": 0}}", mode[m], script);
		snprintf(proto, sizeof(proto), "%s/wrapper-%s.json", scratch, mode[m]);
		write_text(proto, body, 0644);
		snprintf(dir, sizeof(dir), "%s/wrapper-out", scratch);
		const char *argv[] = { "memwall", "run", proto, "-o", dir, NULL };
		alarm(100);
		struct t_output o = t_run(argv);
		alarm(0);
		t_output_free(&o);
		char *text = t_slurp(pidfile, NULL);
		long pid = text ? atol(text) : 0;
		free(text);
		T_ASSERT(pid > 0);
		if (pid > 0 && pid_running((pid_t)pid)) {
			T_FAIL_AT(__FILE__, __LINE__, "%s: the grandchild %ld outlived the run",
				  mode[m], pid);
			kill((pid_t)pid, SIGKILL);
		}
	}
}

int main(void)
{
	char cache[512], cmd[2000];
	/* The smoke protocol without its drift probe (tests/lib/run.h): nothing here is about
	 * drift, and the probe was a second of CPU a run. */
	t_smoke_scratch("security", scratch, sizeof(scratch), smoke, sizeof(smoke), cache,
			sizeof(cache));
	unsetenv("MEMWALL_MEMINFO");

	test_secret(); /* also makes the synthetic model in the cache, used below as model.bin */
	snprintf(model, sizeof(model), "%s/model.bin", scratch);
	snprintf(cmd, sizeof(cmd), "cp '%s'/synth/stories260K-seed42.bin '%s'", cache, model);
	T_EQ_INT(system(cmd), 0);
	test_relative();
	test_huge_prompt();
	test_memory();
	test_swap();
	test_swap_growth();
	test_synth_target();
	test_output_dir();
	test_threads();
	test_special_files();
	test_redaction();
	test_process_group();

	return t_done_rm(scratch, 0);
}
