// attnmech-report — a record as results.json text, and results.json back into a record.
#include "internal.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace am::report {

namespace {

json number_json(double v) {
  if (!std::isfinite(v)) return nullptr;
  if (v == std::floor(v) && std::fabs(v) < 9007199254740992.0) return static_cast<int64_t>(v);
  return v;
}

json nested(const std::vector<double> &data, const am_array_view &v, uint32_t dim, size_t offset, bool integral) {
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

json array_json(am_context *ctx, const am_array_view &v) {
  const size_t n = am_array_view_count(&v);
  std::vector<double> data(std::max<size_t>(n, 1));
  if (n > 0 && am_array_to_f64_c(ctx, &v, data.data(), n) != AM_OK) return nullptr;
  const bool integral = v.dtype == AM_I32 || v.dtype == AM_I64;
  if (v.ndim == 0) return integral ? json(static_cast<int64_t>(data[0])) : number_json(data[0]);
  return nested(data, v, 0, 0, integral);
}

bool flat(const json &j) {
  if (!j.is_array()) return j.is_primitive();
  for (const auto &e : j)
    if (!e.is_primitive()) return false;
  return true;
}

void dump_into(const json &j, int indent, std::string &out) {
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

// A non-empty nested list whose leaves are numbers or nulls, every level rectangular: its shape.
bool numeric_shape(const json &j, std::vector<size_t> *shape) {
  if (!j.is_array() || j.empty() || shape->size() >= AM_MAX_DIMS) return false;
  shape->push_back(j.size());
  const bool leaves = j[0].is_number() || j[0].is_null() || j[0].is_boolean();
  std::vector<size_t> first;
  for (const auto &e : j) {
    if (leaves) {
      if (!(e.is_number() || e.is_null())) return false;
      continue;
    }
    std::vector<size_t> sub;
    if (!numeric_shape(e, &sub)) return false;
    if (first.empty())
      first = sub;
    else if (sub != first)
      return false;
  }
  if (j[0].is_boolean()) return false;
  shape->insert(shape->end(), first.begin(), first.end());
  return shape->size() <= AM_MAX_DIMS;
}

void flatten_numbers(const json &j, std::vector<double> &out) {
  if (j.is_array()) {
    for (const auto &e : j) flatten_numbers(e, out);
  } else {
    out.push_back(j.is_number() ? j.get<double>() : std::numeric_limits<double>::quiet_NaN());
  }
}

void check(am_status st, const std::string &what) {
  if (st != AM_OK) throw Error(st == AM_ERR_NO_MEMORY ? AM_ERR_NO_MEMORY : AM_ERR_FORMAT, "cannot store " + what);
}

void list_to_record(const json &j, am_record *list, const std::string &where, const std::string &npy_dir);
void object_to_record(const json &j, am_record *obj, const std::string &where, const std::string &npy_dir);

void value_into(const json &v, am_record *obj, const std::string &key, const std::string &where,
                const std::string &npy_dir) {
  const char *k = key.c_str();
  std::vector<size_t> shape;
  if (is_npy_reference(v)) {
    load_npy_reference(npy_dir, v, where, [&](const am_array_view &a) { check(am_record_set_array(obj, k, &a), where); });
  } else if (v.is_object()) {
    am_record *o = am_record_object(obj, k);
    if (!o) throw Error(AM_ERR_NO_MEMORY, "cannot store " + where);
    object_to_record(v, o, where, npy_dir);
  } else if (numeric_shape(v, &shape)) {
    std::vector<double> data;
    flatten_numbers(v, data);
    const am_array_view view =
        am_array_view_make(AM_F64, static_cast<uint32_t>(shape.size()), shape.data(), 0, data.data());
    check(am_record_set_array(obj, k, &view), where);
  } else if (v.is_array()) {
    am_record *l = am_record_list(obj, k);
    if (!l) throw Error(AM_ERR_NO_MEMORY, "cannot store " + where);
    list_to_record(v, l, where, npy_dir);
  } else if (v.is_string()) {
    check(am_record_set_string(obj, k, v.get_ref<const std::string &>().c_str()), where);
  } else if (v.is_boolean()) {
    check(am_record_set_bool(obj, k, v.get<bool>()), where);
  } else if (v.is_number()) {
    check(am_record_set_number(obj, k, v.get<double>()), where);
  } else {
    check(am_record_set_null(obj, k), where);
  }
}

// Lists hold what the record API can append: objects, numbers, strings and arrays. A boolean becomes
// 0/1 and null NaN; a list directly inside a list that is not numeric cannot be represented.
void list_to_record(const json &j, am_record *list, const std::string &where, const std::string &npy_dir) {
  for (size_t i = 0; i < j.size(); ++i) {
    const json &e = j[i];
    const std::string at = where + "." + std::to_string(i);
    std::vector<size_t> shape;
    if (is_npy_reference(e)) {
      load_npy_reference(npy_dir, e, at, [&](const am_array_view &a) { check(am_record_append_array(list, &a), at); });
    } else if (e.is_object()) {
      am_record *o = am_record_append_object(list);
      if (!o) throw Error(AM_ERR_NO_MEMORY, "cannot store " + at);
      object_to_record(e, o, at, npy_dir);
    } else if (numeric_shape(e, &shape)) {
      std::vector<double> data;
      flatten_numbers(e, data);
      const am_array_view view =
        am_array_view_make(AM_F64, static_cast<uint32_t>(shape.size()), shape.data(), 0, data.data());
      check(am_record_append_array(list, &view), at);
    } else if (e.is_array()) {
      throw Error(AM_ERR_FORMAT, at + ": a list inside a list must be numeric");
    } else if (e.is_string()) {
      check(am_record_append_string(list, e.get_ref<const std::string &>().c_str()), at);
    } else if (e.is_boolean()) {
      check(am_record_append_number(list, e.get<bool>() ? 1.0 : 0.0), at);
    } else {
      check(am_record_append_number(list, e.is_number() ? e.get<double>() : std::numeric_limits<double>::quiet_NaN()),
            at);
    }
  }
}

void object_to_record(const json &j, am_record *obj, const std::string &where, const std::string &npy_dir) {
  for (auto it = j.begin(); it != j.end(); ++it)
    value_into(it.value(), obj, it.key(), where.empty() ? it.key() : where + "." + it.key(), npy_dir);
}

}  // namespace

std::string dump_results(const json &doc) {
  std::string out;
  dump_into(doc, 0, out);
  out += "\n";
  return out;
}

json record_to_json(am_context *ctx, const am_record *n, const NpyFiles *npy_only) {
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
      const auto ref = npy_only ? npy_only->find(n) : NpyFiles::const_iterator{};
      if (npy_only && ref != npy_only->end()) return npy_reference(v, ref->second);
      return array_json(ctx, v);
    }
    case AM_REC_OBJECT: {
      json o = json::object();
      const size_t k = am_record_size(n);
      for (size_t i = 0; i < k; ++i) {
        const char *key = am_record_key(n, i);
        o[key ? key : std::to_string(i)] = record_to_json(ctx, am_record_at(n, i), npy_only);
      }
      return o;
    }
    case AM_REC_LIST: {
      json a = json::array();
      const size_t k = am_record_size(n);
      for (size_t i = 0; i < k; ++i) a.push_back(record_to_json(ctx, am_record_at(n, i), npy_only));
      return a;
    }
    default: return nullptr;
  }
}

void json_to_record(const json &j, am_record *obj, const std::string &npy_dir) {
  if (!j.is_object()) throw Error(AM_ERR_FORMAT, "a results document is a JSON object");
  object_to_record(j, obj, "", npy_dir);
}

}  // namespace am::report
