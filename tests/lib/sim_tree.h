/* tests/lib/sim_tree.h: what a recorded sysfs tree (tests/data/sysfs/<tree>) says, read by the
 * tests themselves, never through the probes or memwall, so that the simulated-PMU tests
 * (test_counter_sim.c, test_run_sim.c, the verify tests) check the code against arithmetic of
 * their own; and the environment that points memwall at a tree and a sim script. */
#ifndef MEMWALL_TEST_SIM_TREE_H
#define MEMWALL_TEST_SIM_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* <tree>/bus/event_source/devices/<pmu>/<file>; static storage, overwritten by the next call */
const char *t_tree_file(const char *tree, const char *pmu, const char *file);

/* The text of the file at path, less trailing newlines and spaces, into buf (n bytes);
 * false when it cannot be read. */
bool t_read_text(const char *path, char *buf, size_t n);

/* The perf type number of pmu in tree (a failed check when unreadable). */
uint32_t t_pmu_type(const char *tree, const char *pmu);

/* .scale times the bytes in .unit: the kernel's 6.103515625e-5 MiB is 2^-14 * 2^20 = 64 */
double t_alias_bytes(const char *tree, const char *pmu, const char *alias);

struct prb_system;

/* prb_system_open on tests/data/sysfs/<tree>; a failed check, with the probes' error, where
 * it fails. */
struct prb_system *t_system_open(const char *tree);

/* Points memwall at this VM's recorded tree (tests/data/sysfs/this-vm) with the counters read
 * by system call (MEMWALL_COUNTERS=syscall): no memory-controller counter to open. */
void t_no_counters_env(void);

/* Points memwall at the simulated PMU: MEMWALL_COUNTERS=sim, MEMWALL_SIM_SCRIPT=script and,
 * where tree is not NULL, MEMWALL_SYSFS_ROOT at tests/data/sysfs/<tree>. */
void t_sim_env(const char *tree, const char *script);

/* The simulated PMU's script at path for calibrate --size 0.001 on arrow-lake: the working set
 * calibrate uses (0.001 GiB in whole 6-page units, returned), and per instance i one step of
 * data_read counts (rd[i], split 3:1) and of data_write counts (wr[i], split 1:1) on every
 * read, such that a pass of one step counts 1.25 working sets of reads (64 bytes a count) and
 * half a working set of writes: calibrate's read factor 0.8, its write factor 1. */
uint64_t t_al_calib_script(const char *path, uint64_t rd[2], uint64_t wr[2]);

#endif
