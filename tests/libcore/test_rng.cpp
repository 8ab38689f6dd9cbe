// Philox4x32-10: published known-answer vectors, the stream scheme of rng.cpp, and statistics.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "internal.hpp"

namespace {

void check_block(const uint32_t ctr[4], const uint32_t key[2], const uint32_t expect[4]) {
  uint32_t out[4];
  am::philox4x32_10(ctr, key, out);
  for (int i = 0; i < 4; ++i) CHECK(out[i] == expect[i]);
}

struct moments {
  double mean = 0, var = 0;
};

moments sample_moments(const std::vector<double> &x) {
  moments m;
  for (double v : x) m.mean += v;
  m.mean /= static_cast<double>(x.size());
  for (double v : x) m.var += (v - m.mean) * (v - m.mean);
  m.var /= static_cast<double>(x.size() - 1);
  return m;
}

}  // namespace

// Random123 tests/kat_vectors (the brief quoted a20bc7c2 for the all-ones case; the published file has a20bc7c6).
TEST_CASE("Philox4x32-10 known-answer vectors (Random123 kat_vectors)") {
  {
    const uint32_t c[4] = {0, 0, 0, 0}, k[2] = {0, 0};
    const uint32_t e[4] = {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u};
    check_block(c, k, e);
  }
  {
    const uint32_t c[4] = {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, k[2] = {0xffffffffu, 0xffffffffu};
    const uint32_t e[4] = {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu};
    check_block(c, k, e);
  }
  {
    const uint32_t c[4] = {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, k[2] = {0xa4093822u, 0x299f31d0u};
    const uint32_t e[4] = {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u};
    check_block(c, k, e);
  }
}

TEST_CASE("splitmix64 matches the reference generator") {
  // Reference SplitMix64 (Steele, Lea, Flood 2014) seeded with 0: first outputs.
  CHECK(am::splitmix64(0) == 0xE220A8397B1DCDAFULL);
  CHECK(am::splitmix64(0x9E3779B97F4A7C15ULL) == 0x6E789E6AA1B965F4ULL);
}

TEST_CASE("stream layout: key from splitmix64(seed), counter = (block, stream)") {
  const uint64_t seed = 12345, stream = 0x0123456789abcdefULL;
  am_rng r;
  am_rng_init(&r, seed, stream);
  const uint64_t key = am::splitmix64(seed);
  const uint32_t k[2] = {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)};
  for (uint32_t block = 0; block < 3; ++block) {
    const uint32_t c[4] = {block, 0, static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32)};
    uint32_t out[4];
    am::philox4x32_10(c, k, out);
    for (int i = 0; i < 4; ++i) CHECK(am_rng_u32(&r) == out[i]);
  }
  // u64 = first word high, second word low
  am_rng a, b;
  am_rng_init(&a, 7, 1);
  am_rng_init(&b, 7, 1);
  uint64_t hi = am_rng_u32(&b), lo = am_rng_u32(&b);
  CHECK(am_rng_u64(&a) == ((hi << 32) | lo));
  // uniform = top 53 bits of u64
  am_rng_init(&a, 7, 1);
  am_rng_init(&b, 7, 1);
  double u = am_rng_uniform(&a);
  CHECK(u == static_cast<double>(am_rng_u64(&b) >> 11) / 9007199254740992.0);
}

TEST_CASE("split: documented hash, parent untouched, independent of the parent's position") {
  am_rng p;
  am_rng_init(&p, 99, 5);
  am_rng c1;
  am_rng_split(&p, 3, &c1);
  const uint64_t expect_key = am::splitmix64(am::splitmix64(am::splitmix64(p.key) ^ 5) ^ 3);
  CHECK(c1.key == expect_key);
  CHECK(c1.counter == 0);
  am_rng before = p;
  for (int i = 0; i < 11; ++i) am_rng_u32(&p);
  am_rng c2;
  am_rng_split(&p, 3, &c2);
  CHECK(c2.key == c1.key);
  CHECK(c2.stream == c1.stream);
  CHECK(am_rng_u64(&c1) == am_rng_u64(&c2));
  am_rng p2 = before;
  am_rng tmp;
  am_rng_split(&p2, 8, &tmp);
  CHECK(std::memcmp(&p2, &before, sizeof p2) == 0);
  // different ids, different parents' streams → different children
  am_rng d1, d2, q;
  am_rng_split(&before, 4, &d1);
  am_rng_init(&q, 99, 6);
  am_rng_split(&q, 3, &d2);
  CHECK(d1.key != c1.key);
  CHECK(d2.key != c1.key);
}

TEST_CASE("same seed same numbers; copy forks at the position") {
  am_rng a, b;
  am_rng_init(&a, 2024, 0);
  am_rng_init(&b, 2024, 0);
  for (int i = 0; i < 100; ++i) CHECK(am_rng_u32(&a) == am_rng_u32(&b));
  am_rng_normal(&a);  // leaves a spare
  am_rng c = a;
  CHECK(am_rng_normal(&a) == am_rng_normal(&c));
  CHECK(am_rng_uniform(&a) == am_rng_uniform(&c));
  am_rng d;
  am_rng_init(&d, 2024, 1);
  am_rng_init(&a, 2024, 0);
  int same = 0;
  for (int i = 0; i < 100; ++i) same += am_rng_u32(&a) == am_rng_u32(&d);
  CHECK(same < 3);  // P(one equal word) = 2^-32
}

TEST_CASE("uniform: range, mean and variance within 5 standard errors") {
  am_rng r;
  am_rng_init(&r, 1, 0);
  const size_t n = 400000;
  std::vector<double> x(n);
  size_t bad = 0;
  for (auto &v : x) {
    v = am_rng_uniform(&r);
    bad += !(v >= 0.0 && v < 1.0 && v * 9007199254740992.0 == std::floor(v * 9007199254740992.0));  // k·2^-53
  }
  CHECK(bad == 0);
  moments m = sample_moments(x);
  // SE(mean) = sqrt(1/12 / n); SE(var) = sqrt((E(U-1/2)^4 - 1/144)/n) = sqrt((1/80 - 1/144)/n)
  CHECK(std::fabs(m.mean - 0.5) < 5 * std::sqrt(1.0 / 12 / n));
  CHECK(std::fabs(m.var - 1.0 / 12) < 5 * std::sqrt((1.0 / 80 - 1.0 / 144) / n));
}

TEST_CASE("normal: mean, variance, kurtosis within 5 standard errors; fill_normal = repeated normal") {
  am_rng r;
  am_rng_init(&r, 77, 3);
  const size_t n = 400000;
  std::vector<double> x(n);
  am_rng_fill_normal(&r, x.data(), n);
  moments m = sample_moments(x);
  double m4 = 0;
  for (double v : x) m4 += v * v * v * v;
  m4 /= n;
  // SE(mean) = 1/sqrt(n); SE(var) = sqrt(2/n); SE(E x^4) = sqrt((E x^8 - 9)/n) = sqrt(96/n)
  CHECK(std::fabs(m.mean) < 5 / std::sqrt(double(n)));
  CHECK(std::fabs(m.var - 1) < 5 * std::sqrt(2.0 / n));
  CHECK(std::fabs(m4 - 3) < 5 * std::sqrt(96.0 / n));
  // tail: P(|x| > 3) = 0.0026998; binomial SE
  size_t tail = 0;
  for (double v : x) tail += std::fabs(v) > 3;
  const double p3 = 0.002699796063;
  CHECK(std::fabs(double(tail) / n - p3) < 5 * std::sqrt(p3 * (1 - p3) / n));

  am_rng a, b;
  am_rng_init(&a, 5, 5);
  am_rng_init(&b, 5, 5);
  std::vector<double> y(7);
  am_rng_fill_normal(&a, y.data(), y.size());
  for (double v : y) CHECK(v == am_rng_normal(&b));
}

TEST_CASE("below(n): range, uniform counts, unbiased for large n") {
  am_rng r;
  am_rng_init(&r, 3, 0);
  CHECK(am_rng_below(&r, 1) == 0);
  const uint64_t k = 7;
  const size_t n = 140000;
  std::vector<size_t> cnt(k, 0);
  for (size_t i = 0; i < n; ++i) {
    uint64_t v = am_rng_below(&r, k);
    REQUIRE(v < k);  // guards the index below
    cnt[v]++;
  }
  const double p = 1.0 / k;
  for (size_t c : cnt) CHECK(std::fabs(double(c) - n * p) < 5 * std::sqrt(n * p * (1 - p)));
  // n = 3·2^62: unbiased draws fall below 2^62 with probability 1/3 (x mod n would give 1/2).
  const uint64_t big = 3ULL << 62;
  const size_t m = 60000;
  size_t low = 0, out_of_range = 0;
  for (size_t i = 0; i < m; ++i) {
    uint64_t v = am_rng_below(&r, big);
    out_of_range += v >= big;
    low += v < (1ULL << 62);
  }
  CHECK(out_of_range == 0);
  CHECK(std::fabs(double(low) / m - 1.0 / 3) < 5 * std::sqrt((1.0 / 3) * (2.0 / 3) / m));
}

TEST_CASE("split streams are uncorrelated") {
  am_rng root;
  am_rng_init(&root, 42, 0);
  const int kids = 4;
  const size_t n = 100000;
  std::vector<std::vector<double>> x(kids, std::vector<double>(n));
  for (int c = 0; c < kids; ++c) {
    am_rng ch;
    am_rng_split(&root, static_cast<uint64_t>(c), &ch);
    am_rng_fill_normal(&ch, x[c].data(), n);
  }
  // also the parent stream itself and a grandchild
  std::vector<double> parent(n), grand(n);
  am_rng pr = root;
  am_rng_fill_normal(&pr, parent.data(), n);
  am_rng c0, g;
  am_rng_split(&root, 0, &c0);
  am_rng_split(&c0, 0, &g);
  am_rng_fill_normal(&g, grand.data(), n);
  x.push_back(parent);
  x.push_back(grand);
  // sample correlation of independent N(0,1) streams: SE = 1/sqrt(n)
  for (size_t a = 0; a < x.size(); ++a)
    for (size_t b = a + 1; b < x.size(); ++b) {
      double s = 0;
      for (size_t i = 0; i < n; ++i) s += x[a][i] * x[b][i];
      CHECK(std::fabs(s / n) < 5 / std::sqrt(double(n)));
    }
  // lag-1 autocorrelation within one stream
  double s = 0;
  for (size_t i = 1; i < n; ++i) s += x[0][i] * x[0][i - 1];
  CHECK(std::fabs(s / (n - 1)) < 5 / std::sqrt(double(n)));
}
