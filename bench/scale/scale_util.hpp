// attnmech bench/scale — what both scale benchmarks measure with: process CPU time, peak RSS, and reproducible
// Gaussian inputs (Box–Muller on a fixed-seed mt19937_64, so every build and rank draws the same numbers).
#pragma once
#include <sys/resource.h>

#include <cmath>
#include <cstdint>
#include <ctime>
#include <random>
#include <vector>

namespace scale_bench {

inline double cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

inline double peak_rss_mb() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (double)u.ru_maxrss / 1024.0;
}

inline std::vector<double> gaussian(size_t n, uint64_t seed, double scale) {
  std::mt19937_64 g(seed);
  std::vector<double> v(n);
  for (auto &x : v) {
    const double u = ((double)(g() >> 11) + 0.5) * 0x1.0p-53, w = (double)(g() >> 11) * 0x1.0p-53;
    x = scale * std::sqrt(-2 * std::log(u)) * std::cos(6.283185307179586 * w);
  }
  return v;
}

// ±1 labels of a teacher reading the first two paths of ξ (P × N0·H, column-major), so Newton takes several steps.
inline std::vector<double> teacher_labels(const std::vector<double> &xi, size_t P, size_t N0) {
  const auto w = gaussian(2 * N0, 8, 1.0);
  std::vector<double> y(P);
  for (size_t mu = 0; mu < P; ++mu) {
    double f = 0;
    for (size_t c = 0; c < N0; ++c) f += 3.0 * xi[mu + P * c] * w[c] - xi[mu + P * (N0 + c)] * w[N0 + c];
    y[mu] = f >= 0 ? 1.0 : -1.0;
  }
  return y;
}

}  // namespace scale_bench
