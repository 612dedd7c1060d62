/* engine/synth/synth_sparsity.h: the synthetic weights' sparsity recipe, for ReLU-family
 * models (engine.h's eng_synth_*_sparse): clustered gate rows whose activations are zero
 * together, and the bias channel that sets the live neurons' zero fraction and picks dead
 * neurons. Shared by the llama2.c writer (synth.c), the GGUF writer (synth_gguf.c) and the
 * varied construction (varied.c); what skips the zeros at run time is
 * runtime/sparsity.h's. */
#ifndef MEMWALL_ENGINE_SYNTH_SPARSITY_H
#define MEMWALL_ENGINE_SYNTH_SPARSITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"

/* Synthetic gate rows for ReLU models: rows in clusters of SPARSE_CLUSTER share a direction
 * (uniform, std 0.02, seeded by (seed, layer, cluster)) plus a per-row part of std 0.002
 * (seeded by (seed, layer, row)). A cluster's pre-activations are then one Gaussian plus
 * small noise: all 32 are <= 0 together on ~42% of tokens (P(Z < -0.2), 0.2 being the
 * expected max of 32 noise terms against the shared part), and about half of all
 * activations are zero. Independent rows would make a 32-wide block all zero with
 * probability 2^-32: never. Co-activated neuron clusters are what trained ReLU models show
 * (Deja Vu, PowerInfer); the cluster width is the quant block's, so this is the best case for
 * block skipping at a realistic zero fraction. */
#define SPARSE_CLUSTER 32
#define SPARSE_SHARED_STD 0.02f
#define SPARSE_NOISE_STD 0.002f

void eng_synth_gate_row(float *row, size_t n, uint64_t seed, int layer, uint64_t r);

/* The bias channel (engine.h, struct eng_synth_sparsity): residual channel 0 is
 * SYNTH_BIAS_CHANNEL in every layer (embedding column 0; wo's and w2's row 0 zero), and a
 * gate row's weight on it is its bias: eng_synth_gate_bias(dim, layer, z) for a live neuron aimed
 * at a zero fraction P (z = eng_synth_bias_z: Phi^-1(P), 0 when unset), and z = SYNTH_DEAD_SIGMAS
 * for the dead neurons eng_synth_dead_neuron picks (dead_fraction of them, per row from the
 * seed). Shared by the llama2.c and GGUF writers. */
#define SYNTH_BIAS_CHANNEL 1.0f
#define SYNTH_DEAD_SIGMAS 10.0
double eng_synth_bias_z(const struct eng_synth_sparsity *sp);
bool eng_synth_dead_neuron(const struct eng_synth_sparsity *sp, uint64_t seed, int l, uint64_t r);
float eng_synth_gate_bias(int dim, int l, double z);

#endif
