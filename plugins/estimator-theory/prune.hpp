// attnmech — the theory estimator's pruning evaluation: a trained network found in the dataset (dataset.h key
// `network`, path form) evaluated on the test split with heads removed, no retraining — every single head,
// and cumulatively in the order of the run's head scores (increasing and decreasing) and in random orders.
#ifndef ATTNMECH_THEORY_PRUNE_HPP
#define ATTNMECH_THEORY_PRUNE_HPP

#include <attnmech/attnmech.h>

#include <cstddef>
#include <vector>

namespace am::theory_prune {

// Spearman rank correlation (average ranks for ties); NaN for fewer than 2 values or a constant input.
double spearman(const std::vector<double> &a, const std::vector<double> &b);

// Whether the dataset carries a trained network (network.path_weights) and a test split.
bool has_network(const am_record *dataset);

// Writes run.pruning{…} (docs/results-schema.md). `scores` (Σ_l H_l, layer 1 first; may be empty = no score
// orders) orders the cumulative pruning; `random_orders` orders are drawn from `rng`.
am_status prune(am_context *ctx, const am_record *dataset, const std::vector<double> &scores, size_t random_orders,
                am_rng rng, am_record *run);

}  // namespace am::theory_prune

#endif
