// msa_core — sequence weights by identity clustering. The M² row comparisons dominate (DHFR: 13 M pairs of
// 159 columns); each compares 32 bytes at a time into byte counters the compiler keeps in vector registers
// (a count per lane stays ≤ 255 by summing every 255 blocks), on rows padded with zeros to a multiple of 32.
#include "weights.hpp"

#include <algorithm>
#include <cmath>

namespace am::msa {

namespace {

constexpr size_t kLanes = 32;
constexpr size_t kBlocksPerFlush = 255;  // a lane's byte counter adds at most 1 per block
constexpr size_t kRowsPerBatch = 256;    // rows compared between two progress reports

// Equal bytes of a and b over n bytes (n a multiple of kLanes).
uint32_t equal_bytes(const uint8_t *a, const uint8_t *b, size_t n) {
  uint32_t total = 0;
  for (size_t start = 0; start < n; start += kLanes * kBlocksPerFlush) {
    const size_t end = std::min(n, start + kLanes * kBlocksPerFlush);
    uint8_t lane[kLanes] = {};
    for (size_t base = start; base < end; base += kLanes)
      for (size_t k = 0; k < kLanes; ++k) lane[k] = static_cast<uint8_t>(lane[k] + (a[base + k] == b[base + k]));
    for (size_t k = 0; k < kLanes; ++k) total += lane[k];
  }
  return total;
}

}  // namespace

size_t identity_threshold(double theta, size_t L) {
  const double x = (1.0 - theta) * static_cast<double>(L);
  if (!(x > 0)) return 0;                           // θ ≥ 1: every row is a neighbour
  if (x > static_cast<double>(L)) return L + 1;     // θ < 0: none, not even the row itself
  return static_cast<size_t>(std::ceil(x));
}

std::vector<uint32_t> neighbour_counts(const uint8_t *tokens, size_t M, size_t L, size_t threshold,
                                       const am::sdk::ParallelFor &loop, const Progress &progress) {
  const size_t stride = (L + kLanes - 1) / kLanes * kLanes, pad = stride - L;
  std::vector<uint8_t> rows(M * stride, 0);  // the padding is equal in every row: pad matches to take off
  for (size_t s = 0; s < M; ++s) std::copy(tokens + s * L, tokens + (s + 1) * L, rows.begin() + s * stride);
  std::vector<uint32_t> counts(M, 0);
  for (size_t first = 0; first < M; first += kRowsPerBatch) {  // batches: progress and a chance to cancel
    const size_t n = std::min(kRowsPerBatch, M - first);
    loop(n, [&](size_t begin, size_t end, int) {
      for (size_t s = first + begin; s < first + end; ++s) {
        const uint8_t *a = &rows[s * stride];
        uint32_t k = 0;
        for (size_t t = 0; t < M; ++t) k += equal_bytes(a, &rows[t * stride], stride) - pad >= threshold;
        counts[s] = k;
      }
    });
    if (progress && progress(first + n, M)) return {};
  }
  return counts;
}

std::vector<double> cluster_weights(const uint8_t *tokens, size_t M, size_t L, double theta,
                                    const am::sdk::ParallelFor &loop, const Progress &progress) {
  std::vector<double> w(M, 1.0);
  if (!(theta > 0)) return w;
  const std::vector<uint32_t> n =
      neighbour_counts(tokens, M, L, identity_threshold(std::min(theta, 1.0), L), loop, progress);
  if (n.size() != M) return {};
  for (size_t s = 0; s < M; ++s) w[s] = 1.0 / n[s];
  return w;
}

}  // namespace am::msa
