/* src/base/jschema.c: a validator for the subset of JSON Schema described in jschema.h.
 *
 * Keyword meanings follow "JSON Schema Validation" (draft 2020-12), sections 6.1-6.5; $ref is
 * resolved only against "#/$defs/NAME" in the root schema. */
#include <errno.h>
#include <math.h>
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jschema.h"

struct ctx {
	const json_t *root;
	const char *source;
	struct mw_error *err;
	int depth;
};

const char *mw_json_type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "object";
	case JSON_ARRAY: return "array";
	case JSON_STRING: return "string";
	case JSON_INTEGER: return "integer";
	case JSON_REAL: return "number";
	case JSON_TRUE:
	case JSON_FALSE: return "boolean";
	case JSON_NULL: return "null";
	}
	return "?";
}

/* Does v have JSON Schema type name t? An integer is also a "number". */
static int type_is(const json_t *v, const char *t)
{
	if (!strcmp(t, "number"))
		return json_is_number(v);
	return !strcmp(t, mw_json_type_name(v));
}

static int fail(struct ctx *c, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(struct ctx *c, const char *path, const char *fmt, ...)
{
	char text[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	return mw_error_set(c->err, -EINVAL, c->source, path[0] ? path : "(top level)", "%s",
			    text);
}

static int bad_schema(struct ctx *c, const char *path, const char *what)
{
	return mw_error_set(c->err, -EINVAL, "(schema)", path, "%s", what);
}

static void join(char *out, size_t n, const char *path, const char *key)
{
	snprintf(out, n, "%s%s%s", path, path[0] ? "." : "", key);
}

/* Lists the allowed names of an object schema, for "unknown field" messages. */
static void list_keys(const json_t *props, char *out, size_t n)
{
	const char *k;
	json_t *v;
	size_t used = 0;
	out[0] = '\0';
	json_object_foreach((json_t *)(uintptr_t)props, k, v) {
		int w = snprintf(out + used, n - used, "%s%s", used ? ", " : "", k);
		if (w < 0 || (size_t)w >= n - used)
			break;
		used += (size_t)w;
	}
}

/* What a field's schema wants, for the fix of a missing one: its type(s), enum or $ref. */
static void describe(const json_t *s, char *out, size_t n)
{
	const json_t *t = json_object_get(s, "type"), *e = json_object_get(s, "enum");
	const char *ref = json_string_value(json_object_get(s, "$ref"));
	char *dump = NULL;
	if (json_is_string(t))
		snprintf(out, n, "a value of type %s", json_string_value(t));
	else if (json_is_array(t) && (dump = json_dumps(t, JSON_COMPACT)))
		snprintf(out, n, "a value of one of the types %s", dump);
	else if (e && (dump = json_dumps(e, JSON_COMPACT)))
		snprintf(out, n, "one of %s", dump);
	else if (ref && !strncmp(ref, "#/$defs/", 8))
		snprintf(out, n, "a %s (the schema's $defs/%s)", ref + 8, ref + 8);
	else
		snprintf(out, n, "a value (see the schema)");
	free(dump);
}

/* "pattern": an ECMA-262 regular expression in JSON Schema; ours are also POSIX extended
 * ones (anchors, classes, counts), which regcomp reads. Applies to strings only. */
static int check_pattern(struct ctx *c, const json_t *pat, const json_t *v, const char *path)
{
	regex_t re;
	if (!json_is_string(pat) || regcomp(&re, json_string_value(pat), REG_EXTENDED | REG_NOSUB))
		return bad_schema(c, path, "pattern is not a regular expression");
	int no = json_is_string(v) && regexec(&re, json_string_value(v), 0, NULL, 0);
	regfree(&re);
	if (!no)
		return 0;
	return fail(c, path, "is \"%.80s\", which does not match %s", json_string_value(v),
		    json_string_value(pat));
}

static int check(struct ctx *c, const json_t *s, const json_t *v, const char *path);

static int check_type(struct ctx *c, const json_t *t, const json_t *v, const char *path)
{
	char want[128] = "";
	if (json_is_string(t)) {
		if (type_is(v, json_string_value(t)))
			return 0;
		snprintf(want, sizeof(want), "%s", json_string_value(t));
	} else if (json_is_array(t)) {
		size_t i, used = 0;
		json_t *e;
		json_array_foreach(t, i, e) {
			if (!json_is_string(e))
				return bad_schema(c, path, "type list holds a non-string");
			if (type_is(v, json_string_value(e)))
				return 0;
			int w = snprintf(want + used, sizeof(want) - used, "%s%s", i ? " or " : "",
					 json_string_value(e));
			if (w > 0 && (size_t)w < sizeof(want) - used)
				used += (size_t)w;
		}
	} else {
		return bad_schema(c, path, "type is neither a string nor a list");
	}
	return fail(c, path, "expected %s, got %s", want, mw_json_type_name(v));
}

static int check_enum(struct ctx *c, const json_t *e, const json_t *v, const char *path)
{
	char list[256] = "";
	size_t i, used = 0;
	json_t *x;
	if (!json_is_array(e))
		return bad_schema(c, path, "enum is not a list");
	json_array_foreach(e, i, x) {
		if (json_equal((json_t *)(uintptr_t)v, x))
			return 0;
		char *txt = json_dumps(x, JSON_ENCODE_ANY);
		int w = snprintf(list + used, sizeof(list) - used, "%s%s", i ? ", " : "",
				 txt ? txt : "?");
		free(txt);
		if (w > 0 && (size_t)w < sizeof(list) - used)
			used += (size_t)w;
	}
	char *got = json_dumps(v, JSON_ENCODE_ANY);
	int rc = fail(c, path, "%s is not allowed; use one of: %s", got ? got : "value", list);
	free(got);
	return rc;
}

static int check_object(struct ctx *c, const json_t *s, const json_t *v, const char *path)
{
	const json_t *props = json_object_get(s, "properties");
	const json_t *extra = json_object_get(s, "additionalProperties");
	const json_t *req = json_object_get(s, "required");
	char sub[512];
	size_t i;
	json_t *r;
	const char *k;
	json_t *x;
	int rc;

	if (req) {
		json_array_foreach(req, i, r) {
			const char *name = json_string_value(r);
			if (!json_object_get(v, name)) {
				char want[160];
				join(sub, sizeof(sub), path, name);
				describe(props ? json_object_get(props, name) : NULL, want, sizeof(want));
				return fail(c, sub, "required field '%s' is missing from %s%s%s: add "
					    "\"%s\": %s there", name, path[0] ? "'" : "the top level",
					    path, path[0] ? "'" : "", name, want);
			}
		}
	}
	json_object_foreach((json_t *)(uintptr_t)v, k, x) {
		join(sub, sizeof(sub), path, k);
		const json_t *ps = props ? json_object_get(props, k) : NULL;
		if (ps) {
			if ((rc = check(c, ps, x, sub)))
				return rc;
		} else if (json_is_false(extra)) {
			char allowed[384];
			list_keys(props, allowed, sizeof(allowed));
			return fail(c, sub, "unknown field (allowed here: %s)", allowed);
		} else if (json_is_object(extra)) {
			if ((rc = check(c, extra, x, sub)))
				return rc;
		}
	}
	return 0;
}

/* Keywords handled elsewhere or carrying no check. */
static const char *const passive[] = {
	"$schema", "$id", "$defs", "$comment", "title", "description", "default", "examples",
	"properties", "additionalProperties", "required", NULL,
};

static int is_passive(const char *k)
{
	for (const char *const *p = passive; *p; p++)
		if (!strcmp(*p, k))
			return 1;
	return 0;
}

static int check(struct ctx *c, const json_t *s, const json_t *v, const char *path)
{
	const char *k;
	json_t *kv;
	int rc;
	if (json_is_true(s))
		return 0;
	if (!json_is_object(s))
		return bad_schema(c, path, "a schema must be an object or true");
	if (++c->depth > 64) {
		c->depth--;
		return bad_schema(c, path, "$ref nesting deeper than 64");
	}
	rc = 0;
	json_object_foreach((json_t *)(uintptr_t)s, k, kv) {
		if (is_passive(k))
			continue;
		if (!strcmp(k, "type")) {
			rc = check_type(c, kv, v, path);
		} else if (!strcmp(k, "enum")) {
			rc = check_enum(c, kv, v, path);
		} else if (!strcmp(k, "const")) {
			if (!json_equal((json_t *)(uintptr_t)v, kv)) {
				char *want = json_dumps(kv, JSON_ENCODE_ANY);
				rc = fail(c, path, "must be %s", want ? want : "a fixed value");
				free(want);
			}
		} else if (!strcmp(k, "$ref")) {
			const char *ref = json_string_value(kv);
			const json_t *defs = json_object_get(c->root, "$defs");
			const json_t *target = NULL;
			if (ref && !strncmp(ref, "#/$defs/", 8) && defs)
				target = json_object_get(defs, ref + 8);
			rc = target ? check(c, target, v, path)
				    : bad_schema(c, path, "$ref is not a known #/$defs/ entry");
		} else if (!strcmp(k, "items")) {
			size_t i;
			json_t *e;
			char sub[512];
			if (json_is_array(v)) {
				json_array_foreach(v, i, e) {
					snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
					if ((rc = check(c, kv, e, sub)))
						break;
				}
			}
		} else if (!strcmp(k, "pattern")) {
			rc = check_pattern(c, kv, v, path);
		} else if (!strcmp(k, "minItems") || !strcmp(k, "maxItems")) {
			if (json_is_array(v)) {
				json_int_t lim = json_integer_value(kv), n = (json_int_t)json_array_size(v);
				if (k[1] == 'i' && n < lim)
					rc = fail(c, path, "needs at least %lld entries, has %lld",
						  (long long)lim, (long long)n);
				if (k[1] == 'a' && n > lim)
					rc = fail(c, path, "allows at most %lld entries, has %lld",
						  (long long)lim, (long long)n);
			}
		} else if (!strcmp(k, "minLength") || !strcmp(k, "maxLength")) {
			if (json_is_string(v)) {
				json_int_t lim = json_integer_value(kv);
				/* JSON Schema counts characters (code points), not bytes: jansson
				 * holds valid UTF-8, so count the bytes that start a character. */
				json_int_t n = 0;
				const char *t = json_string_value(v);
				for (size_t b = 0; b < json_string_length(v); b++)
					n += ((unsigned char)t[b] & 0xC0) != 0x80;
				if (k[1] == 'i' && n < lim)
					rc = fail(c, path, "must be at least %lld characters long",
						  (long long)lim);
				if (k[1] == 'a' && n > lim)
					rc = fail(c, path, "must be at most %lld characters long",
						  (long long)lim);
			}
		} else if (!strcmp(k, "minimum") || !strcmp(k, "maximum") ||
			   !strcmp(k, "exclusiveMinimum")) {
			if (json_is_number(v)) {
				double x = json_number_value(v), lim = json_number_value(kv);
				if (!strcmp(k, "minimum") && !(x >= lim))
					rc = fail(c, path, "must be >= %g, got %g", lim, x);
				else if (!strcmp(k, "maximum") && !(x <= lim))
					rc = fail(c, path, "must be <= %g, got %g", lim, x);
				else if (!strcmp(k, "exclusiveMinimum") && !(x > lim))
					rc = fail(c, path, "must be > %g, got %g", lim, x);
			}
		} else {
			char what[160];
			snprintf(what, sizeof(what), "unsupported schema keyword '%s'", k);
			rc = bad_schema(c, path, what);
		}
		if (rc)
			break;
	}
	if (!rc && json_is_object(v) &&
	    (json_object_get(s, "properties") || json_object_get(s, "required") ||
	     json_object_get(s, "additionalProperties")))
		rc = check_object(c, s, v, path);
	c->depth--;
	return rc;
}

int mw_schema_check(const json_t *schema, const json_t *doc, const char *source,
		    struct mw_error *err)
{
	struct ctx c = { .root = schema, .source = source, .err = err };
	return check(&c, schema, doc, "");
}

const json_t *mw_json_at(const json_t *o, const char *path)
{
	char key[128];
	while (o && *path) {
		size_t n = strcspn(path, ".");
		snprintf(key, sizeof(key), "%.*s", (int)n, path);
		o = json_object_get(o, key);
		path += n + (path[n] == '.');
	}
	return o;
}
