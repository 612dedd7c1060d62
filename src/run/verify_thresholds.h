/* src/run/verify_thresholds.h: `memwall verify`'s thresholds, in percent (probes/README.md,
 * "verify", says why each is what it is). */
#ifndef MEMWALL_RUN_VERIFY_THRESHOLDS_H
#define MEMWALL_RUN_VERIFY_THRESHOLDS_H

#define MW_DRAMVERIFY_SUM_PCT 3.0      /* the sum over instances against the canary */
#define MW_DRAMVERIFY_INSTANCE_PCT 5.0 /* each instance against its fair share */
#define MW_DRAMVERIFY_PERF_PCT 2.0     /* perf stat against memwall, same events */
#define MW_DRAMVERIFY_RESCTRL_PCT 15.0 /* resctrl MBM against the memory controllers */
#define MW_DRAMVERIFY_IDLE_PCT 3.0     /* a direction that must stay at the idle rate (writes
					* of the read pass, reads of the non-temporal write
					* pass, instances not serving the canary's node): its
					* net bytes against the pass's expected bytes */
#define MW_DRAMVERIFY_WA_PCT 10.0      /* write-allocate reads (plain stores) against the
					* bytes written: a CPU may skip some (Intel's
					* SpecI2M converts a full-line write's read into an
					* ownership request) */

#endif
