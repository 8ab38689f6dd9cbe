// attnmech-report — the human summary: a generic header and the summary blocks of the report spec.
#include "internal.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace am::report {

// A printf format is taken from the document only if it is one conversion of a number ("%.4f", "%8.3g",
// "%+.2e"; d/i print whole numbers) or of a string ("%s"), with literal text around it; else `def`.
std::string safe_format(const std::string &f, bool for_string, const std::string &def) {
  size_t pct = std::string::npos;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] != '%') continue;
    if (i + 1 < f.size() && f[i + 1] == '%') {
      ++i;
      continue;
    }
    if (pct != std::string::npos) return def;
    pct = i;
  }
  if (pct == std::string::npos) return def;
  size_t i = pct + 1;
  while (i < f.size() && std::string("-+ 0#").find(f[i]) != std::string::npos) ++i;
  size_t digits = 0;
  while (i < f.size() && std::isdigit(static_cast<unsigned char>(f[i]))) ++i, ++digits;
  if (digits > 2) return def;
  if (i < f.size() && f[i] == '.') {
    ++i;
    digits = 0;
    while (i < f.size() && std::isdigit(static_cast<unsigned char>(f[i]))) ++i, ++digits;
    if (digits > 2) return def;
  }
  if (i >= f.size()) return def;
  const char conv = f[i];
  if (for_string) return conv == 's' ? f : def;
  if (conv == 'd' || conv == 'i') return f.substr(0, i) + (f.find('.', pct) < i ? "" : ".0") + "f" + f.substr(i + 1);
  return std::string("eEfgG").find(conv) != std::string::npos ? f : def;
}

std::string fmt_number(double v, const std::string &f) {
  if (!std::isfinite(v)) return "-";
  char buf[128];
  std::snprintf(buf, sizeof buf, safe_format(f, false, "%.6g").c_str(), v);
  return buf;
}

std::string fmt_string(const std::string &s, const std::string &f) {
  const std::string g = safe_format(f, true, "%s");
  const size_t p = g.find("%s");
  return p == std::string::npos ? s : g.substr(0, p) + s + g.substr(p + 2);
}

std::string letter_format(const std::string &f) {
  for (size_t k = f.find('c'); k != std::string::npos; k = f.find('c', k + 1)) {
    std::string as_string = f;  // the 'c' that is the conversion: as 's' the format passes the string rule
    as_string[k] = 's';
    if (!safe_format(as_string, true, "").empty()) return as_string;
  }
  return "";
}

std::string letter_of(double x) {
  const bool printable = std::isfinite(x) && x == std::floor(x) && x >= 32 && x <= 126;
  return std::string(1, printable ? static_cast<char>(x) : '?');
}

namespace {

std::string pad_left(const std::string &s, size_t w) {
  size_t n = 0;  // UTF-8 code points
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n >= w ? s : std::string(w - n, ' ') + s;
}

std::string pad_right(const std::string &s, size_t w) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n >= w ? s : s + std::string(w - n, ' ');
}

size_t width_of(const std::string &s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// One value of a "values" item: a number, a string, a short list inline, else its size or shape.
std::string value_text(const Value &v, const std::string &f) {
  const size_t n = v.size();
  if (v.strings) {
    if (n == 1 && v.shape.size() <= 1 && v.shape != std::vector<size_t>{1}) return fmt_string(v.str[0], f);
    if (n > 8) return "[" + std::to_string(n) + " values]";
    std::string s = "[";
    for (size_t i = 0; i < n; ++i) s += (i ? ", \"" : "\"") + v.str[i] + "\"";
    return s + "]";
  }
  if (v.shape.empty()) return fmt_number(v.num.empty() ? NAN : v.num[0], f);
  if (v.shape.size() > 1) {
    std::string s = "[";
    for (size_t i = 0; i < v.shape.size(); ++i) s += (i ? "x" : "") + std::to_string(v.shape[i]);
    return s + " array]";
  }
  if (n > 8) return "[" + std::to_string(n) + " values]";
  std::string s = "[";
  for (size_t i = 0; i < n; ++i) s += (i ? ", " : "") + fmt_number(v.num[i], f);
  return s + "]";
}

void table_block(const am_record *doc, const am_record *b, std::string &out) {
  const am_record *cols = am_record_get(b, "columns");
  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> headers;
  std::vector<bool> right;
  size_t rows = 0;
  for (size_t c = 0; c < am_record_size(cols); ++c) {
    const am_record *col = am_record_at(cols, c);
    const Value v = resolve(doc, spec_string(col, "path"));
    if (!v.ok) continue;
    const std::string f = spec_string(col, "format", v.strings ? "%s" : "%.6g"), letters = letter_format(f);
    std::vector<std::string> cs;
    if (v.strings)
      for (const auto &s : v.str) cs.push_back(fmt_string(s, f));
    else if (!letters.empty())
      for (double x : v.num) cs.push_back(fmt_string(letter_of(x), letters));
    else
      for (double x : v.num) cs.push_back(fmt_number(x, f));
    rows = std::max(rows, cs.size());
    cells.push_back(cs);
    headers.push_back(spec_string(col, "header"));
    right.push_back(!v.strings);
  }
  if (cells.empty()) return;
  if (has_row_selection(b)) {  // where / sort_by / limit: the chosen rows, in their order
    const std::vector<size_t> keep = select_rows(doc, b, rows);
    for (auto &cs : cells) {
      std::vector<std::string> picked;
      for (size_t r : keep) picked.push_back(r < cs.size() ? cs[r] : std::string());
      cs.swap(picked);
    }
    rows = keep.size();
  }
  std::vector<size_t> w(cells.size());
  for (size_t c = 0; c < cells.size(); ++c) {
    w[c] = width_of(headers[c]);
    for (const auto &s : cells[c]) w[c] = std::max(w[c], width_of(s));
  }
  auto line = [&](auto &&cell) {
    std::string l = "  ";
    for (size_t c = 0; c < cells.size(); ++c) {
      const std::string s = cell(c);
      l += (c ? "  " : "") + (right[c] ? pad_left(s, w[c]) : c + 1 == cells.size() ? s : pad_right(s, w[c]));
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + "\n";
  };
  line([&](size_t c) { return headers[c]; });
  for (size_t r = 0; r < rows; ++r) line([&](size_t c) { return r < cells[c].size() ? cells[c][r] : std::string(); });
}

void values_block(const am_record *doc, const am_record *b, std::string &out) {
  const am_record *items = am_record_get(b, "items");
  std::vector<std::pair<std::string, std::string>> lines;
  for (size_t i = 0; i < am_record_size(items); ++i) {
    const am_record *it = am_record_at(items, i);
    const Value v = resolve(doc, spec_string(it, "path"));
    if (!v.ok) continue;
    lines.emplace_back(spec_string(it, "label"), value_text(v, spec_string(it, "format", "%.6g")));
  }
  size_t w = 0;
  for (const auto &l : lines) w = std::max(w, width_of(l.first));
  for (const auto &l : lines) out += "  " + pad_right(l.first, w) + "  " + l.second + "\n";
}

void matrix_block(const am_record *doc, const am_record *b, std::string &out) {
  const Value m = resolve(doc, spec_string(b, "path"));
  if (!m.ok || m.strings || m.num.empty() || m.shape.size() > 2) return;
  const size_t R = m.shape.size() == 2 ? m.shape[0] : 1, C = m.shape.empty() ? 1 : m.shape.back();
  std::vector<std::string> rl = as_labels(resolve(doc, spec_string(b, "row_labels")));
  std::vector<std::string> cl = as_labels(resolve(doc, spec_string(b, "col_labels")));
  if (rl.size() != R) rl.clear();
  if (cl.size() != C) cl.clear();
  const std::string f = spec_string(b, "format", "%.4f");
  size_t lw = 0, w = 10;
  for (const auto &l : rl) lw = std::max(lw, width_of(l));
  for (double x : m.num) w = std::max(w, width_of(fmt_number(x, f)));
  std::string head = "  " + std::string(lw, ' ');
  for (size_t j = 0; j < C; ++j) head += " " + pad_left(cl.empty() ? std::to_string(j) : cl[j], w);
  out += head + "\n";
  for (size_t i = 0; i < R; ++i) {
    std::string l = "  " + pad_left(rl.empty() ? "" : rl[i], lw);
    for (size_t j = 0; j < C; ++j) l += " " + pad_left(fmt_number(m.num[i * C + j], f), w);
    out += l + "\n";
  }
}

std::string header(const am_record *doc) {
  auto str = [&](const char *k, const char *def) {
    const char *s = am_record_string(am_record_get(doc, k));
    return std::string(s ? s : def);
  };
  const am_record *seed = am_record_get(doc, "seed");
  const std::string seed_text = am_record_type_of(seed) == AM_REC_NUMBER ? fmt_number(am_record_number(seed), "%.0f") : "?";
  std::string out = "task " + str("task", "(none)") + ", estimator " + str("estimator", "?") + ", seed " + seed_text + "\n";
  const am_record *runs = am_record_get(doc, "runs");
  const size_t n = am_record_size(runs);
  out += "status " + str("status", "?");
  if (n == 0) return out + " (no runs)\n";
  out += " (" + std::to_string(n) + (n == 1 ? " run: " : " runs: ");
  for (size_t i = 0; i < n; ++i) {
    const char *s = am_record_string(am_record_get(am_record_at(runs, i), "run_status"));
    out += (i ? ", " : "") + std::string(s ? s : "?");
  }
  return out + ")\n";
}

}  // namespace

std::string summary_text(const am_record *doc) {
  std::string out = header(doc);
  const am_record *blocks = am_record_get(am_record_get(doc, "report"), "summary");
  for (size_t i = 0; i < am_record_size(blocks); ++i) {
    const am_record *b = am_record_at(blocks, i);
    const std::string kind = spec_string(b, "kind"), title = spec_string(b, "title");
    std::string body;
    if (kind == "table")
      table_block(doc, b, body);
    else if (kind == "values")
      values_block(doc, b, body);
    else if (kind == "matrix")
      matrix_block(doc, b, body);
    else if (kind == "text")
      body = spec_string(b, "text") + "\n";
    if (body.empty()) continue;  // nothing of the block resolved
    out += "\n";
    if (!title.empty()) out += title + (title.back() == ':' ? "\n" : ":\n");
    out += body;
  }
  return out;
}

}  // namespace am::report
