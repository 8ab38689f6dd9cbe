// potts_core — the one memory estimate of each sequence fit, computed from the sizes alone before the fit allocates
// and checked against am_memory_check's budget (the physical memory, AM_MEMORY_LIMIT, ulimit -v): a fit that cannot
// fit is refused with AM_ERR_NO_MEMORY and a message naming its sizes, before its model exists. Here: the sizes, the
// dataset's share, the check and the estimates of the collapsed and uncollapsed pseudo-likelihood fits; the alignment
// fit's is msa_fit_bytes (plugins/common/msa/msa_fit.h), the vanilla transformer's vanilla_fit_bytes
// (plugins/estimator-vanilla/vanilla_driver.h).
//
// Each estimate is the peak, over the phases of the fit, of the bytes it holds at once: the dataset it reads (the
// record's int32 tokens and weights, already resident, and the fit's own copy of them), the model's work arrays
// (each model's static work_bytes, written next to the allocations it counts), θ and the optimiser's state (L-BFGS:
// lbfgs_bytes), the per-call buffers, and the outputs it writes into the run record (the record keeps a copy of
// every array). docs/msa.md ("Memory") gives the estimate against the measured peak RSS.
#ifndef ATTNMECH_POTTS_FIT_MEMORY_H
#define ATTNMECH_POTTS_FIT_MEMORY_H

#include <attnmech/context.h>

#include <cstddef>
#include <string>

namespace am::potts {

// The sizes a fit's memory depends on.
struct FitShape {
  size_t M = 0, M_test = 0;  // training and held-out sequences
  int L = 0;                 // sites
  int C = 0;                 // the model's colours (an alignment with gaps missing: the letters without the gap)
  int workers = 1;           // concurrent workers of the host's loop (each holds its own scratch)
};

// The dataset every sequence fit holds: the record's int32 tokens (train + test, already resident) and the fit's
// int32 copy (SeqData).
double data_bytes(const FitShape &s);

// The collapsed factored fit of the pseudolikelihood estimator (FactoredModel; lbfgs = false: sgd/adam).
double collapsed_fit_bytes(const FitShape &s, int heads, bool lbfgs);
// The uncollapsed fit at a > 0 (MixedModel of embedding dimension d).
double mixed_fit_bytes(const FitShape &s, int d, bool lbfgs);

// "the pseudolikelihood fit (factored, L = 400, C = 20, M = 5, M_test = 1, 64 heads)": the sizes the estimate
// depends on, for the message.
std::string fit_what(const char *fit, const FitShape &s, const std::string &detail);

// "3.42 GB": bytes as the refusals and the notes write them.
std::string gigabytes(double bytes);

// am_memory_check of `bytes` for `what`: AM_OK, or AM_ERR_NO_MEMORY with "<what> needs 3.4 GB; AM_MEMORY_LIMIT
// allows 1.1 GB (…)". The estimate is also logged (debug) on success.
am_status check_fit_memory(am_context *ctx, double bytes, const std::string &what);

}  // namespace am::potts
#endif
