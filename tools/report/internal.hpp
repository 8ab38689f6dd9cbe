// attnmech-report — internal interfaces between the library's translation units (not installed).
#ifndef ATTNMECH_REPORT_INTERNAL_HPP
#define ATTNMECH_REPORT_INTERNAL_HPP

#include <attnmech/attnmech.h>
#include <attnmech/report.h>

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>
#include <vector>

namespace amr {

using json = nlohmann::ordered_json;

// An error carrying a status; the C entry points turn it into am_context_fail.
struct Error : std::runtime_error {
  am_status code;
  Error(am_status c, const std::string &msg) : std::runtime_error(msg), code(c) {}
};

// ---- json.cpp: the results.json text and reading it back
json record_to_json(am_context *ctx, const am_record *node);
std::string dump_results(const json &doc);  // today's results.json layout (docs/results-schema.md)
void json_to_record(const json &j, am_record *obj);  // j must be an object; throws Error

// JSON text that names one key twice in an object is refused (nlohmann keeps the last silently): throws
// Error(AM_ERR_FORMAT, "duplicate key \"k\" in <where>") or the parser's own message. J: json or ordered_json.
// Objects and lists nested deeper than kMaxJsonDepth are refused too: what reads the value back recurses once
// per level, and 10^4 levels (a 20 KB file) overflowed the stack (found by tests/fuzz, harness results_json).
constexpr int kMaxJsonDepth = 128;
template <class J>
J parse_strict(const std::string &text) {
  std::vector<std::vector<std::string>> keys;  // the keys seen in each open object
  auto cb = [&](int depth, typename J::parse_event_t ev, J &parsed) {
    using E = typename J::parse_event_t;
    if ((ev == E::object_start || ev == E::array_start) && depth >= kMaxJsonDepth)
      throw Error(AM_ERR_FORMAT, "objects and lists nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    if (ev == E::object_start) keys.emplace_back();
    if (ev == E::object_end && !keys.empty()) keys.pop_back();
    if (ev == E::key && !keys.empty()) {
      const std::string k = parsed.template get<std::string>();
      for (const std::string &seen : keys.back())
        if (seen == k) throw Error(AM_ERR_FORMAT, "duplicate key \"" + k + "\"");
      keys.back().push_back(k);
    }
    return true;
  };
  return J::parse(text, cb);
}

// ---- resolve.cpp: data paths of the report spec (docs/abi2.md)
// The values a path names: numbers with a shape (C order; empty shape = one number) or strings.
struct Value {
  bool ok = false;
  bool strings = false;
  std::vector<double> num;
  std::vector<size_t> shape;
  std::vector<std::string> str;
  size_t size() const { return strings ? str.size() : num.size(); }
};
// Dotted path from `root`: object keys, list indices or array indices, `*` = every element (of a list,
// or along an array dimension), `a:b` = elements a..b-1, "=<number>" = a literal. Under `*`, an element
// the rest of the path does not reach contributes NaN (or "") so columns stay aligned.
Value resolve(const am_record *root, const std::string &path);
// Numbers as strings (labels): strings as they are, numbers with svg::format_tick.
std::vector<std::string> as_labels(const Value &v);

// Spec fields (absent or of another type → the default).
std::string spec_string(const am_record *o, const char *key, const std::string &def = "");
bool spec_bool(const am_record *o, const char *key, bool def);
double spec_number(const am_record *o, const char *key, double def);

// ---- draw.cpp: plots of a report spec
// Draws every plot of doc.report.plots into `dir`; appends the names written. Throws Error.
void draw_plots(const am_record *doc, const std::string &dir, std::vector<std::string> *written);
void draw_compare(const std::vector<const am_record *> &docs, const std::vector<std::string> &labels,
                  const std::string &dir, std::vector<std::string> *written);

// ---- summary.cpp
std::string summary_text(const am_record *doc);

// ---- write.cpp: files
void write_file_synced(const std::string &path, const std::string &content);  // throws Error(AM_ERR_IO)
void check_dir(const std::string &dir);                                        // throws Error(AM_ERR_IO)
void write_results_dir(am_context *ctx, const am_record *doc, const std::string &dir,
                       const am_report_write_options &opt, std::vector<std::string> *written);

// ---- problem.cpp
am_status problem_read(am_context *ctx, const char *dir, am_record *dataset);
am_status problem_write(am_context *ctx, const char *dir, const am_record *dataset);

}  // namespace amr

#endif
