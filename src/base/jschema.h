/* src/base/jschema.h: checks a JSON document against the subset of JSON Schema (draft 2020-12)
 * that memwall's own schemas use, so protocol and result errors name the field at fault.
 *
 * Supported keywords: type (a name or a list), enum, const, required, properties,
 * additionalProperties (false or a schema), items, minItems, maxItems, minimum, maximum,
 * exclusiveMinimum, minLength, maxLength, pattern (POSIX extended: write patterns that mean
 * the same in ECMA-262 and POSIX, such as ^[0-9a-f]{64}$), $ref to "#/$defs/NAME". Annotation keywords
 * ($schema, $id, title, description, default, examples, $comment) are ignored. Any other
 * keyword in a schema is an error, so a schema cannot silently ask for a check we skip. */
#ifndef MEMWALL_JSCHEMA_H
#define MEMWALL_JSCHEMA_H

#include <jansson.h>

#include "mw.h"

/* 0 when doc satisfies schema. Otherwise -EINVAL with err naming source, the first failing
 * field as a path ("model.synth.shape", "runs[2].decode") and what was expected; a
 * missing required field is named with the object it belongs in and the value to add.
 * A malformed schema is reported the same way with source "(schema)". */
int mw_schema_check(const json_t *schema, const json_t *doc, const char *source,
		    struct mw_error *err);

/* The value at a dotted path of objects ("machine.kernel.release"); NULL when any step is
 * absent. Borrowed from o. */
const json_t *mw_json_at(const json_t *o, const char *path);

/* The JSON type name of v as JSON Schema spells it: "object", "integer", "number", ... */
const char *mw_json_type_name(const json_t *v);

#endif
