/* src/record/perf_line.c: a pasteable `perf stat` command for the DRAM events counted (see
 * perf_line.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf_line.h"

#define MAX_EVENTS 1024

struct event {
	char text[192];         /* "PMU/config=0x.../" */
	double bytes_per_count; /* 0: not recorded */
};

/* Appends s to buf (of size n, holding *len bytes): false when it does not fit. */
static bool put(char *buf, size_t n, size_t *len, const char *s)
{
	size_t k = strlen(s);
	if (*len + k >= n)
		return false;
	memcpy(buf + *len, s, k + 1);
	*len += k;
	return true;
}

/* Appends word for a POSIX shell: as it is when every byte is plain, else in single quotes
 * with each ' written as '\'' (the shell's only way to put one inside them). */
static bool put_word(char *buf, size_t n, size_t *len, const char *word)
{
	static const char plain[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				    "0123456789_./=,:+@%-";
	if (*word && strspn(word, plain) == strlen(word))
		return put(buf, n, len, word);
	if (!put(buf, n, len, "'"))
		return false;
	for (const char *c = word; *c; c++) {
		char one[2] = { *c, '\0' };
		if (!put(buf, n, len, *c == '\'' ? "'\\''" : one))
			return false;
	}
	return put(buf, n, len, "'");
}

/* Collects the distinct events of opened into ev; returns how many, or -EINVAL with note. */
static int collect(const json_t *opened, struct event *ev, int max, char *note, size_t nn)
{
	const json_t *o, *e;
	size_t i, j;
	int n = 0;
	if (!json_is_array(opened))
		return snprintf(note, nn, "no list of opened events (counters.dram.opened)"),
		       -EINVAL;
	json_array_foreach(opened, i, o) {
		const char *pmu = json_string_value(json_object_get(o, "pmu"));
		json_array_foreach(json_object_get(o, "events"), j, e) {
			const char *cfg = json_string_value(json_object_get(e, "config"));
			const char *cfg1 = json_string_value(json_object_get(e, "config1"));
			const json_t *bpc = json_object_get(e, "bytes_per_count");
			struct event x = { .bytes_per_count = json_is_number(bpc) ?
								json_number_value(bpc) : 0 };
			if (!pmu || !cfg)
				return snprintf(note, nn, "counters.dram.opened[%zu].events[%zu] has "
						"no pmu or config", i, j), -EINVAL;
			if (snprintf(x.text, sizeof(x.text), "%s/config=%s%s%s/", pmu, cfg,
				     cfg1 ? ",config1=" : "", cfg1 ? cfg1 : "") >=
			    (int)sizeof(x.text))
				return snprintf(note, nn, "counters.dram.opened[%zu]: the PMU name is "
						"too long", i), -EINVAL;
			bool seen = false;
			for (int k = 0; k < n && !seen; k++)
				seen = !strcmp(ev[k].text, x.text);
			if (seen)
				continue;
			if (n == max)
				return snprintf(note, nn, "more than %d events", max), -EINVAL;
			ev[n++] = x;
		}
	}
	return n;
}

/* The note: how a count becomes bytes, grouped by bytes per count. */
static void write_note(const struct event *ev, int n, char *note, size_t nn)
{
	size_t len = 0;
	bool all_same = true, any_unknown = false;
	for (int k = 0; k < n; k++) {
		all_same &= ev[k].bytes_per_count == ev[0].bytes_per_count;
		any_unknown |= !(ev[k].bytes_per_count > 0);
	}
	char buf[160];
	put(note, nn, &len, "perf applies no .scale or .unit to a raw config=: it prints counts. ");
	if (any_unknown) {
		put(note, nn, &len, "Bytes per count were not recorded (a record made before "
			"counters.dram.opened had them): see the PMU's events/*.scale and *.unit. ");
	} else if (all_same) {
		snprintf(buf, sizeof(buf), "bytes = count x %g for every event. ",
			 ev[0].bytes_per_count);
		put(note, nn, &len, buf);
	} else {
		put(note, nn, &len, "bytes = count x");
		for (int k = 0; k < n; k++) {
			snprintf(buf, sizeof(buf), " %g for %s;", ev[k].bytes_per_count, ev[k].text);
			put(note, nn, &len, buf);
		}
		put(note, nn, &len, " ");
	}
	put(note, nn, &len, "perf sums an uncore PMU over the CPUs of its cpumask (one per socket); "
		"-A prints them one by one. The counters are system-wide: perf's window is its "
		"command's whole life.");
}

int mw_perf_line(const json_t *opened, const json_t *command, struct mw_perf_line *out)
{
	struct event *ev = calloc(MAX_EVENTS, sizeof(*ev));
	char *list = calloc(1, sizeof(out->command));
	size_t len = 0, llen = 0;
	int rc = -ENOMEM;

	memset(out, 0, sizeof(*out));
	if (!ev || !list) {
		snprintf(out->note, sizeof(out->note), "out of memory");
		goto out;
	}
	int n = collect(opened, ev, MAX_EVENTS, out->note, sizeof(out->note));
	if (n < 0) {
		rc = n;
		goto out;
	}
	if (n == 0) {
		snprintf(out->note, sizeof(out->note), "no perf event was opened (a file backend "
			 "such as resctrl, which the kernel's perf does not read)");
		rc = -ENOENT;
		goto out;
	}
	rc = -ENAMETOOLONG;
	for (int k = 0; k < n; k++)
		if ((k && !put(list, sizeof(out->command), &llen, ",")) ||
		    !put(list, sizeof(out->command), &llen, ev[k].text))
			goto out;
	char *cmd = out->command;
	size_t cn = sizeof(out->command);
	if (!put(cmd, cn, &len, "perf stat -a -e ") || !put_word(cmd, cn, &len, list) ||
	    !put(cmd, cn, &len, " --"))
		goto out;
	size_t i;
	const json_t *w;
	if (json_array_size(command) == 0 && !put(cmd, cn, &len, " sleep 10"))
		goto out;
	json_array_foreach(command, i, w)
		if (!put(cmd, cn, &len, " ") ||
		    !put_word(cmd, cn, &len, json_is_string(w) ? json_string_value(w) : "?"))
			goto out;
	out->n_events = n;
	write_note(ev, n, out->note, sizeof(out->note));
	rc = 0;
out:
	if (rc == -ENAMETOOLONG) {
		out->command[0] = '\0';
		snprintf(out->note, sizeof(out->note), "the command would be longer than %zu bytes",
			 sizeof(out->command) - 1);
	}
	free(ev);
	free(list);
	return rc;
}

int mw_shell_join(const json_t *argv, char *buf, size_t n)
{
	size_t len = 0, i;
	const json_t *w;
	if (!n)
		return -ENAMETOOLONG;
	buf[0] = '\0';
	json_array_foreach(argv, i, w)
		if ((i && !put(buf, n, &len, " ")) ||
		    !put_word(buf, n, &len, json_is_string(w) ? json_string_value(w) : "?")) {
			if (n > 4)
				snprintf(buf + (len < n - 4 ? len : n - 4), 4, "...");
			return -ENAMETOOLONG;
		}
	return 0;
}
