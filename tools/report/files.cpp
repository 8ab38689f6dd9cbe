// attnmech-report — text files from the report spec (docs/abi.md "report spec", "files"): one row per element of
// parallel vectors, like a summary table but for programs to read — plmc's coupling list `i res_i j res_j 0 score`
// is such a file. Nothing here knows a plugin or a result layout.
#include "internal.hpp"

#include <common/safe_file.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace am::report {

namespace {

struct Column {
  Value v;
  std::string format;  // checked: a number format, or a string format
  bool letter = false;  // "%c": a number printed as its ASCII letter
  std::string header;
};

// A cell: a column of one value repeats on every row (a constant such as plmc's "0" column).
std::string cell(const Column &c, size_t row) {
  const size_t k = c.v.size() == 1 ? 0 : row;
  char buf[128];  // the formats passed safe_format: one conversion, widths and precisions of at most 2 digits
  if (c.v.strings || c.letter) {
    const std::string s = c.letter ? letter_of(c.v.num[k]) : c.v.str[k];
    const int n = std::snprintf(nullptr, 0, c.format.c_str(), s.c_str());
    std::string out(static_cast<size_t>(std::max(n, 0)) + 1, '\0');
    std::snprintf(&out[0], out.size(), c.format.c_str(), s.c_str());
    out.pop_back();
    return out;
  }
  // non-finite numbers as printf writes them (nan, inf): what a program reading the file parses
  std::snprintf(buf, sizeof buf, c.format.c_str(), c.v.num[k]);
  return buf;
}

// The column's format: "%c" (and "%3c", "[%c]") prints a letter; other formats pass safe_format's rule.
bool column_of(const am_record *doc, const am_record *spec, Column *c) {
  c->v = resolve(doc, spec_string(spec, "path"));
  if (!c->v.ok) return false;
  c->header = spec_string(spec, "header");
  const std::string f = spec_string(spec, "format");
  c->format = letter_format(f);
  c->letter = !c->v.strings && !c->format.empty();
  if (!c->letter) c->format = c->v.strings ? safe_format(f, true, "%s") : safe_format(f, false, "%.10g");
  return true;
}

// The separator: 1..8 bytes, no line break or NUL (" " when absent or otherwise).
std::string separator_of(const am_record *spec) {
  const std::string s = spec_string(spec, "separator", " ");
  if (s.empty() || s.size() > 8 || s.find_first_of(std::string("\n\r\0", 3)) != std::string::npos) return " ";
  return s;
}

// The text of one file spec; false when a column does not resolve or the columns differ in length.
bool file_text(const am_record *doc, const am_record *spec, std::string *text) {
  const am_record *list = am_record_get(spec, "columns");
  std::vector<Column> cols(am_record_size(list));
  if (cols.empty()) return false;
  size_t n = 1;  // rows: the length of the columns longer (or shorter) than one value
  for (size_t i = 0; i < cols.size(); ++i) {
    if (!column_of(doc, am_record_at(list, i), &cols[i])) return false;
    if (cols[i].v.size() != 1 && n == 1) n = cols[i].v.size();
  }
  for (const auto &c : cols)
    if (c.v.size() != 1 && c.v.size() != n) return false;
  const std::string sep = separator_of(spec);
  auto line = [&](auto &&text_of) {
    for (size_t i = 0; i < cols.size(); ++i) *text += (i ? sep : "") + text_of(cols[i]);
    *text += "\n";
  };
  if (spec_bool(spec, "header", false)) line([](const Column &c) { return c.header; });
  for (size_t r : select_rows(doc, spec, n)) line([&](const Column &c) { return cell(c, r); });
  return true;
}

// A name the spec may use: the one safe-name rule, and none of the directory's own files (results.json, the
// .npy arrays, the .svg plots).
std::string file_name_problem(const std::string &file) {
  std::string why = am::files::name_problem(file);
  auto ends = [&](const char *sfx) {
    const std::string t(sfx);
    return file.size() >= t.size() && file.compare(file.size() - t.size(), t.size(), t) == 0;
  };
  if (why.empty() && (file == "results.json" || ends(".npy") || ends(".svg")))
    why = "is results.json, a .npy or an .svg name (the results directory's own files)";
  return why;
}

}  // namespace

void write_text_files(const am_record *doc, const std::string &dir, std::vector<std::string> *written) {
  const am_record *files = am_record_get(am_record_get(doc, "report"), "files");
  for (size_t i = 0; i < am_record_size(files); ++i) {
    const am_record *spec = am_record_at(files, i);
    const std::string file = spec_string(spec, "file");
    const std::string why = file_name_problem(file);  // refused, not encoded: the name is the spec's promise
    if (!why.empty())
      throw Error(AM_ERR_FORMAT, "report.files." + std::to_string(i) + ": invalid file name '" + file.substr(0, 60) +
                                     (file.size() > 60 ? "…" : "") + "': " + why);
    std::string text;
    if (!file_text(doc, spec, &text)) continue;
    write_file_synced(dir + "/" + file, text);
    if (written) written->push_back(file);
  }
}

}  // namespace am::report
