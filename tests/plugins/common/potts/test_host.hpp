// tests/plugins/common/potts — the parallel loop a plugin gets from its host (am_host_init: libcore's loop on a
// context's threads), for the library calls that take an am::potts::ParallelFor.
#ifndef ATTNMECH_TESTS_POTTS_TEST_HOST_HPP
#define ATTNMECH_TESTS_POTTS_TEST_HOST_HPP

#include <attnmech/plugin.hpp>
#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "potts_model.h"

namespace potts_test {

// A Potts model of the paper's kind: J from the Sinkhorn construction, U Gaussian, both drawn from `seed`.
inline am::potts::Model sinkhorn_model(int L, int C, double beta, uint64_t seed) {
  am_rng rng;
  am_rng_init(&rng, seed, 0);
  am::potts::Model m;
  m.L = L;
  m.C = C;
  m.beta = beta;
  am::potts::make_J_sinkhorn(L, &rng, m.J);
  am::potts::make_U_gaussian(C, &rng, m.U);
  return m;
}

// A context on `threads` threads and a host on it.
struct ThreadedHost {
  am_context *ctx = nullptr;
  am_host host{};
  explicit ThreadedHost(int threads) {
    am_context_settings s;
    am_context_default_settings(&s);
    s.threads = threads;
    am_context_create(&ctx, &s);
    am_host_init(&host, ctx, nullptr, 0, 0, threads);
  }
  ~ThreadedHost() { am_context_destroy(&ctx); }
  ThreadedHost(const ThreadedHost &) = delete;
  ThreadedHost &operator=(const ThreadedHost &) = delete;
};

// The host's parallel loop on `threads` threads (the host lives as long as the returned function).
inline am::potts::ParallelFor host_threads(int threads) {
  auto h = std::make_shared<ThreadedHost>(threads);
  return [h](size_t n, const am::sdk::ChunkFn &f) { am::sdk::Host(&h->host).loop()(n, f); };
}

// M sequences of m by Gibbs sampling from stream `seed` (`burnin` sweeps first), on the host's loop of 2 threads.
inline std::vector<int32_t> draw(const am::potts::Model &m, size_t M, uint64_t seed, int burnin = 100) {
  am_rng rng;
  am_rng_init(&rng, seed, 0);
  am::potts::SampleOptions o;
  o.burnin = burnin;
  o.parallel = host_threads(2);
  std::vector<int32_t> t;
  REQUIRE(am::potts::sample(nullptr, m, M, o, rng, t) == AM_OK);
  return t;
}

}  // namespace potts_test

#endif
