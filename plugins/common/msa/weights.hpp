// msa_core — plmc's sequence weights (docs/msa.md): w_s = 1 / #{t : identity(s, t) ≥ (1 − θ)·L}, t = s
// included, identity = the number of the L columns where s and t have the same state (gap = gap counts).
// θ = 0 turns the weights off (all 1). The count is over the distinct rows: identical rows are compared once.
// gap_identity=ignore (GapIdentity::ignore) leaves the columns where both rows have a gap out of the comparison.
#ifndef ATTNMECH_MSA_WEIGHTS_HPP
#define ATTNMECH_MSA_WEIGHTS_HPP

#include <attnmech/plugin.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace am::msa {

// Called between batches of pairs with (pairs of distinct rows compared, all such pairs); returning true stops the
// count (a cancel). The batches are sized to take about a quarter of a second each.
using Progress = std::function<bool(double done, double total)>;
// A line for the run log (the hint when the comparisons will take long).
using Log = std::function<void(const std::string &)>;

// The least identity count that makes two rows neighbours: plmc's test `id >= (1 - θ)·L` in double arithmetic.
size_t identity_threshold(double theta, size_t L);

// The distinct rows of tokens [M, L]: the first row of each (in row order), its number of copies, and each row's
// distinct row.
struct DistinctRows {
  std::vector<uint32_t> first, copies, class_of;
};
DistinctRows distinct_rows(const uint8_t *tokens, size_t M, size_t L);

// #{t : identity(s, t) ≥ threshold} for every row s of tokens [M, L] (row-major, one byte per state), itself
// included: the U·(U + 1)/2 pairs of the U distinct rows compared once each, rows split over `loop` (integer
// counts added atomically: the same on every thread count). `log` gets one line with the pairs, the time they will
// take at the rate of the first 50 ms of batches and the hint that theta=0 turns the weights off, when that time is
// over `log_after` seconds. Empty when `progress` asked to stop.
std::vector<uint32_t> neighbour_counts(const uint8_t *tokens, size_t M, size_t L, size_t threshold,
                                       const am::sdk::ParallelFor &loop, const Progress &progress = {},
                                       const Log &log = {}, double log_after = 10.0);

// neighbour_counts with the columns where both rows have the state `gap` left out (gap_identity=ignore): s and t
// are neighbours when they agree at ≥ (1 − θ)·n of the n columns where at least one of them is not a gap (plmc's
// double comparison on that n; a row is always its own neighbour, an all-gap row only of its copies).
std::vector<uint32_t> neighbour_counts_ignoring_gaps(const uint8_t *tokens, size_t M, size_t L, double theta,
                                                     uint8_t gap, const am::sdk::ParallelFor &loop,
                                                     const Progress &progress = {}, const Log &log = {},
                                                     double log_after = 10.0);

// Whether a gap matching a gap counts as identity: plmc (yes, plmc's rule and the default) or ignore (such columns
// are left out of the comparison, neighbour_counts_ignoring_gaps).
enum class GapIdentity { plmc, ignore };
struct WeightRule {
  double theta = 0.2;
  GapIdentity gaps = GapIdentity::plmc;
  int gap_state = -1;  // the gap's state (−1: none, then ignore is plmc's rule)
};

// w_s = 1 / neighbours(s) at θ ∈ (0, 1]; all 1 at θ = 0 (or θ not a number). Empty when `progress` asked to stop.
std::vector<double> cluster_weights(const uint8_t *tokens, size_t M, size_t L, const WeightRule &rule,
                                    const am::sdk::ParallelFor &loop, const Progress &progress = {},
                                    const Log &log = {}, double log_after = 10.0);
// The same with plmc's rule.
std::vector<double> cluster_weights(const uint8_t *tokens, size_t M, size_t L, double theta,
                                    const am::sdk::ParallelFor &loop, const Progress &progress = {},
                                    const Log &log = {}, double log_after = 10.0);

// Bytes neighbour_counts and cluster_weights hold at once for M rows of L sites of which `distinct` differ (M is an
// upper bound): the rows' classes and hash, the padded distinct rows, the counts and the weights.
double weights_bytes(size_t M, size_t L, size_t distinct);

}  // namespace am::msa

#endif
