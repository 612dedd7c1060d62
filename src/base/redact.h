/* src/base/redact.h: keeping secrets out of what memwall records.
 *
 * Text captured from other programs (an external engine's stderr, its --version output) and
 * values memwall records about itself (its environment, its command line) can carry a secret
 * that lives in the environment: an API token, a password. Before such text enters a result
 * record, every value of an environment variable whose name looks secret is replaced, and
 * the record says that it was ("redacted": true beside the text). */
#ifndef MEMWALL_REDACT_H
#define MEMWALL_REDACT_H

#include <stdbool.h>
#include <stddef.h>

/* Values shorter than this are not redacted: "1" or "yes" would blank out unrelated text. */
#define MW_REDACT_MIN_VALUE 4

/* What replaces a secret value: "[redacted:NAME]". */
#define MW_REDACT_MARK "[redacted:"

/* Whether an environment variable's name looks like it holds a secret: it contains (in any
 * case) TOKEN, KEY, SECRET, PASSWORD, PASSWD, PASS, PWD (not the PWD variable itself),
 * CREDENTIAL, AUTH, SESSION, COOKIE, PRIVATE, SIGNATURE or CERT. */
bool mw_secret_name(const char *name);

/* A copy of text[0..len) with every value (of MW_REDACT_MIN_VALUE characters or more) of a
 * secret-named variable in the current environment replaced by "[redacted:NAME]". *redacted
 * says whether anything was replaced. Returns a malloc'd, NUL-terminated string (*out_len
 * bytes, out_len may be NULL), NULL when out of memory. */
char *mw_redact(const char *text, size_t len, size_t *out_len, bool *redacted);

/* What replaces a password in a URL or a connection string. */
#define MW_REDACT_PASSWORD "[redacted]"

/* A copy of text with every credential it spells out replaced by "[redacted]": the password
 * of a URL's user information ("postgresql://user:PASSWORD@host/db" keeps the user) and the
 * value of a password= (or passwd=, pwd=) parameter in a query string or a libpq connection
 * string. Applied to every message memwall prints (mw_error_print, mw_fail) and, through
 * mw_redact, to everything it records. *redacted (may be NULL) says whether anything was
 * replaced. Returns a malloc'd string, NULL when out of memory. */
char *mw_redact_url(const char *text, bool *redacted);

#endif
