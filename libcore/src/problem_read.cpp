// attnmech — problem directories of the `npy` task (docs/tasks.md, problem.h): a directory of .npy files and
// model.json read into an attention dataset. The writer is problem_write.cpp.
#include "internal.hpp"
#include <common/read_input.hpp>  // read_regular_file, parse_strict: model.json is read as every JSON input is
#include <nlohmann/json.hpp>

#include <attnmech/plugin.hpp>  // am::sdk::Array

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <new>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using pjson = nlohmann::json;

// One array read from disk, converted to C-order f64.
struct Loaded {
  std::vector<size_t> shape;
  std::vector<double> data;
};

std::string shape_str(const std::vector<size_t> &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

// Expected shape with 0 = "any" (printed as the given symbol).
std::string expected_str(const std::vector<size_t> &s, const std::vector<const char *> &names) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    r += i ? ", " : "";
    r += s[i] ? std::to_string(s[i]) : std::string(names[i]);
  }
  return r + "]";
}

// Present at all (any kind, symlinks followed): a directory or FIFO under a data file's name is present,
// and the reader then says what it is instead of calling the file missing.
bool file_exists(const fs::path &p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

// model.json must be a regular file; anything else is named.
am_status check_regular(am_context *ctx, const fs::path &p) {
  std::error_code ec;
  const fs::file_status s = fs::status(p, ec);
  if (!fs::exists(s)) return am_context_fail(ctx, AM_ERR_IO, "npy: missing file '%s'", p.string().c_str());
  if (fs::is_regular_file(s)) return AM_OK;
  const char *what = fs::is_directory(s) ? "a directory" : fs::is_fifo(s) ? "a FIFO"
                     : fs::is_character_file(s) ? "a character device" : "not a regular file";
  return am_context_fail(ctx, AM_ERR_FORMAT, "npy: '%s' is %s, not a file", p.string().c_str(), what);
}

// Reads `file` (must exist), checks rank and the fixed dims of `expect` (0 = free), finiteness.
am_status read_array(am_context *ctx, const fs::path &file, const std::vector<size_t> &expect,
                     const std::vector<const char *> &names, Loaded *out) {
  const std::string fn = file.string();
  if (!file_exists(file)) return am_context_fail(ctx, AM_ERR_IO, "npy: missing file '%s'", fn.c_str());
  am::sdk::Array arr;
  am_status st = am_npy_read(ctx, fn.c_str(), arr.out());
  if (st != AM_OK) {
    // keep the reader's message but make sure the file is named
    const std::string msg = am_context_last_error(ctx);
    if (msg.find(fn) != std::string::npos) return st;
    return am_context_fail(ctx, st, "npy: cannot read '%s': %s", fn.c_str(), msg.c_str());
  }
  const am_array_view v = am_array_get_view(arr.get());
  out->shape.assign(v.shape, v.shape + v.ndim);
  bool ok = v.ndim == expect.size();
  for (size_t i = 0; ok && i < expect.size(); ++i)
    if (expect[i] && v.shape[i] != expect[i]) ok = false;
  if (!ok)
    return am_context_fail(ctx, AM_ERR_SHAPE, "npy: '%s' has shape %s, expected %s", fn.c_str(),
                           shape_str(out->shape).c_str(), expected_str(expect, names).c_str());
  for (size_t i = 0; i < v.ndim; ++i)
    if (v.shape[i] == 0)
      return am_context_fail(ctx, AM_ERR_SHAPE, "npy: '%s' has an empty dimension (shape %s)", fn.c_str(),
                             shape_str(out->shape).c_str());
  const size_t n = am_array_view_count(&v);
  out->data.assign(n, 0.0);
  st = am_array_to_f64_c(ctx, &v, out->data.data(), n);
  if (st != AM_OK) return am_context_fail(ctx, st, "npy: '%s': cannot convert to float64", fn.c_str());
  for (size_t k = 0; k < n; ++k)
    if (!std::isfinite(out->data[k])) {
      // name the position in C-order indices
      std::vector<size_t> idx(v.ndim);
      size_t r = k;
      for (size_t d = v.ndim; d-- > 0;) {
        idx[d] = r % v.shape[d];
        r /= v.shape[d];
      }
      return am_context_fail(ctx, AM_ERR_NONFINITE, "npy: '%s' holds a non-finite value (%g) at index %s",
                             fn.c_str(), out->data[k], shape_str(idx).c_str());
    }
  return AM_OK;
}

am_status store(am_context *ctx, am_record *obj, const char *key, const Loaded &a) {
  const am_array_view v =
      am_array_view_make(AM_F64, static_cast<uint32_t>(a.shape.size()), a.shape.data(), 0, a.data.data());
  am_status st = am_record_set_array(obj, key, &v);
  if (st != AM_OK) return am_context_fail(ctx, st, "npy: cannot store '%s' in the dataset", key);
  return AM_OK;
}

struct Model {
  std::string readout;
  std::vector<size_t> heads;
  std::vector<double> widths, variances;
  double temperature = 0;
  std::string form;  // "" = infer per head
  std::vector<std::string> path_labels;
  std::vector<double> widths_scan;
};

am_status bad(am_context *ctx, const std::string &file, const std::string &what) {
  return am_context_fail(ctx, AM_ERR_FORMAT, "npy: '%s': %s", file.c_str(), what.c_str());
}

am_status number_list(am_context *ctx, const std::string &file, const pjson &j, const char *key, bool positive,
                      std::vector<double> *out) {
  if (!j.contains(key)) return bad(ctx, file, std::string("missing key \"") + key + "\"");
  const pjson &a = j.at(key);
  if (!a.is_array() || a.empty()) return bad(ctx, file, std::string("\"") + key + "\" must be a non-empty list of numbers");
  out->clear();
  for (const pjson &e : a) {
    if (!e.is_number())
      return bad(ctx, file, std::string("\"") + key + "\" must be a list of numbers (found " + e.dump() + ")");
    const double x = e.get<double>();
    if (!std::isfinite(x) || (positive && !(x > 0)))
      return bad(ctx, file, std::string("\"") + key + "\" entries must be " + (positive ? "> 0" : "finite") +
                                " (found " + e.dump() + ")");
    out->push_back(x);
  }
  return AM_OK;
}

std::string fmt(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", x);
  return b;
}

// Widths are whole numbers of units in [1, AM_WIDTH_MAX], as everywhere else (am_dataset_arch, --set widths).
am_status whole_widths(am_context *ctx, const std::string &file, const char *key, const std::vector<double> &w) {
  for (double x : w)
    if (x != std::floor(x) || x < 1 || x > AM_WIDTH_MAX)
      return bad(ctx, file, std::string("\"") + key + "\" entries must be whole numbers in [1, " + fmt(AM_WIDTH_MAX) +
                                "] (found " + fmt(x) + ")");
  return AM_OK;
}

// model.json as a JSON object (a regular file of bounded size, depth-limited JSON); unknown keys are warnings.
am_status read_model_json(am_context *ctx, const fs::path &path, pjson *j) {
  const std::string file = path.string();
  if (am_status st = check_regular(ctx, path)) return st;
  std::string text;
  try {
    text = am::input::read_regular_file(file, am::input::kMaxSpecBytes, "a file");
  } catch (const am::input::Error &e) {
    return am_context_fail(ctx, e.code, "npy: %s", e.what());
  }
  try {
    *j = am::input::parse_strict<pjson>(text);
  } catch (const std::exception &e) {
    return bad(ctx, file, std::string("invalid JSON: ") + e.what());
  }
  if (!j->is_object()) return bad(ctx, file, "must hold a JSON object");
  static const char *const known[] = {"readout", "heads", "widths", "variances", "temperature",
                                      "form", "path_labels", "widths_scan"};
  for (auto it = j->begin(); it != j->end(); ++it) {
    bool k = false;
    for (const char *s : known) k = k || it.key() == s;
    if (!k) am_context_log(ctx, AM_LOG_WARN, "npy: '%s': unknown key \"%s\" ignored", file.c_str(), it.key().c_str());
  }
  return AM_OK;
}

am_status read_readout(am_context *ctx, const std::string &file, pjson &j, Model *m) {
  if (!j.contains("readout")) return bad(ctx, file, "missing key \"readout\" (\"last\", \"first\" or \"mean\")");
  if (!j["readout"].is_string()) return bad(ctx, file, "\"readout\" must be a string: \"last\", \"first\" or \"mean\"");
  m->readout = j["readout"].get<std::string>();
  if (m->readout != "last" && m->readout != "first" && m->readout != "mean")
    return bad(ctx, file, "\"readout\" must be \"last\", \"first\" or \"mean\" (got \"" + m->readout + "\")");
  return AM_OK;
}

// heads [H_1..H_L], widths [W0..WL], variances [s0..sL, sa]: the architecture, sizes checked against L.
am_status read_architecture(am_context *ctx, const std::string &file, const pjson &j, Model *m) {
  std::vector<double> h;
  am_status st = number_list(ctx, file, j, "heads", true, &h);
  if (st != AM_OK) return st;
  if (h.size() > AM_MAX_LAYERS)
    return bad(ctx, file, "\"heads\" lists " + std::to_string(h.size()) + " layers, at most " +
                              std::to_string(AM_MAX_LAYERS) + " are supported");
  m->heads.clear();
  for (double x : h) {
    if (x != std::floor(x) || x > 1e6) return bad(ctx, file, "\"heads\" entries must be whole numbers >= 1");
    m->heads.push_back(static_cast<size_t>(x));
  }
  const size_t L = m->heads.size();
  if ((st = number_list(ctx, file, j, "widths", true, &m->widths)) != AM_OK) return st;
  if ((st = whole_widths(ctx, file, "widths", m->widths)) != AM_OK) return st;
  if (m->widths.size() != L + 1)
    return bad(ctx, file, "\"widths\" needs L+1 = " + std::to_string(L + 1) + " entries [W0..WL], got " +
                              std::to_string(m->widths.size()));
  if ((st = number_list(ctx, file, j, "variances", true, &m->variances)) != AM_OK) return st;
  if (m->variances.size() != L + 2)
    return bad(ctx, file, "\"variances\" needs L+2 = " + std::to_string(L + 2) + " entries [s0..sL, sa], got " +
                              std::to_string(m->variances.size()));
  return AM_OK;
}

am_status read_temperature_and_form(am_context *ctx, const std::string &file, pjson &j, Model *m) {
  if (!j.contains("temperature")) return bad(ctx, file, "missing key \"temperature\"");
  if (!j["temperature"].is_number() || !(j["temperature"].get<double>() >= AM_TEMPERATURE_MIN) ||
      !(j["temperature"].get<double>() <= AM_TEMPERATURE_MAX))
    return bad(ctx, file, "\"temperature\" must be a number in [" + fmt(AM_TEMPERATURE_MIN) + ", " +
                              fmt(AM_TEMPERATURE_MAX) + "] (got " + j["temperature"].dump() + ")");
  m->temperature = j["temperature"].get<double>();
  m->form.clear();
  if (j.contains("form")) {
    if (!j["form"].is_string()) return bad(ctx, file, "\"form\" must be \"bilinear\" or \"qk\"");
    m->form = j["form"].get<std::string>();
    if (m->form != "bilinear" && m->form != "qk")
      return bad(ctx, file, "unknown \"form\" \"" + m->form + "\" (expected \"bilinear\" or \"qk\")");
  }
  return AM_OK;
}

// The optional path_labels (one per path) and widths_scan.
am_status read_labels_and_scan(am_context *ctx, const std::string &file, pjson &j, Model *m) {
  m->path_labels.clear();
  if (j.contains("path_labels")) {
    const pjson &a = j["path_labels"];
    size_t H = 1;
    for (size_t x : m->heads) H *= x;
    if (!a.is_array() || a.size() != H)
      return bad(ctx, file, "\"path_labels\" must be a list of H_tot = " + std::to_string(H) + " strings");
    for (const pjson &e : a) {
      if (!e.is_string()) return bad(ctx, file, "\"path_labels\" must hold strings");
      m->path_labels.push_back(e.get<std::string>());
    }
  }
  m->widths_scan.clear();
  am_status st = AM_OK;
  if (j.contains("widths_scan") &&
      ((st = number_list(ctx, file, j, "widths_scan", true, &m->widths_scan)) != AM_OK ||
       (st = whole_widths(ctx, file, "widths_scan", m->widths_scan)) != AM_OK))
    return st;
  return AM_OK;
}

am_status read_model(am_context *ctx, const fs::path &path, Model *m) {
  const std::string file = path.string();
  pjson j;
  AM_TRY(read_model_json(ctx, path, &j));
  AM_TRY(read_readout(ctx, file, j, m));
  AM_TRY(read_architecture(ctx, file, j, m));
  AM_TRY(read_temperature_and_form(ctx, file, j, m));
  return read_labels_and_scan(ctx, file, j, m);
}

// The examples of a problem directory: X_train [P, S, N0], y_train [P], and X_test/y_test (both or neither).
struct Examples {
  Loaded X, y, Xt, yt;
  bool has_test = false;
};

am_status read_examples(am_context *ctx, const fs::path &dir, Examples *e) {
  am_status st;
  if ((st = read_array(ctx, dir / "X_train.npy", {0, 0, 0}, {"P", "S", "N0"}, &e->X)) != AM_OK) return st;
  const size_t P = e->X.shape[0], S = e->X.shape[1], N0 = e->X.shape[2];
  if ((st = read_array(ctx, dir / "y_train.npy", {0}, {"P"}, &e->y)) != AM_OK) return st;
  if (e->y.shape[0] != P)
    return am_context_fail(ctx, AM_ERR_SHAPE, "npy: '%s' holds %zu labels but X_train.npy has P = %zu examples",
                           (dir / "y_train.npy").string().c_str(), e->y.shape[0], P);
  const bool has_xt = file_exists(dir / "X_test.npy"), has_yt = file_exists(dir / "y_test.npy");
  if (has_xt != has_yt)
    return am_context_fail(ctx, AM_ERR_IO, "npy: missing file '%s' (X_test.npy and y_test.npy come together)",
                           (dir / (has_xt ? "y_test.npy" : "X_test.npy")).string().c_str());
  e->has_test = has_xt;
  if (has_xt) {
    if ((st = read_array(ctx, dir / "X_test.npy", {0, S, N0}, {"P_test", "S", "N0"}, &e->Xt)) != AM_OK) return st;
    if ((st = read_array(ctx, dir / "y_test.npy", {0}, {"P_test"}, &e->yt)) != AM_OK) return st;
    if (e->yt.shape[0] != e->Xt.shape[0])
      return am_context_fail(ctx, AM_ERR_SHAPE, "npy: '%s' holds %zu labels but X_test.npy has %zu examples",
                             (dir / "y_test.npy").string().c_str(), e->yt.shape[0], e->Xt.shape[0]);
  }
  for (const Loaded *lab : {&e->y, &e->yt})
    for (double v : lab->data)
      if (v != 1.0 && v != -1.0) {
        am_context_log(ctx, AM_LOG_WARN, "npy: labels are not all +-1 (found %g): accuracies use their sign", v);
        break;
      }
  return AM_OK;
}

// Head `tag` (l<l>_h<h>) into `att`: W_<tag>.npy [N0, N0] (bilinear) or Q_<tag>.npy + K_<tag>.npy [G, N0].
am_status read_head(am_context *ctx, const fs::path &dir, const Model &m, const std::string &tag, size_t N0,
                    am_record *att) {
  const fs::path fw = dir / ("W_" + tag + ".npy"), fq = dir / ("Q_" + tag + ".npy"), fk = dir / ("K_" + tag + ".npy");
  const bool hw = file_exists(fw), hq = file_exists(fq), hk = file_exists(fk);
  if (hw && (hq || hk))
    return am_context_fail(ctx, AM_ERR_FORMAT, "npy: head %s has both '%s' and '%s': keep one form", tag.c_str(),
                           fw.string().c_str(), (hq ? fq : fk).string().c_str());
  if (!hw && !hq && !hk)
    return am_context_fail(ctx, AM_ERR_IO, "npy: missing head %s: expected '%s' or '%s' + '%s'", tag.c_str(),
                           fw.string().c_str(), fq.string().c_str(), fk.string().c_str());
  const bool bilinear = hw;
  if (!m.form.empty() && (m.form == "bilinear") != bilinear)
    return am_context_fail(ctx, AM_ERR_FORMAT, "npy: model.json says form \"%s\" but head %s is given as %s",
                           m.form.c_str(), tag.c_str(), bilinear ? "W (bilinear)" : "Q/K");
  am_status st;
  if (bilinear) {
    Loaded W;
    if ((st = read_array(ctx, fw, {N0, N0}, {"N0", "N0"}, &W)) != AM_OK) return st;
    return store(ctx, att, tag.c_str(), W);
  }
  if (!hq || !hk)
    return am_context_fail(ctx, AM_ERR_IO, "npy: missing file '%s' (head %s given in Q/K form needs both)",
                           (hq ? fk : fq).string().c_str(), tag.c_str());
  Loaded Q, K;
  if ((st = read_array(ctx, fq, {0, N0}, {"G", "N0"}, &Q)) != AM_OK) return st;
  if ((st = read_array(ctx, fk, {Q.shape[0], N0}, {"G", "N0"}, &K)) != AM_OK) return st;
  am_record *qk = am_record_object(att, tag.c_str());
  if (!qk) return am_context_fail(ctx, AM_ERR_NO_MEMORY, "npy: out of memory");
  if ((st = store(ctx, qk, "Q", Q)) != AM_OK) return st;
  return store(ctx, qk, "K", K);
}

// Every head of the model into ds.attention, layer by layer; head files beyond the model's heads are probably a
// mistake: a warning each.
am_status read_heads(am_context *ctx, const fs::path &dir, const Model &m, size_t N0, am_record *ds) {
  am_record *att = am_record_object(ds, "attention");
  if (!att) return am_context_fail(ctx, AM_ERR_NO_MEMORY, "npy: out of memory");
  for (size_t l = 1; l <= m.heads.size(); ++l)
    for (size_t h = 1; h <= m.heads[l - 1]; ++h)
      AM_TRY(read_head(ctx, dir, m, "l" + std::to_string(l) + "_h" + std::to_string(h), N0, att));
  std::error_code ec;
  for (const auto &e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    unsigned l = 0, h = 0;
    char c = 0;
    if (name.size() > 4 && (name[0] == 'W' || name[0] == 'Q' || name[0] == 'K') &&
        std::sscanf(name.c_str() + 1, "_l%u_h%u.np%c", &l, &h, &c) == 3 &&
        (l < 1 || l > m.heads.size() || h < 1 || h > m.heads[l - 1]))
      am_context_log(ctx, AM_LOG_WARN, "npy: '%s' is not used: model.json has heads %s", e.path().string().c_str(),
                     shape_str(m.heads).c_str());
  }
  return AM_OK;
}

am_status build_failed(am_context *ctx, am_status code) {
  return am_context_fail(ctx, code, "npy: cannot build the dataset record");
}

// kind, the example arrays and `sources` (dataset.h: messages about these arrays' values, e.g. overflow in ξ,
// name the file).
am_status store_examples(am_context *ctx, const fs::path &dir, const Examples &e, am_record *ds) {
  am_status st;
  if ((st = am_record_set_string(ds, "kind", AM_DATASET_ATTENTION)) != AM_OK) return build_failed(ctx, st);
  if ((st = store(ctx, ds, "X_train", e.X)) != AM_OK) return st;
  if ((st = store(ctx, ds, "y_train", e.y)) != AM_OK) return st;
  if (e.has_test) {
    if ((st = store(ctx, ds, "X_test", e.Xt)) != AM_OK) return st;
    if ((st = store(ctx, ds, "y_test", e.yt)) != AM_OK) return st;
  }
  am_record *src = am_record_object(ds, "sources");
  if (!src) return build_failed(ctx, AM_ERR_NO_MEMORY);
  for (const char *k : {"X_train", "y_train", "X_test", "y_test"})
    if ((std::string(k).find("test") == std::string::npos || e.has_test) &&
        (st = am_record_set_string(src, k, (dir / (std::string(k) + ".npy")).string().c_str())) != AM_OK)
      return build_failed(ctx, st);
  return AM_OK;
}

// heads, widths, variances, temperature, readout, path_labels and widths_scan of model.json.
am_status store_model(am_context *ctx, const Model &m, am_record *ds) {
  am_status st;
  am_record *lh = am_record_list(ds, "heads");
  am_record *lw = am_record_list(ds, "widths");
  am_record *lv = am_record_list(ds, "variances");
  if (!lh || !lw || !lv) return build_failed(ctx, AM_ERR_NO_MEMORY);
  for (size_t x : m.heads)
    if ((st = am_record_append_number(lh, double(x))) != AM_OK) return build_failed(ctx, st);
  for (double x : m.widths)
    if ((st = am_record_append_number(lw, x)) != AM_OK) return build_failed(ctx, st);
  for (double x : m.variances)
    if ((st = am_record_append_number(lv, x)) != AM_OK) return build_failed(ctx, st);
  if ((st = am_record_set_number(ds, "temperature", m.temperature)) != AM_OK) return build_failed(ctx, st);
  if ((st = am_record_set_string(ds, "readout", m.readout.c_str())) != AM_OK) return build_failed(ctx, st);
  if (!m.path_labels.empty()) {
    am_record *pl = am_record_list(ds, "path_labels");
    if (!pl) return build_failed(ctx, AM_ERR_NO_MEMORY);
    for (const auto &s : m.path_labels)
      if ((st = am_record_append_string(pl, s.c_str())) != AM_OK) return build_failed(ctx, st);
  }
  if (!m.widths_scan.empty()) {
    am_record *sc = am_record_list(ds, "widths_scan");
    if (!sc) return build_failed(ctx, AM_ERR_NO_MEMORY);
    for (double x : m.widths_scan)
      if ((st = am_record_append_number(sc, x)) != AM_OK) return build_failed(ctx, st);
  }
  return AM_OK;
}

// The dataset record is built in this order (its keys keep it): attention, kind, examples, sources, model.
am_status load(am_context *ctx, const char *dir_c, am_record *ds) {
  if (!dir_c || !*dir_c)
    return am_context_fail(ctx, AM_ERR_USAGE,
                           "npy: parameter 'dir' is required: the directory holding X_train.npy, y_train.npy, "
                           "head files and model.json (e.g. --set dir=/path/to/problem)");
  if (!ds) return am_context_fail(ctx, AM_ERR_INVALID_ARGUMENT, "npy: no dataset record");
  const fs::path dir(dir_c);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return am_context_fail(ctx, AM_ERR_IO, "npy: '%s' is not a directory", dir_c);
  Model m;
  AM_TRY(read_model(ctx, dir / "model.json", &m));
  Examples e;
  AM_TRY(read_examples(ctx, dir, &e));
  const size_t S = e.X.shape[1], N0 = e.X.shape[2];
  AM_TRY(read_heads(ctx, dir, m, N0, ds));
  AM_TRY(store_examples(ctx, dir, e, ds));
  AM_TRY(store_model(ctx, m, ds));
  am_context_log(ctx, AM_LOG_INFO, "npy: read P=%zu, P_test=%zu, S=%zu, N0=%zu, heads %s from '%s'", e.X.shape[0],
                 e.has_test ? e.Xt.shape[0] : size_t(0), S, N0, shape_str(m.heads).c_str(), dir_c);
  return AM_OK;
}

}  // namespace

extern "C" am_status am_problem_read(am_context *ctx, const char *dir, am_record *dataset) {
  try {
    return load(ctx, dir, dataset);
  } catch (const std::bad_alloc &) {
    return am_context_fail(ctx, AM_ERR_NO_MEMORY, "npy: out of memory reading '%s'", dir ? dir : "");
  } catch (const std::exception &e) {
    return am_context_fail(ctx, AM_ERR_INTERNAL, "npy: unexpected error reading '%s': %s", dir ? dir : "", e.what());
  } catch (...) {
    return am_context_fail(ctx, AM_ERR_INTERNAL, "npy: unexpected exception");
  }
}
