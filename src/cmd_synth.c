/* src/cmd_synth.c: `memwall synth`: write a deterministic synthetic model (real shape, seeded
 * random weights), marked as synthetic so every report names it so.
 *
 * One row per architecture and file format in `writers`; a new one (say GGUF for another
 * architecture) is a row and its write function.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "engine.h"
#include "mw.h"
#include "verbs.h"

#define VERB "synth"

struct synth_request {
	const char *arch, *shape, *out;
	long seed;
};

static int write_llama2c(const struct synth_request *r, struct eng_error *err)
{
	return eng_synth_llama2c(r->out, r->shape, (uint64_t)r->seed, err);
}

static const struct synth_writer {
	const char *arch;
	const char *format; /* the file format it writes */
	const char *shapes; /* for --help */
	int (*write)(const struct synth_request *r, struct eng_error *err);
} writers[] = {
	{ "llama", "llama2.c ak42 v1, float32", "stories260K stories15M stories42M stories110M",
	  write_llama2c },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: memwall synth [--arch ARCH] --shape SHAPE -o FILE [--seed S]\n\n"
		   "Writes a deterministic synthetic model: the real shape, seeded random weights of\n"
		   "a realistic scale (RMSNorm weights near 1). The same shape and seed give the same\n"
		   "bytes. The file is marked synthetic, and every report on it says so.\n\n"
		   "  --arch ARCH     architecture (default llama)\n"
		   "  --shape SHAPE   one of the architecture's shapes (below)\n"
		   "  -o, --output F  file to write (atomically: a temporary file, then a rename)\n"
		   "  --seed S        seed (default 1)\n\n"
		   "architectures:\n");
	for (size_t i = 0; i < sizeof(writers) / sizeof(writers[0]); i++)
		fprintf(f, "  %-8s %s; shapes: %s\n", writers[i].arch, writers[i].format,
			writers[i].shapes);
}

int mw_cmd_synth(int argc, char **argv)
{
	enum { O_ARCH = 256, O_SHAPE, O_SEED };
	static const struct option longopts[] = {
		{ "arch", required_argument, NULL, O_ARCH },
		{ "shape", required_argument, NULL, O_SHAPE },
		{ "output", required_argument, NULL, 'o' },
		{ "seed", required_argument, NULL, O_SEED },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct synth_request r = { .arch = "llama", .seed = 1 };
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
		switch (c) {
		case O_ARCH: r.arch = optarg; break;
		case O_SHAPE: r.shape = optarg; break;
		case 'o': r.out = optarg; break;
		case O_SEED:
			if (mw_parse_long(optarg, 0, INT64_MAX, &r.seed))
				return mw_fail(MW_EXIT_USAGE, VERB, "--seed %s: give a number >= 0",
					       optarg);
			break;
		case 'h':
			usage(stdout);
			return MW_EXIT_OK;
		case ':':
			return mw_fail(MW_EXIT_USAGE, VERB, "%s needs a value", argv[optind - 1]);
		default:
			return mw_fail(MW_EXIT_USAGE, VERB, "unknown option '%s' (see --help)",
				       argv[optind - 1]);
		}
	}
	if (optind < argc)
		return mw_fail(MW_EXIT_USAGE, VERB, "unexpected argument '%s'", argv[optind]);
	if (!r.shape || !r.out)
		return mw_fail(MW_EXIT_USAGE, VERB, "give --shape SHAPE and -o FILE (see --help)");

	const struct synth_writer *w = NULL;
	for (size_t i = 0; i < sizeof(writers) / sizeof(writers[0]); i++)
		if (!strcmp(writers[i].arch, r.arch))
			w = &writers[i];
	if (!w)
		return mw_fail(MW_EXIT_USAGE, VERB, "--arch %s: unknown architecture (see --help)",
			       r.arch);

	struct eng_error err;
	eng_error_clear(&err);
	int rc = w->write(&r, &err);
	if (rc) /* a bad shape is usage; anything else is the file system's */
		return mw_fail(rc == -EINVAL ? MW_EXIT_USAGE : MW_EXIT_ENV, VERB, "%s%s%s", err.source,
			       err.source[0] ? ": " : "", err.text);
	struct stat st;
	long long bytes = stat(r.out, &st) == 0 ? (long long)st.st_size : -1;
	printf("wrote %s: SYNTHETIC model (random weights, not trained), arch %s, shape %s, "
	       "seed %ld, %s, %lld bytes\n",
	       r.out, w->arch, r.shape, r.seed, w->format, bytes);
	return MW_EXIT_OK;
}
