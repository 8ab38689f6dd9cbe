// attnmech — header-only C++ helpers for a plugin's `describe` function (docs/abi.md "report spec"):
// read the results document, and append plot specs and summary blocks to the report record.
//
//   am_status describe(am_context *, const am_record *results, am_record *report) {
//     am::spec::Report r(report);
//     auto p = r.lines("accuracy_vs_width", "Test accuracy vs width", "width N", "test accuracy").log_x();
//     p.series("theory", "runs.*.width", "runs.*.test.accuracy");
//     r.table("").column("N", "runs.*.width", "%.0f").column("accuracy", "runs.*.test.accuracy", "%.4f");
//     return r.status();
//   }
//
// Everything is inline over the C record API (record.h): no exceptions escape (a failing record call is
// remembered and returned by Report::status()), nothing is exported. Paths are dotted from the document
// root; `*` = every element, `a:b` = elements a..b-1, "=<number>" = a literal.
#ifndef ATTNMECH_REPORT_SPEC_HPP
#define ATTNMECH_REPORT_SPEC_HPP

#include <attnmech/record.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

namespace am::spec {

// ---------------------------------------------------------------- reading the results document

// The node at a dotted path of object keys and list indices (no arrays); nullptr if absent.
inline const am_record *at(const am_record *root, const std::string &path) {
  const am_record *n = root;
  size_t pos = 0;
  while (n && pos <= path.size()) {
    const size_t dot = path.find('.', pos);
    const std::string part = path.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
    if (am_record_type_of(n) == AM_REC_OBJECT) {
      n = am_record_get(n, part.c_str());
    } else if (am_record_type_of(n) == AM_REC_LIST) {
      char *end = nullptr;
      const unsigned long i = std::strtoul(part.c_str(), &end, 10);
      n = part.empty() || *end ? nullptr : am_record_at(n, i);
    } else {
      return nullptr;
    }
    if (dot == std::string::npos) break;
    pos = dot + 1;
  }
  return n;
}

inline bool has(const am_record *root, const std::string &path) { return at(root, path) != nullptr; }

// Shape of a node: an array's shape, or the nested sizes of a list (first elements); {} for scalars.
inline std::vector<size_t> shape(const am_record *n) {
  std::vector<size_t> s;
  am_array_view v;
  if (am_record_type_of(n) == AM_REC_ARRAY && am_record_array(n, &v) == AM_OK) return std::vector<size_t>(v.shape, v.shape + v.ndim);
  while (am_record_type_of(n) == AM_REC_LIST) {
    s.push_back(am_record_size(n));
    n = am_record_at(n, 0);
    if (am_record_type_of(n) == AM_REC_ARRAY) {
      const std::vector<size_t> inner = shape(n);
      s.insert(s.end(), inner.begin(), inner.end());
      break;
    }
  }
  return s;
}

// Elements along the first dimension (list size or array rows); 0 for anything else.
inline size_t count(const am_record *n) {
  const std::vector<size_t> s = shape(n);
  return s.empty() ? 0 : s[0];
}

// Every number under a node (array in C order, nested lists, a number); NaN for null.
inline void numbers_into(const am_record *n, std::vector<double> &out) {
  switch (am_record_type_of(n)) {
    case AM_REC_NUMBER:
    case AM_REC_BOOL: out.push_back(am_record_number(n)); break;
    case AM_REC_NULL: out.push_back(std::numeric_limits<double>::quiet_NaN()); break;
    case AM_REC_ARRAY: {
      am_array_view v;
      if (am_record_array(n, &v) != AM_OK) break;
      const size_t k = am_array_view_count(&v), at0 = out.size();
      out.resize(at0 + k);
      if (k && am_array_to_f64_c(nullptr, &v, out.data() + at0, k) != AM_OK) out.resize(at0);
      break;
    }
    case AM_REC_LIST:
      for (size_t i = 0; i < am_record_size(n); ++i) numbers_into(am_record_at(n, i), out);
      break;
    default: break;
  }
}

// The numbers at a path; trailing indices may also pick into an array ("runs.0.U.0" when U is a 3-d array).
inline std::vector<double> numbers(const am_record *root, const std::string &path) {
  std::vector<double> v;
  const am_record *n = at(root, path);
  if (n) {
    numbers_into(n, v);
    return v;
  }
  std::string head = path;  // walk back to the deepest node, then index into its array
  std::vector<size_t> idx;
  while (!n && !head.empty()) {
    const size_t dot = head.rfind('.');
    if (dot == std::string::npos) return v;
    char *end = nullptr;
    const std::string part = head.substr(dot + 1);
    idx.insert(idx.begin(), std::strtoul(part.c_str(), &end, 10));
    if (part.empty() || *end) return v;
    head.erase(dot);
    n = at(root, head);
  }
  const std::vector<size_t> s = shape(n);
  if (am_record_type_of(n) != AM_REC_ARRAY || idx.size() > s.size()) return v;
  size_t block = 1, off = 0;
  for (size_t d = idx.size(); d < s.size(); ++d) block *= s[d];
  for (size_t d = 0; d < idx.size(); ++d) {
    if (idx[d] >= s[d]) return v;
    off = off * s[d] + idx[d];
  }
  std::vector<double> all;
  numbers_into(n, all);
  if (all.size() >= (off + 1) * block) v.assign(all.begin() + static_cast<std::ptrdiff_t>(off * block), all.begin() + static_cast<std::ptrdiff_t>((off + 1) * block));
  return v;
}

// One number at a path (the first if several); NaN if absent.
inline double number(const am_record *root, const std::string &path) {
  const std::vector<double> v = numbers(root, path);
  return v.empty() ? std::numeric_limits<double>::quiet_NaN() : v[0];
}

inline bool is_matrix(const am_record *n) { return shape(n).size() == 2; }

// Strings of a list of strings.
inline std::vector<std::string> strings(const am_record *root, const std::string &path) {
  std::vector<std::string> out;
  const am_record *n = at(root, path);
  for (size_t i = 0; i < am_record_size(n); ++i) {
    const char *s = am_record_string(am_record_at(n, i));
    if (s) out.emplace_back(s);
  }
  return out;
}

inline std::string cat(const std::string &a, const std::string &b) { return a.empty() ? b : a + "." + b; }
inline std::string cat(const std::string &a, size_t i) { return cat(a, std::to_string(i)); }

// printf of one number into a std::string ("%g" style formats).
inline std::string format(const char *f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// A run's width: its `width`, else the largest of its `widths`; NaN if neither.
inline double run_width(const am_record *results, size_t run) {
  const std::string r = cat("runs", run);
  double w = number(results, cat(r, "width"));
  if (std::isfinite(w)) return w;
  for (double x : numbers(results, cat(r, "widths")))
    if (std::isfinite(x) && !(x <= w)) w = x;
  return w;
}

// Runs to show matrices for: widths 10, 100, 1000 when the scan has them, else the first and the last.
inline std::vector<size_t> selected_runs(const am_record *results) {
  const size_t n = am_record_size(am_record_get(results, "runs"));
  std::vector<size_t> out;
  for (double target : {10.0, 100.0, 1000.0})
    for (size_t i = 0; i < n; ++i)
      if (run_width(results, i) == target) out.push_back(i);
  if (out.empty() && n > 0) {
    out.push_back(0);
    if (n > 1) out.push_back(n - 1);
  }
  return out;
}

// ---------------------------------------------------------------- building the report

// A node of the report being built (a plot, a series, a block, ...). Setters chain.
class Node {
 public:
  Node(am_record *n, am_status *st) : n_(n), st_(st) {}
  bool valid() const { return n_ != nullptr; }
  am_record *record() const { return n_; }
  Node &str(const char *key, const std::string &v) { return check(n_ ? am_record_set_string(n_, key, v.c_str()) : AM_OK); }
  Node &num(const char *key, double v) { return check(n_ ? am_record_set_number(n_, key, v) : AM_OK); }
  Node &flag(const char *key, bool v) { return check(n_ ? am_record_set_bool(n_, key, v ? 1 : 0) : AM_OK); }
  // A new object appended to the list under `key` (created if absent).
  Node item(const char *key) {
    am_record *l = n_ ? am_record_list(n_, key) : nullptr;
    am_record *o = l ? am_record_append_object(l) : nullptr;
    if (n_ && !o) fail();
    return Node(o, st_);
  }
  // A child object under `key`, created if absent (an overlay's "where"). Added in 3.1.
  Node object(const char *key) {
    am_record *o = n_ ? am_record_object(n_, key) : nullptr;
    if (n_ && !o) fail();
    return Node(o, st_);
  }
  // A list of strings under `key` (replacing what it held): a text file's "sort_by" paths. Added in 3.1.
  Node &strings(const char *key, const std::vector<std::string> &values) {
    if (!n_) return *this;
    if (am_record_get(n_, key)) am_record_remove(n_, key);
    am_record *l = am_record_list(n_, key);
    if (!l) return check(AM_ERR_NO_MEMORY);
    for (const auto &v : values) check(am_record_append_string(l, v.c_str()));
    return *this;
  }
  // Plot settings.
  Node &log_x(bool v = true) { return flag("x_log", v); }
  Node &log_y(bool v = true) { return flag("y_log", v); }
  Node &labels(const std::string &rows, const std::string &cols) {
    if (!rows.empty()) str("row_labels", rows);
    if (!cols.empty()) str("col_labels", cols);
    return *this;
  }
  // A series of a lines/scatter/bars plot: style "line", "points", "line+points", "dashed" or "hline".
  Node series(const std::string &label, const std::string &x, const std::string &y,
              const std::string &style = "line+points") {
    Node s = item("series");
    s.str("label", label);
    if (!x.empty()) s.str("x", x);
    s.str("y", y).str("style", style);
    return s;
  }
  // A horizontal reference line at the number `y` names (a path, or "=<number>").
  Node hline(const std::string &label, const std::string &y) { return series(label, "", y, "hline"); }
  Node panel(const std::string &title, const std::string &matrix) { return item("panels").str("title", title).str("matrix", matrix); }
  // Marks over a heat map's cells at (row y, column x), in the units of its row/column labels (indices without);
  // narrow them with .object("where"), .num("limit"). Added in 3.1.
  Node overlay(const std::string &label, const std::string &x, const std::string &y) {
    return object("overlay").str("label", label).str("x", x).str("y", y);
  }
  // Summary blocks.
  Node &column(const std::string &header, const std::string &path, const std::string &format) {
    item("columns").str("header", header).str("path", path).str("format", format);
    return *this;
  }
  Node &value(const std::string &label, const std::string &path, const std::string &format = "%.6g") {
    item("items").str("label", label).str("path", path).str("format", format);
    return *this;
  }

 private:
  Node &check(am_status s) {
    if (s != AM_OK && st_ && *st_ == AM_OK) *st_ = s;
    return *this;
  }
  void fail() { check(AM_ERR_NO_MEMORY); }
  am_record *n_;
  am_status *st_;
};

// The report record {plots: [...], summary: [...]} a describe function appends to.
class Report {
 public:
  explicit Report(am_record *report) : root_(report, &st_) {
    if (!report) st_ = AM_ERR_INVALID_ARGUMENT;
  }
  am_status status() const { return st_; }
  Node lines(const std::string &file, const std::string &title, const std::string &x_label, const std::string &y_label) {
    return plot("lines", file, title).str("x_label", x_label).str("y_label", y_label);
  }
  Node scatter(const std::string &file, const std::string &title, const std::string &x_label, const std::string &y_label) {
    return plot("scatter", file, title).str("x_label", x_label).str("y_label", y_label);
  }
  Node bars(const std::string &file, const std::string &title, const std::string &x_label, const std::string &y_label) {
    return plot("bars", file, title).str("x_label", x_label).str("y_label", y_label);
  }
  // A heat map; add panels with .panel(title, matrix path); scale "diverging" or "sequential".
  Node heatmap(const std::string &file, const std::string &title, const std::string &scale = "diverging") {
    return plot("heatmap", file, title).str("scale", scale);
  }
  Node table(const std::string &title) { return block("table", title); }
  Node values(const std::string &title) { return block("values", title); }
  Node matrix(const std::string &title, const std::string &path, const std::string &format = "%.4f") {
    return block("matrix", title).str("path", path).str("format", format);
  }
  void text(const std::string &t) { root_.item("summary").str("kind", "text").str("text", t); }
  // A text file of the results directory, one line per element of parallel vectors: add .column(header, path,
  // format) per column ("%c" prints a number as its letter). Added in 3.1.
  Node file(const std::string &name, const std::string &separator = " ") {
    return root_.item("files").str("file", name).str("separator", separator);
  }
  // Arrays at or below `path` (`*` = every key or index) are written only as .npy files; results.json holds a
  // reference to each. Added in 3.1.
  void npy_only(const std::string &path) {
    am_record *l = root_.valid() ? am_record_list(root_.record(), "npy_only") : nullptr;
    if (!l || am_record_append_string(l, path.c_str()) != AM_OK) fail();
  }

  // One "values" item per scalar (or short list) below `path`, labelled by the path below it; keys in
  // `skip` (top level only) are left out. Nested objects are walked; arrays are listed by their shape.
  void scalar_items(Node &values, const am_record *results, const std::string &path,
                    const std::vector<std::string> &skip = {}) {
    walk(values, at(results, path), path, "", skip);
  }

 private:
  Node plot(const char *kind, const std::string &file, const std::string &title) {
    return root_.item("plots").str("file", file).str("kind", kind).str("title", title);
  }
  Node block(const char *kind, const std::string &title) { return root_.item("summary").str("kind", kind).str("title", title); }
  void fail() {
    if (st_ == AM_OK) st_ = AM_ERR_NO_MEMORY;
  }
  void walk(Node &values, const am_record *n, const std::string &abs, const std::string &rel,
            const std::vector<std::string> &skip) {
    const am_record_type t = am_record_type_of(n);
    if (t == AM_REC_OBJECT || (t == AM_REC_LIST && am_record_type_of(am_record_at(n, 0)) == AM_REC_OBJECT)) {
      for (size_t i = 0; i < am_record_size(n); ++i) {
        const char *k = am_record_key(n, i);
        const std::string key = k ? std::string(k) : std::to_string(i);
        bool skipped = false;
        for (const auto &s : skip) skipped = skipped || (rel.empty() && s == key);
        if (!skipped) walk(values, am_record_at(n, i), cat(abs, key), cat(rel, key), {});
      }
    } else if (n) {
      values.value(rel, abs);
    }
  }
  am_status st_ = AM_OK;
  Node root_;
};

// A ready describe for tasks whose only report is their extras: every scalar of task_extras in the summary.
inline am_status describe_task_extras(am_context *ctx, const am_record *results, am_record *report) {
  try {
    Report rep(report);
    Node v = rep.values("task extras");
    rep.scalar_items(v, results, "task_extras");
    return rep.status();
  } catch (...) {
    return am_context_fail(ctx, AM_ERR_NO_MEMORY, "cannot describe the task extras");
  }
}

// A base for a task class of the C++ SDK (attnmech/plugin.hpp) whose report only lists its extras.
struct DescribeTaskExtras {
  static am_status describe(const am_record *results, am_record *report) {
    return describe_task_extras(nullptr, results, report);
  }
};

}  // namespace am::spec

#endif
