// attnmech-report — results.json back into a record (emit.cpp writes it).
#include "internal.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace am::report {

namespace {

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

void json_to_record(const json &j, am_record *obj, const std::string &npy_dir) {
  if (!j.is_object()) throw Error(AM_ERR_FORMAT, "a results document is a JSON object");
  object_to_record(j, obj, "", npy_dir);
}

}  // namespace am::report
