// attnmech-report — data paths of the report spec: "runs.*.test.accuracy", "runs.0.kernels.path.*.*.2".
#include "internal.hpp"
#include "svg.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace am::report {

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<std::string> split_path(const std::string &p) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (true) {
    const size_t dot = p.find('.', pos);
    out.push_back(p.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos));
    if (dot == std::string::npos) break;
    pos = dot + 1;
  }
  return out;
}

bool parse_index(const std::string &s, size_t *i) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) return false;
  *i = static_cast<size_t>(std::strtoull(s.c_str(), nullptr, 10));
  return true;
}

// The indices a component selects of `n` elements: {i} for an index (*pick = true), every index for
// `*`, a..b-1 for `a:b`. False when the component is none of these or out of range.
bool selection(const std::string &part, size_t n, std::vector<size_t> *idx, bool *pick) {
  idx->clear();
  *pick = false;
  size_t a = 0, b = n;
  if (part == "*") {
  } else if (part.find(':') != std::string::npos) {
    const size_t c = part.find(':');
    const std::string sa = part.substr(0, c), sb = part.substr(c + 1);
    if ((!sa.empty() && !parse_index(sa, &a)) || (!sb.empty() && !parse_index(sb, &b))) return false;
    b = std::min(b, n);
    if (a > b) a = b;
  } else {
    size_t i = 0;
    if (!parse_index(part, &i) || i >= n) return false;
    a = i;
    b = i + 1;
    *pick = true;
  }
  for (size_t i = a; i < b; ++i) idx->push_back(i);
  return true;
}

Value scalar(double x) {
  Value v;
  v.ok = true;
  v.num.push_back(x);
  return v;
}

// Stack the values of several elements: equal shapes gain a leading dimension, else they are flattened.
// Missing elements become NaN (numbers) or "" (strings) of the first present element's shape.
Value stack(std::vector<Value> &parts) {
  Value out;
  const Value *ref = nullptr;
  bool any_strings = false, same = true;
  for (const auto &p : parts)
    if (p.ok) {
      if (!ref) ref = &p;
      any_strings = any_strings || p.strings;
      same = same && p.shape == ref->shape && p.strings == ref->strings;
    }
  if (!ref) return out;
  out.ok = true;
  if (any_strings) {
    out.strings = true;
    for (const auto &p : parts) {
      if (!p.ok) {
        out.str.emplace_back();
        continue;
      }
      const auto l = as_labels(p);
      out.str.insert(out.str.end(), l.begin(), l.end());
    }
    out.shape = {out.str.size()};
    return out;
  }
  for (const auto &p : parts) {
    if (p.ok)
      out.num.insert(out.num.end(), p.num.begin(), p.num.end());
    else
      out.num.insert(out.num.end(), ref->num.size(), kNaN);
  }
  if (same) {
    out.shape = {parts.size()};
    out.shape.insert(out.shape.end(), ref->shape.begin(), ref->shape.end());
  } else {
    out.shape = {out.num.size()};
  }
  return out;
}

// Index into an array's dimensions with the remaining components.
Value index_array(const am_record *n, const std::vector<std::string> &parts, size_t i) {
  Value out;
  am_array_view v{};
  if (am_record_array(n, &v) != AM_OK) return out;
  const size_t count = am_array_view_count(&v);
  std::vector<double> data(count);
  if (count > 0 && am_array_to_f64_c(nullptr, &v, data.data(), count) != AM_OK) return out;
  if (parts.size() - i > v.ndim) return out;
  std::vector<std::vector<size_t>> sel(v.ndim);
  for (uint32_t d = 0; d < v.ndim; ++d) {
    bool pick = false;
    if (i + d < parts.size()) {
      if (!selection(parts[i + d], v.shape[d], &sel[d], &pick)) return out;
    } else {
      selection("*", v.shape[d], &sel[d], &pick);
    }
    if (!pick) out.shape.push_back(sel[d].size());
  }
  std::vector<size_t> stride(v.ndim, 1);
  for (uint32_t d = v.ndim; d-- > 1;) stride[d - 1] = stride[d] * v.shape[d];
  std::vector<size_t> pos(v.ndim, 0);
  bool empty = false;
  for (const auto &s : sel) empty = empty || s.empty();
  out.ok = true;
  if (empty) return out;
  while (true) {  // odometer over the selections, last dimension fastest (C order)
    size_t off = 0;
    for (uint32_t d = 0; d < v.ndim; ++d) off += sel[d][pos[d]] * stride[d];
    out.num.push_back(data[off]);
    uint32_t d = v.ndim;
    while (d > 0 && ++pos[d - 1] == sel[d - 1].size()) pos[--d] = 0;
    if (d == 0) break;
  }
  return out;
}

Value walk(const am_record *n, const std::vector<std::string> &parts, size_t i) {
  Value none;
  if (!n) return none;
  const am_record_type t = am_record_type_of(n);
  if (t == AM_REC_ARRAY) return index_array(n, parts, i);
  if (i == parts.size()) {
    switch (t) {
      case AM_REC_NUMBER:
      case AM_REC_BOOL: return scalar(am_record_number(n));
      case AM_REC_NULL: return scalar(kNaN);
      case AM_REC_STRING: {
        Value v;
        v.ok = v.strings = true;
        v.str.emplace_back(am_record_string(n));
        return v;
      }
      case AM_REC_LIST: {
        std::vector<Value> vals;
        for (size_t k = 0; k < am_record_size(n); ++k) vals.push_back(walk(am_record_at(n, k), parts, i));
        Value v = stack(vals);
        if (vals.empty()) v.ok = true;  // an empty list: no values
        return v;
      }
      default: return none;
    }
  }
  if (t == AM_REC_OBJECT) return walk(am_record_get(n, parts[i].c_str()), parts, i + 1);
  if (t != AM_REC_LIST) return none;
  std::vector<size_t> idx;
  bool pick = false;
  if (!selection(parts[i], am_record_size(n), &idx, &pick)) return none;
  if (pick) return walk(am_record_at(n, idx[0]), parts, i + 1);
  std::vector<Value> vals;
  for (size_t k : idx) vals.push_back(walk(am_record_at(n, k), parts, i + 1));
  Value v = stack(vals);
  if (vals.empty()) v.ok = true;
  return v;
}

}  // namespace

Value resolve(const am_record *root, const std::string &path) {
  if (!path.empty() && path[0] == '=') {
    char *end = nullptr;
    const double x = std::strtod(path.c_str() + 1, &end);
    if (end && *end == 0 && end != path.c_str() + 1) return scalar(x);
    return Value{};
  }
  if (path.empty()) return Value{};
  return walk(root, split_path(path), 0);
}

std::vector<std::string> as_labels(const Value &v) {
  if (v.strings) return v.str;
  std::vector<std::string> out;
  for (double x : v.num) out.push_back(std::isfinite(x) ? am::svg::format_tick(x) : "-");
  return out;
}

bool has_row_selection(const am_record *spec) {
  return am_record_get(spec, "where") || am_record_get(spec, "sort_by") || am_record_get(spec, "limit");
}

std::vector<size_t> select_rows(const am_record *doc, const am_record *spec, size_t n) {
  std::vector<size_t> rows;
  auto column = [&](const std::string &path, std::vector<double> *out) {
    const Value v = resolve(doc, path);
    if (!v.ok || v.strings || v.num.size() != n) return false;
    *out = v.num;
    return true;
  };
  std::vector<double> key;
  const am_record *where = am_record_get(spec, "where");
  if (where && !column(spec_string(where, "path"), &key)) return rows;
  const double lo = spec_number(where, "min", -INFINITY), hi = spec_number(where, "max", INFINITY);
  for (size_t r = 0; r < n; ++r)
    if (!where || (key[r] >= lo && key[r] <= hi)) rows.push_back(r);
  const am_record *sort = am_record_get(spec, "sort_by");
  std::vector<std::vector<double>> keys;
  for (size_t i = 0; sort && i < (am_record_type_of(sort) == AM_REC_LIST ? am_record_size(sort) : 1); ++i) {
    const char *p = am_record_string(am_record_type_of(sort) == AM_REC_LIST ? am_record_at(sort, i) : sort);
    keys.emplace_back();
    if (!p || !column(p, &keys.back())) return {};
  }
  std::stable_sort(rows.begin(), rows.end(), [&](size_t a, size_t b) {
    for (const auto &k : keys) {
      if (k[a] < k[b] || (!std::isnan(k[a]) && std::isnan(k[b]))) return true;
      if (k[b] < k[a] || (std::isnan(k[a]) && !std::isnan(k[b]))) return false;
    }
    return false;
  });
  const double limit = spec_number(spec, "limit", INFINITY);
  if (limit >= 0 && limit < static_cast<double>(rows.size())) rows.resize(static_cast<size_t>(limit));
  return rows;
}

std::string spec_string(const am_record *o, const char *key, const std::string &def) {
  const char *s = am_record_string(am_record_get(o, key));
  return s ? std::string(s) : def;
}

bool spec_bool(const am_record *o, const char *key, bool def) {
  const am_record *n = am_record_get(o, key);
  const am_record_type t = am_record_type_of(n);
  return n && (t == AM_REC_BOOL || t == AM_REC_NUMBER) ? am_record_bool(n) != 0 : def;
}

double spec_number(const am_record *o, const char *key, double def) {
  const am_record *n = am_record_get(o, key);
  return am_record_type_of(n) == AM_REC_NUMBER ? am_record_number(n) : def;
}

}  // namespace am::report
