// attnmech — task "oneshot": options, caching, data preparation (episodes, the GD-trained heads) and the
// dataset/extras records. Everything the paper does with the theory (the N × T grid, temperature selection,
// GP baseline, head scores, pruning of the GD network) is estimator work: the `theory` estimator on this
// dataset (docs/oneshot.md).
#include "oneshot_core.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <numeric>
#include <sstream>
#include <fcntl.h>
#include <safe_file.hpp>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace oneshot {

namespace {

bool mkdirs(const std::string &path) {
  std::string cur;
  std::stringstream ss(path);
  std::string part;
  if (!path.empty() && path[0] == '/') cur = "/";
  while (std::getline(ss, part, '/')) {
    if (part.empty()) continue;
    cur += part + "/";
    struct stat st;
    if (::stat(cur.c_str(), &st) != 0 && ::mkdir(cur.c_str(), 0755) != 0) return false;
  }
  return true;
}

std::string read_text(const std::string &p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Whole or not at all, never through a symlink planted at the name (the cache dir may be shared: cache=DIR).
bool write_text(const std::string &p, const std::string &s) { return am::files::write_atomic(p, s).empty(); }

size_t ipow(size_t b, size_t e) {
  size_t r = 1;
  while (e--) r *= b;
  return r;
}

std::string dstr(double v) {
  char b[40];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

// fsync a file or directory (best effort: a checkpoint is a convenience, the run does not fail on it).
void sync_path(const std::string &p) {
  const int fd = ::open(p.c_str(), O_RDONLY);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

am_status write_flat(am_context *ctx, const std::string &file, const std::vector<std::vector<double>> &blocks) {
  std::vector<double> flat;
  for (const auto &b : blocks) flat.insert(flat.end(), b.begin(), b.end());
  return write_vector(ctx, file, flat);
}

am_status read_flat(am_context *ctx, const std::string &file, const std::vector<size_t> &sizes,
                    std::vector<std::vector<double>> *out) {
  am_array *arr = nullptr;
  am_status st = am_npy_read(ctx, file.c_str(), &arr);
  if (st != AM_OK) return st;
  const am_array_view v = am_array_get_view(arr);
  const size_t total = std::accumulate(sizes.begin(), sizes.end(), size_t{0});
  if (v.dtype != AM_F64 || v.ndim != 1 || v.shape[0] != total) {
    am_array_destroy(&arr);
    return AM_ERR_FORMAT;
  }
  const double *d = static_cast<const double *>(v.data);
  out->assign(sizes.size(), {});
  for (size_t b = 0, off = 0; b < sizes.size(); off += sizes[b], ++b) (*out)[b].assign(d + off, d + off + sizes[b]);
  am_array_destroy(&arr);
  return AM_OK;
}

}  // namespace

std::string hash_key(const std::string &s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string cache_dir(const Options &o) {
  if (o.cache == "none" || o.cache == "off") return "";
  if (!o.cache.empty()) return o.cache;
  const char *x = std::getenv("XDG_CACHE_HOME");
  if (x && *x) return std::string(x) + "/attnmech";
  const char *home = std::getenv("HOME");
  if (home && *home) return std::string(home) + "/.cache/attnmech";
  return "";
}

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

// ------------------------------------------------------------------ data

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

// Background/evaluation image sets for a source, with a cache for the rendered Hershey set.
am_status load_source(am_context *ctx, const Options &o, uint64_t seed, const std::string &cdir, Prepared *p,
                      std::string *key) {
  const size_t side = p->tok.side;
  am_status st;
  if (o.source == "hershey") {
    *key = "hershey|dir=" + o.hershey_dir + "|side=" + std::to_string(side) + "|drawers=" + std::to_string(o.drawers) +
           "|seed=" + std::to_string(seed) + "|render=v1";
    const std::string dir = cdir.empty() ? "" : cdir + "/images-" + hash_key(*key);
    if (!dir.empty() && read_text(dir + "/key.txt") == *key &&
        load_imageset(nullptr, dir, "background", &p->background) == AM_OK &&
        load_imageset(nullptr, dir, "evaluation", &p->evaluation) == AM_OK) {
      p->images_from_cache = true;
      am_context_log(ctx, AM_LOG_INFO, "oneshot: rendered glyphs from the cache %s", dir.c_str());
      return AM_OK;
    }
    if ((st = render_hershey(ctx, o.hershey_dir, side, o.drawers, seed, &p->background, &p->evaluation)) != AM_OK)
      return st;
    if (!dir.empty()) {
      if (mkdirs(dir) && save_imageset(ctx, dir, "background", p->background) == AM_OK &&
          save_imageset(ctx, dir, "evaluation", p->evaluation) == AM_OK)
        write_text(dir + "/key.txt", *key);
      else
        am_context_log(ctx, AM_LOG_WARN, "oneshot: could not write the image cache %s", dir.c_str());
    }
    return AM_OK;
  }
  if (o.source.rfind("omniglot:", 0) == 0) {
    const std::string root = o.source.substr(9);
    *key = "omniglot|" + root + "|side=" + std::to_string(side);
    struct stat sb;
    if (::stat((root + "/images_background").c_str(), &sb) == 0 &&
        ::stat((root + "/images_evaluation").c_str(), &sb) == 0) {
      if ((st = load_png_tree(ctx, root + "/images_background", side, &p->background)) != AM_OK) return st;
      return load_png_tree(ctx, root + "/images_evaluation", side, &p->evaluation);
    }
    ImageSet all;
    if ((st = load_png_tree(ctx, root, side, &all)) != AM_OK) return st;
    // alphabets: the first 60 % (sorted) are background, the rest evaluation
    const size_t ng = all.group_names.size();
    if (ng < 2)
      return am_context_fail(ctx, AM_ERR_FORMAT, "oneshot: %s has one alphabet; need >= 2 to split background/evaluation",
                             root.c_str());
    const size_t nb = std::max<size_t>(1, std::min(ng - 1, size_t(std::ceil(0.6 * double(ng)))));
    for (int pass = 0; pass < 2; ++pass) {
      ImageSet &dst = pass == 0 ? p->background : p->evaluation;
      dst = ImageSet();
      dst.side = side;
      std::vector<int32_t> cmap(all.class_names.size(), -1), gmap(ng, -1);
      for (size_t g = 0; g < ng; ++g)
        if ((g < nb) == (pass == 0)) {
          gmap[g] = int32_t(dst.group_names.size());
          dst.group_names.push_back(all.group_names[g]);
        }
      for (size_t c = 0; c < all.class_names.size(); ++c)
        if (gmap[size_t(all.class_group[c])] >= 0) {
          cmap[c] = int32_t(dst.class_names.size());
          dst.class_names.push_back(all.class_names[c]);
          dst.class_group.push_back(gmap[size_t(all.class_group[c])]);
        }
      for (size_t i = 0; i < all.size(); ++i)
        if (cmap[size_t(all.label[i])] >= 0) {
          dst.label.push_back(cmap[size_t(all.label[i])]);
          dst.pixels.insert(dst.pixels.end(), all.image(i), all.image(i) + side * side);
        }
    }
    return AM_OK;
  }
  // IDX sources: classes 0..4 of the training file are background, 5..9 of the test file evaluation
  const std::string dir = o.source == "fashion-mnist" ? o.fashion_dir : o.source.substr(4);
  *key = "idx|" + dir + "|side=" + std::to_string(side);
  ImageSet tr, te;
  if ((st = load_idx_dir(ctx, dir, side, &tr, &te)) != AM_OK) return st;
  const int32_t ncls = int32_t(std::max(tr.class_names.size(), te.class_names.size()));
  const int32_t split = ncls / 2;
  if (split < 2) return am_context_fail(ctx, AM_ERR_FORMAT, "oneshot: %s has fewer than 4 classes", dir.c_str());
  for (int pass = 0; pass < 2; ++pass) {
    const ImageSet &src = pass == 0 ? tr : te;
    ImageSet &dst = pass == 0 ? p->background : p->evaluation;
    dst = ImageSet();
    dst.side = side;
    dst.group_names = {pass == 0 ? "classes 0.." + std::to_string(split - 1) : "classes " + std::to_string(split) + ".."};
    const int32_t lo = pass == 0 ? 0 : split, hi = pass == 0 ? split : ncls;
    for (int32_t c = lo; c < hi; ++c) {
      dst.class_names.push_back(std::to_string(c));
      dst.class_group.push_back(0);
    }
    for (size_t i = 0; i < src.size(); ++i)
      if (src.label[i] >= lo && src.label[i] < hi) {
        dst.label.push_back(src.label[i] - lo);
        dst.pixels.insert(dst.pixels.end(), src.image(i), src.image(i) + side * side);
      }
  }
  return AM_OK;
}

// OOD episodes: classes 0 vs 1 of an IDX set (supports from its training file, queries from its test file),
// or evaluation-split episodes of the Hershey set.
am_status load_ood(am_context *ctx, const Options &o, uint64_t seed, const std::string &cdir, am_rng *rng,
                   Prepared *p) {
  std::string which = o.ood;
  if (which == "auto") {
    std::string a, b;
    which = (o.source != "fashion-mnist" && find_idx_files(nullptr, o.fashion_dir, "t10k", &a, &b) == AM_OK)
                ? "fashion-mnist"
                : o.source != "hershey" ? "hershey" : "none";
    if (which == "none")
      am_context_log(ctx, AM_LOG_INFO, "oneshot: no out-of-distribution set (install dataset-fashion-mnist)");
  }
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

}  // namespace

am_status prepare(am_context *ctx, const Options &o, const am_rng &rng, const am::sdk::ParallelFor &pf,
                  Prepared *p) {
  am_status st = validate(ctx, o);
  if (st != AM_OK) return st;
  const uint64_t seed = rng.key;
  const std::string cdir = cache_dir(o);
  std::string img_key;
  if ((st = load_source(ctx, o, seed, cdir, p, &img_key)) != AM_OK) return st;
  p->norm = pixel_stats(p->background);
  am_context_log(ctx, AM_LOG_INFO, "oneshot: %zu background classes (%zu images), %zu evaluation classes (%zu images)",
                 p->background.class_names.size(), p->background.size(), p->evaluation.class_names.size(),
                 p->evaluation.size());
  // background classes: a random val_class_fraction is held out for validation episodes
  am_rng r_split, r_emb, r_train, r_val, r_test, r_ood, r_init, r_batches;
  am_rng_split(&rng, 11, &r_split);
  am_rng_split(&rng, 12, &r_emb);
  am_rng_split(&rng, 13, &r_train);
  am_rng_split(&rng, 14, &r_val);
  am_rng_split(&rng, 15, &r_test);
  am_rng_split(&rng, 16, &r_ood);
  am_rng_split(&rng, 17, &r_init);
  am_rng_split(&rng, 18, &r_batches);
  std::vector<int32_t> bg(p->background.class_names.size());
  std::iota(bg.begin(), bg.end(), 0);
  for (size_t i = bg.size(); i > 1; --i) std::swap(bg[i - 1], bg[size_t(am_rng_below(&r_split, i))]);
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
  make_embeddings(p->tok, &r_emb, &p->emb);

  auto build = [&](const ImageSet &s, const std::vector<int32_t> &cls, size_t n, am_rng *r, std::vector<double> *X,
                   std::vector<double> *y, const char *what) -> am_status {
    const auto eps = sample_episodes(s, cls, n, r, true);
    if (eps.size() != n)
      return am_context_fail(ctx, AM_ERR_FORMAT, "oneshot: cannot build %s episodes (need >= 2 classes with >= 2 images)",
                             what);
    episodes_to_X(p->tok, p->emb, s, p->norm, eps, X, y);
    return AM_OK;
  };
  if ((st = build(p->background, p->train_classes, o.P, &r_train, &p->X_train, &p->y_train, "training")) != AM_OK)
    return st;
  if ((st = build(p->background, p->val_classes, o.P_val, &r_val, &p->X_val, &p->y_val, "validation")) != AM_OK)
    return st;
  if ((st = build(p->evaluation, p->eval_classes, o.P_test, &r_test, &p->X_test, &p->y_test, "test")) != AM_OK)
    return st;
  if ((st = load_ood(ctx, o, seed, cdir, &r_ood, p)) != AM_OK) return st;
  if (am_context_progress(ctx, 0, 1, "oneshot: data ready")) return AM_CANCELLED;

  // the GD model, cached by everything that determines it
  const ModelShape &s = o.shape;
  std::string mkey = img_key + "|val_fraction=" + dstr(o.val_class_fraction) + "|seed=" + std::to_string(seed) +
                     "|L=" + std::to_string(s.L) + "|H=" + std::to_string(s.H) + "|G=" + std::to_string(s.G) +
                     "|W=" + std::to_string(s.W) + "|steps=" + std::to_string(o.train.steps) +
                     "|batch=" + std::to_string(o.train.batch) + "|lr=" + dstr(o.train.lr) +
                     "|wd=" + dstr(o.train.weight_decay) + "|model=v2";  // v2: gradient sums in fixed episode blocks
  const std::string mdir = cdir.empty() ? "" : cdir + "/model-" + hash_key(mkey);
  p->model.shape = s;
  p->model.shape.N0 = p->tok.N0();
  p->model.shape.S = p->tok.S();
  if (!mdir.empty() && read_text(mdir + "/key.txt") == mkey &&
      load_model(nullptr, mdir, p->model.shape, &p->model) == AM_OK) {
    p->model_from_cache = true;
    p->trained = true;
    p->steps_done = o.train.steps;
    std::ifstream f(mdir + "/log.txt");
    double a, b;
    f >> p->log.seconds;
    while (f >> a >> b) {
      p->log.step.push_back(a);
      p->log.loss.push_back(b);
    }
    am_context_log(ctx, AM_LOG_INFO, "oneshot: GD model from the cache %s", mdir.c_str());
    return AM_OK;
  }
  // A cancelled training of the same settings left a checkpoint: continue it (same bits as never stopping).
  TrainState state;
  if (!mdir.empty() && load_checkpoint(nullptr, mdir, mkey, p->model.shape, &state, &p->model, &p->log) == AM_OK) {
    p->resumed_from = state.step;
    am_context_log(ctx, AM_LOG_INFO, "oneshot: resuming the GD training at step %zu of %zu from the checkpoint in %s",
                   state.step, o.train.steps, mdir.c_str());
  } else {
    init_model(p->model.shape, &r_init, &p->model);
  }
  BatchCtx bc{p, r_batches, o.train.batch};
  am_context_log(ctx, AM_LOG_INFO, "oneshot: training the GD network (%zu steps of %zu episodes)", o.train.steps,
                 o.train.batch);
  Checkpoints ck;
  if (!mdir.empty())
    ck.fn = [&](const TrainState &s_now, const Model &m_now, const TrainLog &log_now) {
      if (mkdirs(mdir) && save_checkpoint(nullptr, mdir, mkey, s_now, m_now, log_now) == AM_OK) {
        p->checkpoint = mdir + "/checkpoint-" + std::to_string(s_now.step);
        am_context_log(ctx, AM_LOG_INFO, "oneshot: checkpoint at step %zu: %s", s_now.step, p->checkpoint.c_str());
      } else {
        am_context_log(ctx, AM_LOG_WARN, "oneshot: could not write a checkpoint in %s", mdir.c_str());
      }
    };
  p->trained = true;
  st = train(ctx, &p->model, o.train, make_batch, &bc, pf, &p->log, &state, ck);
  p->steps_done = state.step;
  if (st != AM_OK) return st;
  if (!mdir.empty()) {
    std::ostringstream lg;
    lg << dstr(p->log.seconds) << "\n";
    for (size_t i = 0; i < p->log.step.size(); ++i) lg << dstr(p->log.step[i]) << " " << dstr(p->log.loss[i]) << "\n";
    if (mkdirs(mdir) && save_model(ctx, mdir, p->model) == AM_OK && write_text(mdir + "/log.txt", lg.str()) &&
        write_text(mdir + "/key.txt", mkey))
      remove_checkpoints(mdir);  // the finished model replaces them
    else
      am_context_log(ctx, AM_LOG_WARN, "oneshot: could not write the model cache %s", mdir.c_str());
  }
  return AM_OK;
}

// ------------------------------------------------------------------ GD checkpoints

am_status save_checkpoint(am_context *ctx, const std::string &dir, const std::string &key, const TrainState &st,
                          const Model &m, const TrainLog &log) {
  const std::string name = "checkpoint-" + std::to_string(st.step), gen = dir + "/" + name;
  if (!mkdirs(gen)) return am_context_fail(ctx, AM_ERR_IO, "oneshot: cannot create %s", gen.c_str());
  std::ostringstream txt;
  txt << st.step << " " << dstr(st.run) << " " << st.run_n << " " << dstr(st.seconds) << "\n";
  for (size_t i = 0; i < log.step.size(); ++i) txt << dstr(log.step[i]) << " " << dstr(log.loss[i]) << "\n";
  am_status r = save_model(ctx, gen, m);
  if (r == AM_OK) r = write_flat(ctx, gen + "/adam_m.npy", st.mom);
  if (r == AM_OK) r = write_flat(ctx, gen + "/adam_v.npy", st.vel);
  if (r == AM_OK && !(write_text(gen + "/state.txt", txt.str()) && write_text(gen + "/key.txt", key)))
    r = am_context_fail(ctx, AM_ERR_IO, "oneshot: cannot write %s", gen.c_str());
  if (r != AM_OK) return r;
  for (const char *f : {"/params.npy", "/adam_m.npy", "/adam_v.npy", "/state.txt", "/key.txt"}) sync_path(gen + f);
  sync_path(gen);
  // The pointer names the whole generation; rename replaces it in one step.
  const std::string ptr = dir + "/checkpoint.txt";
  if (!write_text(ptr, name + "\n")) return am_context_fail(ctx, AM_ERR_IO, "oneshot: cannot write %s", ptr.c_str());
  sync_path(dir);
  std::error_code ec;
  for (const auto &e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("checkpoint-", 0) == 0 && n != name) std::filesystem::remove_all(e.path(), ec);
  }
  return AM_OK;
}

am_status load_checkpoint(am_context *ctx, const std::string &dir, const std::string &key, const ModelShape &s,
                          TrainState *st, Model *m, TrainLog *log) {
  std::string name = read_text(dir + "/checkpoint.txt");
  while (!name.empty() && (name.back() == '\n' || name.back() == ' ')) name.pop_back();
  if (name.rfind("checkpoint-", 0) != 0 || name.find('/') != std::string::npos) return AM_ERR_NOT_FOUND;
  const std::string gen = dir + "/" + name;
  if (read_text(gen + "/key.txt") != key) return AM_ERR_NOT_FOUND;
  Model model;
  if (load_model(ctx, gen, s, &model) != AM_OK) return AM_ERR_NOT_FOUND;
  TrainState state;
  const auto sizes = model.block_sizes();
  if (read_flat(ctx, gen + "/adam_m.npy", sizes, &state.mom) != AM_OK ||
      read_flat(ctx, gen + "/adam_v.npy", sizes, &state.vel) != AM_OK)
    return AM_ERR_NOT_FOUND;
  std::istringstream in(read_text(gen + "/state.txt"));
  if (!(in >> state.step >> state.run >> state.run_n >> state.seconds)) return AM_ERR_NOT_FOUND;
  TrainLog lg;
  double a, b;
  while (in >> a >> b) {
    lg.step.push_back(a);
    lg.loss.push_back(b);
  }
  *st = std::move(state);
  *m = std::move(model);
  *log = std::move(lg);
  log->seconds = st->seconds;
  return AM_OK;
}

void remove_checkpoints(const std::string &dir) {
  std::error_code ec;
  std::filesystem::remove(dir + "/checkpoint.txt", ec);
  for (const auto &e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().filename().string().rfind("checkpoint-", 0) == 0) std::filesystem::remove_all(e.path(), ec);
}

// ------------------------------------------------------------------ records

namespace {

#define TRY(expr)                          \
  do {                                     \
    am_status st_ = (expr);                \
    if (st_ != AM_OK) return st_;          \
  } while (0)

am_status put_X(am_record *ds, const char *key, const std::vector<double> &X, size_t S, size_t N0) {
  am_array_view v;
  std::memset(&v, 0, sizeof v);
  v.dtype = AM_F64;
  v.ndim = 3;
  v.shape[0] = X.size() / (S * N0);
  v.shape[1] = S;
  v.shape[2] = N0;
  v.data = X.data();
  return am_record_set_array(ds, key, &v);
}

am_status put_list(am_record *obj, const char *key, const std::vector<double> &v) {
  am_record *l = am_record_list(obj, key);
  if (!l) return AM_ERR_NO_MEMORY;
  for (double x : v) TRY(am_record_append_number(l, x));
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
  am_array_view v;
  std::memset(&v, 0, sizeof v);
  v.dtype = AM_F64;
  v.ndim = 2;
  v.shape[0] = Ht;
  v.shape[1] = N0;
  v.data = w.data();
  return am_record_set_array(net, "path_weights", &v);
}

am_status fill_dataset(const Options &o, const Prepared &p, am_record *ds) {
  const ModelShape &s = p.model.shape;
  const size_t N0 = s.N0, S = s.S;
  TRY(am_record_set_string(ds, "kind", AM_DATASET_ATTENTION));
  TRY(put_X(ds, "X_train", p.X_train, S, N0));
  TRY(am_record_set_vector(ds, "y_train", p.y_train.data(), p.y_train.size()));
  TRY(put_X(ds, "X_test", p.X_test, S, N0));
  TRY(am_record_set_vector(ds, "y_test", p.y_test.data(), p.y_test.size()));
  TRY(put_X(ds, "X_val", p.X_val, S, N0));
  TRY(am_record_set_vector(ds, "y_val", p.y_val.data(), p.y_val.size()));
  if (!p.y_ood.empty()) {
    TRY(put_X(ds, "X_ood", p.X_ood, S, N0));
    TRY(am_record_set_vector(ds, "y_ood", p.y_ood.data(), p.y_ood.size()));
  }
  TRY(put_list(ds, "heads", std::vector<double>(s.L, double(s.H))));
  TRY(put_list(ds, "widths", std::vector<double>(s.L + 1, o.widths_scan[0])));
  TRY(put_list(ds, "variances", std::vector<double>(s.L + 2, 1.0)));
  TRY(am_record_set_number(ds, "temperature", o.temperature));
  TRY(am_record_set_string(ds, "readout", "mean"));
  am_record *att = am_record_object(ds, "attention");
  if (!att) return AM_ERR_NO_MEMORY;
  for (size_t l = 0; l < s.L; ++l)
    for (size_t h = 0; h < s.H; ++h) {
      const std::string key = "l" + std::to_string(l + 1) + "_h" + std::to_string(h + 1);
      am_record *hd = am_record_object(att, key.c_str());
      if (!hd) return AM_ERR_NO_MEMORY;
      TRY(am_record_set_matrix(hd, "Q", p.model.Q[l * s.H + h].data(), s.G, N0, s.G));
      TRY(am_record_set_matrix(hd, "K", p.model.K[l * s.H + h].data(), s.G, N0, s.G));
    }
  am_record *pl = am_record_list(ds, "path_labels");
  if (!pl) return AM_ERR_NO_MEMORY;
  for (const auto &x : path_labels(s)) TRY(am_record_append_string(pl, x.c_str()));
  TRY(put_list(ds, "widths_scan", o.widths_scan));
  TRY(put_list(ds, "temperatures_scan", o.temperatures));
  return put_network(ds, p.model);
}

am_status put_data_summary(const Prepared &p, am_record *d) {
  if (!d) return AM_ERR_NO_MEMORY;
  TRY(am_record_set_number(d, "background_classes", double(p.background.class_names.size())));
  TRY(am_record_set_number(d, "background_images", double(p.background.size())));
  TRY(am_record_set_number(d, "train_classes", double(p.train_classes.size())));
  TRY(am_record_set_number(d, "val_classes", double(p.val_classes.size())));
  TRY(am_record_set_number(d, "evaluation_classes", double(p.evaluation.class_names.size())));
  TRY(am_record_set_number(d, "evaluation_images", double(p.evaluation.size())));
  TRY(am_record_set_number(d, "P", double(p.y_train.size())));
  TRY(am_record_set_number(d, "P_val", double(p.y_val.size())));
  TRY(am_record_set_number(d, "P_test", double(p.y_test.size())));
  TRY(am_record_set_number(d, "P_ood", double(p.y_ood.size())));
  TRY(am_record_set_number(d, "pixel_mean", p.norm.mean));
  TRY(am_record_set_number(d, "pixel_std", p.norm.std));
  TRY(am_record_set_number(d, "N0", double(p.model.shape.N0)));
  TRY(am_record_set_number(d, "S", double(p.model.shape.S)));
  TRY(am_record_set_bool(d, "images_from_cache", p.images_from_cache));
  am_record *fam = am_record_list(d, "background_alphabets");
  if (!fam) return AM_ERR_NO_MEMORY;
  for (const auto &x : p.background.group_names) TRY(am_record_append_string(fam, x.c_str()));
  fam = am_record_list(d, "evaluation_alphabets");
  if (!fam) return AM_ERR_NO_MEMORY;
  for (const auto &x : p.evaluation.group_names) TRY(am_record_append_string(fam, x.c_str()));
  return AM_OK;
}

// The GD network: settings, training curve, accuracy on every episode set, path-weight overlap (§7.4).
// A partial training (cancelled) gets everything but the accuracies, which would delay the stop.
am_status put_gd(am_context *ctx, const Options &o, const Prepared &p, const am::sdk::ParallelFor &pf,
                 am_record *gd, bool evaluate) {
  if (!gd) return AM_ERR_NO_MEMORY;
  const ModelShape &s = p.model.shape;
  const size_t Ht = ipow(s.H, s.L);
  TRY(am_record_set_number(gd, "L", double(s.L)));
  TRY(am_record_set_number(gd, "H", double(s.H)));
  TRY(am_record_set_number(gd, "G", double(s.G)));
  TRY(am_record_set_number(gd, "width", double(s.W)));
  TRY(am_record_set_number(gd, "steps", double(o.train.steps)));
  TRY(am_record_set_number(gd, "batch", double(o.train.batch)));
  TRY(am_record_set_number(gd, "lr", o.train.lr));
  TRY(am_record_set_number(gd, "weight_decay", o.train.weight_decay));
  TRY(am_record_set_number(gd, "train_seconds", p.log.seconds));
  TRY(am_record_set_bool(gd, "from_cache", p.model_from_cache));
  TRY(am_record_set_number(gd, "steps_done", double(p.steps_done)));
  TRY(am_record_set_number(gd, "resumed_from", double(p.resumed_from)));
  TRY(am_record_set_bool(gd, "completed", p.steps_done >= o.train.steps));
  TRY(am_record_set_string(gd, "checkpoint", p.steps_done >= o.train.steps ? "" : p.checkpoint.c_str()));
  am_record *heads = am_record_object(gd, "heads");  // the trained query/key heads, l<l>_h<h>: Q, K (G × N0)
  if (!heads) return AM_ERR_NO_MEMORY;
  for (size_t l = 0; l < s.L; ++l)
    for (size_t h = 0; h < s.H; ++h) {
      am_record *hd = am_record_object(heads, ("l" + std::to_string(l + 1) + "_h" + std::to_string(h + 1)).c_str());
      if (!hd) return AM_ERR_NO_MEMORY;
      TRY(am_record_set_matrix(hd, "Q", p.model.Q[l * s.H + h].data(), s.G, s.N0, s.G));
      TRY(am_record_set_matrix(hd, "K", p.model.K[l * s.H + h].data(), s.G, s.N0, s.G));
    }
  TRY(am_record_set_vector(gd, "loss_step", p.log.step.data(), p.log.step.size()));
  TRY(am_record_set_vector(gd, "loss", p.log.loss.data(), p.log.loss.size()));
  if (!evaluate) return AM_OK;
  auto gd_acc = [&](const std::vector<double> &X, const std::vector<double> &y) {
    if (y.empty()) return double(NAN);
    std::vector<double> f(y.size());
    forward(p.model, Mask(), y.size(), X.data(), f.data(), pf);
    return sign_accuracy(f.data(), y.data(), y.size());
  };
  am_record *a = am_record_object(gd, "accuracy");
  if (!a) return AM_ERR_NO_MEMORY;
  TRY(am_record_set_number(a, "train", gd_acc(p.X_train, p.y_train)));
  TRY(am_record_set_number(a, "val", gd_acc(p.X_val, p.y_val)));
  TRY(am_record_set_number(a, "test", gd_acc(p.X_test, p.y_test)));
  if (!p.y_ood.empty()) TRY(am_record_set_number(a, "ood", gd_acc(p.X_ood, p.y_ood)));
  const auto ov = path_overlap(p.model);
  TRY(am_record_set_matrix(gd, "path_overlap", ov.data(), Ht, Ht, Ht));
  am_context_log(ctx, AM_LOG_INFO, "oneshot: GD accuracy train %.4f val %.4f test %.4f",
                 am_record_number(am_record_get(a, "train")), am_record_number(am_record_get(a, "val")),
                 am_record_number(am_record_get(a, "test")));
  return AM_OK;
}

am_status fill_extras(am_context *ctx, const Options &o, const Prepared &p, const am::sdk::ParallelFor &pf,
                      am_record *ex, bool evaluate = true) {
  TRY(am_record_set_string(ex, "source", o.source.c_str()));
  TRY(am_record_set_string(ex, "ood_source", p.ood_name.c_str()));
  TRY(put_data_summary(p, am_record_object(ex, "data")));
  am_record *l = am_record_list(ex, "path_labels");
  if (!l) return AM_ERR_NO_MEMORY;
  for (const auto &x : path_labels(p.model.shape)) TRY(am_record_append_string(l, x.c_str()));
  am_record *hl = am_record_list(ex, "head_labels");
  if (!hl) return AM_ERR_NO_MEMORY;
  for (const auto &x : head_labels(p.model.shape)) TRY(am_record_append_string(hl, x.c_str()));
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
  TRY(fill_dataset(o, p, ds));
  if (ex) TRY(fill_extras(ctx, o, p, pf, ex));
  am_context_progress(ctx, 1, 1, "oneshot: done");
  return AM_OK;
}

#undef TRY

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

}  // namespace oneshot
