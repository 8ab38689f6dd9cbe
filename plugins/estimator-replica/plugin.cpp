// Thin plugin entry of the estimator "replica": its parameter table (params.h) and descriptor on the SDK; the
// work is in replica_core (run.cpp).
#include "params.h"
#include "replica.h"

namespace am::replica_plugin {
am_status describe(const am_record *results, am_record *report);
}  // namespace am::replica_plugin

namespace {

struct Replica {
  am::sdk::Host host;
  am::replica::Options opt;
  Replica(const am::sdk::Host &h, const am::replica::Options &o) : host(h), opt(o) {}

  am_status estimate(const am_record * /*dataset: none needed*/, am_record *run) { return am::replica::run(host, opt, run); }
  static am_status describe(const am_record *results, am_record *report) {
    return am::replica_plugin::describe(results, report);
  }
};

constexpr am_plugin_desc kDesc = am::sdk::estimator<Replica, am::replica::kParams>(
    "replica", "0.1.0",
    "Replica learning curve of linear factored attention on Gaussian Potts data, with ridge simulations",
    AM_DATA_NONE);

}  // namespace

AM_PLUGIN_EXPORT const am_plugin_desc *am_plugin_entry(void) { return &kDesc; }
