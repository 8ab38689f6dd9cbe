// attnmech — C++ helpers for hosts (the CLI, tools, tests, a program that runs plugins): the registry and the run
// API of libattnmech (registry.h, run.h) as RAII handles and vectors. Header-only over the C API; plugins never need
// it (they link the base library only: plugin.hpp).
#ifndef ATTNMECH_HOST_HPP
#define ATTNMECH_HOST_HPP

#include "attnmech.h"
#include "plugin.hpp"

#include <string>
#include <vector>

namespace am {
namespace sdk {

using Registry = Handle<am_registry, am_registry_destroy>;
using RunSpec = Handle<am_run_spec, am_run_spec_destroy>;

// ------------------------------------------------------------------ the registry, seen from a C++ host

// The registry's contents as vectors (registry.h's *_info getters in a loop); for hosts, tests and tools.
inline am_registry_summary registry_summary(const am_registry *r) {
  am_registry_summary s{};
  s.struct_size = sizeof s;
  am_registry_info(r, &s);
  return s;
}
namespace detail {
// Entries 0..n-1 of one of the registry's *_info getters, each with its struct_size set.
template <class Info, am_status (*Get)(const am_registry *, size_t, Info *)>
std::vector<Info> registry_list(const am_registry *r, size_t n) {
  std::vector<Info> out(n);
  for (size_t i = 0; i < n; ++i) {
    out[i].struct_size = sizeof out[i];
    Get(r, i, &out[i]);
  }
  return out;
}
}  // namespace detail
inline std::vector<am_plugin_info> registry_plugins(const am_registry *r) {
  return detail::registry_list<am_plugin_info, am_registry_plugin_info>(r, registry_summary(r).plugins);
}
inline std::vector<am_search_dir_info> registry_search_dirs(const am_registry *r) {
  return detail::registry_list<am_search_dir_info, am_registry_search_dir_info>(r, registry_summary(r).search_dirs);
}
inline std::vector<std::string> registry_report(const am_registry *r) {
  std::vector<std::string> out;
  for (size_t i = 0; const char *line = am_registry_report_line(r, i); ++i) out.emplace_back(line);
  return out;
}

}  // namespace sdk
}  // namespace am

#endif
