/* src/base/redact.c: replacing the environment's secrets in captured text (see redact.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

/* The parameter names whose values are passwords (libpq's "password"; others' spellings). */
static size_t password_key(const char *p)
{
	static const char *const keys[] = { "password=", "passwd=", "pwd=" };
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strncasecmp(p, keys[i], strlen(keys[i])))
			return strlen(keys[i]);
	return 0;
}

char *mw_redact_url(const char *text, bool *redacted)
{
	size_t len = strlen(text), o = 0;
	/* Each replacement adds at most strlen(MW_REDACT_PASSWORD) bytes and removes one. */
	size_t cap = len + 1, marks = 0;
	for (const char *p = text; *p; p++)
		marks += *p == '@' || *p == '=';
	cap += marks * sizeof(MW_REDACT_PASSWORD);
	char *out = malloc(cap);
	if (redacted)
		*redacted = false;
	if (!out)
		return NULL;
	for (size_t i = 0; i < len;) {
		size_t k;
		/* scheme://user:PASSWORD@host: the authority ends at '/', '?', '#' or a space */
		if (!strncmp(text + i, "://", 3)) {
			size_t a = i + 3, end = a + strcspn(text + a, "/?# \t\n\"'"), at = end;
			while (at > a && text[at - 1] != '@')
				at--;
			const char *colon = at > a ? memchr(text + a, ':', at - 1 - a) : NULL;
			if (colon) {
				size_t keep = (size_t)(colon - text) + 1 - i;
				memcpy(out + o, text + i, keep);
				o += keep;
				o += (size_t)sprintf(out + o, "%s@", MW_REDACT_PASSWORD);
				i = at;
				if (redacted)
					*redacted = true;
				continue;
			}
		}
		/* password=VALUE: the value ends at '&', ';', a space or a quote */
		if ((i == 0 || strchr("?&; \t'\"", text[i - 1])) && (k = password_key(text + i))) {
			memcpy(out + o, text + i, k);
			o += k;
			i += k;
			size_t v = strcspn(text + i, "&; \t\n'\"");
			if (v) {
				o += (size_t)sprintf(out + o, "%s", MW_REDACT_PASSWORD);
				i += v;
				if (redacted)
					*redacted = true;
			}
			continue;
		}
		out[o++] = text[i++];
	}
	out[o] = '\0';
	return out;
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
	free(s);
	/* Credentials spelled out in URLs and connection strings, whatever the variable. A NUL
	 * inside the text (captured output) ends what is checked: text past it is kept. */
	bool r = false;
	char *clean = strlen(out) == o ? mw_redact_url(out, &r) : NULL;
	if (clean) {
		free(out);
		out = clean;
		o = strlen(out);
		*redacted |= r;
	}
	if (out_len)
		*out_len = o;
	return out;
}
