// attnmech-report — the array a results.json reference {"npy_file": f, "shape": [...], "dtype": "<f8"} names, read
// by one rule wherever results.json is read: the report library (am_report_read), and the sweep aggregates and
// figures, which walk the JSON text themselves. The name obeys the safe-name rule (a plain file in the results
// directory, never a path), the file is a regular file (no symlink: the writer makes none), its dtype and shape are
// the reference's. Header-only; internal (not installed).
#ifndef ATTNMECH_COMMON_NPY_REFERENCE_HPP
#define ATTNMECH_COMMON_NPY_REFERENCE_HPP

#include <attnmech/base.h>

#include "read_input.hpp"  // file_kind
#include "safe_file.hpp"   // name_problem, the one rule

#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace am::npy_reference {

inline const char *dtype_text(am_dtype t) {
  switch (t) {
    case AM_F64: return "<f8";
    case AM_F32: return "<f4";
    case AM_I64: return "<i8";
    case AM_I32: return "<i4";
  }
  return "?";
}

inline std::string shape_text(const std::vector<size_t> &s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

// Whether a JSON value is a reference: an object of exactly the keys npy_file, shape, dtype.
template <class Json>
bool is_reference(const Json &j) {
  return j.is_object() && j.size() == 3 && j.contains("npy_file") && j.contains("shape") && j.contains("dtype");
}

enum class Problem { None, Format, Io, Unreadable, Memory };  // Unreadable: the .npy reader refused the file

// The file `ref` names in `dir` into *out (the caller destroys it): Problem::None, else the problem and *why
// (what is wrong, without the reference's location).
template <class Json>
Problem read(const std::string &dir, const Json &ref, am_array **out, std::string *why) {
  *out = nullptr;
  const auto &f = ref.at("npy_file"), &d = ref.at("dtype"), &s = ref.at("shape");
  if (!f.is_string() || !d.is_string()) return *why = "\"npy_file\" and \"dtype\" are strings", Problem::Format;
  const std::string file = f.template get<std::string>(), dtype = d.template get<std::string>();
  const std::string bad = am::files::name_problem(file);
  if (!bad.empty()) return *why = "file name '" + file.substr(0, 60) + "' " + bad, Problem::Format;
  if (file.size() < 5 || file.compare(file.size() - 4, 4, ".npy") != 0)
    return *why = "'" + file + "' is not a .npy file name", Problem::Format;
  if (!s.is_array() || s.size() > AM_MAX_DIMS) return *why = "\"shape\" is not a list of at most 8 sizes", Problem::Format;
  std::vector<size_t> shape;
  for (const auto &e : s) {
    if (!e.is_number_unsigned()) return *why = "\"shape\" holds " + e.dump().substr(0, 40), Problem::Format;
    shape.push_back(e.template get<size_t>());
  }
  if (dir.empty()) return *why = "no results directory to read it from", Problem::Format;
  const std::string path = dir + "/" + file;
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0)
    return *why = "its array file " + path + " cannot be read: " + std::strerror(errno), Problem::Io;
  if (S_ISLNK(st.st_mode)) return *why = path + " is a symbolic link (the writer makes none; it may lead out)", Problem::Format;
  if (!S_ISREG(st.st_mode)) return *why = path + " is " + am::input::file_kind(st.st_mode) + ", not a .npy file", Problem::Format;
  am_context *ctx = nullptr;  // the .npy reader's own, so its message survives a caller's NULL context
  if (am_context_create(&ctx, nullptr) != AM_OK) return *why = "out of memory", Problem::Memory;
  const am_status rs = am_npy_read(ctx, path.c_str(), out);
  if (rs != AM_OK) {
    *why = am_context_last_error(ctx);
    am_context_destroy(&ctx);
    return rs == AM_ERR_NO_MEMORY ? Problem::Memory : Problem::Unreadable;
  }
  am_context_destroy(&ctx);
  const am_array_view v = am_array_get_view(*out);
  const std::vector<size_t> has(v.shape, v.shape + v.ndim);
  if (dtype_text(v.dtype) != dtype || has != shape) {
    *why = file + " holds " + dtype_text(v.dtype) + " " + shape_text(has) + ", the reference says " + dtype.substr(0, 8) +
           " " + shape_text(shape);
    am_array_destroy(out);
    return Problem::Format;
  }
  return Problem::None;
}

// Dimension `dim` of a row-major array from `offset` as nested JSON lists (NaN and ±Inf as null).
template <class Json>
Json nested(const std::vector<double> &x, const am_array_view &v, uint32_t dim, size_t offset) {
  Json a = Json::array();
  size_t stride = 1;
  for (uint32_t d = dim + 1; d < v.ndim; ++d) stride *= v.shape[d];
  for (size_t i = 0; i < v.shape[dim]; ++i) {
    if (dim + 1 < v.ndim)
      a.push_back(nested<Json>(x, v, dim + 1, offset + i * stride));
    else
      a.push_back(std::isfinite(x[offset + i]) ? Json(x[offset + i]) : Json());
  }
  return a;
}

// The referenced array as nested JSON lists: what a 3.2 document held inline. An unreadable reference is a JSON
// null with *why (when given) saying what is wrong with it ("" when it was read).
template <class Json>
Json as_nested(const std::string &dir, const Json &ref, std::string *why_out = nullptr) {
  am_array *a = nullptr;
  std::string why;
  if (why_out) why_out->clear();
  if (read(dir, ref, &a, &why) != Problem::None) {
    if (why_out) *why_out = why.empty() ? "unreadable" : why;
    return Json();
  }
  const am_array_view v = am_array_get_view(a);
  std::vector<double> x(am_array_view_count(&v));
  const bool ok = x.empty() || am_array_to_f64_c(nullptr, &v, x.data(), x.size()) == AM_OK;
  am_array_destroy(&a);
  if (!ok) return Json();
  if (v.ndim == 0) return std::isfinite(x[0]) ? Json(x[0]) : Json();
  return nested<Json>(x, v, 0, 0);
}

}  // namespace am::npy_reference

#endif
