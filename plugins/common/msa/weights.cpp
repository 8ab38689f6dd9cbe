// msa_core — sequence weights by identity clustering. A row's count depends only on which rows are identical to it
// and how many copies each has, so the rows are first made distinct (a hash of their bytes; U distinct rows with
// their multiplicities) and the U·(U + 1)/2 pairs of distinct rows are compared once each (the pair's match adds each
// row's multiplicity to the other's count). Each comparison is 32 bytes at a time into byte counters the compiler
// keeps in vector registers (a count per lane stays ≤ 255 by summing every 255 blocks), on rows padded with zeros to
// a multiple of 32. The pairs go in batches sized to take about a quarter of a second, each followed by a progress
// report (pairs done of all pairs: an honest rate for an ETA) that may cancel; the counts are integers added
// atomically, so every split and thread count gives the same weights.
#include "weights.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

namespace am::msa {

namespace {

constexpr size_t kLanes = 32;
constexpr size_t kBlocksPerFlush = 255;  // a lane's byte counter adds at most 1 per block
constexpr double kBatchSeconds = 0.25;   // target time between two progress reports

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

// Over n bytes (a multiple of kLanes): the equal bytes of a and b, and the bytes where both are `gap`.
void equal_and_both_gap(const uint8_t *a, const uint8_t *b, size_t n, uint8_t gap, uint32_t *equal,
                        uint32_t *both_gap) {
  uint32_t eq = 0, bg = 0;
  for (size_t start = 0; start < n; start += kLanes * kBlocksPerFlush) {
    const size_t end = std::min(n, start + kLanes * kBlocksPerFlush);
    uint8_t lane_eq[kLanes] = {}, lane_bg[kLanes] = {};
    for (size_t base = start; base < end; base += kLanes)
      for (size_t k = 0; k < kLanes; ++k) {
        const uint8_t x = a[base + k], y = b[base + k];
        lane_eq[k] = static_cast<uint8_t>(lane_eq[k] + (x == y));
        lane_bg[k] = static_cast<uint8_t>(lane_bg[k] + ((x == gap) & (y == gap)));
      }
    for (size_t k = 0; k < kLanes; ++k) eq += lane_eq[k], bg += lane_bg[k];
  }
  *equal = eq;
  *both_gap = bg;
}

uint64_t hash_row(const uint8_t *p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h ^ (h >> 29);
}

std::string duration_text(double s) {
  char buf[48];
  if (s < 90) std::snprintf(buf, sizeof buf, "%.0f s", s);
  else if (s < 5400) std::snprintf(buf, sizeof buf, "%.0f min", s / 60);
  else std::snprintf(buf, sizeof buf, "%.1f h", s / 3600);
  return buf;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

DistinctRows distinct_rows(const uint8_t *tokens, size_t M, size_t L) {
  DistinctRows d;
  d.class_of.resize(M);
  size_t cap = 16;
  while (cap < 2 * M) cap *= 2;
  std::vector<uint32_t> slots(cap, 0);  // distinct index + 1, open addressing
  for (size_t s = 0; s < M; ++s) {
    const uint8_t *row = tokens + s * L;
    size_t h = static_cast<size_t>(hash_row(row, L)) & (cap - 1);
    for (;; h = (h + 1) & (cap - 1)) {
      if (slots[h] == 0) {
        slots[h] = static_cast<uint32_t>(d.first.size() + 1);
        d.class_of[s] = static_cast<uint32_t>(d.first.size());
        d.first.push_back(static_cast<uint32_t>(s));
        d.copies.push_back(1);
        break;
      }
      const uint32_t u = slots[h] - 1;
      if (std::equal(row, row + L, tokens + size_t(d.first[u]) * L)) {
        d.class_of[s] = u;
        ++d.copies[u];
        break;
      }
    }
  }
  return d;
}

size_t identity_threshold(double theta, size_t L) {
  const double x = (1.0 - theta) * static_cast<double>(L);
  if (!(x > 0)) return 0;                           // θ ≥ 1: every row is a neighbour
  if (x > static_cast<double>(L)) return L + 1;     // θ < 0: none, not even the row itself
  return static_cast<size_t>(std::ceil(x));
}

double weights_bytes(size_t M, size_t L, size_t distinct) {
  const size_t stride = (L + kLanes - 1) / kLanes * kLanes;
  size_t cap = 16;
  while (cap < 2 * M) cap *= 2;
  // class_of, the hash's slots, first + copies + counts per distinct row, the padded distinct rows, the counts per
  // row and the weights
  return 4.0 * double(M) + 4.0 * double(cap) + 12.0 * double(distinct) + double(distinct) * double(stride) +
         4.0 * double(M) + 8.0 * double(M);
}

namespace {

// #{t : near(row s, row t)} for every row s: the pairs of distinct rows compared once each in timed batches (see
// neighbour_counts). near(a, b, stride, pad) compares two rows (a row with itself too) padded with `pad` zeros to
// `stride` bytes.
template <class Near>
std::vector<uint32_t> count_neighbours(const uint8_t *tokens, size_t M, size_t L, const Near &near,
                                       const am::sdk::ParallelFor &loop, const Progress &progress, const Log &log,
                                       double log_after) {
  const DistinctRows d = distinct_rows(tokens, M, L);
  const size_t U = d.first.size();
  const size_t stride = (L + kLanes - 1) / kLanes * kLanes, pad = stride - L;
  std::vector<uint8_t> rows(U * stride, 0);  // the padding is equal in every row: pad matches to take off
  for (size_t u = 0; u < U; ++u)
    std::copy(tokens + size_t(d.first[u]) * L, tokens + (size_t(d.first[u]) + 1) * L, rows.begin() + u * stride);
  std::vector<uint32_t> cnt(U, 0);
  const double total = 0.5 * double(U) * double(U + 1);
  double done = 0, target = 1 << 20;  // pairs per batch: adapted to take kBatchSeconds
  bool told = false;
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t u0 = 0; u0 < U;) {
    size_t u1 = u0;
    double pairs = 0;
    while (u1 < U && (pairs == 0 || pairs + double(U - u1) <= target)) pairs += double(U - u1++);
    const auto tb = std::chrono::steady_clock::now();
    loop(u1 - u0, [&](size_t begin, size_t end, int) {
      for (size_t u = u0 + begin; u < u0 + end; ++u) {
        const uint8_t *a = &rows[u * stride];
        uint32_t own = 0;
        for (size_t v = u; v < U; ++v) {
          if (!near(a, &rows[v * stride], stride, pad)) continue;
          own += d.copies[v];
          if (v != u) __atomic_fetch_add(&cnt[v], d.copies[u], __ATOMIC_RELAXED);
        }
        __atomic_fetch_add(&cnt[u], own, __ATOMIC_RELAXED);
      }
    });
    done += pairs;
    u0 = u1;
    const double batch = seconds_since(tb), so_far = seconds_since(t0);
    target = std::clamp(pairs * kBatchSeconds / std::max(batch, 1e-4), 1024.0, 4.0 * target);
    if (log && !told && so_far > 0.05 && u0 < U) {
      const double eta = so_far * (total - done) / done;
      if (eta > log_after) {
        char buf[400];
        std::snprintf(buf, sizeof buf,
                      "sequence weights: %zu rows (%zu distinct) of %zu sites: %.3g pairs of rows to compare, about %s "
                      "more at the rate so far (theta=0 turns the weights off: every weight 1)",
                      M, U, L, total, duration_text(eta).c_str());
        log(buf);
      }
      told = true;
    }
    if (progress && progress(done, total)) return {};
  }
  std::vector<uint32_t> out(M);
  for (size_t s = 0; s < M; ++s) out[s] = cnt[d.class_of[s]];
  return out;
}

}  // namespace

std::vector<uint32_t> neighbour_counts(const uint8_t *tokens, size_t M, size_t L, size_t threshold,
                                       const am::sdk::ParallelFor &loop, const Progress &progress, const Log &log,
                                       double log_after) {
  const auto near = [threshold](const uint8_t *a, const uint8_t *b, size_t stride, size_t pad) {
    return equal_bytes(a, b, stride) - pad >= threshold;
  };
  return count_neighbours(tokens, M, L, near, loop, progress, log, log_after);
}

std::vector<uint32_t> neighbour_counts_ignoring_gaps(const uint8_t *tokens, size_t M, size_t L, double theta,
                                                     uint8_t gap, const am::sdk::ParallelFor &loop,
                                                     const Progress &progress, const Log &log, double log_after) {
  const double share = 1.0 - theta;
  const auto near = [share, gap, L](const uint8_t *a, const uint8_t *b, size_t stride, size_t pad) {
    uint32_t equal = 0, both_gap = 0;
    equal_and_both_gap(a, b, stride, gap, &equal, &both_gap);
    const size_t pad_gaps = gap == 0 ? pad : 0;                // the zero padding reads as gaps when the gap is 0
    const size_t both = both_gap - pad_gaps, n = L - both;     // columns where at least one row has a residue
    const size_t agree = equal - pad - both;                   // ... and both rows have the same residue
    return static_cast<double>(agree) >= share * static_cast<double>(n);
  };
  return count_neighbours(tokens, M, L, near, loop, progress, log, log_after);
}

std::vector<double> cluster_weights(const uint8_t *tokens, size_t M, size_t L, const WeightRule &rule,
                                    const am::sdk::ParallelFor &loop, const Progress &progress, const Log &log,
                                    double log_after) {
  std::vector<double> w(M, 1.0);
  const double theta = rule.theta;
  if (!(theta > 0)) return w;
  const bool ignore = rule.gaps == GapIdentity::ignore && rule.gap_state >= 0 && rule.gap_state < 256;
  const std::vector<uint32_t> n =
      ignore ? neighbour_counts_ignoring_gaps(tokens, M, L, std::min(theta, 1.0), static_cast<uint8_t>(rule.gap_state),
                                              loop, progress, log, log_after)
             : neighbour_counts(tokens, M, L, identity_threshold(std::min(theta, 1.0), L), loop, progress, log,
                                log_after);
  if (n.size() != M) return {};
  for (size_t s = 0; s < M; ++s) w[s] = 1.0 / n[s];
  return w;
}

std::vector<double> cluster_weights(const uint8_t *tokens, size_t M, size_t L, double theta,
                                    const am::sdk::ParallelFor &loop, const Progress &progress, const Log &log,
                                    double log_after) {
  WeightRule rule;
  rule.theta = theta;
  return cluster_weights(tokens, M, L, rule, loop, progress, log, log_after);
}

}  // namespace am::msa
