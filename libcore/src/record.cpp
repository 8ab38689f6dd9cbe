// attnmech — records: ordered trees of named values.
#include "internal.hpp"

#include <cmath>
#include <cstdarg>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

struct am_record {
  am_record_type type = AM_REC_OBJECT;
  double number = 0.0;
  int boolean = 0;
  std::string str;
  am_array *array = nullptr;
  am_record *parent = nullptr;                  // NULL for a root
  std::vector<std::string> keys;                // objects only, parallel to children
  std::vector<std::unique_ptr<am_record>> children;

  am_record() = default;
  am_record(const am_record &) = delete;
  am_record &operator=(const am_record &) = delete;
  ~am_record() { am_array_destroy(&array); }
};

namespace {

using node_ptr = std::unique_ptr<am_record>;

long find_key(const am_record *obj, const char *key) {
  for (size_t i = 0; i < obj->keys.size(); ++i)
    if (obj->keys[i] == key) return static_cast<long>(i);
  return -1;
}

// Deep copy (throws std::bad_alloc; array copies may fail → returns nullptr via exception).
node_ptr clone_node(const am_record *src) {
  node_ptr n(new am_record());
  n->type = src->type;
  n->number = src->number;
  n->boolean = src->boolean;
  n->str = src->str;
  if (src->array) {
    am_array_view v = am_array_get_view(src->array);
    if (am_array_from_view(nullptr, &n->array, &v) != AM_OK) throw std::bad_alloc();
  }
  n->keys = src->keys;
  n->children.reserve(src->children.size());
  for (const auto &c : src->children) {
    n->children.push_back(clone_node(c.get()));
    n->children.back()->parent = n.get();
  }
  return n;
}

// Put `n` under `key` of obj (replacing in place if present). Returns the inserted node.
am_record *attach(am_record *obj, const char *key, node_ptr n) {
  n->parent = obj;
  long i = find_key(obj, key);
  if (i >= 0) {
    obj->children[static_cast<size_t>(i)] = std::move(n);
    return obj->children[static_cast<size_t>(i)].get();
  }
  obj->keys.emplace_back(key);
  try {
    obj->children.push_back(std::move(n));
  } catch (...) {
    obj->keys.pop_back();
    throw;
  }
  return obj->children.back().get();
}

bool is_obj(const am_record *r) { return r && r->type == AM_REC_OBJECT; }

const char *type_word(am_record_type t) {
  switch (t) {
    case AM_REC_NULL: return "a null";
    case AM_REC_NUMBER: return "a number";
    case AM_REC_STRING: return "a string";
    case AM_REC_BOOL: return "a bool";
    case AM_REC_ARRAY: return "an array";
    case AM_REC_OBJECT: return "an object";
    case AM_REC_LIST: return "a list";
  }
  return "?";
}

// Records a message on the tree's root (the tree of `n`; nothing if n is NULL) and returns code.
// The outcome of the calling thread's last recorded call (record.h "Errors"): kept per thread, never in the tree,
// so lookups on a const tree are reads only — threads probing one shared tree (a dataset read by the estimators of
// a scan) do not race on an error field, and each reads its own message.
struct outcome {
  const am_record *root = nullptr;
  am_status status = AM_OK;
  std::string error;
};
thread_local outcome last_outcome;

am_status rfail(const am_record *n, am_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
am_status rfail(const am_record *n, am_status code, const char *fmt, ...) {
  if (!n) return code;
  while (n->parent) n = n->parent;
  outcome &o = last_outcome;
  o.root = n;
  o.status = code;
  try {
    va_list ap;
    va_start(ap, fmt);
    o.error = am::vformat(fmt, ap);
    va_end(ap);
  } catch (...) {
    o.error.clear();
  }
  return code;
}

// A call on the tree of `n` succeeded: AM_OK and no message (clear() keeps the string's storage: no allocation).
am_status rok(const am_record *n) {
  if (!n) return AM_OK;
  while (n->parent) n = n->parent;
  outcome &o = last_outcome;
  o.root = n;
  o.status = AM_OK;
  o.error.clear();
  return AM_OK;
}

// The message for a call on something that is not an object (or a NULL key).
am_status not_object(const am_record *obj, const char *key) {
  if (!obj) return AM_ERR_INVALID_ARGUMENT;
  if (!key) return rfail(obj, AM_ERR_INVALID_ARGUMENT, "NULL key");
  return rfail(obj, AM_ERR_INVALID_ARGUMENT, "key '%s': the node is %s, not an object", key, type_word(obj->type));
}

template <class F>
am_status set_with(am_record *obj, const char *key, F &&fill) {
  if (!is_obj(obj) || !key) return not_object(obj, key);
  try {
    node_ptr n(new am_record());
    am_status st = fill(n.get());
    if (st != AM_OK) return rfail(obj, st, "setting '%s': %s", key, am_status_string(st));
    attach(obj, key, std::move(n));
    return rok(obj);
  } catch (const std::bad_alloc &) {
    return rfail(obj, AM_ERR_NO_MEMORY, "setting '%s': out of memory", key);
  } catch (...) {
    return rfail(obj, AM_ERR_INTERNAL, "setting '%s': internal error", key);
  }
}

template <class F>
am_status append_with(am_record *list, F &&fill, am_record **made = nullptr) {
  if (!list) return AM_ERR_INVALID_ARGUMENT;
  if (list->type != AM_REC_LIST)
    return rfail(list, AM_ERR_INVALID_ARGUMENT, "append: the node is %s, not a list", type_word(list->type));
  try {
    node_ptr n(new am_record());
    fill(n.get());
    n->parent = list;
    list->children.push_back(std::move(n));
    if (made) *made = list->children.back().get();
    return rok(list);
  } catch (const std::bad_alloc &) {
    return rfail(list, AM_ERR_NO_MEMORY, "append: out of memory");
  } catch (...) {
    return rfail(list, AM_ERR_INTERNAL, "append: internal error");
  }
}

am_record *child_container(am_record *obj, const char *key, am_record_type t) {
  if (!is_obj(obj) || !key) {
    not_object(obj, key);
    return nullptr;
  }
  long i = find_key(obj, key);
  if (i >= 0) {
    am_record *c = obj->children[static_cast<size_t>(i)].get();
    if (c->type != t) rfail(obj, AM_ERR_FORMAT, "'%s' is %s, not %s", key, type_word(c->type), type_word(t));
    else rok(obj);
    return c->type == t ? c : nullptr;
  }
  try {
    node_ptr n(new am_record());
    n->type = t;
    am_record *made = attach(obj, key, std::move(n));
    rok(obj);
    return made;
  } catch (...) {
    rfail(obj, AM_ERR_NO_MEMORY, "'%s': out of memory", key);
    return nullptr;
  }
}

}  // namespace

extern "C" {

am_status am_record_create(am_record **out) {
  if (!out) return AM_ERR_INVALID_ARGUMENT;
  *out = new (std::nothrow) am_record();
  return *out ? AM_OK : AM_ERR_NO_MEMORY;
}

void am_record_destroy(am_record **root) {
  if (!root || !*root) return;
  // Only roots own their tree; a child pointer passed by mistake is not freed (its root owns it).
  if ((*root)->parent == nullptr) {
    if (last_outcome.root == *root) last_outcome = outcome{};  // a new tree at the same address starts clean
    delete *root;
  }
  *root = nullptr;
}

am_status am_record_clone(const am_record *node, am_record **out) {
  if (!out) return AM_ERR_INVALID_ARGUMENT;
  *out = nullptr;
  if (!node) return AM_ERR_INVALID_ARGUMENT;
  try {
    node_ptr n = clone_node(node);
    n->parent = nullptr;
    *out = n.release();
    return AM_OK;
  } catch (const std::bad_alloc &) {
    return AM_ERR_NO_MEMORY;
  } catch (...) {
    return AM_ERR_INTERNAL;
  }
}

am_status am_record_set_number(am_record *obj, const char *key, double v) {
  return set_with(obj, key, [&](am_record *n) -> am_status { n->type = AM_REC_NUMBER; n->number = v; return AM_OK; });
}

am_status am_record_set_string(am_record *obj, const char *key, const char *s) {
  if (!s) return rfail(obj, AM_ERR_INVALID_ARGUMENT, "setting '%s': NULL string", key ? key : "(null)");
  return set_with(obj, key, [&](am_record *n) -> am_status { n->type = AM_REC_STRING; n->str = s; return AM_OK; });
}

am_status am_record_set_bool(am_record *obj, const char *key, int v) {
  return set_with(obj, key, [&](am_record *n) -> am_status { n->type = AM_REC_BOOL; n->boolean = v != 0; return AM_OK; });
}

am_status am_record_set_null(am_record *obj, const char *key) {
  return set_with(obj, key, [&](am_record *n) -> am_status { n->type = AM_REC_NULL; return AM_OK; });
}

am_status am_record_set_array(am_record *obj, const char *key, const am_array_view *v) {
  if (!v) return rfail(obj, AM_ERR_INVALID_ARGUMENT, "setting '%s': NULL array view", key ? key : "(null)");
  return set_with(obj, key, [&](am_record *n) -> am_status {
    n->type = AM_REC_ARRAY;
    return am_array_from_view(nullptr, &n->array, v);
  });
}

am_status am_record_set_vector(am_record *obj, const char *key, const double *v, size_t n) {
  if (n > 0 && !v) return rfail(obj, AM_ERR_INVALID_ARGUMENT, "setting '%s': NULL data", key ? key : "(null)");
  const am_array_view view = am_array_view_make(AM_F64, 1, &n, 0, v);
  return am_record_set_array(obj, key, &view);
}

am_status am_record_set_matrix(am_record *obj, const char *key, const double *m, size_t rows, size_t cols,
                               size_t ld) {
  if ((rows > 0 && cols > 0 && !m) || (cols > 1 && ld < rows))
    return rfail(obj, AM_ERR_INVALID_ARGUMENT, "setting '%s': NULL data or ld %zu < rows %zu", key ? key : "(null)", ld, rows);
  // Stored as a C-order [rows, cols] array (the dataset convention), element (i, j) = m[i + j*ld].
  return set_with(obj, key, [&](am_record *n) -> am_status {
    n->type = AM_REC_ARRAY;
    size_t shape[2] = {rows, cols};
    am_status st = am_array_create(nullptr, &n->array, AM_F64, 2, shape, 0);
    if (st != AM_OK) return st;
    double *d = static_cast<double *>(am_array_data(n->array));
    for (size_t i = 0; i < rows; ++i)
      for (size_t j = 0; j < cols; ++j) d[i * cols + j] = m[i + j * ld];
    return AM_OK;
  });
}

am_status am_record_set_copy(am_record *obj, const char *key, const am_record *value) {
  if (!value) return rfail(obj, AM_ERR_INVALID_ARGUMENT, "NULL value");
  if (!is_obj(obj) || !key) return not_object(obj, key);
  try {
    node_ptr n = clone_node(value);  // cloned first: value may live under obj (even under key)
    attach(obj, key, std::move(n));
    return rok(obj);
  } catch (const std::bad_alloc &) {
    return rfail(obj, AM_ERR_NO_MEMORY, "copying to '%s': out of memory", key);
  } catch (...) {
    return rfail(obj, AM_ERR_INTERNAL, "copying to '%s': internal error", key);
  }
}

am_record *am_record_object(am_record *obj, const char *key) { return child_container(obj, key, AM_REC_OBJECT); }
am_record *am_record_list(am_record *obj, const char *key) { return child_container(obj, key, AM_REC_LIST); }

am_record *am_record_append_object(am_record *list) {
  am_record *made = nullptr;
  if (append_with(list, [](am_record *n) { n->type = AM_REC_OBJECT; }, &made) != AM_OK) return nullptr;
  return made;
}

am_status am_record_append_number(am_record *list, double v) {
  return append_with(list, [&](am_record *n) { n->type = AM_REC_NUMBER; n->number = v; });
}

am_status am_record_append_string(am_record *list, const char *s) {
  if (!s) return rfail(list, AM_ERR_INVALID_ARGUMENT, "append: NULL string");
  return append_with(list, [&](am_record *n) { n->type = AM_REC_STRING; n->str = s; });
}

am_status am_record_append_array(am_record *list, const am_array_view *v) {
  if (!list) return AM_ERR_INVALID_ARGUMENT;
  if (!v) return rfail(list, AM_ERR_INVALID_ARGUMENT, "append: NULL array view");
  if (list->type != AM_REC_LIST)
    return rfail(list, AM_ERR_INVALID_ARGUMENT, "append: the node is %s, not a list", type_word(list->type));
  try {
    node_ptr n(new am_record());
    n->type = AM_REC_ARRAY;
    am_status st = am_array_from_view(nullptr, &n->array, v);
    if (st != AM_OK) return rfail(list, st, "append: %s", am_status_string(st));
    n->parent = list;
    list->children.push_back(std::move(n));
    return rok(list);
  } catch (const std::bad_alloc &) {
    return rfail(list, AM_ERR_NO_MEMORY, "append: out of memory");
  } catch (...) {
    return rfail(list, AM_ERR_INTERNAL, "append: internal error");
  }
}

am_status am_record_remove(am_record *obj, const char *key) {
  if (!is_obj(obj) || !key) return not_object(obj, key);
  long i = find_key(obj, key);
  if (i < 0) return rfail(obj, AM_ERR_NOT_FOUND, "no key '%s'", key);
  obj->keys.erase(obj->keys.begin() + i);
  obj->children.erase(obj->children.begin() + i);
  return rok(obj);
}

am_record_type am_record_type_of(const am_record *n) { return n ? n->type : AM_REC_NULL; }

size_t am_record_size(const am_record *n) {
  if (!n || (n->type != AM_REC_OBJECT && n->type != AM_REC_LIST)) return 0;
  return n->children.size();
}

const char *am_record_key(const am_record *n, size_t i) {
  if (!n || n->type != AM_REC_OBJECT || i >= n->keys.size()) return nullptr;
  return n->keys[i].c_str();
}

const am_record *am_record_at(const am_record *n, size_t i) {
  if (!n || (n->type != AM_REC_OBJECT && n->type != AM_REC_LIST) || i >= n->children.size()) return nullptr;
  return n->children[i].get();
}

const am_record *am_record_get(const am_record *obj, const char *key) {
  if (!is_obj(obj) || !key) return nullptr;
  long i = find_key(obj, key);
  return i < 0 ? nullptr : obj->children[static_cast<size_t>(i)].get();
}

am_record *am_record_get_mut(am_record *obj, const char *key) {
  return const_cast<am_record *>(am_record_get(obj, key));
}

double am_record_number(const am_record *n) {
  if (n && n->type == AM_REC_NUMBER) return n->number;
  if (n && n->type == AM_REC_BOOL) return n->boolean ? 1.0 : 0.0;
  return std::numeric_limits<double>::quiet_NaN();
}

const char *am_record_string(const am_record *n) {
  return (n && n->type == AM_REC_STRING) ? n->str.c_str() : nullptr;
}

int am_record_bool(const am_record *n) {
  if (!n) return 0;
  if (n->type == AM_REC_BOOL) return n->boolean;
  if (n->type == AM_REC_NUMBER) return n->number != 0.0;
  return 0;
}

am_status am_record_array(const am_record *n, am_array_view *v) {
  if (!n || !v) return AM_ERR_INVALID_ARGUMENT;
  if (n->type != AM_REC_ARRAY || !n->array) return rfail(n, AM_ERR_FORMAT, "the node is %s, not an array", type_word(n->type));
  *v = am_array_get_view(n->array);
  return rok(n);
}

am_status am_record_get_number(const am_record *obj, const char *key, double *v) {
  if (!is_obj(obj) || !key) return not_object(obj, key);
  const am_record *n = am_record_get(obj, key);
  if (!n) return rfail(obj, AM_ERR_NOT_FOUND, "no key '%s'", key);
  if (n->type != AM_REC_NUMBER && n->type != AM_REC_BOOL)
    return rfail(obj, AM_ERR_FORMAT, "'%s' is %s, not a number", key, type_word(n->type));
  if (v) *v = am_record_number(n);
  return rok(obj);
}

am_status am_record_get_string(const am_record *obj, const char *key, const char **s) {
  if (!is_obj(obj) || !key) return not_object(obj, key);
  const am_record *n = am_record_get(obj, key);
  if (!n) return rfail(obj, AM_ERR_NOT_FOUND, "no key '%s'", key);
  if (n->type != AM_REC_STRING) return rfail(obj, AM_ERR_FORMAT, "'%s' is %s, not a string", key, type_word(n->type));
  if (s) *s = n->str.c_str();
  return rok(obj);
}

am_status am_record_get_array(const am_record *obj, const char *key, am_array_view *v) {
  if (!is_obj(obj) || !key) return not_object(obj, key);
  const am_record *n = am_record_get(obj, key);
  if (!n) return rfail(obj, AM_ERR_NOT_FOUND, "no key '%s'", key);
  if (n->type != AM_REC_ARRAY || !n->array)
    return rfail(obj, AM_ERR_FORMAT, "'%s' is %s, not an array", key, type_word(n->type));
  if (v) *v = am_array_get_view(n->array);
  return rok(obj);
}

// Arrays are copied in C (row-major, logical) order whatever their storage order.
am_status am_record_get_vector(const am_record *obj, const char *key, double *out, size_t cap, size_t *n) {
  if (!is_obj(obj) || !key) return not_object(obj, key);
  const am_record *r = am_record_get(obj, key);
  if (!r) return rfail(obj, AM_ERR_NOT_FOUND, "no key '%s'", key);
  size_t count = 0;
  switch (r->type) {
    case AM_REC_NUMBER:
    case AM_REC_BOOL:
      count = 1;
      break;
    case AM_REC_LIST:
      for (const auto &c : r->children)
        if (c->type != AM_REC_NUMBER && c->type != AM_REC_BOOL)
          return rfail(obj, AM_ERR_FORMAT, "'%s': a list element is %s, not a number", key, type_word(c->type));
      count = r->children.size();
      break;
    case AM_REC_ARRAY: {
      if (!r->array) return rfail(obj, AM_ERR_FORMAT, "'%s' is an array without data", key);
      am_array_view v = am_array_get_view(r->array);
      count = am_array_view_count(&v);
      break;
    }
    default:
      return rfail(obj, AM_ERR_FORMAT, "'%s' is %s, not numbers", key, type_word(r->type));
  }
  if (n) *n = count;
  if (!out) return rok(obj);
  if (cap < count)
    return rfail(obj, AM_ERR_BUFFER_TOO_SMALL, "'%s': %zu values do not fit in a buffer of %zu", key, count, cap);
  if (r->type == AM_REC_ARRAY) {
    am_array_view v = am_array_get_view(r->array);
    const am_status st = am_array_to_f64_c(nullptr, &v, out, cap);
    return st ? rfail(obj, st, "'%s': %s", key, am_status_string(st)) : rok(obj);
  }
  if (r->type == AM_REC_LIST) {
    for (size_t i = 0; i < count; ++i) out[i] = am_record_number(r->children[i].get());
  } else {
    out[0] = am_record_number(r);
  }
  return rok(obj);
}

}  // extern "C"

extern "C" const char *am_record_last_error(const am_record *node) {
  if (!node) return "";
  while (node->parent) node = node->parent;
  return last_outcome.root == node ? last_outcome.error.c_str() : "";
}

extern "C" am_status am_record_last_status(const am_record *node) {
  if (!node) return AM_ERR_INVALID_ARGUMENT;
  while (node->parent) node = node->parent;
  return last_outcome.root == node ? last_outcome.status : AM_OK;
}
