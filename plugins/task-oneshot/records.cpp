// attnmech — task "oneshot": the records a run writes — the attention dataset (train/val/test/OOD episodes, the
// trained Q/K heads, the network's path weights, the width and temperature grids) and the extras (data summary,
// the GD training and its accuracies). Everything the paper does with the theory is the `theory` estimator's work
// on this dataset (docs/oneshot.md).
#include "oneshot_core.h"

#include <cmath>
#include <cstring>
#include <new>

namespace am::oneshot {

// ------------------------------------------------------------------ records

namespace {

am_status put_X(am_record *ds, const char *key, const std::vector<double> &X, size_t S, size_t N0) {
  const am_array_view v = am::sdk::f64_view(X.data(), {X.size() / (S * N0), S, N0});
  return am_record_set_array(ds, key, &v);
}

am_status put_list(am_record *obj, const char *key, const std::vector<double> &v) {
  am_record *l = am_record_list(obj, key);
  if (!l) return AM_ERR_NO_MEMORY;
  for (double x : v) AM_SDK_TRY(am_record_append_number(l, x));
  return AM_OK;
}

std::vector<std::string> path_labels(const ModelShape &s) {
  std::vector<std::string> out;
  const size_t Ht = ipow(s.H, s.L);
  for (size_t p = 0; p < Ht; ++p) {
    std::vector<size_t> hs(s.L);
    size_t rem = p;
    for (size_t l = s.L; l-- > 0;) {
      hs[l] = rem % s.H;
      rem /= s.H;
    }
    std::string lab = "(";
    for (size_t l = 0; l < s.L; ++l) lab += (l ? "," : "") + std::to_string(hs[l] + 1);
    out.push_back(lab + ")");
  }
  return out;
}

std::vector<std::string> head_labels(const ModelShape &s) {
  std::vector<std::string> out;
  for (size_t l = 0; l < s.L; ++l)
    for (size_t h = 0; h < s.H; ++h) out.push_back("(" + std::to_string(l + 1) + ")" + std::to_string(h + 1));
  return out;
}

// The trained network in path form (dataset.h `network`): w_π = V0ᵀ V_{1,h1}ᵀ ⋯ V_{L,hL}ᵀ a, row π.
am_status put_network(am_record *ds, const Model &m) {
  const size_t Ht = ipow(m.shape.H, m.shape.L), N0 = m.shape.N0;
  const std::vector<double> w = path_weights(m);   // N0 × H_tot column-major = [H_tot, N0] C order
  am_record *net = am_record_object(ds, "network");
  if (!net) return AM_ERR_NO_MEMORY;
  const am_array_view v = am::sdk::f64_view(w.data(), {Ht, N0});
  return am_record_set_array(net, "path_weights", &v);
}

am_status fill_dataset(const Options &o, const Prepared &p, am_record *ds) {
  const ModelShape &s = p.model.shape;
  const size_t N0 = s.N0, S = s.S;
  AM_SDK_TRY(am_record_set_string(ds, "kind", AM_DATASET_ATTENTION));
  AM_SDK_TRY(put_X(ds, "X_train", p.X_train, S, N0));
  AM_SDK_TRY(am_record_set_vector(ds, "y_train", p.y_train.data(), p.y_train.size()));
  AM_SDK_TRY(put_X(ds, "X_test", p.X_test, S, N0));
  AM_SDK_TRY(am_record_set_vector(ds, "y_test", p.y_test.data(), p.y_test.size()));
  AM_SDK_TRY(put_X(ds, "X_val", p.X_val, S, N0));
  AM_SDK_TRY(am_record_set_vector(ds, "y_val", p.y_val.data(), p.y_val.size()));
  if (!p.y_ood.empty()) {
    AM_SDK_TRY(put_X(ds, "X_ood", p.X_ood, S, N0));
    AM_SDK_TRY(am_record_set_vector(ds, "y_ood", p.y_ood.data(), p.y_ood.size()));
  }
  AM_SDK_TRY(put_list(ds, "heads", std::vector<double>(s.L, double(s.H))));
  AM_SDK_TRY(put_list(ds, "widths", std::vector<double>(s.L + 1, o.widths_scan[0])));
  AM_SDK_TRY(put_list(ds, "variances", std::vector<double>(s.L + 2, 1.0)));
  AM_SDK_TRY(am_record_set_number(ds, "temperature", o.temperature));
  AM_SDK_TRY(am_record_set_string(ds, "readout", "mean"));
  am_record *att = am_record_object(ds, "attention");
  if (!att) return AM_ERR_NO_MEMORY;
  for (size_t l = 0; l < s.L; ++l)
    for (size_t h = 0; h < s.H; ++h) {
      const std::string key = "l" + std::to_string(l + 1) + "_h" + std::to_string(h + 1);
      am_record *hd = am_record_object(att, key.c_str());
      if (!hd) return AM_ERR_NO_MEMORY;
      AM_SDK_TRY(am_record_set_matrix(hd, "Q", p.model.Q[l * s.H + h].data(), s.G, N0, s.G));
      AM_SDK_TRY(am_record_set_matrix(hd, "K", p.model.K[l * s.H + h].data(), s.G, N0, s.G));
    }
  am_record *pl = am_record_list(ds, "path_labels");
  if (!pl) return AM_ERR_NO_MEMORY;
  for (const auto &x : path_labels(s)) AM_SDK_TRY(am_record_append_string(pl, x.c_str()));
  AM_SDK_TRY(put_list(ds, "widths_scan", o.widths_scan));
  AM_SDK_TRY(put_list(ds, "temperatures_scan", o.temperatures));
  return put_network(ds, p.model);
}

am_status put_data_summary(const Prepared &p, am_record *d) {
  if (!d) return AM_ERR_NO_MEMORY;
  AM_SDK_TRY(am_record_set_number(d, "background_classes", double(p.background.class_names.size())));
  AM_SDK_TRY(am_record_set_number(d, "background_images", double(p.background.size())));
  AM_SDK_TRY(am_record_set_number(d, "train_classes", double(p.train_classes.size())));
  AM_SDK_TRY(am_record_set_number(d, "val_classes", double(p.val_classes.size())));
  AM_SDK_TRY(am_record_set_number(d, "evaluation_classes", double(p.evaluation.class_names.size())));
  AM_SDK_TRY(am_record_set_number(d, "evaluation_images", double(p.evaluation.size())));
  AM_SDK_TRY(am_record_set_number(d, "P", double(p.y_train.size())));
  AM_SDK_TRY(am_record_set_number(d, "P_val", double(p.y_val.size())));
  AM_SDK_TRY(am_record_set_number(d, "P_test", double(p.y_test.size())));
  AM_SDK_TRY(am_record_set_number(d, "P_ood", double(p.y_ood.size())));
  AM_SDK_TRY(am_record_set_number(d, "pixel_mean", p.norm.mean));
  AM_SDK_TRY(am_record_set_number(d, "pixel_std", p.norm.std));
  AM_SDK_TRY(am_record_set_number(d, "N0", double(p.model.shape.N0)));
  AM_SDK_TRY(am_record_set_number(d, "S", double(p.model.shape.S)));
  AM_SDK_TRY(am_record_set_bool(d, "images_from_cache", p.images_from_cache));
  am_record *fam = am_record_list(d, "background_alphabets");
  if (!fam) return AM_ERR_NO_MEMORY;
  for (const auto &x : p.background.group_names) AM_SDK_TRY(am_record_append_string(fam, x.c_str()));
  fam = am_record_list(d, "evaluation_alphabets");
  if (!fam) return AM_ERR_NO_MEMORY;
  for (const auto &x : p.evaluation.group_names) AM_SDK_TRY(am_record_append_string(fam, x.c_str()));
  return AM_OK;
}

// The GD network: settings, training curve, accuracy on every episode set, path-weight overlap.
// A partial training (cancelled) gets everything but the accuracies, which would delay the stop.
am_status put_gd(am_context *ctx, const Options &o, const Prepared &p, const am::sdk::ParallelFor &pf,
                 am_record *gd, bool evaluate) {
  if (!gd) return AM_ERR_NO_MEMORY;
  const ModelShape &s = p.model.shape;
  const size_t Ht = ipow(s.H, s.L);
  AM_SDK_TRY(am_record_set_number(gd, "L", double(s.L)));
  AM_SDK_TRY(am_record_set_number(gd, "H", double(s.H)));
  AM_SDK_TRY(am_record_set_number(gd, "G", double(s.G)));
  AM_SDK_TRY(am_record_set_number(gd, "width", double(s.W)));
  AM_SDK_TRY(am_record_set_number(gd, "steps", double(o.train.steps)));
  AM_SDK_TRY(am_record_set_number(gd, "batch", double(o.train.batch)));
  AM_SDK_TRY(am_record_set_number(gd, "lr", o.train.lr));
  AM_SDK_TRY(am_record_set_number(gd, "weight_decay", o.train.weight_decay));
  AM_SDK_TRY(am_record_set_number(gd, "train_seconds", p.log.seconds));
  AM_SDK_TRY(am_record_set_bool(gd, "from_cache", p.model_from_cache));
  AM_SDK_TRY(am_record_set_number(gd, "steps_done", double(p.steps_done)));
  AM_SDK_TRY(am_record_set_number(gd, "resumed_from", double(p.resumed_from)));
  AM_SDK_TRY(am_record_set_bool(gd, "completed", p.steps_done >= o.train.steps));
  AM_SDK_TRY(am_record_set_string(gd, "checkpoint", p.steps_done >= o.train.steps ? "" : p.checkpoint.c_str()));
  am_record *heads = am_record_object(gd, "heads");  // the trained query/key heads, l<l>_h<h>: Q, K (G × N0)
  if (!heads) return AM_ERR_NO_MEMORY;
  for (size_t l = 0; l < s.L; ++l)
    for (size_t h = 0; h < s.H; ++h) {
      am_record *hd = am_record_object(heads, ("l" + std::to_string(l + 1) + "_h" + std::to_string(h + 1)).c_str());
      if (!hd) return AM_ERR_NO_MEMORY;
      AM_SDK_TRY(am_record_set_matrix(hd, "Q", p.model.Q[l * s.H + h].data(), s.G, s.N0, s.G));
      AM_SDK_TRY(am_record_set_matrix(hd, "K", p.model.K[l * s.H + h].data(), s.G, s.N0, s.G));
    }
  AM_SDK_TRY(am_record_set_vector(gd, "loss_step", p.log.step.data(), p.log.step.size()));
  AM_SDK_TRY(am_record_set_vector(gd, "loss", p.log.loss.data(), p.log.loss.size()));
  if (!evaluate) return AM_OK;
  auto gd_acc = [&](const std::vector<double> &X, const std::vector<double> &y) {
    if (y.empty()) return double(NAN);
    std::vector<double> f(y.size());
    forward(p.model, Mask(), y.size(), X.data(), f.data(), pf);
    return sign_accuracy(f.data(), y.data(), y.size());
  };
  am_record *a = am_record_object(gd, "accuracy");
  if (!a) return AM_ERR_NO_MEMORY;
  AM_SDK_TRY(am_record_set_number(a, "train", gd_acc(p.X_train, p.y_train)));
  AM_SDK_TRY(am_record_set_number(a, "val", gd_acc(p.X_val, p.y_val)));
  AM_SDK_TRY(am_record_set_number(a, "test", gd_acc(p.X_test, p.y_test)));
  if (!p.y_ood.empty()) AM_SDK_TRY(am_record_set_number(a, "ood", gd_acc(p.X_ood, p.y_ood)));
  const auto ov = path_overlap(p.model);
  AM_SDK_TRY(am_record_set_matrix(gd, "path_overlap", ov.data(), Ht, Ht, Ht));
  am_context_log(ctx, AM_LOG_INFO, "oneshot: GD accuracy train %.4f val %.4f test %.4f",
                 am_record_number(am_record_get(a, "train")), am_record_number(am_record_get(a, "val")),
                 am_record_number(am_record_get(a, "test")));
  return AM_OK;
}

am_status fill_extras(am_context *ctx, const Options &o, const Prepared &p, const am::sdk::ParallelFor &pf,
                      am_record *ex, bool evaluate = true) {
  AM_SDK_TRY(am_record_set_string(ex, "source", o.source.c_str()));
  AM_SDK_TRY(am_record_set_string(ex, "ood_source", p.ood_name.c_str()));
  AM_SDK_TRY(put_data_summary(p, am_record_object(ex, "data")));
  am_record *l = am_record_list(ex, "path_labels");
  if (!l) return AM_ERR_NO_MEMORY;
  for (const auto &x : path_labels(p.model.shape)) AM_SDK_TRY(am_record_append_string(l, x.c_str()));
  am_record *hl = am_record_list(ex, "head_labels");
  if (!hl) return AM_ERR_NO_MEMORY;
  for (const auto &x : head_labels(p.model.shape)) AM_SDK_TRY(am_record_append_string(hl, x.c_str()));
  return put_gd(ctx, o, p, pf, am_record_object(ex, "gd"), evaluate);
}

am_status fill(am_context *ctx, const Options &o, const am_rng &rng, const am::sdk::ParallelFor &pf, am_record *ds,
               am_record *ex) {
  Prepared p;
  am_status st = prepare(ctx, o, rng, pf, &p);
  if (st == AM_CANCELLED && p.trained && ex) {
    // Stopped during training: the results keep the heads trained so far and name the checkpoint to resume.
    if (fill_extras(ctx, o, p, pf, ex, false) != AM_OK)
      am_context_log(ctx, AM_LOG_WARN, "oneshot: could not record the partial training");
    am_context_log(ctx, AM_LOG_WARN, "oneshot: GD training stopped at step %zu of %zu%s%s", p.steps_done,
                   o.train.steps, p.checkpoint.empty() ? " (no cache: nothing to resume from)" :
                                                         "; the same command resumes from ",
                   p.checkpoint.c_str());
    return AM_CANCELLED;
  }
  if (st != AM_OK) return st;
  AM_SDK_TRY(fill_dataset(o, p, ds));
  if (ex) AM_SDK_TRY(fill_extras(ctx, o, p, pf, ex));
  am_context_progress(ctx, 1, 1, "oneshot: done");
  return AM_OK;
}

}  // namespace

am_status make_dataset(am_context *ctx, const Options &o, const am_rng &rng, const am::sdk::ParallelFor &pf,
                       am_record *dataset, am_record *extras) {
  if (!dataset) return am_context_fail(ctx, AM_ERR_INVALID_ARGUMENT, "oneshot: no dataset record");
  try {
    am_status st = fill(ctx, o, rng, pf, dataset, extras);
    if (st < 0 && std::strlen(am_context_last_error(ctx)) == 0)
      return am_context_fail(ctx, st, "oneshot: %s", am_status_string(st));
    return st;
  } catch (const std::bad_alloc &) {
    return am_context_fail(ctx, AM_ERR_NO_MEMORY, "oneshot: out of memory");
  } catch (...) {
    return am_context_fail(ctx, AM_ERR_INTERNAL, "oneshot: unexpected exception");
  }
}

}  // namespace am::oneshot
