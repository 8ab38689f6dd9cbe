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

long find_focus(const Records &r, const std::string &focus, const std::string &file) {
  for (size_t s = 0; s < r.size(); ++s)
    if (r.name(s).compare(0, focus.size(), focus) == 0) return static_cast<long>(s);
  throw Error(AM_ERR_USAGE, "msa: " + file + ": no sequence name starts with the focus id '" + focus + "' (" +
                                std::to_string(r.size()) + " records, the first '" + std::string(r.name(0)) + "')");
}

// Focus mode: the columns where the focus has a residue. A gap column goes; for protein (plmc's rule) a
// lowercase column too, other alphabets keep lowercase columns.
std::vector<uint32_t> focus_columns(std::string_view row, const Codes &k, const Alphabet &a) {
  std::vector<uint32_t> cols;
  for (size_t i = 0; i < row.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(row[i]);
    if (static_cast<int>(k.state[c]) == a.gap_state) continue;
    if (a.name == "protein" && k.lower[c]) continue;
    cols.push_back(static_cast<uint32_t>(i));
  }
  return cols;
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
                              (focus.empty() ? "" : " in focus mode (the focus '" + focus + "' has a residue in only these)") +
                              "; an alignment needs at least 2 sites");
}

// The kept rows into out.tokens (M·L bytes, counted on the records' Tally first) at the columns `cols` (all when
// empty and !focus).
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

long region_start_of(const std::string &name, const std::string &focus) {
  const size_t n = focus.size();
  if (name.size() <= n + 1 || name[n] != '/' || !std::isdigit(static_cast<unsigned char>(name[n + 1]))) return 1;
  long start = 0;
  for (size_t i = n + 1; i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])) && start < 100000000; ++i)
    start = start * 10 + (name[i] - '0');
  return start;
}

Alignment encode(const Records &r, const Alphabet &alpha, const std::string &focus, const std::string &file) {
  const Codes k = codes_of(alpha);
  Alignment a;
  a.format = r.format;
  a.C = alpha.letters.size();
  a.M_read = r.size();
  a.L_columns = r.columns();
  long focus_in = -1;
  std::string_view focus_row;
  if (!focus.empty()) {
    focus_in = find_focus(r, focus, file);
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
  std::vector<uint32_t> cols;
  if (focus_in >= 0) cols = focus_columns(focus_row, k, alpha);
  a.L = focus_in >= 0 ? cols.size() : a.L_columns;
  check_sites(a, file, focus);
  encode_rows(r, k, cols, focus_in < 0, a, file);
  a.site_numbers.resize(a.L);
  for (size_t i = 0; i < a.L; ++i)
    a.site_numbers[i] = static_cast<double>(focus_in >= 0 ? cols[i] : i) + static_cast<double>(a.region_start);
  if (focus_in >= 0) {
    long kept_before = 0;
    for (long s = 0; s < focus_in; ++s) {
      const std::string_view row = r.row(static_cast<size_t>(s));
      kept_before += first_outside(row, k) == row.size();
    }
    a.focus_row = kept_before;
    const uint8_t *t = &a.tokens[static_cast<size_t>(a.focus_row) * a.L];
    for (size_t i = 0; i < a.L; ++i) a.focus_sequence.push_back(alpha.letters[t[i]]);
  }
  return a;
}

}  // namespace am::msa
