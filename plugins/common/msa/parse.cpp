// msa_core — the records of an alignment file, format by content: Stockholm ("# STOCKHOLM" first), else the
// FASTA family ('>' records, sequences over several lines): rows of equal length are FASTA (A2M when they hold
// lowercase letters or '.'); rows that agree only without lowercase letters and '.' are A3M, read without them.
#include "alignment.hpp"

#include <attnmech/plugin.hpp>

#include <cctype>
#include <cstdio>
#include <unordered_map>

namespace am::msa {

namespace {

using am::sdk::Error;

Error format_error(const std::string &file, const std::string &what) {
  return Error(AM_ERR_FORMAT, "msa: " + file + ": " + what);
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

// Refuses binary content (a NUL or another control character) before any parsing: naming the byte and line
// beats a "ragged row" message about garbage.
void check_text(const std::string &text, const std::string &file) {
  size_t line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n') ++line;
    if (c < 0x20 && c != '\n' && !is_space(static_cast<char>(c))) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", c);
      throw format_error(file, "binary data (byte " + std::string(hex) + " at offset " + std::to_string(i) +
                                   ", line " + std::to_string(line) + "), not a FASTA/A2M/A3M/Stockholm alignment");
    }
  }
}

// Lines of `text` one by one, with their 1-based numbers; a trailing '\r' is dropped.
struct Lines {
  const std::string &text;
  size_t pos = 0, number = 0;
  bool next(std::string &line) {
    if (pos >= text.size()) return false;
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    line.assign(text, pos, end - pos);
    while (!line.empty() && line.back() == '\r') line.pop_back();
    pos = end + 1;
    ++number;
    return true;
  }
};

bool blank(const std::string &s) {
  for (char c : s)
    if (!is_space(c)) return false;
  return true;
}

std::string without_spaces(const std::string &s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s)
    if (!is_space(c)) out.push_back(c);
  return out;
}

std::string trimmed(const std::string &s) {
  size_t b = 0, e = s.size();
  while (b < e && is_space(s[b])) ++b;
  while (e > b && is_space(s[e - 1])) --e;
  return s.substr(b, e - b);
}

// The records and each one's first line (for messages).
struct Parsed {
  Records rec;
  std::vector<size_t> line_of;
};

Parsed parse_fasta(const std::string &text, size_t start) {
  Parsed p;
  Lines lines{text, start};
  std::string line;
  while (lines.next(line)) {
    if (!line.empty() && line[0] == '>') {
      p.rec.names.push_back(trimmed(line.substr(1)));
      p.rec.rows.emplace_back();
      p.line_of.push_back(lines.number);
    } else if (!p.rec.rows.empty()) {
      p.rec.rows.back() += without_spaces(line);
    }
  }
  return p;
}

// After '//' only blank lines may follow: a second alignment in the same file is refused, not half read.
void check_after_end(Lines &lines, const std::string &file) {
  std::string line;
  while (lines.next(line))
    if (!blank(line))
      throw format_error(file, "line " + std::to_string(lines.number) +
                                   ": text after the Stockholm end '//' (one alignment per file)");
}

// The lines after the header line "# STOCKHOLM 1.0" (which ends at `pos`, line `number`).
Parsed parse_stockholm(const std::string &text, size_t pos, size_t number, const std::string &file) {
  Parsed p;
  std::unordered_map<std::string, size_t> index;
  Lines lines{text, pos, number};
  std::string line;
  while (lines.next(line)) {
    const std::string t = trimmed(line);
    if (t.empty() || t[0] == '#') continue;  // #=GF, #=GC, #=GR, #=GS and comments
    if (t.compare(0, 2, "//") == 0) {
      check_after_end(lines, file);
      break;
    }
    size_t cut = 0;
    while (cut < t.size() && !is_space(t[cut])) ++cut;
    const std::string name = t.substr(0, cut), seq = without_spaces(t.substr(cut));
    if (seq.empty())
      throw format_error(file, "line " + std::to_string(lines.number) + ": '" + name +
                                   "' has no sequence (Stockholm lines are NAME SEQUENCE)");
    auto [it, fresh] = index.emplace(name, p.rec.rows.size());
    if (fresh) {
      p.rec.names.push_back(name);
      p.rec.rows.emplace_back();
      p.line_of.push_back(lines.number);
    }
    p.rec.rows[it->second] += seq;  // interleaved blocks: the parts of one name in order
  }
  return p;
}

bool has_insert_letters(const std::vector<std::string> &rows) {
  for (const auto &r : rows)
    for (char c : r)
      if (c == '.' || std::islower(static_cast<unsigned char>(c))) return true;
  return false;
}

std::string match_columns(const std::string &row) {
  std::string out;
  out.reserve(row.size());
  for (char c : row)
    if (c != '.' && !std::islower(static_cast<unsigned char>(c))) out.push_back(c);
  return out;
}

// Index of the first row whose length differs from row 0's, rows.size() if none.
size_t first_ragged(const std::vector<std::string> &rows) {
  for (size_t s = 1; s < rows.size(); ++s)
    if (rows[s].size() != rows[0].size()) return s;
  return rows.size();
}

// Equal rows as they are; else A3M when the rows agree without insert letters; else a message naming the record.
void settle_columns(Parsed &p, const std::string &file) {
  auto &rows = p.rec.rows;
  const size_t bad = first_ragged(rows);
  if (bad == rows.size()) {
    if (p.rec.format == "fasta" && has_insert_letters(rows)) p.rec.format = "a2m";
    return;
  }
  if (p.rec.format == "fasta") {
    std::vector<std::string> matched(rows.size());
    for (size_t s = 0; s < rows.size(); ++s) matched[s] = match_columns(rows[s]);
    if (first_ragged(matched) == matched.size()) {
      rows.swap(matched);
      p.rec.format = "a3m";
      return;
    }
  }
  throw format_error(file, "record '" + p.rec.names[bad] + "' (line " + std::to_string(p.line_of[bad]) + ") has " +
                               std::to_string(rows[bad].size()) + " columns, the first record '" + p.rec.names[0] +
                               "' has " + std::to_string(rows[0].size()) +
                               " (the rows of an alignment must have equal length" +
                               (p.rec.format == "fasta" ? "; A3M rows must agree without lowercase letters and '.')"
                                                        : ")"));
}

}  // namespace

Records parse_records(const std::string &text, const std::string &file) {
  check_text(text, file);
  const size_t bom = text.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;  // a UTF-8 byte-order mark
  Lines lines{text, bom};
  std::string first;
  while (lines.next(first) && blank(first)) {
  }
  if (blank(first)) throw format_error(file, "empty file: no sequences");
  Parsed p;
  if (first.compare(0, 11, "# STOCKHOLM") == 0) {
    p = parse_stockholm(text, lines.pos, lines.number, file);
    p.rec.format = "stockholm";
  } else if (first[0] == '>') {
    p = parse_fasta(text, bom);
    p.rec.format = "fasta";
  } else {
    throw format_error(file, "not an alignment: line " + std::to_string(lines.number) + " starts with '" +
                                 first.substr(0, 40) + "' (expected '>' of FASTA/A2M/A3M or '# STOCKHOLM 1.0')");
  }
  if (p.rec.rows.empty()) throw format_error(file, "no sequences (a Stockholm header without records)");
  settle_columns(p, file);
  if (p.rec.rows[0].empty()) throw format_error(file, "the sequences are empty (no columns)");
  return std::move(p.rec);
}

}  // namespace am::msa
