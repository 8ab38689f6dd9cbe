// potts_core — Potts sequence data: draw J and U, sample training and test sequences, run the
// equilibration test, fill the "sequence" dataset and the extras record (docs/potts.md lists the keys).
// The task "potts" is this generator behind a parameter table (plugins/task-potts); the replica
// estimator's Potts panel calls it directly.
#ifndef ATTNMECH_POTTS_DATA_H
#define ATTNMECH_POTTS_DATA_H

#include <attnmech/record.h>
#include <attnmech/rng.h>

#include <string>

#include "potts_model.h"

namespace am::potts {

struct TaskOptions {
  int L = 20, C = 20;
  double beta = 2.0;
  size_t M = 3000, M_test = 10000;
  std::string couplings = "sinkhorn";  // sinkhorn | kregular | file
  int k = 4;                           // degree of the k-regular graph
  double sinkhorn_scale = 1.5;         // K_ij = exp(scale (r_ij + r_ji))
  std::string J_file, U_file;          // .npy (user-given couplings / colours)
  int burnin = 300, thin = 0;
  int draw = 0;                        // index of the (J, U) draw for this seed
  bool redraw = false;                 // move on to the next draw until one equilibrates
  int max_redraws = 10;
  bool equilibration_test = true;
  int equil_chains = 4000;
  double entropy_tol = 0.005, max_freq_limit = 0.3;
  std::string out_sequences;           // path prefix: <prefix>_train.npy/.fasta, <prefix>_test.npy/.fasta
  ParallelFor parallel;                // loop over independent chains (host_parallel_for); empty = serial
};

// Draws (J, U) of draw number `draw` (deterministic in the task stream and the draw index).
am_status draw_model(am_context *ctx, const TaskOptions &o, const am_rng &task_rng, int draw, Model *m);

am_status make_dataset(am_context *ctx, const TaskOptions &o, const am_rng &task_rng, am_record *dataset,
                       am_record *extras);

// FASTA with the 20 amino-acid letters "ACDEFGHIKLMNPQRSTVWY" (colour c → letter c); C ≤ 20.
am_status write_fasta(am_context *ctx, const std::string &path, const int32_t *tokens, size_t M, int L, int C);

}  // namespace am::potts
#endif
