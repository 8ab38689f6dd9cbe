/* attnmech — one counter-based random number generator (Philox4x32-10).
 *
 * A stream is (key, stream id); its n-th block of four 32-bit words is a pure function of
 * (key, stream, n), so streams split without shared state: give every plugin, chain and thread its
 * own stream id and results do not depend on thread count or scheduling. The struct is a plain
 * value (copy it to fork a generator at its current position). */
#ifndef ATTNMECH_RNG_H
#define ATTNMECH_RNG_H

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct am_rng {
  uint64_t key;      /* from the seed */
  uint64_t stream;   /* stream id */
  uint64_t counter;  /* next block */
  uint32_t buf[4];
  uint32_t used;     /* words of buf consumed (4 = empty) */
  int has_spare;     /* Box–Muller spare normal */
  double spare;
} am_rng;

AM_API void am_rng_init(am_rng *r, uint64_t seed, uint64_t stream);
/* A child stream, independent of the parent and of children with other ids; the parent is unchanged. */
AM_API void am_rng_split(const am_rng *parent, uint64_t child_id, am_rng *child);
AM_API uint32_t am_rng_u32(am_rng *r);
AM_API uint64_t am_rng_u64(am_rng *r);
/* Uniform on [0, 1) with 53 random bits. */
AM_API double am_rng_uniform(am_rng *r);
/* Uniform integer in [0, n), unbiased; n > 0. */
AM_API uint64_t am_rng_below(am_rng *r, uint64_t n);
/* Standard normal. */
AM_API double am_rng_normal(am_rng *r);
AM_API void am_rng_fill_normal(am_rng *r, double *out, size_t n);

#ifdef __cplusplus
}
#endif
#endif
