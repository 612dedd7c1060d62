/* tests/src/test_util.c: src/base/util.c: option parsing, error formatting, version string. */
#include <errno.h>
#include <limits.h>

#include "mw.h"
#include "test.h"

static void test_parse_long(void)
{
	/* in order: v is what the last call that succeeded parsed, untouched by failures */
	static const struct {
		const char *text;
		long lo, hi;
		int rc;
		long v;
	} cases[] = {
		{ "42", 0, 100, 0, 42 },
		{ "0x10", 0, 100, 0, 16 },
		{ "101", 0, 100, -EINVAL, 16 },   /* over the top */
		{ "-1", 0, 100, -EINVAL, 16 },    /* under the bottom */
		{ "12abc", 0, 100, -EINVAL, 16 }, /* trailing garbage */
		{ "", 0, 100, -EINVAL, 16 },
		{ "99999999999999999999999", LONG_MIN, LONG_MAX, -EINVAL, 16 }, /* overflows long */
		/* issue 28: a leading zero is decimal, never octal; no space or '+' before the digits */
		{ "010", 0, 100, 0, 10 },
		{ "09", 0, 100, 0, 9 },
		{ " 5", 0, 100, -EINVAL, 9 },
		{ "+5", 0, 100, -EINVAL, 9 },
	};
	long v = -1;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		T_EQ_INT(mw_parse_long(cases[i].text, cases[i].lo, cases[i].hi, &v), cases[i].rc);
		T_EQ_INT(v, cases[i].v);
	}
}

static void test_parse_double(void)
{
	double d = 0;
	T_EQ_INT(mw_parse_double("0.5", 0, 1, &d), 0);
	T_NEAR(d, 0.5, 0);
	T_EQ_INT(mw_parse_double("nan", -1e9, 1e9, &d), -EINVAL);
	T_EQ_INT(mw_parse_double("inf", -1e9, 1e9, &d), -EINVAL);
	T_EQ_INT(mw_parse_double("1.5", 0, 1, &d), -EINVAL);
	T_EQ_INT(mw_parse_double("1e", 0, 10, &d), -EINVAL);
}

static void test_error(void)
{
	struct mw_error err;
	mw_error_clear(&err);
	T_EQ_STR(err.text, "");
	int rc = mw_error_set(&err, -EINVAL, "p.json", "model.path", "expected a string, got %s",
			      "integer");
	T_EQ_INT(rc, -EINVAL);
	T_EQ_STR(err.source, "p.json");
	T_EQ_STR(err.field, "model.path");
	T_EQ_STR(err.text, "expected a string, got integer");
	T_EQ_INT(mw_error_set(NULL, -ENOENT, NULL, NULL, "ignored"), -ENOENT);
}

static void test_version(void)
{
	const char *v = mw_version();
	T_CONTAINS(v, MW_VERSION);
	T_CONTAINS(v, "(git ");
}

/* MB with three significant digits: headroom's 0.477 MB/token was printed 0.5 (issue 44). */
static void test_mb_text(void)
{
	char buf[32];
	T_EQ_STR(mw_mb_text(477000, buf, sizeof(buf)), "0.477");
	T_EQ_STR(mw_mb_text(5.06e6, buf, sizeof(buf)), "5.06");
	T_EQ_STR(mw_mb_text(12.14e6, buf, sizeof(buf)), "12.1");
	T_EQ_STR(mw_mb_text(5063.24e6, buf, sizeof(buf)), "5063.2");
	T_EQ_STR(mw_mb_text(12345, buf, sizeof(buf)), "0.0123");
	T_EQ_STR(mw_mb_text(0, buf, sizeof(buf)), "0.0");
}

int main(void)
{
	test_parse_long();
	test_parse_double();
	test_error();
	test_version();
	test_mb_text();
	return t_done();
}
