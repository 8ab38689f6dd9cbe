// attnmech — task plugin "npy": descriptor and C callbacks only; the logic is in npy_core.
#include <attnmech/report_spec.hpp>
#include "npy_core.h"

#include <new>


namespace {

struct Instance {
  const am_host *host;
  const char *dir;  // borrowed from host->params (alive until destroy)
};

const am_param_def kParams[] = {
    AM_PARAM("dir", AM_PARAM_STRING, "",
     "directory with X_train.npy [P,S,N0], y_train.npy [P], optional X_test.npy/y_test.npy, per head "
     "W_l<l>_h<h>.npy [N0,N0] or Q_l<l>_h<h>.npy + K_l<l>_h<h>.npy [G,N0] (from 1), and model.json "
     "{readout, heads, widths, variances, temperature, form?} (required; see docs/tasks.md)",
     0, -1, nullptr),
};

am_status create(const am_host *host, void **instance) {
  if (!host || !instance) return AM_ERR_INVALID_ARGUMENT;
  *instance = nullptr;
  const char *dir = nullptr;
  if (am_record_get_string(host->params, "dir", &dir) != AM_OK || !dir || !*dir)
    return am_context_fail(host->ctx, AM_ERR_USAGE,
                           "npy: parameter 'dir' is required: the directory holding X_train.npy, y_train.npy, head "
                           "files and model.json (e.g. --set dir=/path/to/problem)");
  Instance *in = new (std::nothrow) Instance{host, dir};
  if (!in) return am_context_fail(host->ctx, AM_ERR_NO_MEMORY, "npy: out of memory");
  *instance = in;
  return AM_OK;
}

void destroy(void *instance) { delete static_cast<Instance *>(instance); }

am_status make_dataset(void *instance, am_record *dataset, am_record *extras) {
  if (!instance) return AM_ERR_INVALID_ARGUMENT;
  const Instance *in = static_cast<const Instance *>(instance);
  return am_npy_task::load_problem(in->host->ctx, in->dir, dataset, extras);
}

const am_plugin_desc kDesc = {
    AM_ABI_VERSION,
    sizeof(am_plugin_desc),
    AM_PLUGIN_TASK,
    "npy",
    "1.0.0",
    "a user's attention problem from .npy files and model.json (interop with NumPy/PyTorch)",
    kParams,
    sizeof(kParams) / sizeof(kParams[0]),
    AM_DATA_ATTENTION,
    "theory",
    create,
    destroy,
    make_dataset,
    nullptr,
    am_spec::describe_task_extras,
};

}  // namespace

AM_PLUGIN_EXPORT const am_plugin_desc *am_plugin_entry(void) { return &kDesc; }
