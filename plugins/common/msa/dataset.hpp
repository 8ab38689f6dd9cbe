// msa_core — the task `msa`'s dataset: an alignment file read, encoded, weighted and split into training and
// held-out rows, as the "sequence" dataset record the sequence estimators read (docs/msa.md lists the keys).
#ifndef ATTNMECH_MSA_DATASET_HPP
#define ATTNMECH_MSA_DATASET_HPP

#include <attnmech/plugin.hpp>
#include <attnmech/rng.h>

#include <string>
#include <vector>

#include "alignment.hpp"
#include "weights.hpp"

namespace am::msa {

struct Options {
  std::string file, focus, alphabet = "protein";
  double theta = 0.2;          // identity clustering: neighbours share ≥ (1 − θ)·L columns; 0 = no weights
  double test_fraction = 0.0;  // rows held out for a test loss; 0 = none (the default: every row fits, as plmc)
  std::string gap_identity = "plmc";  // plmc: a gap matching a gap is identity; ignore: such columns left out
  bool rf = true;              // honour a Stockholm "#=GC RF" line (its match columns only)
};

// The warnings of a dataset (docs/msa.md "Warnings"): the dataset key and extras key `warnings` (a list of strings),
// which the alignment fit copies into its run's `warnings` (the run's status is then "warning").
constexpr char kWarningsKey[] = "warnings";

// Neff collapse: when Neff < kCollapseNeffShare·M and more than kCollapseGapShare of the tokens are gaps, the
// weights are counted again with gap_identity=ignore; a warning when that gives at least kCollapseFactor·Neff.
constexpr double kCollapseNeffShare = 0.25, kCollapseGapShare = 0.5, kCollapseFactor = 2.0;

// Indices of the held-out rows among M (ascending): round(fraction·M) of them (at most M − 1), chosen
// uniformly by `rng`.
std::vector<size_t> held_out_rows(size_t M, double fraction, am_rng rng);

// What the plugin logs: the rows dropped (a few examples), the warnings (also in the records); whether the weights
// were cancelled (nothing written).
struct Summary {
  size_t M_read = 0, M_dropped = 0;
  std::vector<std::string> dropped_examples;
  bool cancelled = false;
  std::vector<std::string> warnings;
};

// Bytes the dataset's making holds at once for M rows of L sites, after the file's records are gone (the encoded
// alignment, the weights' work or the record with its int32 tokens and weights): checked against the memory budget
// before the weights.
double dataset_bytes(size_t M, size_t L);

// The dataset key that says "these rows are an alignment": `alignment`, true, written by the task msa
// (put_records) and read by the pseudolikelihood estimator to choose its alignment fit (docs/tasks.md).
constexpr char kAlignmentKey[] = "alignment";
// True when the dataset carries kAlignmentKey = true. (Inline: the estimator reads the key without linking the reader.)
inline bool is_alignment(const am_record *dataset) {
  const am_record *v = dataset ? am_record_get(dataset, kAlignmentKey) : nullptr;
  return v && am_record_type_of(v) == AM_REC_BOOL && am_record_bool(v);
}

// The warning of a collapsed Neff (kCollapse*), "" when there is none: `neff_ignore` is Neff with
// gap_identity=ignore, `gap_share` the share of gap tokens.
std::string neff_warning(size_t M, double theta, double neff, double neff_ignore, double gap_share);

// The first half of the alignment pipeline (pipeline.hpp), the task msa's: the file read, encoded, weighted and split,
// then `dataset` (kind "sequence": kAlignmentKey, tokens as int32, weights, alphabet, gap state, site numbers and
// their numbering, focus sequence, Neff, warnings) and `extras` (may be NULL; results.json's task_extras) filled. Throws am::sdk::Error for bad input
// (AM_ERR_NO_MEMORY when the reading or the dataset would not fit the memory budget). `rng` chooses the held-out
// rows; `loop` runs the weights' comparisons, which report to `progress` (true = stop: the records are left
// untouched, Summary::cancelled) and, when they will take long, a line to `log`.
Summary make_dataset(const Options &o, const am_rng &rng, const am::sdk::ParallelFor &loop, am_record *dataset,
                     am_record *extras, const Progress &progress = {}, const Log &log = {});

}  // namespace am::msa

#endif
