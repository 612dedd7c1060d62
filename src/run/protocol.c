/* src/run/protocol.c: loading and checking protocol files.
 *
 * Two layers: the embedded protocols/protocol.schema.json catches unknown fields, wrong types
 * and out-of-range values with the field's path; the code below adds the rules a schema
 * cannot say (one of model.path and model.synth, prompt or prompt_tokens, hex digests, files
 * that must exist) and fills in the defaults that protocols/README.md documents. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "adapters.h"
#include "engine.h"
#include "probes.h"
#include "embedded.h"
#include "jschema.h"
#include "metrics.h"
#include "file.h"
#include "protocol.h"
#include "sha256.h"

json_t *mw_protocol_schema(void)
{
	const struct mw_embedded *e = mw_embedded_find("protocol.schema.json");
	return e ? json_loadb(e->data, e->len, 0, NULL) : NULL;
}

int mw_cache_dir(char *buf, size_t n)
{
	const char *v;
	if ((v = getenv("MEMWALL_CACHE_DIR")) && *v)
		snprintf(buf, n, "%s", v);
	else if ((v = getenv("XDG_CACHE_HOME")) && *v)
		snprintf(buf, n, "%s/memwall", v);
	else if ((v = getenv("HOME")) && *v)
		snprintf(buf, n, "%s/.cache/memwall", v);
	else
		return -ENOENT;
	return 0;
}

static char *resolve(const char *dir, const char *path)
{
	char *out = NULL;
	if (path[0] == '/' || !dir || !dir[0])
		return strdup(path);
	if (asprintf(&out, "%s/%s", dir, path) < 0)
		return NULL;
	return out;
}

static bool is_hex64(const char *s)
{
	if (strlen(s) != 64)
		return false;
	for (; *s; s++)
		if (!isxdigit((unsigned char)*s) || isupper((unsigned char)*s))
			return false;
	return true;
}

static const char *str_or(const json_t *obj, const char *key, const char *dflt)
{
	const json_t *v = json_object_get(obj, key);
	return json_is_string(v) ? json_string_value(v) : dflt;
}

static json_int_t int_or(const json_t *obj, const char *key, json_int_t dflt)
{
	const json_t *v = json_object_get(obj, key);
	return json_is_integer(v) ? json_integer_value(v) : dflt;
}

static double num_or(const json_t *obj, const char *key, double dflt)
{
	const json_t *v = json_object_get(obj, key);
	return json_is_number(v) ? json_number_value(v) : dflt;
}

/* "required" / "optional" / "off", as the schema's enum allows. */
static enum mw_need need_of(const char *s)
{
	if (!strcmp(s, "required"))
		return MW_NEED_REQUIRED;
	return !strcmp(s, "off") ? MW_NEED_OFF : MW_NEED_OPTIONAL;
}

static int file_must_exist(const char *source, const char *field, const char *path,
			   const char *url, struct mw_error *err)
{
	struct stat st;
	if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
		return 0;
	if (stat(path, &st) == 0)
		return mw_error_set(err, -EINVAL, source, field, "%s is %s, not a regular file: name "
				    "a file", path, mw_file_kind(st.st_mode));
	if (url)
		return mw_error_set(err, -ENOENT, source, field,
				    "%s does not exist; download it first: curl -L --create-dirs "
				    "-o '%s' '%s'",
				    path, path, url);
	return mw_error_set(err, -ENOENT, source, field, "%s does not exist (and no url is given)",
			    path);
}

/* A name from the protocol that becomes part of a file name: refused unless it follows
 * MW_NAME_RULE (src/base/file.h), so no record or cached model lands outside its folder. */
static int name_check(const char *src, const char *field, const char *value, struct mw_error *err)
{
	char why[128];
	if (!mw_name_check(value, why, sizeof(why)))
		return 0;
	return mw_error_set(err, -EINVAL, src, field, "\"%.80s\" %s; it becomes part of a file "
			    "name, so use only %s", value, why, MW_NAME_RULE);
}

/* ---- external engines ---------------------------------------------------------------------- */

/* The placeholders of a command template (protocols/README.md, "External engines"). */
enum placeholder { PH_MODEL, PH_PROMPT, PH_N, PH_THREADS, PH_SEED, PH_COUNT };
static const char *const placeholders[PH_COUNT] = {
	[PH_MODEL] = "model", [PH_PROMPT] = "prompt", [PH_N] = "n", [PH_THREADS] = "threads",
	[PH_SEED] = "seed",
};

/* Length of "{name}" at s when name is lowercase letters and '_', else 0. */
static size_t placeholder_len(const char *s)
{
	size_t i = 1;
	if (s[0] != '{')
		return 0;
	while (s[i] == '_' || (s[i] >= 'a' && s[i] <= 'z'))
		i++;
	return i > 1 && s[i] == '}' ? i + 1 : 0;
}

int mw_command_expand(const char *arg, const struct mw_command_values *v, const char *source,
		      const char *field, char **out, struct mw_error *err)
{
	char *buf = NULL, num[32];
	size_t size = 0;
	FILE *f = NULL;
	int rc = 0;

	if (out)
		*out = NULL;
	if (v && !(f = open_memstream(&buf, &size)))
		return -ENOMEM;
	for (const char *s = arg; *s;) {
		size_t len = placeholder_len(s);
		if (!len) {
			if (f)
				fputc(*s, f);
			s++;
			continue;
		}
		int k = 0;
		while (k < PH_COUNT && (strlen(placeholders[k]) != len - 2 ||
					strncmp(placeholders[k], s + 1, len - 2)))
			k++;
		if (k == PH_COUNT) {
			rc = mw_error_set(err, -EINVAL, source, field,
					  "unknown placeholder '%.*s' in \"%s\" (known: {model} "
					  "{prompt} {n} {threads} {seed})", (int)len, s, arg);
			goto out;
		}
		if (f) {
			const char *text = num;
			if (k == PH_MODEL)
				text = v->model ? v->model : "";
			else if (k == PH_PROMPT)
				text = v->prompt ? v->prompt : "";
			else if (k == PH_N)
				snprintf(num, sizeof(num), "%ld", v->n);
			else if (k == PH_THREADS)
				snprintf(num, sizeof(num), "%ld", v->threads);
			else
				snprintf(num, sizeof(num), "%llu", v->seed);
			fputs(text, f);
		}
		s += len;
	}
out:
	if (f && fclose(f) && !rc)
		rc = -ENOMEM;
	if (rc || !out)
		free(buf);
	else
		*out = buf;
	return rc;
}

static bool command_uses(const struct mw_protocol *p, const char *name)
{
	char ph[32];
	snprintf(ph, sizeof(ph), "{%s}", name);
	for (size_t i = 1; i < p->engine.n_command; i++)
		if (strstr(p->engine.command[i], ph))
			return true;
	return false;
}

/* The rules for kind "external" the schema cannot say. */
static int parse_external(struct mw_protocol *p, const json_t *engine, const char *dir,
			  struct mw_error *err)
{
	const char *src = p->source;
	const json_t *cmd = json_object_get(engine, "command");
	const json_t *adapter = json_object_get(engine, "adapter");
	char field[64];
	int rc;

	if (!json_array_size(cmd))
		return mw_error_set(err, -EINVAL, src, "engine.command",
				    "an external engine needs its command: a list such as "
				    "[\"llama-completion\", \"-m\", \"{model}\", \"-n\", \"{n}\"]");
	if (!adapter)
		return mw_error_set(err, -EINVAL, src, "engine.adapter",
				    "an external engine needs an output adapter, e.g. {\"name\": "
				    "\"llama-completion\"}: without one memwall cannot confirm how many "
				    "tokens were generated");
	p->engine.adapter = str_or(adapter, "name", "");
	const struct mw_adapter *a = mw_adapter_find(p->engine.adapter);
	if (!a)
		return mw_error_set(err, -EINVAL, src, "engine.adapter.name",
				    "unknown adapter \"%s\" (`memwall run --help` lists them)",
				    p->engine.adapter);
	const char *stream = str_or(adapter, "stream", NULL);
	p->engine.adapter_stream_given = stream != NULL;
	p->engine.adapter_stream = !stream ? a->stream
				   : !strcmp(stream, "stdout") ? MW_ADAPTER_STDOUT
				   : !strcmp(stream, "stderr") ? MW_ADAPTER_STDERR : MW_ADAPTER_BOTH;
	p->engine.adapter_pattern = str_or(adapter, "pattern", NULL);
	if (p->engine.adapter_pattern && strcmp(a->name, "memwall-tokens"))
		return mw_error_set(err, -EINVAL, src, "engine.adapter.pattern",
				    "only the memwall-tokens adapter takes a pattern");
	p->engine.timeout_s = (int)int_or(engine, "timeout_s", 600);

	p->engine.n_command = json_array_size(cmd);
	p->engine.command = calloc(p->engine.n_command + 1, sizeof(char *));
	if (!p->engine.command)
		return -ENOMEM;
	for (size_t i = 0; i < p->engine.n_command; i++) {
		const char *arg = json_string_value(json_array_get(cmd, i));
		snprintf(field, sizeof(field), "engine.command[%zu]", i);
		if (i == 0 && !*arg)
			return mw_error_set(err, -EINVAL, src, field,
					    "the program's name or path is empty");
		if (i == 0 && placeholder_len(arg))
			return mw_error_set(err, -EINVAL, src, field,
					    "the program cannot be a placeholder: name it, or pass "
					    "--llama-bin PATH to memwall run");
		if ((rc = mw_command_expand(arg, NULL, src, field, NULL, err)))
			return rc;
		/* A path with a '/' is relative to the protocol, like every path in it; a bare
		 * name is looked up in PATH when the run starts. */
		p->engine.command[i] = i == 0 && strchr(arg, '/') ? resolve(dir, arg) : strdup(arg);
		if (!p->engine.command[i])
			return -ENOMEM;
	}
	if (!command_uses(p, "n"))
		return mw_error_set(err, -EINVAL, src, "engine.command",
				    "no argument holds {n}: the differential method runs the program "
				    "at two token counts, so the count must be passed to it");
	if (!command_uses(p, "model"))
		return mw_error_set(err, -EINVAL, src, "engine.command",
				    "no argument holds {model}: the program must run the protocol's "
				    "model (add e.g. \"-m\", \"{model}\")");
	if (p->prompt && !command_uses(p, "prompt"))
		return mw_error_set(err, -EINVAL, src, "engine.command",
				    "the protocol has a prompt but no argument holds {prompt}: pass it "
				    "(e.g. \"-p\", \"{prompt}\") or drop the prompt");
	if (!p->prompt && command_uses(p, "prompt"))
		return mw_error_set(err, -EINVAL, src, "prompt",
				    "engine.command passes {prompt} but the protocol has no prompt");
	if (json_object_get(p->doc, "prompt_tokens"))
		return mw_error_set(err, -EINVAL, src, "prompt_tokens",
				    "an external engine tokenizes for itself: give a text \"prompt\"");
	if (json_object_get(p->doc, "tokenizer") && !json_is_null(json_object_get(p->doc, "tokenizer")))
		return mw_error_set(err, -EINVAL, src, "tokenizer",
				    "an external engine tokenizes for itself: drop the tokenizer");
	if (json_object_get(engine, "kernels"))
		return mw_error_set(err, -EINVAL, src, "engine.kernels",
				    "memwall's kernel tables do not apply to an external engine: "
				    "drop it");
	if (json_object_get(engine, "load"))
		return mw_error_set(err, -EINVAL, src, "engine.load",
				    "memwall's load modes do not apply to an external engine: "
				    "drop it");
	if (json_object_get(engine, "pin"))
		return mw_error_set(err, -EINVAL, src, "engine.pin",
				    "memwall's thread pinning does not apply to an external engine "
				    "(pin it with engine.cpus): drop it");
	return 0;
}

static const char *const format_names[MW_MODEL_FORMAT_COUNT] = {
	[MW_MODEL_LLAMA2C] = "llama2c",
	[MW_MODEL_GGUF] = "gguf",
};

static const char *const engine_kind_names[MW_ENGINE_COUNT] = {
	[MW_ENGINE_BUILTIN] = "builtin",
	[MW_ENGINE_EXTERNAL] = "external",
};

const char *mw_model_format_name(enum mw_model_format f)
{
	return (unsigned)f < MW_MODEL_FORMAT_COUNT ? format_names[f] : "?";
}

const char *mw_engine_kind_name(enum mw_engine_kind k)
{
	return (unsigned)k < MW_ENGINE_COUNT ? engine_kind_names[k] : "?";
}

static bool known_backend(const char *name)
{
	for (const char *const *b = prb_dram_backends(); *b; b++)
		if (!strcmp(*b, name))
			return true;
	return false;
}

/* A GGUF synthetic's activation against its architecture's row (engine.h, eng_arch_info.acts):
 * silu, the default, stands for the architecture's own. */
static int synth_act_check(const struct mw_protocol *p, struct mw_error *err)
{
	const struct eng_arch_info *a = eng_arch_lookup(p->model.synth_arch);
	enum eng_ffn_act act = p->model.synth_act;
	char takes[128] = "";
	if (!a || act == ENG_ACT_SILU || (a->acts & (1u << act)))
		return 0; /* an unknown arch is the schema's to refuse */
	for (size_t i = 0, used = 0; i < eng_arch_count() && used < sizeof(takes); i++)
		if (eng_arch_at(i)->acts & (1u << act)) {
			int k = snprintf(takes + used, sizeof(takes) - used, "%s%s",
					 used ? ", " : "", eng_arch_at(i)->name);
			used += k > 0 ? (size_t)k : 0;
		}
	return mw_error_set(err, -EINVAL, p->source, "model.synth.activation",
			    "%s FFNs are not for \"arch\": \"%s\" (its FFN is %s): drop "
			    "activation or synthesise an architecture that takes it (%s)",
			    p->model.synth_activation, a->name, eng_ffn_act_name(a->act),
			    takes[0] ? takes : "none");
}

static int parse_model(struct mw_protocol *p, const char *dir, struct mw_error *err)
{
	const char *src = p->source;
	const json_t *d = p->doc;
	const json_t *model = json_object_get(d, "model");
	const json_t *synth = json_object_get(model, "synth");
	const json_t *tok = json_object_get(d, "tokenizer");

	p->model.format = !strcmp(str_or(model, "format", "llama2c"), "gguf") ? MW_MODEL_GGUF
										 : MW_MODEL_LLAMA2C;
	p->model.url = str_or(model, "url", NULL);
	p->model.size_bytes = int_or(model, "size_bytes", -1);
	p->model.sha256 = str_or(model, "sha256", NULL);
	if (p->model.sha256 && !is_hex64(p->model.sha256))
		return mw_error_set(err, -EINVAL, src, "model.sha256",
				    "must be 64 lowercase hex digits (sha256sum's output)");
	if (!!synth == !!json_object_get(model, "path"))
		return mw_error_set(err, -EINVAL, src, "model",
				    "give exactly one of \"path\" (a model file) and \"synth\" (a "
				    "synthetic model memwall generates)");
	if (synth) {
		bool gguf = p->model.format == MW_MODEL_GGUF;
		p->model.synth_arch = str_or(synth, "arch", NULL);
		p->model.synth_quant = str_or(synth, "quant", NULL);
		/* GGUF synthetics (eng_synth_gguf) need an architecture and a type mix; llama2.c
		 * ones are float32 llama by construction. */
		if (gguf != (p->model.synth_arch && p->model.synth_quant))
			return gguf ? mw_error_set(err, -EINVAL, src, "model.synth",
						   "a synthetic GGUF model needs \"arch\" (%s) and "
						   "\"quant\" (e.g. q4_k_m)", eng_arch_names())
				    : mw_error_set(err, -EINVAL, src, "model.synth",
						   "\"arch\" and \"quant\" are for \"format\": "
						   "\"gguf\"; a llama2c synthetic has neither");
		if (p->model.url || p->model.size_bytes >= 0 || p->model.sha256)
			return mw_error_set(err, -EINVAL, src, "model.synth",
					    "a synthetic model is generated, not downloaded: drop "
					    "url, size_bytes and sha256");
		p->model.synth_shape = str_or(synth, "shape", NULL);
		p->model.synth_activation = str_or(synth, "activation", "silu");
		/* The schema admits only the engine's names */
		eng_ffn_act_parse(p->model.synth_activation, &p->model.synth_act);
		if (gguf && synth_act_check(p, err))
			return -EINVAL;
		p->model.synth_cd = str_or(synth, "canonical_delta", NULL);
		if (p->model.synth_cd && !gguf)
			return mw_error_set(err, -EINVAL, src, "model.synth.canonical_delta",
					    "canonical + delta models are GGUF only (`memwall synth "
					    "--canonical-delta`): set \"format\": \"gguf\" with "
					    "\"arch\" and \"quant\", or drop canonical_delta");
		p->model.synth_seed = (uint64_t)int_or(synth, "seed", 42);
		/* the schema admits only the engine's names; legacy by default, so that the
		 * protocols written before the flag keep their models */
		p->model.synth_construction = ENG_SYNTH_LEGACY;
		eng_synth_construction_parse(str_or(synth, "construction", "legacy"),
					     &p->model.synth_construction);
		/* arch, shape and quant name the cached file (src/run/plan.c) */
		static const char *const parts[] = { "arch", "shape", "quant" };
		for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
			const char *v = str_or(synth, parts[i], NULL);
			char field[32];
			snprintf(field, sizeof(field), "model.synth.%s", parts[i]);
			int rc = v ? name_check(src, field, v, err) : 0;
			if (rc)
				return rc;
		}
	} else {
		p->model.path = resolve(dir, str_or(model, "path", ""));
		if (!p->model.path)
			return -ENOMEM;
	}

	if (json_is_object(tok)) {
		p->tokenizer.path = resolve(dir, str_or(tok, "path", ""));
		if (!p->tokenizer.path)
			return -ENOMEM;
		p->tokenizer.url = str_or(tok, "url", NULL);
		p->tokenizer.sha256 = str_or(tok, "sha256", NULL);
		if (p->tokenizer.sha256 && !is_hex64(p->tokenizer.sha256))
			return mw_error_set(err, -EINVAL, src, "tokenizer.sha256",
					    "must be 64 lowercase hex digits (sha256sum's output)");
	}

	return 0;
}

static int parse_engine(struct mw_protocol *p, struct mw_error *err)
{
	const char *src = p->source;
	const json_t *d = p->doc;
	const json_t *engine = json_object_get(d, "engine");
	const json_t *v;
	size_t i;

	/* The schema allows only the names of the tables below and the engine's. */
	p->engine.kind = !strcmp(str_or(engine, "kind", "builtin"), "external") ? MW_ENGINE_EXTERNAL
										 : MW_ENGINE_BUILTIN;
	p->engine.threads = (int)int_or(engine, "threads", 0);
	if (int_or(engine, "threads", 0) > MW_THREADS_MAX)
		return mw_error_set(err, -EINVAL, src, "engine.threads",
				    "%lld threads is more than the %d memwall allows; give 0 (one "
				    "per CPU) or at most %d", (long long)int_or(engine, "threads", 0),
				    MW_THREADS_MAX, MW_THREADS_MAX);
	p->engine.kernels = str_or(engine, "kernels", "auto");
	if (eng_load_mode_parse(str_or(engine, "load", "mmap"), &p->engine.load))
		return mw_error_set(err, -EINVAL, src, "engine.load",
				    "unknown load mode \"%s\" (mmap, huge-copy or repack)",
				    str_or(engine, "load", ""));
	if (eng_pin_parse(str_or(engine, "pin", "cpus"), &p->engine.pin))
		return mw_error_set(err, -EINVAL, src, "engine.pin",
				    "unknown pinning \"%s\": give \"cpus\" (each thread on its own "
				    "CPU, the default) or \"none\"", str_or(engine, "pin", ""));
	bool external = p->engine.kind == MW_ENGINE_EXTERNAL;
	static const char *const external_only[] = { "command", "adapter", "timeout_s" };
	for (i = 0; !external && i < sizeof(external_only) / sizeof(external_only[0]); i++)
		if (json_object_get(engine, external_only[i])) {
			char field[32];
			snprintf(field, sizeof(field), "engine.%s", external_only[i]);
			return mw_error_set(err, -EINVAL, src, field,
					    "only an external engine takes a %s; set \"kind\": "
					    "\"external\" or drop it", external_only[i]);
		}
	if (!external && (json_object_get(d, "differential") || json_object_get(d, "allow_short")))
		return mw_error_set(err, -EINVAL, src,
				    json_object_get(d, "differential") ? "differential" : "allow_short",
				    "only external engines are measured by the differential method; "
				    "memwall's own engine is read at every token: drop it");
	const char *rule = str_or(engine, "threads_rule", "all");
	p->engine.threads_halved = !strcmp(rule, "cpu-count-halved");
	if (p->engine.threads_halved && p->engine.threads > 0)
		return mw_error_set(err, -EINVAL, src, "engine.threads_rule",
				    "a rule applies only when engine.threads is 0 (%d here): drop "
				    "one of them", p->engine.threads);
	const json_t *measure = json_object_get(d, "measure");
	const char *method = str_or(measure, "method", "differential");
	p->measure = strcmp(method, "aios-whole-process") ? MW_MEASURE_DIFFERENTIAL
							  : MW_MEASURE_AIOS;
	if (p->measure == MW_MEASURE_AIOS && !external)
		return mw_error_set(err, -EINVAL, src, "measure.method",
				    "\"aios-whole-process\" measures an external program (the AIOS "
				    "baseline script wraps llama.cpp): set engine.kind \"external\"");
	if (p->measure == MW_MEASURE_AIOS &&
	    (json_object_get(d, "differential") || json_object_get(d, "allow_short")))
		return mw_error_set(err, -EINVAL, src,
				    json_object_get(d, "differential") ? "differential" : "allow_short",
				    "AIOS's method runs one length and assumes its token count, so "
				    "it takes no short run and no allow_short: drop it");
	v = json_object_get(engine, "cpus");
	if (json_array_size(v)) {
		p->engine.n_cpus = json_array_size(v);
		p->engine.cpus = calloc(p->engine.n_cpus, sizeof(int));
		if (!p->engine.cpus)
			return -ENOMEM;
		for (i = 0; i < p->engine.n_cpus; i++)
			p->engine.cpus[i] = (int)json_integer_value(json_array_get(v, i));
		if (p->engine.threads > (int)p->engine.n_cpus)
			return mw_error_set(err, -EINVAL, src, "engine.threads",
					    "%d threads on %zu pinned CPUs would oversubscribe them; "
					    "use at most %zu or 0 (one per pinned CPU)",
					    p->engine.threads, p->engine.n_cpus, p->engine.n_cpus);
	}

	return 0;
}

/* The prompt, token counts and runs; then an external engine's own fields. */
static int parse_workload(struct mw_protocol *p, const char *dir, struct mw_error *err)
{
	const char *src = p->source;
	const json_t *d = p->doc;
	const json_t *engine = json_object_get(d, "engine");
	const json_t *v;
	size_t i;

	p->prompt = str_or(d, "prompt", NULL);
	v = json_object_get(d, "prompt_tokens");
	if (p->prompt && v)
		return mw_error_set(err, -EINVAL, src, "prompt_tokens",
				    "give either \"prompt\" (text, needs a tokenizer) or "
				    "\"prompt_tokens\" (token ids), not both");
	bool external = p->engine.kind == MW_ENGINE_EXTERNAL;
	if (p->prompt && !p->tokenizer.path && !external)
		return mw_error_set(err, -EINVAL, src, "prompt",
				    "a text prompt needs a \"tokenizer\"; add one or give "
				    "\"prompt_tokens\" instead");
	p->n_prompt_tokens = v ? json_array_size(v) : 1;
	p->prompt_tokens = calloc(p->n_prompt_tokens, sizeof(int));
	if (!p->prompt_tokens)
		return -ENOMEM;
	/* Without a prompt: BOS alone (token 1 in llama2.c's vocabularies), as llama2.c's run.c
	 * starts generation from an empty prompt. */
	p->prompt_tokens[0] = 1;
	for (i = 0; v && i < p->n_prompt_tokens; i++) {
		json_int_t t = json_integer_value(json_array_get(v, i));
		if (t > INT_MAX)
			return mw_error_set(err, -EINVAL, src, "prompt_tokens",
					    "token id %lld is out of range", (long long)t);
		p->prompt_tokens[i] = (int)t;
	}
	p->decode_tokens = (int)int_or(d, "decode_tokens", 0);
	p->runs = (int)int_or(d, "runs", 0);
	p->warmup_runs = (int)int_or(d, "warmup_runs", 1);
	p->allow_short = json_is_true(json_object_get(d, "allow_short"));
	p->short_tokens_given = json_object_get(json_object_get(d, "differential"),
						"short_tokens") != NULL;
	p->short_tokens = (int)int_or(json_object_get(d, "differential"), "short_tokens",
				      p->decode_tokens / 4 > 0 ? p->decode_tokens / 4 : 1);
	if (external && p->short_tokens >= p->decode_tokens)
		return mw_error_set(err, -EINVAL, src, "differential.short_tokens",
				    "%d is not below decode_tokens (%d): the differential method "
				    "needs two lengths N1 < N2; lower short_tokens or raise "
				    "decode_tokens", p->short_tokens, p->decode_tokens);
	if (external) {
		int rc = parse_external(p, engine, dir, err);
		if (rc)
			return rc;
	}

	return 0;
}

/* Acceptance limits and roofline inputs are not kept here: the record carries the protocol's
 * document, and its derivation (src/record/result.c) and the roofline of a record
 * (src/record/record_view.c) read them there, so `memwall validate` sees what the run saw. */
static int parse_measurement(struct mw_protocol *p, struct mw_error *err)
{
	const char *src = p->source;
	const json_t *d = p->doc;
	const json_t *sampling = json_object_get(d, "sampling");
	const json_t *counters = json_object_get(d, "counters");
	const json_t *drift = json_object_get(d, "drift");

	p->sampling.temperature = num_or(sampling, "temperature", 0.0);
	p->sampling.topp = num_or(sampling, "topp", 1.0);
	p->sampling.seed = (uint64_t)int_or(sampling, "seed", 42);

	p->counters.dram = need_of(str_or(counters, "dram", "optional"));
	p->counters.backend = str_or(counters, "backend", "auto");
	if (!strcmp(p->counters.backend, "auto"))
		p->counters.backend = NULL;
	else if (!known_backend(p->counters.backend))
		return mw_error_set(err, -EINVAL, src, "counters.backend",
				    "unknown DRAM backend \"%s\" (`memwall doctor` lists them)",
				    p->counters.backend);
	p->counters.energy = need_of(str_or(counters, "energy", "optional"));

	p->idle_baseline_ms = (int)int_or(d, "idle_baseline_ms", 500);

	p->drift.max_bandwidth_change_pct = num_or(drift, "max_bandwidth_change_pct", 10.0);
	p->drift.probe_ms = (int)int_or(drift, "probe_ms", 200);

	/* tolerance_pct is read back from the record by compare and db check: its names must be
	 * metrics, or a misspelt one would silently fall back to the default. */
	const char *k;
	const json_t *v;
	json_object_foreach((json_t *)(uintptr_t)json_object_get(d, "tolerance_pct"), k, v) {
		if (!mw_metric_find(k))
			return mw_error_set(err, -EINVAL, src, "tolerance_pct",
					    "\"%s\" is not a metric: use summary.metrics' names, e.g. "
					    "\"dram_MB_per_token\": 3 or \"tok_per_s\": 10 "
					    "(results/README.md lists them)", k);
	}
	return 0;
}

/* batch, speculative and engine.sparsity_map: what the builtin engine decodes, checked
 * against each other and the sampling. */
static int parse_decoding(struct mw_protocol *p, struct mw_error *err)
{
	const char *src = p->source;
	const json_t *d = p->doc, *spec = json_object_get(d, "speculative");
	bool builtin = p->engine.kind == MW_ENGINE_BUILTIN;
	p->batch = (int)int_or(d, "batch", 1);
	p->engine.sparsity_map = json_is_true(json_object_get(json_object_get(d, "engine"),
							      "sparsity_map"));
	const json_t *eng = json_object_get(d, "engine");
	/* The schema admits only the engine's names and contexts of at least 2 */
	eng_attention_parse(str_or(eng, "attention", "auto"), &p->engine.attention);
	p->engine.context = (int)int_or(eng, "context", 0);
	p->speculative.on = json_is_object(spec);
	p->speculative.draft_tokens = (int)int_or(spec, "draft_tokens", 4);
	p->speculative.ngram = (int)int_or(spec, "ngram", 0);
	static const char *const builtin_only[] = { "batch", "speculative", "engine.sparsity_map",
						    "engine.attention", "engine.context" };
	bool given[] = { p->batch > 1, p->speculative.on, p->engine.sparsity_map,
			 json_object_get(eng, "attention") != NULL, p->engine.context > 0 };
	for (size_t i = 0; i < sizeof(given) / sizeof(given[0]) && !builtin; i++)
		if (given[i])
			return mw_error_set(err, -EINVAL, src, builtin_only[i],
					    "is for memwall's own engine (engine.kind \"builtin\"): an "
					    "external program's decoding is its own; drop the field");
	if (p->speculative.on && p->sampling.temperature != 0.0)
		return mw_error_set(err, -EINVAL, src, "speculative",
				    "verifies drafts against greedy decoding: give sampling."
				    "temperature 0 (sampling at %g would need rejection sampling, "
				    "which memwall does not do)", p->sampling.temperature);
	if (p->engine.context && (p->prompt || json_object_get(d, "prompt_tokens")))
		return mw_error_set(err, -EINVAL, src, "engine.context",
				    "makes the prompt (BOS and context - 1 seeded ids): drop "
				    "\"prompt\" and \"prompt_tokens\", or drop engine.context");
	if (p->speculative.on && p->batch > 1)
		return mw_error_set(err, -EINVAL, src, "speculative",
				    "runs one sequence: drop it or set batch to 1 (it is %d); "
				    "compare the two as variants instead", p->batch);
	return 0;
}

static const char *const variant_keys[] = {
	"batch", "speculative", "engine.load", "engine.threads", "engine.sparsity_map",
	"engine.attention", "engine.context", "model.format", "model.synth.arch",
	"model.synth.activation", "model.synth.shape", "model.synth.quant",
	"model.synth.canonical_delta", NULL,
};

const char *const *mw_variant_keys(void)
{
	return variant_keys;
}

/* Sets the variant's overrides (obj, at the dotted prefix) into doc: a key of the table
 * replaces the value (null removes it); an object whose key prefixes table entries is
 * walked. */
static int variant_apply(json_t *doc, json_t *obj, const char *prefix, const char *src,
			 size_t idx, struct mw_error *err)
{
	const char *key;
	json_t *v;
	json_object_foreach(obj, key, v) {
		char path[128], field[160];
		if (!*prefix && (!strcmp(key, "name") || !strcmp(key, "baseline")))
			continue;
		snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "." : "", key);
		bool exact = false, inner = false;
		for (size_t i = 0; variant_keys[i]; i++) {
			size_t n = strlen(path);
			exact |= !strcmp(variant_keys[i], path);
			inner |= !strncmp(variant_keys[i], path, n) && variant_keys[i][n] == '.';
		}
		snprintf(field, sizeof(field), "variants[%zu].%s", idx, path);
		if (inner && json_is_object(v)) {
			json_t *sub = json_object_get(doc, key);
			if (!json_is_object(sub)) {
				sub = json_object();
				json_object_set_new(doc, key, sub);
			}
			int rc = variant_apply(sub, v, path, src, idx, err);
			if (rc)
				return rc;
		} else if (exact) {
			if (json_is_null(v))
				json_object_del(doc, key);
			else
				json_object_set(doc, key, v);
		} else {
			char list[512] = "";
			for (size_t i = 0; variant_keys[i]; i++)
				snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
					 i ? ", " : "", variant_keys[i]);
			return mw_error_set(err, -EINVAL, src, field,
					    "is not something a variant may override; a variant "
					    "overrides %s (nested as in the protocol: {\"engine\": "
					    "{\"load\": \"repack\"}}); put other settings in the "
					    "protocol itself", list);
		}
	}
	return 0;
}

static int parse_doc(struct mw_protocol *p, const char *dir, unsigned flags,
		     struct mw_error *err);

/* variants[i].baseline, when given, names another variant of the list. */
static int baseline_check(const struct mw_protocol *p, const json_t *list, size_t i,
			  struct mw_error *err)
{
	const char *b = json_string_value(json_object_get(json_array_get(list, i), "baseline"));
	const json_t *v;
	size_t j;
	char field[64];
	if (!b)
		return 0;
	json_array_foreach(list, j, v)
		if (j != i && !strcmp(b, json_string_value(json_object_get(v, "name"))))
			return 0;
	snprintf(field, sizeof(field), "variants[%zu].baseline", i);
	return mw_error_set(err, -EINVAL, p->source, field,
			    "\"%s\" is not the name of another variant: name the variant this "
			    "one is measured against, or drop baseline", b);
}

/* Each variant: this document with its overrides, parsed and checked as a protocol of its
 * own; an error names the variant's field. */
static int parse_variants(struct mw_protocol *p, const char *dir, unsigned flags,
			  struct mw_error *err)
{
	json_t *list = json_object_get(p->doc, "variants"), *v;
	size_t i;
	if (!list)
		return 0;
	p->n_variants = json_array_size(list);
	if (!(p->variants = calloc(p->n_variants, sizeof(*p->variants))))
		return -ENOMEM;
	json_array_foreach(list, i, v) {
		struct mw_variant *x = &p->variants[i];
		char field[160];
		int rc;
		x->name = json_string_value(json_object_get(v, "name"));
		x->overrides = v;
		for (size_t j = 0; j < i; j++)
			if (!strcmp(p->variants[j].name, x->name)) {
				snprintf(field, sizeof(field), "variants[%zu].name", i);
				return mw_error_set(err, -EINVAL, p->source, field,
						    "\"%s\" names variants[%zu] too: give each "
						    "variant its own name", x->name, j);
			}
		snprintf(field, sizeof(field), "variants[%zu].name", i);
		if ((rc = name_check(p->source, field, x->name, err)))
			return rc;
		if ((rc = baseline_check(p, list, i, err)))
			return rc;
		if (!(x->p = calloc(1, sizeof(*x->p))) || !(x->p->source = strdup(p->source)) ||
		    !(x->p->doc = json_deep_copy(p->doc)))
			return -ENOMEM;
		memcpy(x->p->sha256, p->sha256, sizeof(p->sha256));
		json_object_del(x->p->doc, "variants");
		if ((rc = variant_apply(x->p->doc, v, "", p->source, i, err)))
			return rc;
		/* The overrides' values meet the schema as the protocol's own do. */
		json_t *schema = mw_protocol_schema();
		rc = schema ? mw_schema_check(schema, x->p->doc, p->source, err) : -ENOMEM;
		json_decref(schema);
		if (rc || (rc = parse_doc(x->p, dir, flags, err))) {
			snprintf(field, sizeof(field), "variants[%zu].%.100s", i,
				 err ? err->field : "");
			if (err)
				snprintf(err->field, sizeof(err->field), "%.120s", field);
			return rc;
		}
	}
	return 0;
}

static int parse_doc(struct mw_protocol *p, const char *dir, unsigned flags,
		     struct mw_error *err)
{
	const char *src = p->source;
	int rc;

	p->name = str_or(p->doc, "name", "");
	if ((rc = name_check(src, "name", p->name, err)))
		return rc;
	p->description = str_or(p->doc, "description", "");
	if ((rc = parse_model(p, dir, err)) || (rc = parse_engine(p, err)) ||
	    (rc = parse_workload(p, dir, err)) || (rc = parse_measurement(p, err)) ||
	    (rc = parse_decoding(p, err)))
		return rc;
	if (flags & MW_PROTOCOL_CHECK_FILES) {
		if (p->model.path &&
		    (rc = file_must_exist(src, "model.path", p->model.path, p->model.url, err)))
			return rc;
		if (p->tokenizer.path && (rc = file_must_exist(src, "tokenizer.path",
							       p->tokenizer.path, p->tokenizer.url,
							       err)))
			return rc;
	}
	return 0;
}

int mw_protocol_parse(struct mw_protocol **out, const char *text, size_t len, const char *source,
		      const char *dir, unsigned flags, struct mw_error *err)
{
	struct mw_protocol *p = NULL;
	json_t *schema = NULL;
	json_error_t jerr;
	int rc;

	*out = NULL;
	p = calloc(1, sizeof(*p));
	if (!p || !(p->source = strdup(source))) {
		rc = -ENOMEM;
		goto out;
	}
	mw_sha256_hex(text, len, p->sha256);
	p->doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!p->doc) {
		rc = mw_error_set(err, -EINVAL, source, "", "not valid JSON: %s (column %d)",
				  jerr.text, jerr.column);
		if (err)
			err->line = jerr.line;
		goto out;
	}
	schema = mw_protocol_schema();
	if (!schema) {
		rc = mw_error_set(err, -EINVAL, "(built in)", "protocol.schema.json",
				  "the embedded schema does not parse: a build problem");
		goto out;
	}
	if ((rc = mw_schema_check(schema, p->doc, source, err)))
		goto out;
	if (!(rc = parse_doc(p, dir, flags, err)))
		rc = parse_variants(p, dir, flags, err);
out:
	json_decref(schema);
	if (rc) {
		mw_protocol_free(p);
		return rc;
	}
	*out = p;
	return 0;
}

int mw_protocol_load(struct mw_protocol **out, const char *path, unsigned flags,
		     struct mw_error *err)
{
	FILE *f = NULL;
	char *text = NULL, *dir = NULL;
	size_t len = 0;
	int rc;

	*out = NULL;
	/* A regular file of at most 16 MiB (src/base/file.h): never a FIFO that blocks. */
	if ((rc = mw_file_read(path, "protocol", "", 16u << 20, &text, &len, err)))
		goto out;
	dir = strdup(path);
	if (!dir) {
		rc = -ENOMEM;
		goto out;
	}
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	else
		dir[0] = '\0';
	rc = mw_protocol_parse(out, text, len, path, slash ? dir : NULL, flags, err);
out:
	if (f)
		fclose(f);
	free(text);
	free(dir);
	return rc;
}

int mw_protocol_load_embedded(struct mw_protocol **out, const char *name, struct mw_error *err)
{
	char file[160], source[200];
	snprintf(file, sizeof(file), "%s.json", name);
	snprintf(source, sizeof(source), "(embedded) protocols/%s", file);
	const struct mw_embedded *e = mw_embedded_find(file);
	if (!e)
		return mw_error_set(err, -ENOENT, name, "", "no protocol of that name is built in");
	return mw_protocol_parse(out, e->data, e->len, source, NULL, 0, err);
}

void mw_protocol_free(struct mw_protocol *p)
{
	if (!p)
		return;
	free(p->source);
	json_decref(p->doc);
	free(p->model.path);
	free(p->tokenizer.path);
	free(p->engine.cpus);
	for (size_t i = 0; p->engine.command && i < p->engine.n_command; i++)
		free(p->engine.command[i]);
	free(p->engine.command);
	free(p->prompt_tokens);
	for (size_t i = 0; p->variants && i < p->n_variants; i++)
		mw_protocol_free(p->variants[i].p);
	free(p->variants);
	free(p);
}
