// msa_core — the alignment fit, the pseudolikelihood estimator's engine for alignments (docs/msa.md): a "sequence"
// dataset (the task msa's, marked by its key `alignment` and holding weights, alphabet, site numbers and focus
// sequence; or any sequence dataset when the options ask for this fit) fitted by weighted pseudo-likelihood with
// fields and ℓ2 (MsaModel, msa_model.h) by L-BFGS, then the APC-corrected Frobenius scores and the ranked contacts
// (msa_scores.h) into the run record. The run record's keys: docs/msa.md.
#ifndef ATTNMECH_MSA_MSA_FIT_H
#define ATTNMECH_MSA_MSA_FIT_H

#include <attnmech/record.h>
#include <attnmech/rng.h>

#include <string>
#include <vector>

#include "fit_memory.h"
#include "lbfgs.h"
#include "msa_model.h"
#include "potts_estimators.h"

namespace am::msa {

// The options only the alignment fit reads. The estimator's table binds them beside potts::PLOptions, whose
// iteration limit, tolerances, window guard, heads, init_scale, M_use and loop the alignment fit shares.
struct FitOptions {
  std::string fields = "auto";     // auto | 0 | 1 (auto: on for an alignment dataset, is_alignment)
  std::string gaps = "auto";       // auto | state | missing (auto: missing when the alphabet has a gap)
  std::string model = "auto";     // auto | factored | potts (plmc's symmetric Potts model); auto: resolve_model
  std::string model_rule;         // model=auto: the model the fit chose and why ("" otherwise; run key model_rule)
  std::string score_gap = "include";  // gaps as a state: include = the gap colour counts in F_ij (plmc's scores);
                                      // exclude = left out (as with gaps missing)
  double lambda_h = 0.01, lambda_e = 16.0;  // ℓ2 on fields and couplings, plmc's units
  double rtol = 2e-3;              // window rule: decrease ≤ rtol·|f| over the last stop_window iterations
                                   // (2e-3: docs/msa.md, "The defaults study"; 1e-2 before 3.7)
  double logit_scale = 0.0;        // factored: A = softmax(s·W), s = logit_scale (0 = auto: L/8)
  bool symmetric = false;          // factored: the conditionals use (J_ij(a,b) + J_ji(b,a))/2
  std::string couplings = "auto";  // params.J: 1 written, 0 left out, auto: writes_couplings (3.9)
};

// Whether the fit writes params.J [L, L, C, C] (3.9): couplings = "1" or "0" as asked; "auto": always for the Potts
// model (J is its parameters), for the factored model while the table has at most kAutoCouplings doubles (beyond,
// its A and V give it: J_ij(a, b) = Σ_h A^h_ij V^h_ab, and the fit itself never builds it).
constexpr double kAutoCouplings = 33554432.0;  // 2^25 doubles, 268 MB: L ≤ 289 at C = 20
bool writes_couplings(MsaKind kind, int L, int C, const std::string &couplings);

// The head count and initial scale of V of an alignment fit when the estimator's table leaves them at 0 (auto).
constexpr int kAlignmentHeads = 64;
constexpr double kAlignmentInitScale = 0.1;

// The run key every alignment fit writes, `fit` = "alignment" (docs/msa.md): what the estimator's describe reads to
// give a run the contact map, couplings.txt and contacts.tsv.
constexpr char kFitKey[] = "fit";
constexpr char kFitAlignment[] = "alignment";
inline bool is_alignment_fit(const am_record *run) {
  const char *s = nullptr;
  return am_record_get_string(run, kFitKey, &s) == AM_OK && s && std::string(s) == kFitAlignment;
}

// The alignment as the fit sees it: tokens with the gap mapped for gaps (missing: gap → −1 and the colours above it
// moved down by one, C one less), weights (all 1 when the dataset has none), the model's alphabet.
struct MsaData {
  potts::SeqData seq;           // tokens after the gap mapping; seq.C = the model's colours
  std::vector<double> w, w_test;
  std::string alphabet;         // the model's colours as letters ("" when the dataset has no alphabet)
  int gap_state = -1;           // the model's gap colour (−1: none, or gaps missing)
  bool gaps_missing = false;
  bool fields = true;
  std::vector<double> site_numbers;  // [L]; 1..L when the dataset has none
  std::string focus;            // the focus sequence at the kept sites ("" without focus)
  double neff = 0.0;            // Σ weights over train + test
  std::string site_numbering;   // how the task numbered the sites ("" when the dataset does not say)
  std::vector<std::string> warnings;  // the dataset's warnings (the task msa's), copied into the run's `warnings`
};

// Reads the dataset (its first o.M_use training sequences) and maps the gaps as f.gaps says.
am_status read_msa_dataset(am_context *ctx, const am_record *ds, const potts::PLOptions &o, const FitOptions &f,
                           MsaData *out);

// L-BFGS options of the alignment fit: window rule relative to the objective (f.rtol) with the progress guard.
potts::LbfgsOptions msa_lbfgs_options(const potts::PLOptions &o, const FitOptions &f);

// The fit's memory (fit_memory.h: the estimates of the other sequence fits): MsaModel by L-BFGS, then the scores,
// contacts and parameters it writes.
// symmetric: the factored model with FitOptions::symmetric; couplings: FitOptions::couplings (3.9).
double msa_fit_bytes(const potts::FitShape &s, MsaKind kind, int heads, bool fields, bool symmetric = false,
                     const std::string &couplings = "auto");

// run.contacts: every pair i < j by score, as parallel vectors (site numbers, letters as ASCII codes, score,
// separation) — the alignment fit's and the mean-field estimator's (S: the L × L scores).
am_status write_contacts(am_record *run, const MsaData &m, const std::vector<double> &S);
// run.warnings: the dataset's warnings (the msa task's), appended; the host then gives the run the status
// "warning" and the CLI and Python show them. Nothing when there are none.
void write_warnings(am_record *run, const MsaData &m);

// The second half of the alignment pipeline (pipeline.hpp), the estimator's: the dataset record → MsaModel by
// L-BFGS → the run record (train/test loss, scores, contacts, params, stop_reason; docs/msa.md). AM_CANCELLED when
// the context stopped it (the run then holds the fit so far).
am_status run_msa_fit(am_context *ctx, const potts::PLOptions &o, const FitOptions &f, const am_record *ds,
                      const am_rng &rng, am_record *run);

}  // namespace am::msa
#endif
