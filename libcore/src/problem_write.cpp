// attnmech — an attention dataset written as a problem directory of the `npy` task (problem.h), whole or not at
// all (the one directory writer, safe_file.hpp).
#include "internal.hpp"
#include <common/read_input.hpp>  // am::input::Error
#include <common/safe_file.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <new>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using am::input::Error;

const am::files::DirKind kProblemDir{"model.json", "problem directory"};

// The array under `key` of `obj` as a C-order f64 .npy file `dir/file`.
void write_array(am_context *ctx, const am_record *obj, const char *key, const fs::path &file) {
  am_array_view v{};
  if (am_record_get_array(obj, key, &v) != AM_OK)
    throw Error(AM_ERR_FORMAT, std::string("npy: dataset key '") + key + "' is not an array");
  const size_t n = am_array_view_count(&v);
  std::vector<double> data(std::max<size_t>(n, 1));
  if (n > 0 && am_array_to_f64_c(ctx, &v, data.data(), n) != AM_OK)
    throw Error(AM_ERR_FORMAT, std::string("npy: cannot convert '") + key + "'");
  const am_array_view c = am_array_view_make(AM_F64, v.ndim, v.shape, 0, data.data());
  if (am_npy_write(ctx, file.string().c_str(), &c) != AM_OK)
    throw Error(AM_ERR_IO, "npy: cannot write '" + file.string() + "': " + am_context_last_error(ctx));
}

std::vector<double> numbers(const am_record *ds, const char *key, bool required) {
  size_t n = 0;
  if (am_record_get_vector(ds, key, nullptr, 0, &n) != AM_OK) {
    if (required) throw Error(AM_ERR_FORMAT, std::string("npy: dataset has no numeric '") + key + "'");
    return {};
  }
  std::vector<double> v(n);
  if (n > 0) am_record_get_vector(ds, key, v.data(), n, &n);
  return v;
}

nlohmann::json number_list(const std::vector<double> &v) {
  nlohmann::json a = nlohmann::json::array();
  for (double x : v) {
    if (x == std::floor(x) && std::fabs(x) < 9007199254740992.0)
      a.push_back(static_cast<int64_t>(x));
    else
      a.push_back(x);
  }
  return a;
}

// The files of the problem directory into `dir` (a fresh temporary directory of write_dir_atomically).
void write_files(am_context *ctx, const fs::path &dir, const am_record *ds) {
  write_array(ctx, ds, "X_train", dir / "X_train.npy");
  write_array(ctx, ds, "y_train", dir / "y_train.npy");
  if (am_record_get(ds, "X_test")) {
    write_array(ctx, ds, "X_test", dir / "X_test.npy");
    write_array(ctx, ds, "y_test", dir / "y_test.npy");
  }
  const std::vector<double> heads = numbers(ds, "heads", true);
  const am_record *att = am_record_get(ds, "attention");
  std::string form;
  bool mixed = false;
  for (size_t l = 1; l <= heads.size(); ++l)
    for (size_t h = 1; h <= static_cast<size_t>(heads[l - 1]); ++h) {
      const std::string tag = "l" + std::to_string(l) + "_h" + std::to_string(h);
      const am_record *head = am_record_get(att, tag.c_str());
      std::string f;
      if (am_record_type_of(head) == AM_REC_ARRAY) {
        write_array(ctx, att, tag.c_str(), dir / ("W_" + tag + ".npy"));
        f = "bilinear";
      } else if (am_record_type_of(head) == AM_REC_OBJECT) {
        write_array(ctx, head, "Q", dir / ("Q_" + tag + ".npy"));
        write_array(ctx, head, "K", dir / ("K_" + tag + ".npy"));
        f = "qk";
      } else {
        throw Error(AM_ERR_FORMAT, "npy: dataset has no head attention." + tag);
      }
      mixed = mixed || (!form.empty() && form != f);
      form = f;
    }
  nlohmann::ordered_json m;
  const char *readout = "last";
  am_record_get_string(ds, "readout", &readout);
  double temperature = 0;
  am_record_get_number(ds, "temperature", &temperature);
  m["readout"] = readout;
  m["heads"] = number_list(heads);
  m["widths"] = number_list(numbers(ds, "widths", true));
  m["variances"] = number_list(numbers(ds, "variances", true));
  m["temperature"] = temperature;
  if (!mixed && !form.empty()) m["form"] = form;
  const am_record *pl = am_record_get(ds, "path_labels");
  if (am_record_size(pl) > 0) {
    m["path_labels"] = nlohmann::json::array();
    for (size_t i = 0; i < am_record_size(pl); ++i) {
      const char *s = am_record_string(am_record_at(pl, i));
      m["path_labels"].push_back(s ? s : "");
    }
  }
  const std::vector<double> scan = numbers(ds, "widths_scan", false);
  if (!scan.empty()) m["widths_scan"] = number_list(scan);
  const std::string err = am::files::write_atomic((dir / "model.json").string(), m.dump(1) + "\n");
  if (!err.empty()) throw Error(AM_ERR_IO, err);
}

// The problem directory `dir` is written whole or not at all (write_dir_atomically: absent, empty, or a previous
// problem directory — one holding model.json — replaced whole; a kill midway leaves the old one).
void write_problem(am_context *ctx, const char *dir_c, const am_record *ds) {
  if (!dir_c || !*dir_c) throw Error(AM_ERR_USAGE, "npy: no directory given");
  if (!ds) throw Error(AM_ERR_INVALID_ARGUMENT, "npy: no dataset");
  const char *kind = nullptr;
  if (am_record_get_string(ds, "kind", &kind) != AM_OK || std::strcmp(kind, AM_DATASET_ATTENTION) != 0)
    throw Error(AM_ERR_FORMAT, "npy: only attention datasets can be written as a problem directory");
  if (am_record_get(ds, "part"))  // dataset.h: this process holds some rows of each split only
    throw Error(AM_ERR_USAGE, "npy: the dataset holds one rank's part of the data (key 'part'); a problem directory "
                "needs the whole data: make it with one process");
  const std::string err =
      am::files::write_dir_atomically(dir_c, kProblemDir, [&](const std::string &tmp) { write_files(ctx, tmp, ds); });
  if (!err.empty()) throw Error(AM_ERR_IO, err);
}

}  // namespace

extern "C" am_status am_problem_write(am_context *ctx, const char *dir, const am_record *dataset) {
  try {
    write_problem(ctx, dir, dataset);
    return AM_OK;
  } catch (const Error &e) {
    return am_context_fail(ctx, e.code, "%s", e.what());
  } catch (const std::bad_alloc &) {
    return am_context_fail(ctx, AM_ERR_NO_MEMORY, "npy: out of memory writing '%s'", dir ? dir : "");
  } catch (const std::exception &e) {
    return am_context_fail(ctx, AM_ERR_INTERNAL, "npy: unexpected error writing '%s': %s", dir ? dir : "", e.what());
  }
}
