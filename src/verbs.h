/* src/verbs.h: the table of memwall's verbs.
 *
 * Adding a verb is one line here plus its file src/cmd_<verb>.c (listed in src/meson.build).
 * Each verb's entry point takes the arguments after the verb (argv[0] is the verb name) and
 * returns an enum mw_exit code. Every verb answers --help with its usage on stdout, exit 0.
 */
#ifndef MEMWALL_VERBS_H
#define MEMWALL_VERBS_H

/* MW_VERB(name, one-line summary) */
#define MW_VERBS(MW_VERB) \
	MW_VERB(version, "print the version, git commit and build configuration")

#define MW_VERB_DECLARE(name, summary) int mw_cmd_##name(int argc, char **argv);
MW_VERBS(MW_VERB_DECLARE)
#undef MW_VERB_DECLARE

#endif
