// attnmech — task plugin "oneshot": the parameter table bound to am::oneshot::Options and the task class (C++ SDK,
// attnmech/plugin.hpp); the logic is in oneshot_core, the report spec in describe.cpp.
#include <attnmech/plugin.hpp>

#include "oneshot_core.h"

namespace am::oneshot_plugin {
am_status describe(am_context *ctx, const am_record *results, am_record *report);
}  // namespace am::oneshot_plugin

namespace {

using Opt = am::oneshot::Options;
using am::oneshot::ModelShape;
using am::oneshot::TrainSettings;
using am::sdk::param;

constexpr am::sdk::Param<Opt> kParams[] = {
    param<&Opt::source>("source", "hershey",
                        "images: hershey (rendered Hershey glyphs, Debian hershey-fonts-data), fashion-mnist, "
                        "omniglot:PATH (<alphabet>/<character>/<drawing>.png, optionally under images_background/ "
                        "and images_evaluation/) or idx:DIR (MNIST-like IDX files)",
                        0, -1),
    param<&Opt::ood>("ood", "auto",
                     "out-of-distribution test episodes: auto (fashion-mnist if installed), none, fashion-mnist, "
                     "hershey, idx:DIR (classes 0 vs 1)",
                     0, -1),
    param<&Opt::hershey_dir>("hershey_dir", "/usr/share/hershey-fonts", "directory of the Hershey .jhf fonts", 0, -1),
    param<&Opt::fashion_dir>("fashion_dir", "/usr/share/datasets/fashion-mnist",
                             "directory of the Fashion-MNIST IDX files (Debian dataset-fashion-mnist)", 0, -1),
    param<&Opt::cache>("cache", "",
                       "cache directory for rendered glyphs and trained models; empty = $XDG_CACHE_HOME/attnmech "
                       "(~/.cache/attnmech); none = no cache",
                       0, -1),
    param<&Opt::drawers>("drawers", "20", "random drawings per Hershey character", 2, 10000),
    param<&Opt::P>("P", "600", "training episodes of the theory (half with target +1)", 2, 1e7),
    param<&Opt::P_val>("P_val", "400", "validation episodes (held-out background classes) for selecting T", 2, 1e7),
    param<&Opt::P_test>("P_test", "1000", "test episodes (evaluation classes) and OOD episodes", 2, 1e7),
    param<&Opt::val_class_fraction>(
        "val_class_fraction", "0.15",
        "fraction of the background classes held out (never trained on) for the validation episodes", 0.01, 0.9),
    param<&Opt::shape, &ModelShape::L>("L", "2", "attention layers of the GD network", 1, 4),
    param<&Opt::shape, &ModelShape::H>("H", "4", "summed heads per layer", 1, 64),
    param<&Opt::shape, &ModelShape::G>("G", "32", "query/key dimension (reference: 128; see docs/oneshot.md)", 1,
                                       4096),
    param<&Opt::shape, &ModelShape::W>("gd_width", "128", "value width of the GD network (all layers)", 1, 65536),
    param<&Opt::train, &TrainSettings::steps>("steps", "2000",
                                              "Adam steps of the GD training (fresh random episodes every step)", 0,
                                              1e8),
    param<&Opt::train, &TrainSettings::batch>("batch", "64", "episodes per Adam step", 1, 1e6),
    param<&Opt::train, &TrainSettings::lr>("lr", "2e-3", "Adam learning rate", 1e-12, 10),
    param<&Opt::train, &TrainSettings::weight_decay>("weight_decay", "5e-5",
                                                     "weight decay added to the gradient (torch.optim.Adam)", 0, 10),
    param<&Opt::widths_scan>("widths_scan", "10,100,1000,10000",
                             "widths N of the estimator runs (dataset key widths_scan; the dataset's own widths use "
                             "the first)",
                             1, 1e12)
        .as(AM_PARAM_INT_LIST),
    param<&Opt::temperatures>("temperatures", "0.01,0.025,0.05,0.075,0.1,0.25,0.5,0.75,1,1.5",
                              "temperature grid of the study (dataset key temperatures_scan): the theory estimator "
                              "solves at every T and selects T on the validation split",
                              1e-12, 1e12),
    param<&Opt::temperature>("temperature", "0.5",
                             "the dataset's temperature, used by estimators that do not scan temperatures (e.g. "
                             "posterior)",
                             1e-12, 1e12),
};

struct Oneshot {
  am::sdk::Host host;
  Opt opt;
  Oneshot(const am::sdk::Host &h, const Opt &o) : host(h), opt(o) {
    am::sdk::check_context(h.ctx(), am::oneshot::validate(h.ctx(), opt));
  }
  am_status make_dataset(am_record *dataset, am_record *extras) {
    return am::oneshot::make_dataset(host.ctx(), opt, host.rng(), host.loop(), dataset, extras);
  }
  static am_status describe(const am_record *results, am_record *report) {
    return am::oneshot_plugin::describe(nullptr, results, report);
  }
};

constexpr am_plugin_desc kDesc = am::sdk::task<Oneshot, kParams>(
    "oneshot", "1.0.0",
    "in-context 2-way 1-shot image classification with GD-trained query/key heads: train/validation/test/OOD "
    "episodes and the trained network (docs/oneshot.md)",
    AM_DATA_ATTENTION, "theory");

}  // namespace

AM_PLUGIN_EXPORT const am_plugin_desc *am_plugin_entry(void) { return &kDesc; }
