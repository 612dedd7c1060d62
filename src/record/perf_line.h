/* src/record/perf_line.h: the kernel's own tool, ready to paste: a `perf stat -a -e ...` command
 * that counts the very DRAM events a run (or `memwall stat`) counted, so that a reader can check
 * memwall's figure with perf instead of trusting it.
 *
 * The events come from what was opened (counters.dram.opened: each instance's PMU and each
 * event's perf_event_attr type, config and config1, as the backend encoded them from the PMU's
 * sysfs format files: probes/dram_plan.c, probes/pmu/). They are written in perf's raw term
 * syntax, PMU/config=0x.../ (tools/perf/Documentation/perf-list.txt, "Raw hardware event
 * descriptor"), the same text `memwall verify` gives perf (probes.h, prb_dram_events). perf
 * applies no .scale to a raw config, so it prints counts; the note says how many bytes a count
 * is, per event, as memwall converted it. */
#ifndef MEMWALL_RECORD_PERF_LINE_H
#define MEMWALL_RECORD_PERF_LINE_H

#include <jansson.h>

struct mw_perf_line {
	char command[8192]; /* "perf stat -a -e EV,EV,... -- COMMAND ARGS", shell-quoted */
	char note[1024];    /* how perf's counts become memwall's bytes; why there is no line */
	int n_events;       /* distinct events on the line */
};

/* Fills out from opened (counters.dram.opened, or mw_dram_opened_json's array) and command (a
 * JSON array of strings: the program perf should run with its arguments; NULL or empty for
 * `sleep 10`). An event opened on several CPUs of one PMU (one per socket) is listed once:
 * perf opens an uncore event on every CPU of the PMU's cpumask and sums them. 0; -ENOENT when
 * opened holds no perf event (a file backend such as resctrl, which perf does not read: note
 * says so); -EINVAL when opened is malformed (note names the entry); -ENAMETOOLONG when the
 * line does not fit. Every word that is not plain (letters, digits, and _ . / = , : + @ % -)
 * is single-quoted for a POSIX shell. */
int mw_perf_line(const json_t *opened, const json_t *command, struct mw_perf_line *out);

/* The words of argv (a JSON array of strings) joined by spaces, each quoted as above, into buf:
 * a command a reader can paste. 0, or -ENAMETOOLONG (buf then ends in "..."). */
int mw_shell_join(const json_t *argv, char *buf, size_t n);

#endif
