// msa_core — the task `msa`'s dataset, the first half of the alignment pipeline (pipeline.hpp): make_dataset takes the
// steps in order — the alignment read and encoded, its memory checked, the weights (weights.cpp) on every kept row,
// the held-out split, the records. The weights come before the split, so a row's weight does not depend on it.
#include "dataset.hpp"

#include <attnmech/array.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>


namespace am::msa {

namespace {

using am::sdk::check;
using am::sdk::put;

// Rows `rows` of the alignment: tokens as int32 [n, L] and their weights.
struct Part {
  std::vector<int32_t> tokens;
  std::vector<double> weights;
  size_t n = 0;
};

Part take_rows(const Alignment &a, const std::vector<double> &w, const std::vector<size_t> &rows) {
  Part p;
  p.n = rows.size();
  p.tokens.reserve(p.n * a.L);
  for (size_t s : rows) {
    for (size_t i = 0; i < a.L; ++i) p.tokens.push_back(a.tokens[s * a.L + i]);
    p.weights.push_back(w[s]);
  }
  return p;
}

void put_part(am_record *dataset, const char *tokens_key, const char *weights_key, const Part &p, size_t L) {
  const size_t shape[2] = {p.n, L};
  const am_array_view v = am_array_view_make(AM_I32, 2, shape, 0, p.tokens.data());
  check(am_record_set_array(dataset, tokens_key, &v), tokens_key);
  put(dataset, weights_key, p.weights);
}

// The record; the training and held-out rows are made one part at a time (each is copied into the record).
void put_dataset(am_record *d, const Alignment &a, const Alphabet &alpha, const std::vector<double> &w,
                 const std::vector<size_t> &train_rows, const std::vector<size_t> &test_rows, double neff) {
  put(d, "kind", "sequence");
  put(d, kAlignmentKey, true);
  put(d, "C", a.C);
  put(d, "L", a.L);
  put_part(d, "tokens", "weights", take_rows(a, w, train_rows), a.L);
  if (!test_rows.empty()) put_part(d, "tokens_test", "weights_test", take_rows(a, w, test_rows), a.L);
  put(d, "alphabet", alpha.letters);
  put(d, "gap_state", alpha.gap_state);
  put(d, "site_numbers", a.site_numbers);
  put(d, "site_numbering", a.site_numbering);
  if (a.focus_row >= 0) put(d, "focus_sequence", a.focus_sequence);
  put(d, "neff", neff);
}

// The list of warnings under kWarningsKey (nothing when there are none).
void put_warnings(am_record *r, const std::vector<std::string> &warnings) {
  if (warnings.empty()) return;
  am_record *list = am_record_list(r, kWarningsKey);
  if (!list) throw am::sdk::Error(AM_ERR_NO_MEMORY, "msa: cannot record the warnings");
  for (const std::string &w : warnings) check(am_record_append_string(list, w.c_str()), kWarningsKey);
}

void put_extras(am_record *x, const Options &o, const Alignment &a, const Alphabet &alpha, size_t M_test,
                double neff) {
  put(x, "file", o.file);
  put(x, "format", a.format);
  put(x, "M_read", a.M_read);
  put(x, "M_dropped", a.M_dropped);
  put(x, "M", a.M - M_test);
  put(x, "M_test", M_test);
  put(x, "L_columns", a.L_columns);
  put(x, "L", a.L);
  put(x, "focus", o.focus);
  put(x, "focus_row", a.focus_row);
  put(x, "region_start", a.region_start);
  put(x, "site_numbering", a.site_numbering);
  if (a.rf_used) put(x, "rf_inserts", a.rf_inserts);
  put(x, "theta", o.theta);
  put(x, "neff", neff);
  put(x, "alphabet", alpha.letters);
  put(x, "gap_state", alpha.gap_state);
}

}  // namespace

std::vector<size_t> held_out_rows(size_t M, double fraction, am_rng rng) {
  if (M < 2 || !(fraction > 0)) return {};
  const size_t n = std::min(M - 1, static_cast<size_t>(std::llround(fraction * static_cast<double>(M))));
  std::vector<size_t> idx(M);
  std::iota(idx.begin(), idx.end(), size_t{0});
  for (size_t k = 0; k < n; ++k) std::swap(idx[k], idx[k + am_rng_below(&rng, M - k)]);  // partial Fisher–Yates
  idx.resize(n);
  std::sort(idx.begin(), idx.end());
  return idx;
}

double dataset_bytes(size_t M, size_t L) {
  const double m = double(M), ml = m * double(L);
  // the alignment (tokens, record_of); then the larger of the weights' work and the record's making: the weights,
  // the split's indices (held_out_rows' permutation, the training rows), a part's int32 tokens and weights and the
  // record's copy of them
  return ml + 4 * m + std::max(weights_bytes(M, L, M), 8 * m + 16 * m + 2 * (4 * ml + 8 * m));
}

namespace {

// The file read and encoded; its records are gone when it returns.
Alignment read_alignment(const Options &o, const Alphabet &alphabet) {
  if (o.gap_identity != "plmc" && o.gap_identity != "ignore")
    throw am::sdk::Error(AM_ERR_USAGE, "msa: gap_identity '" + o.gap_identity + "': plmc or ignore");
  const Records r = read_records(o.file);
  return encode(r, alphabet, o.focus, o.file, o.rf);
}

double sum(const std::vector<double> &w) {
  double s = 0;
  for (double x : w) s += x;
  return s;
}

// The share of the tokens that are the gap state.
double gap_share(const Alignment &a, int gap) {
  size_t n = 0;
  for (uint8_t t : a.tokens) n += t == gap;
  return a.tokens.empty() ? 0.0 : double(n) / double(a.tokens.size());
}

// weigh: the weights by the chosen rule (empty when cancelled). With plmc's rule, a collapsed Neff in a gap-dominated
// alignment is counted again without the gap-gap columns, and a warning says what that changes (neff_warning).
std::vector<double> weigh(const Options &o, const Alignment &a, const Alphabet &alphabet,
                          const am::sdk::ParallelFor &loop, const Progress &progress, const Log &log,
                          std::vector<std::string> &warnings) {
  WeightRule rule;
  rule.theta = o.theta;
  rule.gaps = o.gap_identity == "ignore" ? GapIdentity::ignore : GapIdentity::plmc;
  rule.gap_state = alphabet.gap_state;
  const std::vector<double> w = cluster_weights(a.tokens.data(), a.M, a.L, rule, loop, progress, log);
  if (w.size() != a.M || rule.gaps == GapIdentity::ignore || !(o.theta > 0) || alphabet.gap_state < 0) return w;
  const double neff = sum(w);
  if (!(neff < kCollapseNeffShare * double(a.M))) return w;
  const double gaps = gap_share(a, alphabet.gap_state);
  if (!(gaps > kCollapseGapShare)) return w;
  rule.gaps = GapIdentity::ignore;
  const std::vector<double> wi = cluster_weights(a.tokens.data(), a.M, a.L, rule, loop, progress, log);
  if (wi.size() != a.M) return {};
  const std::string text = neff_warning(a.M, o.theta, neff, sum(wi), gaps);
  if (!text.empty()) warnings.push_back(text);
  return w;
}

// The dataset's memory against the budget, before the weights.
void check_dataset_budget(const Options &o, const Alignment &a) {
  check_budget(dataset_bytes(a.M, a.L), "msa: " + o.file + ": the dataset (M = " + std::to_string(a.M) + " rows, L = " +
                                            std::to_string(a.L) + " sites: tokens, weights, the dataset record)");
}

// The training and the held-out rows (ascending); the held-out ones chosen from `rng`'s child stream 1.
struct Split {
  std::vector<size_t> train, test;
};
Split split_rows(size_t M, double test_fraction, const am_rng &rng) {
  am_rng child;
  am_rng_split(&rng, 1, &child);
  Split s;
  s.test = held_out_rows(M, test_fraction, child);
  s.train.reserve(M - s.test.size());
  for (size_t row = 0, k = 0; row < M; ++row) {
    if (k < s.test.size() && s.test[k] == row) ++k;
    else s.train.push_back(row);
  }
  return s;
}

// The dataset record and the extras.
void put_records(am_record *dataset, am_record *extras, const Options &o, const Alignment &a, const Alphabet &alphabet,
                 const std::vector<double> &weights, const Split &split, const std::vector<std::string> &warnings) {
  const double neff = sum(weights);
  put_dataset(dataset, a, alphabet, weights, split.train, split.test, neff);
  put_warnings(dataset, warnings);
  if (!extras) return;
  put_extras(extras, o, a, alphabet, split.test.size(), neff);
  put_warnings(extras, warnings);
}

}  // namespace

std::string neff_warning(size_t M, double theta, double neff, double neff_ignore, double gap_share) {
  if (!(neff < kCollapseNeffShare * double(M)) || !(gap_share > kCollapseGapShare) ||
      !(neff_ignore >= kCollapseFactor * neff))
    return "";
  char b[700];
  std::snprintf(b, sizeof b,
                "sequence weights: Neff = %.1f for %zu sequences (theta=%g): %.0f %% of the alignment is gaps, and a "
                "gap matching a gap counts as identity (plmc's rule), so gappy sequences count as near copies of each "
                "other; with the gap-gap columns left out (gap_identity=ignore) Neff = %.1f. Set gap_identity=ignore, "
                "or remove gappy columns and fragments first (focus mode keeps only the focus's columns)",
                neff, M, theta, 100.0 * gap_share, neff_ignore);
  return b;
}

Summary make_dataset(const Options &o, const am_rng &rng, const am::sdk::ParallelFor &loop, am_record *dataset,
                     am_record *extras, const Progress &progress, const Log &log) {
  const Alphabet alphabet = make_alphabet(o.alphabet);
  const Alignment a = read_alignment(o, alphabet);  // read: the records, encoded; rows outside the alphabet dropped
  check_dataset_budget(o, a);
  Summary s{a.M_read, a.M_dropped, a.dropped_examples, false, {}};
  if (!o.focus.empty() && a.focus_matches > 1) s.warnings.push_back(focus_warning(a, o.focus));
  // weigh: 1 / #neighbours sharing ≥ (1 − θ)·L sites, on every kept row
  const std::vector<double> w = weigh(o, a, alphabet, loop, progress, log, s.warnings);
  s.cancelled = w.size() != a.M;
  if (s.cancelled) return s;  // nothing written
  const Split split = split_rows(a.M, o.test_fraction, rng);          // hold out rows for the test loss
  put_records(dataset, extras, o, a, alphabet, w, split, s.warnings);  // the dataset, marked as an alignment
  return s;
}

}  // namespace am::msa
