/* tests/test_security.c: what `memwall run` and `memwall generate` do with a hostile or
 * starved environment.
 *
 *   - A secret in the environment never reaches the result record: memwall records an
 *     allow-list of variables (src/base/machine.c, results/README.md), never the environment.
 *   - A protocol's relative paths resolve against the protocol's folder, whatever the current
 *     directory (the loader's side: tests/test_protocol.c).
 *   - A prompt longer than the model's context is refused with exit 2, by run and generate.
 *   - A model larger than the available memory is refused with exit 3 before it is mapped,
 *     unless --force; swap in use before the runs, or growing during them, is recorded with
 *     a warning. /proc/meminfo is faked through $MEMWALL_MEMINFO (src/base/machine.h).
 * External engines' commands are expanded into argv without a shell, so prompt text cannot
 * inject a command: tests/test_external.c (test_injection) checks that. */
#include <signal.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run.h"
#include "test.h"

#include <jansson.h>

static char scratch[256], smoke[4096], model[600];

static char *slurp(const char *path)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return NULL;
	char *s = t_slurp_fd(fd);
	close(fd);
	return s;
}

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
	char *text = path[0] ? slurp(path) : NULL;
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
	struct t_output o = t_run(argv);
	T_EQ_INT(o.status, 2);
	T_CONTAINS(o.err, "context of 512");
	t_output_free(&o);

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
	o = t_run(gargv);
	T_EQ_INT(o.status, 2);
	T_CONTAINS(o.err, "context of 512");
	t_output_free(&o);
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
	o = t_run(gargv);
	T_EQ_INT(o.status, 3);
	T_CONTAINS(o.err, "MemAvailable");
	T_CONTAINS(o.err, "--force");
	t_output_free(&o);
	const char *gfargv[] = { "memwall", "generate", "-m", model, "--ids", "-n", "4", "--force",
				 NULL };
	o = t_run(gfargv);
	T_EQ_INT(o.status, 0);
	t_output_free(&o);
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

int main(void)
{
	char cache[512], cmd[2000];
	const char *root = getenv("MEMWALL_SOURCE_ROOT");
	if (!root || !getenv("MEMWALL_BIN"))
		t_skip("MEMWALL_SOURCE_ROOT or MEMWALL_BIN is not set (run under meson test)");
	snprintf(smoke, sizeof(smoke), "%s/protocols/stories260k-smoke.json", root);
	snprintf(scratch, sizeof(scratch), "/tmp/mw-test-security-XXXXXX");
	if (!mkdtemp(scratch))
		t_skip("cannot create a scratch folder in /tmp");
	snprintf(cache, sizeof(cache), "%s/cache", scratch);
	setenv("MEMWALL_CACHE_DIR", cache, 1);
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

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", scratch);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", scratch);
	return t_done();
}
