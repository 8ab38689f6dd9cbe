// Thin plugin entry of the estimator "replica" (the work is in replica_core, see run.cpp).
#include "params.h"
#include "replica.h"

#include <new>

namespace am_replica_plugin {
am_status describe(am_context *ctx, const am_record *results, am_record *report);
}  // namespace am_replica_plugin

namespace {

struct Instance {
  const am_host *host;
};

am_status create(const am_host *host, void **instance) {
  if (!host || !instance) return AM_ERR_INVALID_ARGUMENT;
  try {
    *instance = new Instance{host};
    return AM_OK;
  } catch (...) {
    return AM_ERR_NO_MEMORY;
  }
}

void destroy(void *instance) { delete static_cast<Instance *>(instance); }

am_status estimate(void *instance, const am_record * /*dataset: none needed*/, am_record *run) {
  if (!instance) return AM_ERR_INVALID_ARGUMENT;
  try {
    return replica::run(static_cast<Instance *>(instance)->host, run);
  } catch (...) {
    return AM_ERR_INTERNAL;
  }
}

constexpr am_plugin_desc kDesc = {
    AM_ABI_VERSION,
    sizeof(am_plugin_desc),
    AM_PLUGIN_ESTIMATOR,
    "replica",
    "0.1.0",
    "Replica learning curve of linear factored attention on Gaussian Potts data, with ridge simulations",
    replica::kParams,
    replica::kNumParams,
    AM_DATA_NONE,
    nullptr,
    create,
    destroy,
    nullptr,
    estimate,
    am_replica_plugin::describe,
};

}  // namespace

AM_PLUGIN_EXPORT const am_plugin_desc *am_plugin_entry(void) { return &kDesc; }
