// attnmech — task "oneshot": what a run prepares before the records — the option checks, the image source split
// into background/evaluation (Hershey, an Omniglot-style PNG tree, an IDX directory), the out-of-distribution
// set, the episode sets, and the GD-trained network (from the cache, resumed from a checkpoint, or trained here).
#include "oneshot_core.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>

namespace am::oneshot {

am_status validate(am_context *ctx, const Options &o) {
  const bool src_ok = o.source == "hershey" || o.source == "fashion-mnist" || o.source.rfind("omniglot:", 0) == 0 ||
                      o.source.rfind("idx:", 0) == 0;
  if (!src_ok)
    return am_context_fail(ctx, AM_ERR_USAGE,
                           "oneshot: source must be hershey, fashion-mnist, omniglot:PATH or idx:DIR (got '%s')",
                           o.source.c_str());
  const bool ood_ok = o.ood == "auto" || o.ood == "none" || o.ood == "fashion-mnist" || o.ood == "hershey" ||
                      o.ood.rfind("idx:", 0) == 0;
  if (!ood_ok)
    return am_context_fail(ctx, AM_ERR_USAGE, "oneshot: ood must be auto, none, fashion-mnist, hershey or idx:DIR (got '%s')",
                           o.ood.c_str());
  if (o.P < 2 || o.P_val < 2 || o.P_test < 2)
    return am_context_fail(ctx, AM_ERR_USAGE, "oneshot: P, P_val and P_test must be >= 2");
  if (o.drawers < 2) return am_context_fail(ctx, AM_ERR_USAGE, "oneshot: drawers must be >= 2");
  if (!(o.val_class_fraction > 0 && o.val_class_fraction < 1))
    return am_context_fail(ctx, AM_ERR_USAGE, "oneshot: val_class_fraction must lie in (0, 1)");
  if (o.shape.L < 1 || o.shape.L > 4 || o.shape.H < 1 || o.shape.G < 1 || o.shape.W < 1)
    return am_context_fail(ctx, AM_ERR_USAGE, "oneshot: need 1 <= L <= 4, H >= 1, G >= 1, gd_width >= 1");
  if (ipow(o.shape.H, o.shape.L) > 256)
    return am_context_fail(ctx, AM_ERR_USAGE, "oneshot: H^L = %zu paths is too many for the theory (max 256)",
                           ipow(o.shape.H, o.shape.L));
  if (o.train.batch < 1) return am_context_fail(ctx, AM_ERR_USAGE, "oneshot: batch must be >= 1");
  if (!(o.train.lr > 0) || !(o.train.weight_decay >= 0))
    return am_context_fail(ctx, AM_ERR_USAGE, "oneshot: lr must be > 0 and weight_decay >= 0");
  if (o.widths_scan.empty() || o.temperatures.empty())
    return am_context_fail(ctx, AM_ERR_USAGE, "oneshot: widths_scan and temperatures must not be empty");
  for (double w : o.widths_scan)
    if (!(w > 0) || !std::isfinite(w)) return am_context_fail(ctx, AM_ERR_USAGE, "oneshot: widths must be > 0");
  for (double t : o.temperatures)
    if (!(t > 0) || !std::isfinite(t)) return am_context_fail(ctx, AM_ERR_USAGE, "oneshot: temperatures must be > 0");
  if (!(o.temperature > 0) || !std::isfinite(o.temperature))
    return am_context_fail(ctx, AM_ERR_USAGE, "oneshot: temperature must be > 0");
  return AM_OK;
}

// ------------------------------------------------------------------ image sources

namespace {

// The training and test files of an MNIST-like directory (find_idx_files), read at side × side.
am_status load_idx_dir(am_context *ctx, const std::string &dir, size_t side, ImageSet *train, ImageSet *test) {
  std::string ti, tl, ei, el;
  am_status st;
  if ((st = find_idx_files(ctx, dir, "train", &ti, &tl)) != AM_OK) return st;
  if ((st = find_idx_files(ctx, dir, "t10k", &ei, &el)) != AM_OK) return st;
  if ((st = load_idx_pair(ctx, ti, tl, side, train)) != AM_OK) return st;
  return load_idx_pair(ctx, ei, el, side, test);
}

// The rendered Hershey set, from the cache when it holds this key.
am_status load_hershey(am_context *ctx, const Options &o, uint64_t seed, const std::string &cdir, Prepared *p,
                       std::string *key) {
  const size_t side = p->tok.side;
  *key = "hershey|dir=" + o.hershey_dir + "|side=" + std::to_string(side) + "|drawers=" + std::to_string(o.drawers) +
         "|seed=" + std::to_string(seed) + "|render=v1";
  const std::string dir = cdir.empty() ? "" : cdir + "/images-" + hash_key(*key);
  if (load_cached_images(dir, *key, p)) {
    p->images_from_cache = true;
    am_context_log(ctx, AM_LOG_INFO, "oneshot: rendered glyphs from the cache %s", dir.c_str());
    return AM_OK;
  }
  am_status st = render_hershey(ctx, o.hershey_dir, side, o.drawers, seed, &p->background, &p->evaluation);
  if (st != AM_OK) return st;
  save_cached_images(ctx, dir, *key, *p);
  return AM_OK;
}

// The images of `all` whose alphabet is among the first nb (background) or the rest (evaluation), classes and
// alphabets renumbered in order.
void alphabet_split(const ImageSet &all, size_t side, size_t nb, bool background, ImageSet *dst) {
  const size_t ng = all.group_names.size();
  *dst = ImageSet();
  dst->side = side;
  std::vector<int32_t> cmap(all.class_names.size(), -1), gmap(ng, -1);
  for (size_t g = 0; g < ng; ++g)
    if ((g < nb) == background) {
      gmap[g] = int32_t(dst->group_names.size());
      dst->group_names.push_back(all.group_names[g]);
    }
  for (size_t c = 0; c < all.class_names.size(); ++c)
    if (gmap[size_t(all.class_group[c])] >= 0) {
      cmap[c] = int32_t(dst->class_names.size());
      dst->class_names.push_back(all.class_names[c]);
      dst->class_group.push_back(gmap[size_t(all.class_group[c])]);
    }
  for (size_t i = 0; i < all.size(); ++i)
    if (cmap[size_t(all.label[i])] >= 0) {
      dst->label.push_back(cmap[size_t(all.label[i])]);
      dst->pixels.insert(dst->pixels.end(), all.image(i), all.image(i) + side * side);
    }
}

// An Omniglot-style tree: images_background/ and images_evaluation/ when present, else one tree whose first
// 60 % of alphabets (sorted) are background and the rest evaluation.
am_status load_omniglot(am_context *ctx, const std::string &root, size_t side, Prepared *p, std::string *key) {
  *key = "omniglot|" + root + "|side=" + std::to_string(side);
  am_status st;
  std::error_code ec;
  if (std::filesystem::exists(root + "/images_background", ec) &&
      std::filesystem::exists(root + "/images_evaluation", ec)) {
    if ((st = load_png_tree(ctx, root + "/images_background", side, &p->background)) != AM_OK) return st;
    return load_png_tree(ctx, root + "/images_evaluation", side, &p->evaluation);
  }
  ImageSet all;
  if ((st = load_png_tree(ctx, root, side, &all)) != AM_OK) return st;
  const size_t ng = all.group_names.size();
  if (ng < 2)
    return am_context_fail(ctx, AM_ERR_FORMAT, "oneshot: %s has one alphabet; need >= 2 to split background/evaluation",
                           root.c_str());
  const size_t nb = std::max<size_t>(1, std::min(ng - 1, size_t(std::ceil(0.6 * double(ng)))));
  alphabet_split(all, side, nb, true, &p->background);
  alphabet_split(all, side, nb, false, &p->evaluation);
  return AM_OK;
}

// The images of src with classes lo..hi-1, renumbered from 0, as one group.
void class_range(const ImageSet &src, size_t side, int32_t lo, int32_t hi, const std::string &group, ImageSet *dst) {
  *dst = ImageSet();
  dst->side = side;
  dst->group_names = {group};
  for (int32_t c = lo; c < hi; ++c) {
    dst->class_names.push_back(std::to_string(c));
    dst->class_group.push_back(0);
  }
  for (size_t i = 0; i < src.size(); ++i)
    if (src.label[i] >= lo && src.label[i] < hi) {
      dst->label.push_back(src.label[i] - lo);
      dst->pixels.insert(dst->pixels.end(), src.image(i), src.image(i) + side * side);
    }
}

// An IDX directory: the lower half of the classes of its training file are background, the upper half of its
// test file evaluation.
am_status load_idx_source(am_context *ctx, const std::string &dir, size_t side, Prepared *p, std::string *key) {
  *key = "idx|" + dir + "|side=" + std::to_string(side);
  ImageSet tr, te;
  am_status st = load_idx_dir(ctx, dir, side, &tr, &te);
  if (st != AM_OK) return st;
  const int32_t ncls = int32_t(std::max(tr.class_names.size(), te.class_names.size()));
  const int32_t split = ncls / 2;
  if (split < 2) return am_context_fail(ctx, AM_ERR_FORMAT, "oneshot: %s has fewer than 4 classes", dir.c_str());
  class_range(tr, side, 0, split, "classes 0.." + std::to_string(split - 1), &p->background);
  class_range(te, side, split, ncls, "classes " + std::to_string(split) + "..", &p->evaluation);
  return AM_OK;
}

// Background/evaluation image sets for a source; *key names what determines them (for the model cache).
am_status load_source(am_context *ctx, const Options &o, uint64_t seed, const std::string &cdir, Prepared *p,
                      std::string *key) {
  if (o.source == "hershey") return load_hershey(ctx, o, seed, cdir, p, key);
  if (o.source.rfind("omniglot:", 0) == 0) return load_omniglot(ctx, o.source.substr(9), p->tok.side, p, key);
  return load_idx_source(ctx, o.source == "fashion-mnist" ? o.fashion_dir : o.source.substr(4), p->tok.side, p, key);
}

// The out-of-distribution set the run will use (ood=auto resolved), decided when the run starts: Fashion-MNIST is
// the Debian package dataset-fashion-mnist, which nothing installs for you, so its absence is said at once (a
// warning naming the package), and a run that names it (source or ood fashion-mnist) fails at once, before hours
// of glyph rendering and GD training. docs/oneshot.md "Out of distribution".
am_status choose_ood(am_context *ctx, const Options &o, std::string *which) {
  std::string a, b;
  const bool wanted = o.source == "fashion-mnist" || o.ood == "fashion-mnist";
  if (wanted && find_idx_files(nullptr, o.fashion_dir, "t10k", &a, &b) != AM_OK)
    return am_context_fail(ctx, AM_ERR_NOT_FOUND,
                           "oneshot: Fashion-MNIST is not in %s: install the Debian package dataset-fashion-mnist "
                           "(apt-get install dataset-fashion-mnist) or set fashion_dir to a directory of its IDX files",
                           o.fashion_dir.c_str());
  *which = o.ood;
  if (*which != "auto") return AM_OK;
  *which = (o.source != "fashion-mnist" && find_idx_files(nullptr, o.fashion_dir, "t10k", &a, &b) == AM_OK)
               ? "fashion-mnist"
               : o.source != "hershey" ? "hershey" : "none";
  if (*which == "none")
    am_context_log(ctx, AM_LOG_WARN,
                   "oneshot: no out-of-distribution test: it needs Fashion-MNIST, the Debian package "
                   "dataset-fashion-mnist, which is not installed (no IDX files in %s); apt-get install "
                   "dataset-fashion-mnist (or set fashion_dir), or --set ood=none to run without it and no warning",
                   o.fashion_dir.c_str());
  return AM_OK;
}

// OOD episodes (which: choose_ood's answer): classes 0 vs 1 of an IDX set (supports from its training file, queries
// from its test file), or evaluation-split episodes of the Hershey set.
am_status load_ood(am_context *ctx, const Options &o, const std::string &which, uint64_t seed, const std::string &cdir,
                   am_rng *rng, Prepared *p) {
  p->ood_name = which;
  if (which == "none") return AM_OK;
  am_status st;
  const size_t side = p->tok.side;
  if (which == "hershey") {
    Options h = o;
    h.source = "hershey";
    Prepared tmp;
    tmp.tok = p->tok;
    std::string key;
    if ((st = load_source(ctx, h, seed, cdir, &tmp, &key)) != AM_OK) return st;
    p->ood = std::move(tmp.evaluation);
    p->ood_norm = pixel_stats(tmp.background);
    std::vector<int32_t> cls(p->ood.class_names.size());
    std::iota(cls.begin(), cls.end(), 0);
    const auto eps = sample_episodes(p->ood, cls, o.P_test, rng, true);
    episodes_to_X(p->tok, p->emb, p->ood, p->ood_norm, eps, &p->X_ood, &p->y_ood);
    return AM_OK;
  }
  const std::string dir = which == "fashion-mnist" ? o.fashion_dir : which.substr(4);
  ImageSet tr, te;
  if ((st = load_idx_dir(ctx, dir, side, &tr, &te)) != AM_OK) return st;
  p->ood_norm = pixel_stats(tr);
  // one set holding both files: training images first
  ImageSet &s = p->ood;
  s = ImageSet();
  s.side = side;
  s.pixels = tr.pixels;
  s.pixels.insert(s.pixels.end(), te.pixels.begin(), te.pixels.end());
  s.label = tr.label;
  s.label.insert(s.label.end(), te.label.begin(), te.label.end());
  s.class_names = tr.class_names.size() >= te.class_names.size() ? tr.class_names : te.class_names;
  s.class_group.assign(s.class_names.size(), 0);
  s.group_names = {which};
  std::vector<size_t> s0, s1, q0, q1;
  for (size_t i = 0; i < tr.size(); ++i) (tr.label[i] == 0 ? s0 : tr.label[i] == 1 ? s1 : q0).push_back(i);
  q0.clear();
  for (size_t i = 0; i < te.size(); ++i) {
    if (te.label[i] == 0) q0.push_back(tr.size() + i);
    if (te.label[i] == 1) q1.push_back(tr.size() + i);
  }
  const auto eps = sample_pair_episodes(s, s0, s1, q0, q1, o.P_test, rng);
  if (eps.empty()) return am_context_fail(ctx, AM_ERR_FORMAT, "oneshot: %s has no images of classes 0 and 1", dir.c_str());
  episodes_to_X(p->tok, p->emb, s, p->ood_norm, eps, &p->X_ood, &p->y_ood);
  return AM_OK;
}

// ------------------------------------------------------------------ episodes and the GD network

// The random streams of one preparation, each split from the run's generator by a fixed index.
struct Streams {
  am_rng split, emb, train, val, test, ood, init, batches;
  explicit Streams(const am_rng &rng) {
    am_rng_split(&rng, 11, &split);
    am_rng_split(&rng, 12, &emb);
    am_rng_split(&rng, 13, &train);
    am_rng_split(&rng, 14, &val);
    am_rng_split(&rng, 15, &test);
    am_rng_split(&rng, 16, &ood);
    am_rng_split(&rng, 17, &init);
    am_rng_split(&rng, 18, &batches);
  }
};

// Background classes: a random val_class_fraction is held out for validation episodes.
am_status split_classes(am_context *ctx, const Options &o, am_rng *r_split, Prepared *p) {
  std::vector<int32_t> bg(p->background.class_names.size());
  std::iota(bg.begin(), bg.end(), 0);
  for (size_t i = bg.size(); i > 1; --i) std::swap(bg[i - 1], bg[size_t(am_rng_below(r_split, i))]);
  size_t nval = size_t(std::round(o.val_class_fraction * double(bg.size())));
  nval = std::max<size_t>(2, std::min(nval, bg.size() - 2));
  if (bg.size() < 4)
    return am_context_fail(ctx, AM_ERR_FORMAT, "oneshot: need >= 4 background classes (have %zu)", bg.size());
  p->val_classes.assign(bg.begin(), bg.begin() + long(nval));
  p->train_classes.assign(bg.begin() + long(nval), bg.end());
  std::sort(p->val_classes.begin(), p->val_classes.end());
  std::sort(p->train_classes.begin(), p->train_classes.end());
  p->eval_classes.resize(p->evaluation.class_names.size());
  std::iota(p->eval_classes.begin(), p->eval_classes.end(), 0);
  return AM_OK;
}

// n balanced episodes of classes `cls` of s as X, y.
am_status build_episodes(am_context *ctx, Prepared *p, const ImageSet &s, const std::vector<int32_t> &cls, size_t n,
                         am_rng *r, std::vector<double> *X, std::vector<double> *y, const char *what) {
  const auto eps = sample_episodes(s, cls, n, r, true);
  if (eps.size() != n)
    return am_context_fail(ctx, AM_ERR_FORMAT, "oneshot: cannot build %s episodes (need >= 2 classes with >= 2 images)",
                           what);
  episodes_to_X(p->tok, p->emb, s, p->norm, eps, X, y);
  return AM_OK;
}

// The training, validation and test episode sets.
am_status build_episode_sets(am_context *ctx, const Options &o, Streams *r, Prepared *p) {
  am_status st;
  if ((st = build_episodes(ctx, p, p->background, p->train_classes, o.P, &r->train, &p->X_train, &p->y_train,
                           "training")) != AM_OK)
    return st;
  if ((st = build_episodes(ctx, p, p->background, p->val_classes, o.P_val, &r->val, &p->X_val, &p->y_val,
                           "validation")) != AM_OK)
    return st;
  return build_episodes(ctx, p, p->evaluation, p->eval_classes, o.P_test, &r->test, &p->X_test, &p->y_test, "test");
}

struct BatchCtx {
  const Prepared *p;
  am_rng base;
  size_t batch;
};

void make_batch(void *user, size_t step, std::vector<double> *X, std::vector<double> *y) {
  BatchCtx *b = static_cast<BatchCtx *>(user);
  am_rng r;
  am_rng_split(&b->base, step, &r);
  const auto eps = sample_episodes(b->p->background, b->p->train_classes, b->batch, &r, false);
  episodes_to_X(b->p->tok, b->p->emb, b->p->background, b->p->norm, eps, X, y);
}

// Trains the GD network, continuing a checkpoint of the same settings when one is in mdir (same bits as never
// stopping), checkpointing while it runs and caching the finished model.
am_status train_model(am_context *ctx, const Options &o, const std::string &mdir, const std::string &mkey,
                      Streams *r, const am::sdk::ParallelFor &pf, Prepared *p) {
  TrainState state;
  if (!mdir.empty() && load_checkpoint(nullptr, mdir, mkey, p->model.shape, &state, &p->model, &p->log) == AM_OK) {
    p->resumed_from = state.step;
    am_context_log(ctx, AM_LOG_INFO, "oneshot: resuming the GD training at step %zu of %zu from the checkpoint in %s",
                   state.step, o.train.steps, mdir.c_str());
  } else {
    init_model(p->model.shape, &r->init, &p->model);
  }
  BatchCtx bc{p, r->batches, o.train.batch};
  am_context_log(ctx, AM_LOG_INFO, "oneshot: training the GD network (%zu steps of %zu episodes)", o.train.steps,
                 o.train.batch);
  Checkpoints ck;
  if (!mdir.empty())
    ck.fn = [&](const TrainState &s_now, const Model &m_now, const TrainLog &log_now) {
      if (save_checkpoint(nullptr, mdir, mkey, s_now, m_now, log_now) == AM_OK) {
        p->checkpoint = mdir + "/checkpoint-" + std::to_string(s_now.step);
        am_context_log(ctx, AM_LOG_INFO, "oneshot: checkpoint at step %zu: %s", s_now.step, p->checkpoint.c_str());
      } else {
        am_context_log(ctx, AM_LOG_WARN, "oneshot: could not write a checkpoint in %s", mdir.c_str());
      }
    };
  p->trained = true;
  am_status st = train(ctx, &p->model, o.train, make_batch, &bc, pf, &p->log, &state, ck);
  p->steps_done = state.step;
  if (st != AM_OK) return st;
  save_cached_model(ctx, mdir, mkey, *p);
  return AM_OK;
}

// The GD model, from the cache (keyed by everything that determines it) or trained.
am_status prepare_model(am_context *ctx, const Options &o, uint64_t seed, const std::string &cdir,
                        const std::string &img_key, Streams *r, const am::sdk::ParallelFor &pf, Prepared *p) {
  const std::string mkey = model_cache_key(o, img_key, seed);
  const std::string mdir = cdir.empty() ? "" : cdir + "/model-" + hash_key(mkey);
  p->model.shape = o.shape;
  p->model.shape.N0 = p->tok.N0();
  p->model.shape.S = p->tok.S();
  if (load_cached_model(mdir, mkey, p)) {
    p->model_from_cache = true;
    p->trained = true;
    p->steps_done = o.train.steps;
    am_context_log(ctx, AM_LOG_INFO, "oneshot: GD model from the cache %s", mdir.c_str());
    return AM_OK;
  }
  return train_model(ctx, o, mdir, mkey, r, pf, p);
}

}  // namespace

am_status prepare(am_context *ctx, const Options &o, const am_rng &rng, const am::sdk::ParallelFor &pf,
                  Prepared *p) {
  am_status st = validate(ctx, o);
  if (st != AM_OK) return st;
  std::string ood;  // said at the start (a missing dataset package), not after the glyphs are rendered
  if ((st = choose_ood(ctx, o, &ood)) != AM_OK) return st;
  const uint64_t seed = rng.key;
  const std::string cdir = cache_dir(o);
  std::string img_key;
  if ((st = load_source(ctx, o, seed, cdir, p, &img_key)) != AM_OK) return st;
  p->norm = pixel_stats(p->background);
  am_context_log(ctx, AM_LOG_INFO, "oneshot: %zu background classes (%zu images), %zu evaluation classes (%zu images)",
                 p->background.class_names.size(), p->background.size(), p->evaluation.class_names.size(),
                 p->evaluation.size());
  Streams r(rng);
  if ((st = split_classes(ctx, o, &r.split, p)) != AM_OK) return st;
  make_embeddings(p->tok, &r.emb, &p->emb);
  if ((st = build_episode_sets(ctx, o, &r, p)) != AM_OK) return st;
  if ((st = load_ood(ctx, o, ood, seed, cdir, &r.ood, p)) != AM_OK) return st;
  if (am_context_progress(ctx, 0, 1, "oneshot: data ready")) return AM_CANCELLED;
  return prepare_model(ctx, o, seed, cdir, img_key, &r, pf, p);
}

}  // namespace am::oneshot
