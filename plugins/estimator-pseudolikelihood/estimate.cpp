// estimator "pseudolikelihood" — the choice of engine and of the report (estimate.h).
#include "estimate.h"

#include "../common/sequence_report.hpp"
#include "dataset.hpp"
#include "msa_fit.h"
#include "msa_report.hpp"

namespace am::pseudolikelihood {

bool runs_alignment_fit(const Options &o, const am_record *dataset) {
  return msa::is_alignment(dataset) || o.msa.fields == "1" || o.msa.model == "potts";
}

am_status estimate(am_context *ctx, const Options &o, const am_record *dataset, const am_rng &rng, am_record *run) {
  // heads = 0 and init_scale = 0 are a choice per engine: one head and 0.01 on the potts task's sequences (its
  // figures), kAlignmentHeads and 0.1 on an alignment (docs/msa.md: the overlap with plmc's contacts against head
  // count and CPU; 0.01 leaves a 256-head alignment fit at its starting saddle)
  const bool alignment = dataset && runs_alignment_fit(o, dataset);
  potts::PLOptions pl = o.pl;
  if (pl.heads <= 0) pl.heads = alignment ? msa::kAlignmentHeads : 1;
  if (pl.init_scale <= 0.0) pl.init_scale = alignment ? msa::kAlignmentInitScale : 0.01;
  if (alignment) return msa::run_msa_fit(ctx, pl, o.msa, dataset, rng, run);
  return potts::fit_dataset(ctx, pl, dataset, rng, run, potts::run_pseudolikelihood);
}

am_status describe(const am_record *results, am_record *report) {
  if (msa_report::has_alignment_fit(results)) return msa_report::describe(results, report);
  return sequence_report::describe(results, report);
}

}  // namespace am::pseudolikelihood
