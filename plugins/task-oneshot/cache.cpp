// attnmech — task "oneshot": the on-disk cache (cache=DIR, else $XDG_CACHE_HOME/attnmech): the rendered Hershey
// images, the trained GD model, and the checkpoints of a training that was stopped (docs/oneshot.md
// "Checkpoints"). Every entry carries a key.txt naming what determines it; an entry whose key differs is ignored.
// The cache dir may be shared (cache=DIR), so text files are written by am::files::write_atomic (never through a
// planted symlink, whole or not at all).
#include "oneshot_core.h"

#include <common/safe_file.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>

#include <fcntl.h>
#include <unistd.h>

namespace am::oneshot {

namespace {

std::string read_text(const std::string &p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool write_text(const std::string &p, const std::string &s) { return am::files::write_atomic(p, s).empty(); }

bool make_dirs(const std::string &path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  return !ec;
}

std::string dstr(double v) {
  char b[40];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

// The training curve as text lines "step loss" (the model cache's log.txt and a checkpoint's state.txt).
std::string loss_lines(const TrainLog &log) {
  std::ostringstream txt;
  for (size_t i = 0; i < log.step.size(); ++i) txt << dstr(log.step[i]) << " " << dstr(log.loss[i]) << "\n";
  return txt.str();
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

// ------------------------------------------------------------------ rendered images

bool load_cached_images(const std::string &dir, const std::string &key, Prepared *p) {
  return !dir.empty() && read_text(dir + "/key.txt") == key &&
         load_imageset(nullptr, dir, "background", &p->background) == AM_OK &&
         load_imageset(nullptr, dir, "evaluation", &p->evaluation) == AM_OK;
}

void save_cached_images(am_context *ctx, const std::string &dir, const std::string &key, const Prepared &p) {
  if (dir.empty()) return;
  // key.txt last: an entry without it (a writer stopped half-way) is never read
  if (make_dirs(dir) && save_imageset(ctx, dir, "background", p.background) == AM_OK &&
      save_imageset(ctx, dir, "evaluation", p.evaluation) == AM_OK)
    write_text(dir + "/key.txt", key);
  else
    am_context_log(ctx, AM_LOG_WARN, "oneshot: could not write the image cache %s", dir.c_str());
}

// ------------------------------------------------------------------ the trained model

std::string model_cache_key(const Options &o, const std::string &img_key, uint64_t seed) {
  const ModelShape &s = o.shape;
  return img_key + "|val_fraction=" + dstr(o.val_class_fraction) + "|seed=" + std::to_string(seed) +
         "|L=" + std::to_string(s.L) + "|H=" + std::to_string(s.H) + "|G=" + std::to_string(s.G) +
         "|W=" + std::to_string(s.W) + "|steps=" + std::to_string(o.train.steps) +
         "|batch=" + std::to_string(o.train.batch) + "|lr=" + dstr(o.train.lr) +
         "|wd=" + dstr(o.train.weight_decay) + "|model=v2";  // v2: gradient sums in fixed episode blocks
}

bool load_cached_model(const std::string &dir, const std::string &key, Prepared *p) {
  if (dir.empty() || read_text(dir + "/key.txt") != key ||
      load_model(nullptr, dir, p->model.shape, &p->model) != AM_OK)
    return false;
  std::ifstream f(dir + "/log.txt");
  double a, b;
  f >> p->log.seconds;
  while (f >> a >> b) {
    p->log.step.push_back(a);
    p->log.loss.push_back(b);
  }
  return true;
}

void save_cached_model(am_context *ctx, const std::string &dir, const std::string &key, const Prepared &p) {
  if (dir.empty()) return;
  const std::string log = dstr(p.log.seconds) + "\n" + loss_lines(p.log);
  if (make_dirs(dir) && save_model(ctx, dir, p.model) == AM_OK && write_text(dir + "/log.txt", log) &&
      write_text(dir + "/key.txt", key))
    remove_checkpoints(dir);  // the finished model replaces them
  else
    am_context_log(ctx, AM_LOG_WARN, "oneshot: could not write the model cache %s", dir.c_str());
}

// ------------------------------------------------------------------ GD checkpoints

am_status save_checkpoint(am_context *ctx, const std::string &dir, const std::string &key, const TrainState &st,
                          const Model &m, const TrainLog &log) {
  const std::string name = "checkpoint-" + std::to_string(st.step), gen = dir + "/" + name;
  if (!make_dirs(gen)) return am_context_fail(ctx, AM_ERR_IO, "oneshot: cannot create %s", gen.c_str());
  const std::string state = std::to_string(st.step) + " " + dstr(st.run) + " " + std::to_string(st.run_n) + " " +
                            dstr(st.seconds) + "\n" + loss_lines(log);
  am_status r = save_model(ctx, gen, m);
  if (r == AM_OK) r = write_flat(ctx, gen + "/adam_m.npy", st.mom);
  if (r == AM_OK) r = write_flat(ctx, gen + "/adam_v.npy", st.vel);
  if (r == AM_OK && !(write_text(gen + "/state.txt", state) && write_text(gen + "/key.txt", key)))
    r = am_context_fail(ctx, AM_ERR_IO, "oneshot: cannot write %s", gen.c_str());
  if (r != AM_OK) return r;
  // The generation must be on disk before the pointer names it. write_atomic synced the text files; the arrays
  // (am_npy_write) and the generation directory's entries are synced here.
  for (const char *f : {"/params.npy", "/adam_m.npy", "/adam_v.npy"}) sync_path(gen + f);
  sync_path(gen);
  // The pointer names the whole generation; write_atomic replaces it in one step (a rename), and syncing `dir`
  // makes that rename durable before the older generations are removed.
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

}  // namespace am::oneshot
