/* src/base/redact.c: replacing the environment's secrets in captured text (see redact.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redact.h"

extern char **environ;

bool mw_secret_name(const char *name)
{
	/* The words that name credentials in the variables of common tools (GitHub's
	 * GH_TOKEN, AWS_SECRET_ACCESS_KEY, HF_TOKEN, PGPASSWORD, NPM_AUTH, ...). */
	static const char *const words[] = {
		"TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "PASS", "PWD", "CREDENTIAL",
		"AUTH", "SESSION", "COOKIE", "PRIVATE", "SIGNATURE", "CERT",
	};
	char up[256];
	size_t n = 0;
	for (; name[n] && name[n] != '=' && n + 1 < sizeof(up); n++)
		up[n] = (char)toupper((unsigned char)name[n]);
	up[n] = '\0';
	if (!strcmp(up, "PWD") || !strcmp(up, "OLDPWD"))
		return false; /* the shell's working directories */
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strstr(up, words[i]))
			return true;
	return false;
}

struct secret {
	const char *name; /* points into environ: "NAME=value" */
	size_t name_len;
	const char *value;
	size_t value_len;
};

/* The secret-named variables with a value long enough to redact; *n of them (malloc'd). */
static struct secret *secrets_find(size_t *n)
{
	size_t count = 0, k = 0;
	struct secret *s;
	*n = 0;
	for (char **e = environ; e && *e; e++)
		count++;
	if (!(s = calloc(count ? count : 1, sizeof(*s))))
		return NULL;
	for (char **e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		if (!eq || !mw_secret_name(*e) || strlen(eq + 1) < MW_REDACT_MIN_VALUE)
			continue;
		s[k] = (struct secret){ *e, (size_t)(eq - *e), eq + 1, strlen(eq + 1) };
		k++;
	}
	*n = k;
	return s;
}

/* The longest secret value that starts at p (so a value containing another wins). */
static const struct secret *match_at(const struct secret *s, size_t n, const char *p,
				     size_t left)
{
	const struct secret *best = NULL;
	for (size_t i = 0; i < n; i++)
		if (s[i].value_len <= left && !memcmp(p, s[i].value, s[i].value_len) &&
		    (!best || s[i].value_len > best->value_len))
			best = &s[i];
	return best;
}

char *mw_redact(const char *text, size_t len, size_t *out_len, bool *redacted)
{
	size_t n, cap = len + 1, o = 0;
	struct secret *s = secrets_find(&n);
	char *out = s ? malloc(cap) : NULL;
	*redacted = false;
	if (!out) {
		free(s);
		return NULL;
	}
	for (size_t i = 0; i < len;) {
		const struct secret *m = n ? match_at(s, n, text + i, len - i) : NULL;
		size_t add = m ? strlen(MW_REDACT_MARK) + m->name_len + 1 : 1;
		if (o + add + 1 > cap) {
			char *nb = realloc(out, cap = 2 * (o + add + 1));
			if (!nb) {
				free(out);
				free(s);
				return NULL;
			}
			out = nb;
		}
		if (!m) {
			out[o++] = text[i++];
			continue;
		}
		o += (size_t)sprintf(out + o, "%s%.*s]", MW_REDACT_MARK, (int)m->name_len, m->name);
		i += m->value_len;
		*redacted = true;
	}
	out[o] = '\0';
	if (out_len)
		*out_len = o;
	free(s);
	return out;
}
