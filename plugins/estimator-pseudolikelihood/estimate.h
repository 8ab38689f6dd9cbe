// estimator "pseudolikelihood" — its two engines and the one choice between them. A dataset the task msa made
// carries the key `alignment` (am::msa::is_alignment, plugins/common/msa/dataset.hpp): the alignment fit runs on it
// (plugins/common/msa/msa_fit.h), and on any sequence dataset whose options ask for it (fields=1, model=potts);
// every other dataset goes to the factored-attention fit of the generated-Potts path (plugins/common/potts,
// pseudolikelihood.cpp). The alignment fit marks its runs (`fit` = "alignment"), and describe reads that mark. With
// the plugin's table (plugin.cpp) it is the static library pseudolikelihood_core, which the tests link.
#ifndef ATTNMECH_PSEUDOLIKELIHOOD_ESTIMATE_H
#define ATTNMECH_PSEUDOLIKELIHOOD_ESTIMATE_H

#include <attnmech/record.h>
#include <attnmech/rng.h>

#include "msa_fit.h"
#include "potts_estimators.h"

namespace am::pseudolikelihood {

// The options the estimator's table binds: the factored-attention fit's (which the alignment fit shares) and the
// alignment fit's own.
struct Options {
  potts::PLOptions pl;
  msa::FitOptions msa;
};

// True when the dataset goes to the alignment fit.
bool runs_alignment_fit(const Options &o, const am_record *dataset);

// estimate(): the table's automatic values (heads = 0, init_scale = 0) resolved for the engine, then the engine.
am_status estimate(am_context *ctx, const Options &o, const am_record *dataset, const am_rng &rng, am_record *run);

// describe(): the alignment report (msa_report.hpp) for a document with an alignment fit, the sequence report
// (plugins/common/sequence_report.hpp) otherwise.
am_status describe(const am_record *results, am_record *report);

}  // namespace am::pseudolikelihood
#endif
