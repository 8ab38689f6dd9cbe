// estimator "meanfield" — mean-field DCA on a sequence dataset (docs/msa.md, "The mean-field baseline"): the task
// msa's alignment (weights, alphabet, site numbers, focus sequence) or the task potts's sequences (weights 1, no
// alphabet). The dataset is read as the alignment fit reads it (msa::read_msa_dataset, gaps kept as a state), the
// mathematics is meanfield.h, the scores and contacts are the alignment fit's (msa_scores.h), and the report reuses
// the alignment report's contact map and files (msa_report.hpp). With the plugin's table (plugin.cpp) it is the
// static library meanfield_core, which the tests (tests/plugins/estimator-meanfield) link.
#ifndef ATTNMECH_MEANFIELD_ESTIMATE_H
#define ATTNMECH_MEANFIELD_ESTIMATE_H

#include <attnmech/plugin.hpp>
#include <attnmech/record.h>

#include <string>

#include "fit_memory.h"

namespace am::meanfield {

// The options the estimator's table binds (plugin.cpp).
struct Options {
  double pseudocount = 0.5;          // λ: the fraction of uniform pseudo-data mixed into the frequencies
  std::string held_out = "include";  // include | exclude: the task's held-out rows in the frequencies or not
  bool params = true;                // write the fields h [L, C] and couplings J [L, L, C, C]
};

// The run key every mean-field run writes first, `fit` = "meanfield": what describe reads to give a run the contact
// map, couplings.txt and contacts.tsv.
constexpr char kFitMeanfield[] = "meanfield";
bool is_meanfield_fit(const am_record *run);

// The bytes the estimate holds at its peak for a dataset of this shape (s.C: the dataset's colours, the gap
// included), checked against the memory budget before anything is allocated.
double meanfield_bytes(const am::potts::FitShape &s, bool params);

// The run record (docs/msa.md): `fit`, the sizes, pseudocount, reference state, rcond, scores, fn, contacts,
// params. AM_ERR_FORMAT for a dataset that is not a sequence dataset, AM_ERR_SINGULAR when the correlation matrix is
// not positive definite, AM_ERR_NO_MEMORY over the budget, AM_CANCELLED when the context stopped it (nothing
// written); each with a message on the context.
am_status estimate(am_context *ctx, const Options &o, const am_record *dataset, const am::sdk::ParallelFor &loop,
                   am_record *run);

// The contact map, couplings.txt (plmc's -c format) and contacts.tsv of every mean-field run, and a summary.
am_status describe(const am_record *results, am_record *report);

}  // namespace am::meanfield
#endif
