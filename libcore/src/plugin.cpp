// attnmech — what a plugin is handed (plugin.h): the am_host of an instance, its services (a parallel loop on the
// host's threads, BLAS thread control) and its random stream. Part of the base library, which plugins link: the
// host library (registry, parameters, the run API) fills an am_host for each instance through am_host_fill.
#include "abi.hpp"
#include "internal.hpp"

#include "attnmech/plugin.h"

namespace {

am_status host_parallel_for(const am_host *h, size_t n, am_host_parallel_fn fn, void *user) {
  if (!h) return am_parallel_for(nullptr, n, fn, user);
  return am::parallel_for(h->ctx, h->threads > 0 ? h->threads : am_context_threads(h->ctx), n, fn, user);
}

}  // namespace

extern "C" {

void am_host_fill(am_host *h, size_t size, am_context *ctx, const am_record *params, uint64_t seed, uint64_t rng_stream,
                  int threads) {
  am_host v{};
  v.struct_size = sizeof v;
  v.ctx = ctx;
  v.params = params;
  v.seed = seed;
  v.rng_stream = rng_stream;
  v.threads = threads;
  v.parallel_for = host_parallel_for;
  v.blas_threads_set = am_blas_threads_set;
  am::init_struct(h, size, v);
}

void am_host_rng(const am_host *host, am_rng *out) {
  if (!out) return;
  am_rng_init(out, host ? host->seed : 0, host ? host->rng_stream : 0);
}

}  // extern "C"
