/* src/run/protocol_find.c: finding shipped protocols by name, and listing them (protocol_find.h). */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"
#include "protocol_find.h"
#include "text.h"

#define LIST_WIDTH 72 /* characters of description per line in --list */
#define LIST_LINES 3  /* and lines of it per protocol */
#define LIST_INDENT 6

const char *mw_data_dir(void)
{
	const char *v = getenv("MEMWALL_DATA_DIR");
	return v && *v ? v : MW_DATA_DIR;
}

static bool is_file(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* True when the running binary lies inside the build tree it was built in (MW_BUILD_ROOT): a
 * copy installed elsewhere never falls back to the source tree. */
static bool in_build_tree(void)
{
	char exe[4096];
	ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	size_t r = strlen(MW_BUILD_ROOT);
	if (k <= 0)
		return false;
	exe[k] = '\0';
	return strncmp(exe, MW_BUILD_ROOT, r) == 0 && exe[r] == '/';
}

int mw_protocol_dirs(char dirs[][4096], size_t n)
{
	int k = 0;
	snprintf(dirs[k++], n, "%s/protocols", mw_data_dir());
	if (in_build_tree())
		snprintf(dirs[k++], n, "%s/protocols", MW_SOURCE_ROOT);
	return k;
}

int mw_protocol_find(const char *arg, char *path, size_t n, struct mw_error *err)
{
	char dirs[2][4096], searched[1024] = "";
	int nd = mw_protocol_dirs(dirs, sizeof(dirs[0]));
	size_t used = 0;

	/* Anything that exists under that name is the path meant: a directory or a FIFO is then
	 * refused by the loader, which says what it is (mw_file_read), never searched past. */
	struct stat st;
	if (stat(arg, &st) == 0) {
		snprintf(path, n, "%s", arg);
		return 0;
	}
	/* A name is one path component: "../x" or "a/b" is a path that did not exist. */
	bool name = arg[0] && !strchr(arg, '/');
	char cand[8300];
	for (int i = 0; name && i < nd; i++) {
		for (int json = 0; json < 2; json++) {
			snprintf(cand, sizeof(cand), "%s/%s%s", dirs[i], arg, json ? ".json" : "");
			if (is_file(cand) && strlen(cand) < n) {
				memcpy(path, cand, strlen(cand) + 1);
				return 0;
			}
		}
		int w = snprintf(searched + used, sizeof(searched) - used, "%s%s", i ? ", " : "",
				 dirs[i]);
		if (w > 0 && (size_t)w < sizeof(searched) - used)
			used += (size_t)w;
	}
	path[0] = '\0';
	if (!name)
		return mw_error_set(err, -ENOENT, arg, "", "no such file");
	return mw_error_set(err, -ENOENT, arg, "",
			    "no such file, and no protocol of that name in %s (the data directory "
			    "is $MEMWALL_DATA_DIR, else %s; `memwall run --list` lists the "
			    "protocols found)", searched, MW_DATA_DIR);
}

/* What --list shows of a description: the whole sentences that fit in LIST_LINES lines of
 * LIST_WIDTH characters when they fill one line at least, else the text cut at a word with
 * "...", on one line of text with newlines and tabs made spaces (wrapped when printed). Its
 * first sentence alone was too short to say anything ("The embedded default") or too long to
 * end (issue 44). */
static void summary(const char *d, char *out, size_t n)
{
	size_t room = LIST_WIDTH * LIST_LINES < n ? LIST_WIDTH * LIST_LINES : n - 1, k = 0, end = 0;
	for (; d[k] && k < room; k++) {
		out[k] = d[k] == '\n' || d[k] == '\t' ? ' ' : d[k];
		if (d[k] == '.' && (d[k + 1] == ' ' || d[k + 1] == '\n' || !d[k + 1]))
			end = k + 1; /* the last whole sentence so far */
	}
	if (!d[k]) {
		out[k] = '\0';
		return;
	}
	if (end >= LIST_WIDTH) { /* whole sentences fill a line at least */
		out[end] = '\0';
		return;
	}
	size_t cut = room - 3;
	while (cut > 0 && out[cut] != ' ')
		cut--;
	snprintf(out + (cut ? cut : room - 3), 4, "...");
}

/* text wrapped at LIST_WIDTH columns, each line indented by LIST_INDENT spaces. */
static void print_wrapped(FILE *f, const char *text)
{
	while (*text) {
		size_t len = strlen(text), take = len;
		if (len > LIST_WIDTH) {
			take = LIST_WIDTH;
			while (take > 0 && text[take] != ' ')
				take--;
			if (!take)
				take = LIST_WIDTH;
		}
		fprintf(f, "%*s%.*s\n", LIST_INDENT, "", (int)take, text);
		text += take;
		text += strspn(text, " ");
	}
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The protocol files in dir (not the schema), sorted; *out is a new array of new strings. */
static size_t dir_names(const char *dir, char ***out)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **v = NULL;
	size_t k = 0;

	*out = NULL;
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l < 6 || strcmp(e->d_name + l - 5, ".json") || strstr(e->d_name, ".schema."))
			continue;
		char **nv = realloc(v, (k + 1) * sizeof(*v));
		if (!nv)
			break;
		v = nv;
		if ((v[k] = strndup(e->d_name, l - 5)))
			k++;
	}
	closedir(d);
	if (k)
		qsort(v, k, sizeof(*v), by_name);
	*out = v;
	return k;
}

static void print_entry(FILE *f, const char *dir, const char *name)
{
	char path[4200], line[LIST_WIDTH * LIST_LINES + 8];
	char *text = NULL;
	size_t len = 0;
	json_t *doc = NULL;

	snprintf(path, sizeof(path), "%s/%s.json", dir, name);
	if (mw_file_read(path, "protocol", "", 16u << 20, &text, &len, NULL) == 0)
		doc = json_loadb(text, len, 0, NULL);
	const char *desc = json_string_value(json_object_get(doc, "description"));
	if (doc && desc)
		summary(mw_esc(desc), line, sizeof(line)); /* descriptions, file names: escaped */
	else
		snprintf(line, sizeof(line), "(%s)", doc ? "no description" : "does not parse");
	fprintf(f, "  %s\n", mw_esc(name));
	print_wrapped(f, line);
	json_decref(doc);
	free(text);
}

int mw_protocol_list(FILE *f)
{
	char dirs[2][4096], **names[2] = { NULL, NULL };
	size_t count[2] = { 0, 0 };
	int nd = mw_protocol_dirs(dirs, sizeof(dirs[0])), listed = 0;

	for (int i = 0; i < nd; i++)
		count[i] = dir_names(dirs[i], &names[i]);
	for (int i = 0; i < nd; i++) {
		fprintf(f, "%s:%s\n", mw_esc(dirs[i]), count[i] ? "" : " (none)");
		for (size_t j = 0; j < count[i]; j++) {
			bool hidden = false;
			for (size_t k = 0; i == 1 && k < count[0]; k++)
				hidden = hidden || !strcmp(names[0][k], names[i][j]);
			if (!hidden) {
				print_entry(f, dirs[i], names[i][j]);
				listed++;
			}
		}
	}
	/* Freed only now: the second folder's entries are compared with the first's names. */
	for (int i = 0; i < nd; i++) {
		for (size_t j = 0; j < count[i]; j++)
			free(names[i][j]);
		free(names[i]);
	}
	return listed;
}
