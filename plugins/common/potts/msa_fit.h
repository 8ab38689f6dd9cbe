// potts_core — the alignment fit of the estimator "pseudolikelihood" (docs/msa.md): a "sequence" dataset from the
// task `msa` (sequence weights, alphabet, site numbers, focus sequence) fitted by weighted pseudo-likelihood with
// fields and ℓ2 (MsaModel, msa_model.h) by L-BFGS, then the APC-corrected Frobenius scores and the ranked contacts
// (msa_scores.h). The run record's keys: docs/msa.md.
#ifndef ATTNMECH_POTTS_MSA_FIT_H
#define ATTNMECH_POTTS_MSA_FIT_H

#include <attnmech/record.h>
#include <attnmech/rng.h>

#include <string>
#include <vector>

#include "lbfgs.h"
#include "potts_estimators.h"

namespace am::potts {

// The alignment as the fit sees it: tokens with the gap mapped for o.gaps (missing: gap → −1 and the colours above
// it moved down by one, C one less), weights (all 1 when the dataset has none), the model's alphabet.
struct MsaData {
  SeqData seq;                  // tokens after the gap mapping; seq.C = the model's colours
  std::vector<double> w, w_test;
  std::string alphabet;         // the model's colours as letters ("" when the dataset has no alphabet)
  int gap_state = -1;           // the model's gap colour (−1: none, or gaps missing)
  bool gaps_missing = false;
  bool fields = true;
  std::vector<double> site_numbers;  // [L]; 1..L when the dataset has none
  std::string focus;            // the focus sequence at the kept sites ("" without focus)
  double neff = 0.0;            // Σ weights over train + test
};

// True when the dataset is an alignment (has `weights` or `alphabet`).
bool is_alignment_dataset(const am_record *ds);
// True when the estimator runs the alignment fit on this dataset: an alignment, or fields=1 / model=potts asked.
bool wants_msa_fit(const PLOptions &o, const am_record *ds);

// Reads the dataset (its first o.M_use training sequences) and maps the gaps as o.gaps says.
am_status read_msa_dataset(am_context *ctx, const am_record *ds, const PLOptions &o, MsaData *out);

// L-BFGS options of the alignment fit: window rule relative to the objective (o.rtol) with the progress guard.
LbfgsOptions msa_lbfgs_options(const PLOptions &o);

// The whole fit: dataset → MsaModel by L-BFGS → run record (train/test loss, scores, contacts, params, stop_reason).
am_status run_msa_fit(am_context *ctx, const PLOptions &o, const am_record *ds, const am_rng &rng, am_record *run);

}  // namespace am::potts
#endif
