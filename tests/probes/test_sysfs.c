/* tests/probes/test_sysfs.c: PMU discovery from recorded sysfs trees (tests/data/sysfs/, see its
 * README for sources): formats, aliases, scales and units, encodings, and bad inputs. */
#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "probes/internal.h" /* by its folder: engine/ has internal.h files too */
#include "test.h"
#include "sim_tree.h"

static void test_format_parse(void)
{
	struct prb_format f = { 0 };
	struct prb_error err = { 0 };
	T_EQ_INT(prb_format_parse("config:0-7", &f, "x", &err), 0);
	T_EQ_INT(f.n_ranges, 1);
	T_EQ_INT(f.ranges[0].word, 0);
	T_EQ_INT(f.ranges[0].lo, 0);
	T_EQ_INT(f.ranges[0].hi, 7);
	T_EQ_INT(prb_format_parse("config:0-7,32-35,59-60", &f, "x", &err), 0);
	T_EQ_INT(f.n_ranges, 3);
	T_EQ_INT(f.ranges[2].lo, 59);
	T_EQ_INT(f.ranges[2].hi, 60);
	T_EQ_INT(prb_format_parse("config1:0-15", &f, "x", &err), 0);
	T_EQ_INT(f.ranges[0].word, 1);
	T_EQ_INT(prb_format_parse("config:18", &f, "x", &err), 0);
	T_EQ_INT(f.ranges[0].lo, 18);
	T_EQ_INT(f.ranges[0].hi, 18);

	/* bad inputs, each with an error naming the file and what was wrong */
	T_EQ_INT(prb_format_parse("config:70-80", &f, "devices/p/format/umask", &err), -EINVAL);
	T_EQ_STR(err.source, "devices/p/format/umask");
	T_CONTAINS(err.text, "outside a 64-bit config word");
	T_EQ_INT(prb_format_parse("", &f, "devices/p/format/event", &err), -EINVAL);
	T_CONTAINS(err.text, "empty format");
	T_EQ_INT(prb_format_parse("cfg:0-7", &f, "f", &err), -EINVAL);
	T_CONTAINS(err.text, "does not start with config");
	T_EQ_INT(prb_format_parse("config:7-0", &f, "f", &err), -EINVAL);
	T_EQ_INT(prb_format_parse("config:0-7,", &f, "f", &err), -EINVAL);
	T_EQ_INT(prb_format_parse("config:a-b", &f, "f", &err), -EINVAL);
	T_EQ_INT(prb_format_parse("config9:0-7", &f, "f", &err), -EINVAL);
	T_EQ_INT(prb_format_parse("config 0-7", &f, "f", &err), -EINVAL);
}

static void test_cpulists(void)
{
	int *cpus = NULL, n = 0;
	struct prb_error err = { 0 };
	static const struct {
		const char *text;
		int n, last;
	} good[] = { { "0", 1, 0 }, { "0,56", 2, 56 }, { "0-3,8", 5, 8 }, { "0,8,16", 3, 16 } };
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		T_EQ_INT(prb_cpulist_parse(good[i].text, &cpus, &n, "cpumask", &err), 0);
		T_EQ_INT(n, good[i].n);
		if (cpus && n)
			T_EQ_INT(cpus[n - 1], good[i].last);
		free(cpus);
	}
	static const char *const bad[] = { "", "zero", "3-1", "0,", "0,,1", "-1", "0-", "70000" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		T_EQ_INT(prb_cpulist_parse(bad[i], &cpus, &n, "devices/x/cpumask", &err), -EINVAL);
		T_ASSERT(cpus == NULL && n == 0);
		T_EQ_STR(err.source, "devices/x/cpumask");
	}
}

static void test_names(void)
{
	T_ASSERT(prb_name_is_instance("uncore_imc_0", "uncore_imc_"));
	T_ASSERT(prb_name_is_instance("uncore_imc_15", "uncore_imc_"));
	T_ASSERT(!prb_name_is_instance("uncore_imc_free_running_0", "uncore_imc_"));
	T_ASSERT(!prb_name_is_instance("uncore_imc_", "uncore_imc_"));
	T_ASSERT(!prb_name_is_instance("uncore_imc_1x", "uncore_imc_"));
	T_ASSERT(!prb_name_is_instance("uncore_imc", "uncore_imc_"));
	T_ASSERT(prb_name_is_instance("uncore_imc_free_running_1", "uncore_imc_free_running_"));
}

static void test_units(void)
{
	double b = 0;
	T_EQ_INT(prb_unit_bytes("MiB", &b), 0);
	T_EQ_U64(b, 1048576);
	T_EQ_INT(prb_unit_bytes("MB", &b), 0);
	T_EQ_U64(b, 1000000);
	T_EQ_INT(prb_unit_bytes("GiB", &b), 0);
	T_EQ_U64(b, 1073741824);
	T_EQ_INT(prb_unit_bytes("Joules", &b), -EINVAL);
	/* the IMC's scale: 6.103515625e-5 MiB is 2^-14 * 2^20 = 64 bytes, exactly */
	T_EQ_INT(prb_unit_bytes("MiB", &b), 0);
	T_ASSERT(6.103515625e-5 * b == 64.0);
	T_EQ_INT(prb_unit_bytes("MB", &b), 0);
	T_ASSERT(6.103515625e-5 * b != 64.0); /* read as MB it would be 61.03515625 bytes */
	T_NEAR(6.103515625e-5 * b, 61.03515625, 1e-9);
}

static void test_arrow_lake(void)
{
	struct prb_system *sys = t_system_open("arrow-lake");
	if (!sys)
		return;
	const struct prb_pmu *p = prb_system_pmu_find(sys, "uncore_imc_free_running_1");
	T_ASSERT(p != NULL);
	if (!p)
		goto out;
	T_EQ_INT(p->type, 25);
	T_EQ_INT(p->n_cpus, 1);
	T_EQ_INT(p->cpus[0], 0);
	T_EQ_STR(p->problem.text, "");
	const struct prb_event *e = prb_pmu_event_find(p, "data_read");
	T_ASSERT(e != NULL);
	if (e) {
		T_EQ_STR(e->terms, "event=0xff,umask=0x20");
		T_EQ_STR(e->unit, "MiB");
		T_ASSERT(e->scale == 6.103515625e-5);
	}
	T_ASSERT(prb_pmu_event_find(p, "data_read.scale") == NULL); /* .scale is not an alias */

	/* data_write = event=0xff,umask=0x30; format event config:0-7, umask config:8-15:
	 * config = 0xff | 0x30 << 8 = 0x30ff */
	struct perf_event_attr a;
	struct prb_error err = { 0 };
	T_EQ_INT(prb_pmu_encode(p, "data_write", &a, &err), 0);
	T_EQ_U64(a.type, 25);
	T_EQ_U64(a.config, 0x30ff);
	T_EQ_U64(a.config1, 0);
	T_EQ_INT(prb_pmu_encode(p, "event=0xff,umask=0x10", &a, &err), 0);
	T_EQ_U64(a.config, 0x10ff);
	/* a field the PMU does not have, and a value too wide for its field */
	T_EQ_INT(prb_pmu_encode(p, "event=0xff,cmask=1", &a, &err), -EINVAL);
	T_CONTAINS(err.text, "no format field \"cmask\"");
	T_EQ_INT(prb_pmu_encode(p, "event=0x1ff", &a, &err), -EINVAL);
	T_CONTAINS(err.text, "does not fit");

	/* order: numeric, and the free-running PMUs are not uncore_imc_N */
	size_t n = prb_system_pmu_count(sys), imc = 0;
	for (size_t i = 0; i < n; i++)
		imc += prb_name_is_instance(prb_system_pmu(sys, i)->name, "uncore_imc_");
	T_EQ_INT(imc, 2);
	const struct prb_pmu *power = prb_system_pmu_find(sys, "power");
	T_ASSERT(power && prb_pmu_event_find(power, "energy-pkg"));
out:
	prb_system_close(sys);
}

static void test_split_fields(void)
{
	/* SPR umask is config:8-15,32-55: a 16-bit umask 0x1cf puts 0xcf in bits 8-15 and 0x1 in
	 * bit 32 -> config = 0x5 | 0xcf00 | 1 << 32 = 0x10000cf05 */
	struct prb_system *sys = t_system_open("sapphire-rapids");
	if (!sys)
		return;
	const struct prb_pmu *p = prb_system_pmu_find(sys, "uncore_imc_10");
	struct perf_event_attr a;
	struct prb_error err = { 0 };
	T_ASSERT(p != NULL);
	if (p) {
		T_EQ_INT(p->n_cpus, 2);
		T_EQ_INT(p->cpus[1], 56);
		T_EQ_INT(prb_pmu_encode(p, "event=0x05,umask=0x1cf", &a, &err), 0);
		T_EQ_U64(a.config, 0x10000cf05ull);
		T_EQ_INT(prb_pmu_encode(p, "event=0x05,umask=0xcf,edge", &a, &err), 0);
		T_EQ_U64(a.config, 0xcf05ull | 1ull << 18);
	}
	/* uncore_imc_2 sorts before uncore_imc_10 */
	size_t i2 = 0, i10 = 0;
	for (size_t i = 0; i < prb_system_pmu_count(sys); i++) {
		if (!strcmp(prb_system_pmu(sys, i)->name, "uncore_imc_2"))
			i2 = i;
		if (!strcmp(prb_system_pmu(sys, i)->name, "uncore_imc_10"))
			i10 = i;
	}
	T_ASSERT(i2 < i10);
	prb_system_close(sys);
}

static void test_this_vm(void)
{
	struct prb_system *sys = t_system_open("this-vm");
	if (!sys)
		return;
	const struct prb_pmu *sw = prb_system_pmu_find(sys, "software");
	T_ASSERT(sw && sw->type == PERF_TYPE_SOFTWARE);
	for (size_t i = 0; i < prb_system_pmu_count(sys); i++) {
		T_EQ_STR(prb_system_pmu(sys, i)->problem.text, "");
		T_ASSERT(strncmp(prb_system_pmu(sys, i)->name, "uncore", 6));
	}
	prb_system_close(sys);
}

static void test_bad_tree(void)
{
	struct prb_system *sys = t_system_open("bad");
	if (!sys)
		return;
	const struct prb_pmu *p = prb_system_pmu_find(sys, "uncore_imc_free_running_0");
	T_ASSERT(p != NULL);
	if (p) {
		T_CONTAINS(p->problem.source, "uncore_imc_free_running_0/format/umask");
		T_CONTAINS(p->problem.text, "70-80");
		struct perf_event_attr a;
		struct prb_error err = { 0 };
		T_EQ_INT(prb_pmu_encode(p, "data_read", &a, &err), -EINVAL);
		T_CONTAINS(err.source, "format/umask");
	}
	p = prb_system_pmu_find(sys, "amd_umc_0");
	T_ASSERT(p && strstr(p->problem.source, "amd_umc_0/type"));
	if (p)
		T_CONTAINS(p->problem.text, "\"garbage\" is not a decimal perf type");
	p = prb_system_pmu_find(sys, "uncore_imc_0");
	T_ASSERT(p && strstr(p->problem.source, "uncore_imc_0/format/event"));
	p = prb_system_pmu_find(sys, "uncore_imc_1");
	T_ASSERT(p && strstr(p->problem.source, "uncore_imc_1/cpumask"));
	if (p)
		T_CONTAINS(p->problem.text, "not a CPU list");
	prb_system_close(sys);

	/* a root with no devices directory */
	struct prb_error err = { 0 };
	T_EQ_INT(prb_system_open(&sys, "/nonexistent-sysfs", &err), -ENOENT);
	T_CONTAINS(err.source, "/nonexistent-sysfs/bus/event_source/devices");
	T_ASSERT(sys == NULL);
}

/* Issue 43, class 3: a tree whose files are not regular files. A FIFO with no writer blocked
 * the blocking open forever, and a link to /dev/zero would be read as a type; each is now
 * refused by what it is, as the PMU's problem naming the file. The alarm turns a regression
 * (a hang) into a failure naming this test. */
static char special_rm[600]; /* "rm -rf ROOT": the tree goes even when the test fails */

static void on_alarm(int sig)
{
	(void)sig;
	static const char msg[] = "FAIL: test_sysfs: a sysfs file that is a FIFO blocked the "
				  "reader (issue 43, class 3)\n";
	ssize_t w = write(2, msg, sizeof(msg) - 1);
	(void)w;
	if (special_rm[0] && system(special_rm))
		w = write(2, "could not remove the scratch tree\n", 34);
	_exit(1);
}

static void test_special_files(void)
{
	static const struct {
		const char *pmu, *file, *kind; /* the file made special, and how it is refused */
	} cases[] = {
		{ "fifo_type", "type", "is a FIFO" },
		{ "fifo_cpumask", "cpumask", "is a FIFO" },
		{ "fifo_format", "format/event", "is a FIFO" },
		{ "fifo_alias", "events/x", "is a FIFO" },
		{ "fifo_scale", "events/x.scale", "is a FIFO" },
		{ "fifo_unit", "events/x.unit", "is a FIFO" },
		{ "dev_type", "type", "is a character device" },
		{ "dir_cpumask", "cpumask", "is a directory" },
	};
	char root[] = "/tmp/mw-test-sysfs-XXXXXX", path[512];
	if (!mkdtemp(root)) {
		T_ASSERT(!"mkdtemp");
		return;
	}
	snprintf(special_rm, sizeof(special_rm), "rm -rf '%s'", root);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char rel[256];
		static const char *const files[][2] = {
			{ "type", "30\n" }, { "cpumask", "0\n" }, { "format/event", "config:0-7\n" },
			{ "events/x", "event=0x1\n" }, { "events/x.scale", "64\n" },
			{ "events/x.unit", "B\n" },
		};
		for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
			snprintf(rel, sizeof(rel), "/bus/event_source/devices/%s/%s", cases[i].pmu,
				 files[f][0]);
			if (strcmp(files[f][0], cases[i].file))
				t_put(root, rel, files[f][1]);
		}
		snprintf(path, sizeof(path), "%s/bus/event_source/devices/%s/format", root,
			 cases[i].pmu);
		mkdir(path, 0700); /* format/ may hold only the file made special */
		snprintf(path, sizeof(path), "%s/bus/event_source/devices/%s/%s", root, cases[i].pmu,
			 cases[i].file);
		if (!strncmp(cases[i].pmu, "fifo", 4))
			T_EQ_INT(mkfifo(path, 0600), 0);
		else if (!strncmp(cases[i].pmu, "dev", 3))
			T_EQ_INT(symlink("/dev/zero", path), 0);
		else
			T_EQ_INT(mkdir(path, 0700), 0);
	}
	/* an alias longer than its buffer is refused, never cut into another event */
	char longer[400];
	memset(longer, 'a', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	t_put(root, "/bus/event_source/devices/long_alias/type", "30\n");
	t_put(root, "/bus/event_source/devices/long_alias/events/x", longer);

	struct prb_system *sys = NULL;
	struct prb_error err = { 0 };
	signal(SIGALRM, on_alarm);
	alarm(20);
	T_EQ_INT(prb_system_open(&sys, root, &err), 0);
	alarm(0);
	for (size_t i = 0; sys && i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct prb_pmu *p = prb_system_pmu_find(sys, cases[i].pmu);
		char want[128];
		T_ASSERT(p != NULL);
		if (!p)
			continue;
		snprintf(want, sizeof(want), "/%s/%s", cases[i].pmu, cases[i].file);
		T_CONTAINS(p->problem.source, want);
		T_CONTAINS(p->problem.text, cases[i].kind);
		struct perf_event_attr a;
		T_EQ_INT(prb_pmu_encode(p, "x", &a, &err), -EINVAL);
	}
	const struct prb_pmu *p = sys ? prb_system_pmu_find(sys, "long_alias") : NULL;
	T_ASSERT(p != NULL);
	if (p) {
		T_CONTAINS(p->problem.source, "long_alias/events/x");
		T_CONTAINS(p->problem.text, "is longer than the 255 bytes");
	}
	prb_system_close(sys);

	/* resctrl's byte counter, a file read at every sample, the same way */
	snprintf(path, sizeof(path), "%s/fs/resctrl/mon_data/mon_L3_00", root);
	t_put(root, "/fs/resctrl/mon_data/mon_L3_00/x", "");
	strncat(path, "/mbm_total_bytes", sizeof(path) - strlen(path) - 1);
	T_EQ_INT(mkfifo(path, 0600), 0);
	struct file_counter *fc = NULL;
	uint64_t v = 0;
	T_EQ_INT(prb_file_counter_open_plain(&fc, path), 0);
	if (fc) {
		alarm(20);
		T_EQ_INT(fc->read(fc, &v), -EINVAL);
		alarm(0);
		fc->close(fc);
	}
	T_EQ_INT(system(special_rm), 0);
	special_rm[0] = '\0';
}

int main(void)
{
	test_format_parse();
	test_cpulists();
	test_names();
	test_units();
	test_arrow_lake();
	test_split_fields();
	test_this_vm();
	test_bad_tree();
	test_special_files();
	return t_done();
}
