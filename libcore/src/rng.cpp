// attnmech — Philox4x32-10 counter-based random numbers (Salmon et al., SC'11).
//
// Scheme (fixed: changing it changes every seeded result of the project):
//   key      = splitmix64(seed)                       → Philox key words (k0, k1) = (low 32, high 32)
//   counter  = (n_lo, n_hi, stream_lo, stream_hi)     n = block index, stream = stream id
//   block n of stream s = Philox4x32-10(counter, key); words are consumed buf[0], buf[1], buf[2], buf[3].
//   am_rng_split(parent, id): child.key = splitmix64(splitmix64(splitmix64(parent.key) ^ parent.stream) ^ id),
//                             child.stream = id, counter 0. The parent's position does not matter, so a
//                             child depends only on (parent key, parent stream, id).
//   splitmix64(x) = the SplitMix64 output for state x: z = x + 0x9E3779B97F4A7C15, then the
//                   (30, 27, 31) xor-shift-multiply finaliser.
//   u64 = (first u32 << 32) | second u32; uniform = (u64 >> 11)·2⁻⁵³; below(n): Lemire's multiply-shift
//   with rejection (unbiased); normal: Box–Muller, the second value kept as the spare.
#include "internal.hpp"

#include <cmath>

namespace am {

uint64_t splitmix64(uint64_t x) {
  uint64_t z = x + 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

void philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  const uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u;
  const uint32_t W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;
  uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
  uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += W0;
      k1 += W1;
    }
    const uint64_t p0 = static_cast<uint64_t>(M0) * c0;
    const uint64_t p1 = static_cast<uint64_t>(M1) * c2;
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

}  // namespace am

namespace {

// 64×64 → 128-bit product (hi, lo), portable.
inline void mul64(uint64_t a, uint64_t b, uint64_t *hi, uint64_t *lo) {
  const uint64_t a0 = a & 0xffffffffu, a1 = a >> 32, b0 = b & 0xffffffffu, b1 = b >> 32;
  const uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  const uint64_t mid = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);
  *lo = (mid << 32) | (p00 & 0xffffffffu);
  *hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}

void refill(am_rng *r) {
  const uint32_t ctr[4] = {static_cast<uint32_t>(r->counter), static_cast<uint32_t>(r->counter >> 32),
                           static_cast<uint32_t>(r->stream), static_cast<uint32_t>(r->stream >> 32)};
  const uint32_t key[2] = {static_cast<uint32_t>(r->key), static_cast<uint32_t>(r->key >> 32)};
  am::philox4x32_10(ctr, key, r->buf);
  r->counter += 1;
  r->used = 0;
}

}  // namespace

extern "C" {

void am_rng_init(am_rng *r, uint64_t seed, uint64_t stream) {
  if (!r) return;
  r->key = am::splitmix64(seed);
  r->stream = stream;
  r->counter = 0;
  r->buf[0] = r->buf[1] = r->buf[2] = r->buf[3] = 0;
  r->used = 4;
  r->has_spare = 0;
  r->spare = 0.0;
}

void am_rng_split(const am_rng *parent, uint64_t child_id, am_rng *child) {
  if (!parent || !child) return;
  const uint64_t key = am::splitmix64(am::splitmix64(am::splitmix64(parent->key) ^ parent->stream) ^ child_id);
  child->key = key;
  child->stream = child_id;
  child->counter = 0;
  child->buf[0] = child->buf[1] = child->buf[2] = child->buf[3] = 0;
  child->used = 4;
  child->has_spare = 0;
  child->spare = 0.0;
}

uint32_t am_rng_u32(am_rng *r) {
  if (r->used >= 4) refill(r);
  return r->buf[r->used++];
}

uint64_t am_rng_u64(am_rng *r) {
  const uint64_t hi = am_rng_u32(r);
  const uint64_t lo = am_rng_u32(r);
  return (hi << 32) | lo;
}

double am_rng_uniform(am_rng *r) { return static_cast<double>(am_rng_u64(r) >> 11) * 0x1.0p-53; }

uint64_t am_rng_below(am_rng *r, uint64_t n) {
  if (n <= 1) return 0;
  // Lemire (2019), "Fast random integer generation in an interval".
  uint64_t hi = 0, lo = 0;
  mul64(am_rng_u64(r), n, &hi, &lo);
  if (lo < n) {
    const uint64_t t = (0 - n) % n;
    while (lo < t) mul64(am_rng_u64(r), n, &hi, &lo);
  }
  return hi;
}

double am_rng_normal(am_rng *r) {
  if (r->has_spare) {
    r->has_spare = 0;
    return r->spare;
  }
  const double u1 = 1.0 - am_rng_uniform(r);  // (0, 1]: log is finite
  const double u2 = am_rng_uniform(r);
  const double rad = std::sqrt(-2.0 * std::log(u1));
  const double th = 6.283185307179586476925286766559 * u2;
  r->spare = rad * std::sin(th);
  r->has_spare = 1;
  return rad * std::cos(th);
}

void am_rng_fill_normal(am_rng *r, double *out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = am_rng_normal(r);
}

}  // extern "C"
