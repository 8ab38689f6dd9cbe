// msa_core — plmc's sequence weights (docs/msa.md): w_s = 1 / #{t : identity(s, t) ≥ (1 − θ)·L}, t = s
// included, identity = the number of the L columns where s and t have the same state (gap = gap counts).
// θ = 0 turns the weights off (all 1).
#ifndef ATTNMECH_MSA_WEIGHTS_HPP
#define ATTNMECH_MSA_WEIGHTS_HPP

#include <attnmech/plugin.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace am::msa {

// Called between batches of rows with (rows done, M); returning true stops the count (a cancel).
using Progress = std::function<bool(size_t done, size_t total)>;

// The least identity count that makes two rows neighbours: plmc's test `id >= (1 - θ)·L` in double arithmetic.
size_t identity_threshold(double theta, size_t L);

// #{t : identity(s, t) ≥ threshold} for every row s of tokens [M, L] (row-major, one byte per state), itself
// included; rows split over `loop` (integer counts: the same on every thread count). Empty when `progress`
// asked to stop.
std::vector<uint32_t> neighbour_counts(const uint8_t *tokens, size_t M, size_t L, size_t threshold,
                                       const am::sdk::ParallelFor &loop, const Progress &progress = {});

// w_s = 1 / neighbours(s) at θ ∈ (0, 1]; all 1 at θ = 0 (or θ not a number). Empty when `progress` asked to stop.
std::vector<double> cluster_weights(const uint8_t *tokens, size_t M, size_t L, double theta,
                                    const am::sdk::ParallelFor &loop, const Progress &progress = {});

}  // namespace am::msa

#endif
