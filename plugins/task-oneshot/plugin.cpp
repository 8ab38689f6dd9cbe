// attnmech — task plugin "oneshot": descriptor and C callbacks only; the logic is in oneshot_core.
#include "oneshot_core.h"

#include <new>

#include "../common/plugin_glue.hpp"

namespace am_oneshot_plugin {
am_status describe(am_context *ctx, const am_record *results, am_record *report);
}  // namespace am_oneshot_plugin

namespace {

constexpr char kName[] = "oneshot";
using Opt = oneshot::Options;

const am_param_def kParams[] = {
    AM_PARAM("source", AM_PARAM_STRING, "hershey",
     "images: hershey (rendered Hershey glyphs, Debian hershey-fonts-data), fashion-mnist, omniglot:PATH "
     "(<alphabet>/<character>/<drawing>.png, optionally under images_background/ and images_evaluation/) or "
     "idx:DIR (MNIST-like IDX files)",
     0, -1, nullptr),
    AM_PARAM("ood", AM_PARAM_STRING, "auto",
     "out-of-distribution test episodes: auto (fashion-mnist if installed), none, fashion-mnist, hershey, idx:DIR "
     "(classes 0 vs 1)",
     0, -1, nullptr),
    AM_PARAM("hershey_dir", AM_PARAM_STRING, "/usr/share/hershey-fonts", "directory of the Hershey .jhf fonts", 0, -1, nullptr),
    AM_PARAM("fashion_dir", AM_PARAM_STRING, "/usr/share/datasets/fashion-mnist",
     "directory of the Fashion-MNIST IDX files (Debian dataset-fashion-mnist)", 0, -1, nullptr),
    AM_PARAM("cache", AM_PARAM_STRING, "",
     "cache directory for rendered glyphs and trained models; empty = $XDG_CACHE_HOME/attnmech (~/.cache/attnmech); "
     "none = no cache",
     0, -1, nullptr),
    AM_PARAM("drawers", AM_PARAM_INT, "20", "random drawings per Hershey character", 2, 10000, nullptr),
    AM_PARAM("P", AM_PARAM_INT, "600", "training episodes of the theory (half with target +1)", 2, 1e7, nullptr),
    AM_PARAM("P_val", AM_PARAM_INT, "400", "validation episodes (held-out background classes) for selecting T", 2, 1e7,
     nullptr),
    AM_PARAM("P_test", AM_PARAM_INT, "1000", "test episodes (evaluation classes) and OOD episodes", 2, 1e7, nullptr),
    AM_PARAM("val_class_fraction", AM_PARAM_REAL, "0.15",
     "fraction of the background classes held out (never trained on) for the validation episodes", 0.01, 0.9,
     nullptr),
    AM_PARAM("L", AM_PARAM_INT, "2", "attention layers of the GD network", 1, 4, nullptr),
    AM_PARAM("H", AM_PARAM_INT, "4", "summed heads per layer", 1, 64, nullptr),
    AM_PARAM("G", AM_PARAM_INT, "32", "query/key dimension (reference: 128; see docs/oneshot.md)", 1, 4096, nullptr),
    AM_PARAM("gd_width", AM_PARAM_INT, "128", "value width of the GD network (all layers)", 1, 65536, nullptr),
    AM_PARAM("steps", AM_PARAM_INT, "2000", "Adam steps of the GD training (fresh random episodes every step)", 0, 1e8,
     nullptr),
    AM_PARAM("batch", AM_PARAM_INT, "64", "episodes per Adam step", 1, 1e6, nullptr),
    AM_PARAM("lr", AM_PARAM_REAL, "2e-3", "Adam learning rate", 1e-12, 10, nullptr),
    AM_PARAM("weight_decay", AM_PARAM_REAL, "5e-5", "weight decay added to the gradient (torch.optim.Adam)", 0, 10, nullptr),
    AM_PARAM("widths_scan", AM_PARAM_INT_LIST, "10,100,1000,10000",
     "widths N of the estimator runs (dataset key widths_scan; the dataset's own widths use the first)", 1, 1e12,
     nullptr),
    AM_PARAM("temperatures", AM_PARAM_REAL_LIST, "0.01,0.025,0.05,0.075,0.1,0.25,0.5,0.75,1,1.5",
     "temperature grid of the study (dataset key temperatures_scan): the theory estimator solves at every T and "
     "selects T on the validation split",
     1e-12, 1e12, nullptr),
    AM_PARAM("temperature", AM_PARAM_REAL, "0.5",
     "the dataset's temperature, used by estimators that do not scan temperatures (e.g. posterior)", 1e-12, 1e12,
     nullptr),
};

am_status parse(const am_host *h, Opt *o) { return oneshot::options_from_params(h->ctx, h->params, o); }

am_status make_dataset(void *instance, am_record *dataset, am_record *extras) {
  if (!instance) return AM_ERR_INVALID_ARGUMENT;
  const auto *in = am_glue::get<Opt>(instance);
  am_rng rng;
  am_host_rng(in->host, &rng);
  return oneshot::make_dataset(in->host->ctx, in->opt, rng, in->host->threads, dataset, extras);
}

const am_plugin_desc kDesc = {
    AM_ABI_VERSION,
    sizeof(am_plugin_desc),
    AM_PLUGIN_TASK,
    "oneshot",
    "1.0.0",
    "in-context 2-way 1-shot image classification with GD-trained query/key heads: train/validation/test/OOD "
    "episodes and the trained network (attention-paths spec section 7)",
    kParams,
    sizeof(kParams) / sizeof(kParams[0]),
    AM_DATA_ATTENTION,
    "theory",
    am_glue::create<Opt, parse, kName>,
    am_glue::destroy<Opt>,
    make_dataset,
    nullptr,
    am_oneshot_plugin::describe,
};

}  // namespace

AM_PLUGIN_EXPORT const am_plugin_desc *am_plugin_entry(void) { return &kDesc; }
