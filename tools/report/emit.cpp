// attnmech-report — the results.json text of a record, written in pieces while the record is walked: no JSON DOM
// and no string of the whole document (a P × P kernel inline was 10–20 bytes of text per number, and a DOM of it
// ~16 times its doubles). The layout is the one docs/results-schema.md describes: objects one key a line (indent
// 1), a list of scalars on one line, a list of such lists one row a line; numbers as nlohmann::json prints them
// (whole numbers below 2^53 as integers, others with round-trip precision, NaN/Inf as null).
#include "internal.hpp"

#include <cmath>
#include <limits>

namespace am::report {

namespace {

std::string number_text(double v) {
  if (!std::isfinite(v)) return "null";
  if (v == std::floor(v) && std::fabs(v) < 9007199254740992.0) return std::to_string(static_cast<int64_t>(v));
  return json(v).dump();
}

// An element of an array of integers (i32/i64) as an integer, of floats as number_text.
std::string element_text(double v, bool integral) {
  if (integral && std::isfinite(v)) return std::to_string(static_cast<int64_t>(v));
  return number_text(v);
}

std::string child_name(const am_record *n, size_t i) {
  const char *key = am_record_type_of(n) == AM_REC_OBJECT ? am_record_key(n, i) : nullptr;
  return key ? std::string(key) : std::to_string(i);
}

class Emitter {
 public:
  Emitter(am_context *ctx, const ArrayRefs &refs, TextSink &out) : ctx_(ctx), refs_(refs), out_(out) {}

  // The JSON value of `n` at nesting depth `indent`; `path` is its dotted path (the .npy file name of an array).
  void value(const am_record *n, int indent, const std::string &path) {
    switch (kind(n)) {
      case Kind::Scalar: return out_.write(scalar_text(n));
      case Kind::Object: return object(n, indent, path);
      case Kind::Reference: return reference(n, indent, path);
      case Kind::List: return list(n, indent, path);
      case Kind::Array: return inline_array(n, indent);
    }
  }

 private:
  enum class Kind { Scalar, Object, Reference, List, Array };

  bool referenced(const am_record *n, const am_array_view &v) const {
    return (refs_.npy_only && refs_.npy_only->count(n)) || am_array_view_count(&v) >= refs_.min_elements;
  }

  Kind kind(const am_record *n) const {
    if (!n) return Kind::Scalar;
    switch (am_record_type_of(n)) {
      case AM_REC_OBJECT: return Kind::Object;
      case AM_REC_LIST: return Kind::List;
      case AM_REC_ARRAY: {
        am_array_view v{};
        if (am_record_array(n, &v) != AM_OK) return Kind::Scalar;  // null
        if (referenced(n, v)) return Kind::Reference;
        return v.ndim == 0 ? Kind::Scalar : Kind::Array;
      }
      default: return Kind::Scalar;
    }
  }

  // A value printed on one line by the layout: a scalar, or a list whose elements are all scalars (an array of
  // one dimension or with a first dimension of 0).
  bool flat(const am_record *n) const {
    const Kind k = kind(n);
    if (k == Kind::Scalar) return true;
    if (k == Kind::List) {
      for (size_t i = 0; i < am_record_size(n); ++i)
        if (kind(am_record_at(n, i)) != Kind::Scalar) return false;
      return true;
    }
    if (k != Kind::Array) return false;
    am_array_view v{};
    am_record_array(n, &v);
    return v.ndim == 1 || v.shape[0] == 0;
  }

  std::string scalar_text(const am_record *n) const {
    if (!n) return "null";
    switch (am_record_type_of(n)) {
      case AM_REC_NUMBER: return number_text(am_record_number(n));
      case AM_REC_STRING: {
        const char *s = am_record_string(n);
        return s ? json(s).dump() : "null";
      }
      case AM_REC_BOOL: return am_record_bool(n) ? "true" : "false";
      case AM_REC_ARRAY: {  // of no dimension: one number
        std::vector<double> x;
        am_array_view v{};
        if (am_record_array(n, &v) != AM_OK || !to_doubles(v, &x)) return "null";
        return element_text(x[0], v.dtype == AM_I32 || v.dtype == AM_I64);
      }
      default: return "null";
    }
  }

  bool to_doubles(const am_array_view &v, std::vector<double> *x) const {
    const size_t n = am_array_view_count(&v);
    x->assign(std::max<size_t>(n, 1), 0.0);
    return n == 0 || am_array_to_f64_c(ctx_, &v, x->data(), n) == AM_OK;
  }

  void open_item(const std::string &pad) { out_.write(pad); }
  void close_item(size_t i, size_t n) { out_.write(i + 1 < n ? ",\n" : "\n", i + 1 < n ? 2 : 1); }

  void object(const am_record *n, int indent, const std::string &path) {
    const size_t k = am_record_size(n);
    if (k == 0) return out_.write("{}", 2);
    const std::string pad(static_cast<size_t>(indent) + 1, ' ');
    out_.write("{\n", 2);
    for (size_t i = 0; i < k; ++i) {
      const std::string name = child_name(n, i);
      open_item(pad);
      out_.write(json(name).dump() + ": ");
      value(am_record_at(n, i), indent + 1, path.empty() ? name : path + "." + name);
      close_item(i, k);
    }
    out_.write(std::string(static_cast<size_t>(indent), ' ') + "}");
  }

  // {"npy_file": f, "shape": [...], "dtype": "<f8"} in place of the array, whose .npy refs_.on_reference writes.
  void reference(const am_record *n, int indent, const std::string &path) {
    am_array_view v{};
    am_record_array(n, &v);
    const auto named = refs_.npy_only ? refs_.npy_only->find(n) : NpyFiles::const_iterator{};
    const std::string file = refs_.npy_only && named != refs_.npy_only->end() ? named->second : npy_file_name(path);
    if (refs_.on_reference) refs_.on_reference(v, file);
    const std::string pad(static_cast<size_t>(indent) + 1, ' ');
    std::string shape = "[";
    for (uint32_t d = 0; d < v.ndim; ++d) shape += (d ? "," : "") + std::to_string(v.shape[d]);
    out_.write("{\n" + pad + "\"npy_file\": " + json(file).dump() + ",\n" + pad + "\"shape\": " + shape + "],\n" + pad +
               "\"dtype\": " + json(npy_dtype_text(v.dtype)).dump() + "\n" + std::string(static_cast<size_t>(indent), ' ') +
               "}");
  }

  // A flat list on one line: "[a,b,c]".
  void compact(const am_record *n) {
    if (kind(n) == Kind::Array) return inline_array(n, 0);
    if (kind(n) == Kind::Scalar) return out_.write(scalar_text(n));
    out_.write("[", 1);
    for (size_t i = 0; i < am_record_size(n); ++i) {
      if (i) out_.write(",", 1);
      out_.write(scalar_text(am_record_at(n, i)));
    }
    out_.write("]", 1);
  }

  void list(const am_record *n, int indent, const std::string &path) {
    if (flat(n)) return compact(n);
    const size_t k = am_record_size(n);
    bool rows = true;
    for (size_t i = 0; i < k && rows; ++i) rows = flat(am_record_at(n, i));
    const std::string pad(static_cast<size_t>(indent) + 1, ' ');
    out_.write("[\n", 2);
    for (size_t i = 0; i < k; ++i) {
      open_item(pad);
      if (rows)
        compact(am_record_at(n, i));
      else
        value(am_record_at(n, i), indent + 1, path.empty() ? std::to_string(i) : path + "." + std::to_string(i));
      close_item(i, k);
    }
    out_.write(std::string(static_cast<size_t>(indent), ' ') + "]");
  }

  void inline_array(const am_record *n, int indent) {
    am_array_view v{};
    std::vector<double> x;
    if (am_record_array(n, &v) != AM_OK || !to_doubles(v, &x)) return out_.write("null", 4);
    nested(x, v, 0, 0, indent);
  }

  // Dimension `dim` of the array (row-major from `offset`) as nested lists, laid out like a list of lists.
  void nested(const std::vector<double> &x, const am_array_view &v, uint32_t dim, size_t offset, int indent) {
    const bool integral = v.dtype == AM_I32 || v.dtype == AM_I64;
    const size_t len = v.shape[dim];
    size_t stride = 1;
    for (uint32_t d = dim + 1; d < v.ndim; ++d) stride *= v.shape[d];
    if (dim + 1 == v.ndim || len == 0) {  // flat: one line
      std::string line = "[";
      for (size_t i = 0; i < len; ++i) line += (i ? "," : "") + element_text(x[offset + i], integral);
      return out_.write(line + "]");
    }
    const bool rows = dim + 2 == v.ndim || v.shape[dim + 1] == 0;
    const std::string pad(static_cast<size_t>(indent) + 1, ' ');
    out_.write("[\n", 2);
    for (size_t i = 0; i < len; ++i) {
      open_item(pad);
      nested(x, v, dim + 1, offset + i * stride, rows ? 0 : indent + 1);  // a row is flat: its indent is unused
      close_item(i, len);
    }
    out_.write(std::string(static_cast<size_t>(indent), ' ') + "]");
  }

  am_context *ctx_;
  const ArrayRefs &refs_;
  TextSink &out_;
};

}  // namespace

void emit_results(am_context *ctx, const am_record *doc, const ArrayRefs &refs, TextSink &out) {
  Emitter(ctx, refs, out).value(doc, 0, "");
  out.write("\n", 1);
}

}  // namespace am::report
