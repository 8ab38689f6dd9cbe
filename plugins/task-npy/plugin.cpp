// attnmech — task plugin "npy": the parameter table and the task class (C++ SDK, attnmech/plugin.hpp); the
// logic is in npy_core.
#include <attnmech/plugin.hpp>
#include <attnmech/report_spec.hpp>

#include "npy_core.h"

#include <string>

namespace {

struct Opt {
  std::string dir;
};

using am::sdk::param;
constexpr am::sdk::Param<Opt> kParams[] = {
    param<&Opt::dir>("dir", "",
                     "directory with X_train.npy [P,S,N0], y_train.npy [P], optional X_test.npy/y_test.npy, per head "
                     "W_l<l>_h<h>.npy [N0,N0] or Q_l<l>_h<h>.npy + K_l<l>_h<h>.npy [G,N0] (from 1), and model.json "
                     "{readout, heads, widths, variances, temperature, form?} (required; see docs/tasks.md)",
                     0, -1),
};

struct Npy : am::spec::DescribeTaskExtras {  // the report lists the extras
  am::sdk::Host host;
  Opt opt;
  Npy(const am::sdk::Host &h, const Opt &o) : host(h), opt(o) {
    if (opt.dir.empty())
      throw am::sdk::Error(AM_ERR_USAGE,
                           "npy: parameter 'dir' is required: the directory holding X_train.npy, y_train.npy, head "
                           "files and model.json (e.g. --set dir=/path/to/problem)");
  }
  am_status make_dataset(am_record *dataset, am_record *extras) {
    return am::npy_task::load_problem(host.ctx(), opt.dir.c_str(), dataset, extras);
  }
};

constexpr am_plugin_desc kDesc = am::sdk::task<Npy, kParams>(
    "npy", "1.0.0", "a user's attention problem from .npy files and model.json (interop with NumPy/PyTorch)",
    AM_DATA_ATTENTION, "theory");

}  // namespace

AM_PLUGIN_EXPORT const am_plugin_desc *am_plugin_entry(void) { return &kDesc; }
