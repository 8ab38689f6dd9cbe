// msa_core — the alphabet and the encoding of the records by plmc's conventions (docs/msa.md): letters match
// case-insensitively, a lowercase letter marks an insert column of its row; rows with a letter outside the
// alphabet are dropped; focus mode keeps the columns where the focus sequence has a residue (for protein an
// uppercase one) and numbers them from the focus's region start.
#include "alignment.hpp"

#include <attnmech/plugin.hpp>

#include <array>
#include <cctype>
#include <cstdio>

namespace am::msa {

namespace {

using am::sdk::Error;

constexpr uint8_t kOutside = 0xff;

// Code of every byte: the state, kOutside for a letter outside the alphabet; `lower` marks lowercase letters.
struct Codes {
  std::array<uint8_t, 256> state{};
  std::array<bool, 256> lower{};
};

Codes codes_of(const Alphabet &a) {
  Codes k;
  k.state.fill(kOutside);
  for (size_t s = 0; s < a.letters.size(); ++s) {
    const unsigned char up = static_cast<unsigned char>(a.letters[s]);
    k.state[up] = static_cast<uint8_t>(s);
    const unsigned char low = static_cast<unsigned char>(std::tolower(up));
    if (low != up) {
      k.state[low] = static_cast<uint8_t>(s);
      k.lower[low] = true;
    }
  }
  if (a.dot_is_gap && a.gap_state >= 0) k.state['.'] = static_cast<uint8_t>(a.gap_state);
  return k;
}

std::string printable(char c) {
  const unsigned char u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return std::string("'") + c + "'";
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02x", u);
  return hex;
}

// Column of the first letter of `row` outside the alphabet, row.size() if none.
size_t first_outside(std::string_view row, const Codes &k) {
  for (size_t i = 0; i < row.size(); ++i)
    if (k.state[static_cast<unsigned char>(row[i])] == kOutside) return i;
  return row.size();
}

constexpr size_t kFocusNames = 3;  // matches of an ambiguous focus id named in its warning

// The first record whose name starts with `focus` (plmc's choice); every match counted, the first few named in `a`
// (an ambiguous id's warning: focus_warning).
long find_focus(const Records &r, const std::string &focus, const std::string &file, Alignment &a) {
  long first = -1;
  for (size_t s = 0; s < r.size(); ++s) {
    if (r.name(s).compare(0, focus.size(), focus) != 0) continue;
    if (first < 0) first = static_cast<long>(s);
    if (++a.focus_matches > kFocusNames) continue;
    a.focus_names.emplace_back(r.name(s));
    a.focus_lines.push_back(r.line_of(s));
  }
  if (first >= 0) return first;
  throw Error(AM_ERR_USAGE, "msa: " + file + ": no sequence name starts with the focus id '" + focus + "' (" +
                                std::to_string(r.size()) + " records, the first '" + std::string(r.name(0)) + "')");
}

// The match columns of a Stockholm "#=GC RF" line (HMMER's reading: a gap character marks an insert column), when
// it is honoured and present (a.rf_used; else every column, and the result is empty).
std::vector<uint32_t> rf_columns(const Records &r, bool use_rf, const std::string &file, Alignment &a) {
  if (!use_rf || r.rf.size() == 0) return {};
  if (r.rf.size() != r.columns())
    throw Error(AM_ERR_FORMAT, "msa: " + file + ": the #=GC RF line (line " + std::to_string(r.rf_line) + ") has " +
                                   std::to_string(r.rf.size()) + " columns, the rows " + std::to_string(r.columns()) +
                                   " (rf=0 ignores the RF line)");
  std::vector<uint32_t> cols;
  for (size_t i = 0; i < r.rf.size(); ++i)
    if (rf_match(r.rf[i])) cols.push_back(static_cast<uint32_t>(i));
  a.rf_used = true;
  a.rf_inserts = r.columns() - cols.size();
  return cols;
}

// Focus mode: the positions among the base columns (`base`: the RF match columns when `rf`, else every column) where
// the focus has a residue. A gap column goes; for protein (plmc's rule) a lowercase column too, other alphabets keep
// lowercase columns.
std::vector<uint32_t> focus_positions(std::string_view row, const Codes &k, const Alphabet &a,
                                      const std::vector<uint32_t> &base, bool rf) {
  std::vector<uint32_t> pos;
  const size_t B = rf ? base.size() : row.size();
  for (size_t p = 0; p < B; ++p) {
    const unsigned char c = static_cast<unsigned char>(row[rf ? base[p] : p]);
    if (static_cast<int>(k.state[c]) == a.gap_state) continue;
    if (a.name == "protein" && k.lower[c]) continue;
    pos.push_back(static_cast<uint32_t>(p));
  }
  return pos;
}

// How the site numbers were made (docs/msa.md "Letters, rows and columns"): the columns counted and the start.
std::string numbering_text(const Alignment &a, bool focus) {
  const std::string start = std::to_string(a.region_start);
  std::string among = a.rf_used            ? "the #=GC RF match columns (its insert columns not counted)"
                      : a.format == "a3m"  ? "the a3m rows without their insert letters (lowercase, '.')"
                                           : "the " + a.format + " rows (every column";
  if (!a.rf_used && a.format != "a3m") among += focus ? ", also those where the focus has a gap)" : ")";
  return focus ? "site = c + START, START = " + start + " (from the focus's NAME/START-END, else 1), c = 0-based column "
                 "among " + among
               : "site = c + 1, c = 0-based column among " + among;
}

// The focus's letters and its index among the kept rows.
void set_focus(const Records &r, const Codes &k, long focus_in, const Alphabet &alpha, Alignment &a) {
  long kept_before = 0;
  for (long s = 0; s < focus_in; ++s) {
    const std::string_view row = r.row(static_cast<size_t>(s));
    kept_before += first_outside(row, k) == row.size();
  }
  a.focus_row = kept_before;
  const uint8_t *t = &a.tokens[static_cast<size_t>(a.focus_row) * a.L];
  for (size_t i = 0; i < a.L; ++i) a.focus_sequence.push_back(alpha.letters[t[i]]);
}

Error too_small(const std::string &file, const std::string &what) {
  return Error(AM_ERR_FORMAT, "msa: " + file + ": " + what);
}

// The rows kept (no letter outside the alphabet) counted, with a few examples of the dropped ones; nothing allocated
// per row.
void count_rows(const Records &r, const Codes &k, Alignment &out) {
  for (size_t s = 0; s < r.size(); ++s) {
    const std::string_view row = r.row(s);
    const size_t bad = first_outside(row, k);
    if (bad == row.size()) {
      ++out.M;
      continue;
    }
    ++out.M_dropped;
    if (out.dropped_examples.size() < 3)
      out.dropped_examples.push_back(std::string(r.name(s)) + ": " + printable(row[bad]) + " at column " +
                                     std::to_string(bad + 1));
  }
}

void check_rows(const Alignment &a, const std::string &file) {
  if (a.M >= 2) return;
  std::string why = std::to_string(a.M) + " of " + std::to_string(a.M_read) + " sequences remain after dropping " +
                    std::to_string(a.M_dropped) + " with letters outside the alphabet";
  if (!a.dropped_examples.empty()) why += " (e.g. " + a.dropped_examples[0] + ")";
  throw too_small(file, why + "; an alignment needs at least 2 (is the alphabet right?)");
}

void check_sites(const Alignment &a, const std::string &file, const std::string &focus) {
  if (a.L < 2)
    throw too_small(file, std::to_string(a.L) + " of " + std::to_string(a.L_columns) + " columns remain" +
                              (a.rf_used ? " after the " + std::to_string(a.rf_inserts) + " insert columns of the "
                                           "#=GC RF line (rf=0 keeps them)" : "") +
                              (focus.empty() ? "" : " in focus mode (the focus '" + focus + "' has a residue in only these)") +
                              "; an alignment needs at least 2 sites");
}

// The kept rows into out.tokens (M·L bytes, counted on the records' Tally first) at the columns `cols` (every column
// when `all`).
void encode_rows(const Records &r, const Codes &k, const std::vector<uint32_t> &cols, bool all, Alignment &out,
                 const std::string &file) {
  r.tally->describe = [&](double) {
    return "msa: " + file + ": the encoded alignment (M = " + std::to_string(out.M) + " rows, L = " +
           std::to_string(out.L) + " sites, one byte each) beside the records read (" + std::to_string(r.size()) +
           " records, " + std::to_string(r.residues.size()) + " residues)";
  };
  r.tally->grow(double(out.M) * double(out.L) + 4.0 * double(out.M));
  r.tally->describe = nullptr;
  out.tokens.resize(out.M * out.L);
  out.record_of.reserve(out.M);
  uint8_t *t = out.tokens.data();
  for (size_t s = 0; s < r.size(); ++s) {
    const std::string_view row = r.row(s);
    if (first_outside(row, k) < row.size()) continue;
    if (all)
      for (char c : row) *t++ = k.state[static_cast<unsigned char>(c)];
    else
      for (uint32_t i : cols) *t++ = k.state[static_cast<unsigned char>(row[i])];
    out.record_of.push_back(static_cast<uint32_t>(s));
  }
}

}  // namespace

Alphabet make_alphabet(const std::string &spec) {
  if (spec == "protein" || spec.empty()) return {"protein", "-ACDEFGHIKLMNPQRSTVWY", 0, true};
  if (spec == "rna") return {"rna", "-ACGU", 0, true};
  if (spec == "dna") return {"dna", "-ACGT", 0, true};
  Alphabet a{"custom", spec, -1, false};
  if (spec.size() < 2 || spec.size() > 127)
    throw Error(AM_ERR_USAGE, "msa: alphabet '" + spec + "': needs 2 to 127 letters (or protein, rna, dna)");
  for (size_t i = 0; i < spec.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(spec[i]);
    if (c <= 0x20 || c >= 0x7f || c == '>' || c == '#' || std::islower(c))
      throw Error(AM_ERR_USAGE, "msa: alphabet '" + spec + "': letter " + printable(spec[i]) +
                                    " not allowed (printable, not lowercase — lowercase marks inserts — not '>' or '#')");
    if (spec.find(spec[i]) != i)
      throw Error(AM_ERR_USAGE, "msa: alphabet '" + spec + "': letter " + printable(spec[i]) + " given twice");
  }
  const size_t dash = spec.find('-'), dot = spec.find('.');
  a.gap_state = dash != std::string::npos ? static_cast<int>(dash) : dot != std::string::npos ? static_cast<int>(dot) : -1;
  return a;
}

namespace {

// START of "/START..." at name[n], −1 when name[n] is no '/' followed by a digit.
long start_at(const std::string &name, size_t n) {
  if (name.size() <= n + 1 || name[n] != '/' || !std::isdigit(static_cast<unsigned char>(name[n + 1]))) return -1;
  long start = 0;
  for (size_t i = n + 1; i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])) && start < 100000000; ++i)
    start = start * 10 + (name[i] - '0');
  return start;
}

}  // namespace

long region_start_of(const std::string &name, const std::string &focus) {
  long start = start_at(name, focus.size());  // plmc: NAME/START right after the id
  const size_t slash = focus.rfind('/');
  if (start < 0 && slash != std::string::npos) start = start_at(name, slash);  // an id reaching into the region
  return start < 0 ? 1 : start;
}

Alignment encode(const Records &r, const Alphabet &alpha, const std::string &focus, const std::string &file,
                 bool use_rf) {
  const Codes k = codes_of(alpha);
  Alignment a;
  a.format = r.format;
  a.C = alpha.letters.size();
  a.M_read = r.size();
  a.L_columns = r.columns();
  const std::vector<uint32_t> base = rf_columns(r, use_rf, file, a);  // empty unless a.rf_used: every column
  long focus_in = -1;
  std::string_view focus_row;
  if (!focus.empty()) {
    focus_in = find_focus(r, focus, file, a);
    focus_row = r.row(static_cast<size_t>(focus_in));
    const size_t bad = first_outside(focus_row, k);
    if (bad < focus_row.size())
      throw Error(AM_ERR_FORMAT, "msa: " + file + ": the focus sequence '" +
                                     std::string(r.name(static_cast<size_t>(focus_in))) + "' has " +
                                     printable(focus_row[bad]) + " at column " + std::to_string(bad + 1) +
                                     ", a letter outside the alphabet '" + alpha.letters + "'");
    a.region_start = region_start_of(std::string(r.name(static_cast<size_t>(focus_in))), focus);
  }
  count_rows(r, k, a);
  check_rows(a, file);  // before anything sized by the columns is allocated
  std::vector<uint32_t> pos;  // focus mode: the kept sites' positions among the base columns
  if (focus_in >= 0) pos = focus_positions(focus_row, k, alpha, base, a.rf_used);
  a.L = focus_in >= 0 ? pos.size() : a.rf_used ? base.size() : a.L_columns;
  check_sites(a, file, focus);
  const auto position = [&](size_t i) { return focus_in >= 0 ? pos[i] : static_cast<uint32_t>(i); };
  const bool all = focus_in < 0 && !a.rf_used;
  std::vector<uint32_t> cols(all ? 0 : a.L);  // the kept sites' columns in the file's rows
  for (size_t i = 0; i < cols.size(); ++i) cols[i] = a.rf_used ? base[position(i)] : position(i);
  encode_rows(r, k, cols, all, a, file);
  a.site_numbers.resize(a.L);
  for (size_t i = 0; i < a.L; ++i)
    a.site_numbers[i] = static_cast<double>(position(i)) + static_cast<double>(a.region_start);
  a.site_numbering = numbering_text(a, focus_in >= 0);
  if (focus_in >= 0) set_focus(r, k, focus_in, alpha, a);
  return a;
}

std::string focus_warning(const Alignment &a, const std::string &focus) {
  if (a.focus_matches < 2) return "";
  std::string s = "focus '" + focus + "' matches " + std::to_string(a.focus_matches) + " sequences: ";
  for (size_t i = 0; i < a.focus_names.size(); ++i)
    s += (i ? ", " : "") + ("'" + a.focus_names[i] + "' (line " + std::to_string(a.focus_lines[i]) + ")");
  if (a.focus_matches > a.focus_names.size())
    s += " and " + std::to_string(a.focus_matches - a.focus_names.size()) + " more";
  const std::string &second = a.focus_names[1];
  const std::string word = second.substr(0, second.find_first_of(" \t"));
  const bool word_picks = a.focus_names[0].compare(0, word.size(), word) != 0;  // the first does not start with it
  return s + "; the first is the focus (as plmc takes it, with a note). To choose another, give an id only it starts "
             "with, e.g. focus=" + (word_picks ? word : second);
}

}  // namespace am::msa
