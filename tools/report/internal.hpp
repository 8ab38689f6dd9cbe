// attnmech-report — internal interfaces between the library's translation units (not installed).
#ifndef ATTNMECH_REPORT_INTERNAL_HPP
#define ATTNMECH_REPORT_INTERNAL_HPP

#include <attnmech/attnmech.h>
#include <attnmech/report.h>

#include <nlohmann/json.hpp>

#include <read_input.hpp>  // libcore/src: Error, read_regular_file, parse_strict

#include <stdexcept>
#include <string>
#include <vector>

namespace am::report {

using namespace am::input;  // Error, read_regular_file, parse_strict (libcore/src/read_input.hpp)

using json = nlohmann::ordered_json;

// ---- json.cpp: the results.json text and reading it back
json record_to_json(am_context *ctx, const am_record *node);
std::string dump_results(const json &doc);  // today's results.json layout (docs/results-schema.md)
void json_to_record(const json &j, am_record *obj);  // j must be an object; throws Error

// JSON text is read with parse_strict (read_input.hpp): depth-limited, duplicate keys refused.

// ---- resolve.cpp: data paths of the report spec (docs/abi.md)
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
// Numbers as strings (labels): strings as they are, numbers with am::svg::format_tick.
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
// `dir` may become a results directory (am_report_check_dir; libcore/src/safe_file.hpp check_dir).
void check_dir(const std::string &dir);  // throws Error(AM_ERR_IO)
// The results directory `dir` written whole or not at all (libcore/src/safe_file.hpp write_dir_atomically).
void write_results_dir(am_context *ctx, const am_record *doc, const std::string &dir,
                       const am_report_write_options &opt, std::vector<std::string> *written);

}  // namespace am::report

#endif
