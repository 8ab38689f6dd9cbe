// attnmech tests — the results.json serialiser of attnmech 3.2, kept as the oracle of the streaming writer
// (tools/report/emit.cpp): a whole nlohmann::ordered_json DOM of the record, then an indented dump. The two must
// give the same bytes for every record; `refs` (array node → file name) are the arrays written as references.
#pragma once

#include <attnmech/attnmech.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

namespace dom_oracle {

using json = nlohmann::ordered_json;
using Refs = std::map<const am_record *, std::string>;

inline json number_json(double v) {
  if (!std::isfinite(v)) return nullptr;
  if (v == std::floor(v) && std::fabs(v) < 9007199254740992.0) return static_cast<int64_t>(v);
  return v;
}

inline json nested(const std::vector<double> &data, const am_array_view &v, uint32_t dim, size_t offset, bool integral) {
  json arr = json::array();
  size_t stride = 1;
  for (uint32_t d = dim + 1; d < v.ndim; ++d) stride *= v.shape[d];
  for (size_t i = 0; i < v.shape[dim]; ++i) {
    if (dim + 1 == v.ndim) {
      const double x = data[offset + i];
      if (integral && std::isfinite(x))
        arr.push_back(static_cast<int64_t>(x));
      else
        arr.push_back(number_json(x));
    } else {
      arr.push_back(nested(data, v, dim + 1, offset + i * stride, integral));
    }
  }
  return arr;
}

inline json array_json(const am_array_view &v) {
  const size_t n = am_array_view_count(&v);
  std::vector<double> data(std::max<size_t>(n, 1));
  if (n > 0 && am_array_to_f64_c(nullptr, &v, data.data(), n) != AM_OK) return nullptr;
  const bool integral = v.dtype == AM_I32 || v.dtype == AM_I64;
  if (v.ndim == 0) return integral ? json(static_cast<int64_t>(data[0])) : number_json(data[0]);
  return nested(data, v, 0, 0, integral);
}

inline bool flat(const json &j) {
  if (!j.is_array()) return j.is_primitive();
  for (const auto &e : j)
    if (!e.is_primitive()) return false;
  return true;
}

inline void dump_into(const json &j, int indent, std::string &out) {
  const std::string pad(static_cast<size_t>(indent) + 1, ' '), closing(static_cast<size_t>(indent), ' ');
  if (j.is_object()) {
    if (j.empty()) {
      out += "{}";
      return;
    }
    out += "{\n";
    size_t i = 0;
    for (auto it = j.begin(); it != j.end(); ++it, ++i) {
      out += pad + json(it.key()).dump() + ": ";
      dump_into(it.value(), indent + 1, out);
      out += i + 1 < j.size() ? ",\n" : "\n";
    }
    out += closing + "}";
  } else if (j.is_array() && !flat(j)) {
    const bool rows = std::all_of(j.begin(), j.end(), [](const json &e) { return flat(e); });
    out += "[\n";
    for (size_t i = 0; i < j.size(); ++i) {
      out += pad;
      if (rows)
        out += j[i].dump();
      else
        dump_into(j[i], indent + 1, out);
      out += i + 1 < j.size() ? ",\n" : "\n";
    }
    out += closing + "]";
  } else {
    out += j.dump();
  }
}

inline const char *dtype_text(am_dtype t) {
  switch (t) {
    case AM_F64: return "<f8";
    case AM_F32: return "<f4";
    case AM_I64: return "<i8";
    case AM_I32: return "<i4";
  }
  return "?";
}

inline json record_to_json(const am_record *n, const Refs &refs) {
  if (!n) return nullptr;
  switch (am_record_type_of(n)) {
    case AM_REC_NUMBER: return number_json(am_record_number(n));
    case AM_REC_STRING: {
      const char *s = am_record_string(n);
      return s ? json(s) : json(nullptr);
    }
    case AM_REC_BOOL: return json(am_record_bool(n) != 0);
    case AM_REC_ARRAY: {
      am_array_view v{};
      if (am_record_array(n, &v) != AM_OK) return nullptr;
      const auto ref = refs.find(n);
      if (ref == refs.end()) return array_json(v);
      json shape = json::array();
      for (uint32_t d = 0; d < v.ndim; ++d) shape.push_back(v.shape[d]);
      json o = json::object();
      o["npy_file"] = ref->second;
      o["shape"] = shape;
      o["dtype"] = dtype_text(v.dtype);
      return o;
    }
    case AM_REC_OBJECT: {
      json o = json::object();
      for (size_t i = 0; i < am_record_size(n); ++i) {
        const char *key = am_record_key(n, i);
        o[key ? key : std::to_string(i)] = record_to_json(am_record_at(n, i), refs);
      }
      return o;
    }
    case AM_REC_LIST: {
      json a = json::array();
      for (size_t i = 0; i < am_record_size(n); ++i) a.push_back(record_to_json(am_record_at(n, i), refs));
      return a;
    }
    default: return nullptr;
  }
}

inline std::string text(const am_record *doc, const Refs &refs = {}) {
  std::string out;
  dump_into(record_to_json(doc, refs), 0, out);
  return out + "\n";
}

}  // namespace dom_oracle
