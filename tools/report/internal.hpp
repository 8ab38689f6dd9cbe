// attnmech-report — internal interfaces between the library's translation units (not installed).
#ifndef ATTNMECH_REPORT_INTERNAL_HPP
#define ATTNMECH_REPORT_INTERNAL_HPP

#include <attnmech/attnmech.h>
#include <attnmech/report.h>

#include <nlohmann/json.hpp>

#include <common/read_input.hpp>  // Error, read_regular_file, parse_strict

#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace am::report {

using namespace am::input;  // Error, read_regular_file, parse_strict (libcore/include/common/read_input.hpp)

using json = nlohmann::ordered_json;

// ---- npy_ref.cpp: arrays written only as .npy files (report.npy_only, docs/abi.md "report spec")
// Array node → the .npy file name it is written to (the dotted-path name of the .npy export).
using NpyFiles = std::map<const am_record *, std::string>;
// The arrays at or below the paths of doc.report.npy_only (`*` = every key or index).
NpyFiles npy_only_arrays(const am_record *doc);
std::string npy_file_name(const std::string &dotted_path);  // "runs.0.params.J" → "runs.0.params.J.npy"
bool is_npy_reference(const json &j);  // an object of exactly the keys npy_file, shape, dtype
// Reads the array a reference names from `dir` and hands it to `store`. The name obeys the one safe-name rule
// (a file in `dir`, never a path), the file is a regular file (no symlink), its dtype and shape are the
// reference's; else Error(AM_ERR_FORMAT) naming `where`. A missing file is AM_ERR_IO.
void load_npy_reference(const std::string &dir, const json &ref, const std::string &where,
                        const std::function<void(const am_array_view &)> &store);

const char *npy_dtype_text(am_dtype t);  // "<f8", "<f4", "<i8", "<i4"

// ---- emit.cpp: the results.json text, written in pieces as the record is walked (never a DOM or one string)
// Where the text goes.
class TextSink {
 public:
  virtual ~TextSink() = default;
  virtual void write(const char *p, size_t n) = 0;
  void write(const std::string &s) { write(s.data(), s.size()); }
};
class StringSink : public TextSink {
 public:
  std::string text;
  void write(const char *p, size_t n) override { text.append(p, n); }
  using TextSink::write;
};
// The arrays the text refers to ({"npy_file", "shape", "dtype"}) instead of holding them: those of `npy_only`, and
// every array of at least `min_elements` elements. on_reference (may be empty) is told each one with its file name
// (the dotted-path name of npy_file_name, or npy_only's).
struct ArrayRefs {
  const NpyFiles *npy_only = nullptr;
  size_t min_elements = SIZE_MAX;
  std::function<void(const am_array_view &, const std::string &file)> on_reference;
};
// The results.json text of `doc` (docs/results-schema.md layout) into `out`; throws what the JSON string escaper
// throws (a string that is not UTF-8).
void emit_results(am_context *ctx, const am_record *doc, const ArrayRefs &refs, TextSink &out);

// ---- json.cpp: results.json back into a record
// j must be an object; throws Error. `npy_dir`: the directory .npy references are read from ("" = refuse them).
void json_to_record(const json &j, am_record *obj, const std::string &npy_dir = "");

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

// Rows of parallel columns of `n` rows that a table, text file or overlay spec keeps (docs/abi.md "report spec"):
// "where": {"path": p, "min": a, "max": b} keeps rows whose value at p (n numbers) lies in [a, b]; "sort_by": p or
// [p, ...] orders them ascending by those values (stable, NaN last); "limit": k keeps the first k. A path that does
// not name n numbers keeps no row. Without these keys: 0..n-1.
bool has_row_selection(const am_record *spec);
std::vector<size_t> select_rows(const am_record *doc, const am_record *spec, size_t n);

// Spec fields (absent or of another type → the default).
std::string spec_string(const am_record *o, const char *key, const std::string &def = "");
bool spec_bool(const am_record *o, const char *key, bool def);
double spec_number(const am_record *o, const char *key, double def);

// ---- draw.cpp: plots of a report spec
// A plot is <file>.svg and, asked for (AM_REPORT_FORMAT_* bits) in a build with cairo (AM_REPORT_CAIRO), <file>.pdf
// (1 px = 1 pt) and <file>.png of the SVG's size × kPngScale pixels (2: sharp on a screen and in a slide, still small).
constexpr double kPngScale = 2.0;
// AM_PLOT_FORMATS checked (unset, "all" or "svg"): throws Error(AM_ERR_USAGE) naming the variable and its values.
void check_plot_formats();
// What a build can write: SVG, with cairo PDF and PNG too.
uint32_t available_formats();
// "svg,pdf" → bits (am_report_parse_formats); throws Error(AM_ERR_USAGE) naming the valid names.
uint32_t parse_formats(const std::string &list);
// The formats a setting asks for: `asked` itself, or for AM_REPORT_FORMATS_DEFAULT SVG (AM_PLOT_FORMATS=all: every
// format the build has). Throws Error(AM_ERR_USAGE) for a format the build cannot write or a bad AM_PLOT_FORMATS.
uint32_t plot_formats(uint32_t asked);
// Draws every plot of doc.report.plots into `dir` in `formats` (a setting, resolved by plot_formats); appends the
// names written. Throws Error.
void draw_plots(const am_record *doc, const std::string &dir, uint32_t formats, std::vector<std::string> *written);
void draw_compare(const std::vector<const am_record *> &docs, const std::vector<std::string> &labels,
                  const std::string &dir, uint32_t formats, std::vector<std::string> *written);

// ---- summary.cpp
std::string summary_text(const am_record *doc);
// A printf format taken from a document only if it is one conversion of a number ("%.4f"; d/i print whole
// numbers) or, with for_string, of a string ("%s"), with literal text around it; else `def`.
std::string safe_format(const std::string &f, bool for_string, const std::string &def);
std::string fmt_number(double v, const std::string &f);  // non-finite: "-"
std::string fmt_string(const std::string &s, const std::string &f);
// "%c" formats print a number as its ASCII letter: the format with the conversion as "%s" ("[%3c]" → "[%3s]"),
// "" when `f` is not one; letter_of(x) is the letter ('?' outside the printable ASCII range).
std::string letter_format(const std::string &f);
std::string letter_of(double x);

// ---- files.cpp: text files of doc.report.files (columns of parallel vectors, plmc's coupling list)
void write_text_files(const am_record *doc, const std::string &dir, std::vector<std::string> *written);

// ---- write.cpp: files
void write_file_synced(const std::string &path, const std::string &content);  // throws Error(AM_ERR_IO)
// `dir` may become a results directory (am_report_check_dir; libcore/include/common/safe_file.hpp check_dir).
void check_dir(const std::string &dir);  // throws Error(AM_ERR_IO)
// The results directory `dir` written whole or not at all (libcore/include/common/safe_file.hpp write_dir_atomically), its
// names appended to *written once it is in place. Plots that cannot be drawn do not discard it: the results go in
// place without them (those drawn before the failure kept), then Error says what failed.
void write_results_dir(am_context *ctx, const am_record *doc, const std::string &dir,
                       const am_report_write_options &opt, std::vector<std::string> *written);

}  // namespace am::report

#endif
