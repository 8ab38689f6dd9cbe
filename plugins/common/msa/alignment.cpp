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
size_t first_outside(const std::string &row, const Codes &k) {
  for (size_t i = 0; i < row.size(); ++i)
    if (k.state[static_cast<unsigned char>(row[i])] == kOutside) return i;
  return row.size();
}

long find_focus(const Records &r, const std::string &focus, const std::string &file) {
  for (size_t s = 0; s < r.names.size(); ++s)
    if (r.names[s].compare(0, focus.size(), focus) == 0) return static_cast<long>(s);
  throw Error(AM_ERR_USAGE, "msa: " + file + ": no sequence name starts with the focus id '" + focus + "' (" +
                                std::to_string(r.names.size()) + " records, the first '" + r.names[0] + "')");
}

// Focus mode: the columns where the focus has a residue. A gap column goes; for protein (plmc's rule) a
// lowercase column too, other alphabets keep lowercase columns.
std::vector<size_t> focus_columns(const std::string &row, const Codes &k, const Alphabet &a) {
  std::vector<size_t> cols;
  for (size_t i = 0; i < row.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(row[i]);
    if (static_cast<int>(k.state[c]) == a.gap_state) continue;
    if (a.name == "protein" && k.lower[c]) continue;
    cols.push_back(i);
  }
  return cols;
}

Error too_small(const std::string &file, const std::string &what) {
  return Error(AM_ERR_FORMAT, "msa: " + file + ": " + what);
}

// Rows kept (no letter outside the alphabet) into out.tokens at the columns `cols`; the dropped ones counted.
void encode_rows(const Records &r, const Codes &k, const std::vector<size_t> &cols, Alignment &out) {
  out.tokens.reserve(r.rows.size() * cols.size());
  for (size_t s = 0; s < r.rows.size(); ++s) {
    const std::string &row = r.rows[s];
    const size_t bad = first_outside(row, k);
    if (bad < row.size()) {
      ++out.M_dropped;
      if (out.dropped_examples.size() < 3)
        out.dropped_examples.push_back(r.names[s] + ": " + printable(row[bad]) + " at column " + std::to_string(bad + 1));
      continue;
    }
    for (size_t i : cols) out.tokens.push_back(k.state[static_cast<unsigned char>(row[i])]);
    out.names.push_back(r.names[s]);
  }
  out.M = out.names.size();
}

void check_sizes(const Alignment &a, const std::string &file, const std::string &focus) {
  if (a.M < 2) {
    std::string why = std::to_string(a.M) + " of " + std::to_string(a.M_read) + " sequences remain after dropping " +
                      std::to_string(a.M_dropped) + " with letters outside the alphabet";
    if (!a.dropped_examples.empty()) why += " (e.g. " + a.dropped_examples[0] + ")";
    throw too_small(file, why + "; an alignment needs at least 2 (is the alphabet right?)");
  }
  if (a.L < 2)
    throw too_small(file, std::to_string(a.L) + " of " + std::to_string(a.L_columns) + " columns remain" +
                              (focus.empty() ? "" : " in focus mode (the focus '" + focus + "' has a residue in only these)") +
                              "; an alignment needs at least 2 sites");
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
  a.M_read = r.rows.size();
  a.L_columns = r.rows.empty() ? 0 : r.rows[0].size();
  std::vector<size_t> cols(a.L_columns);
  for (size_t i = 0; i < cols.size(); ++i) cols[i] = i;
  long focus_in = -1;
  if (!focus.empty()) {
    focus_in = find_focus(r, focus, file);
    const std::string &row = r.rows[static_cast<size_t>(focus_in)];
    const size_t bad = first_outside(row, k);
    if (bad < row.size())
      throw Error(AM_ERR_FORMAT, "msa: " + file + ": the focus sequence '" + r.names[static_cast<size_t>(focus_in)] +
                                     "' has " + printable(row[bad]) + " at column " + std::to_string(bad + 1) +
                                     ", a letter outside the alphabet '" + alpha.letters + "'");
    cols = focus_columns(row, k, alpha);
    a.region_start = region_start_of(r.names[static_cast<size_t>(focus_in)], focus);
  }
  a.L = cols.size();
  encode_rows(r, k, cols, a);
  check_sizes(a, file, focus);
  a.site_numbers.resize(a.L);
  for (size_t i = 0; i < a.L; ++i) a.site_numbers[i] = static_cast<double>(cols[i]) + static_cast<double>(a.region_start);
  if (focus_in >= 0) {
    long kept_before = 0;
    for (long s = 0; s < focus_in; ++s) kept_before += first_outside(r.rows[static_cast<size_t>(s)], k) == a.L_columns;
    a.focus_row = kept_before;
    const uint8_t *t = &a.tokens[static_cast<size_t>(a.focus_row) * a.L];
    for (size_t i = 0; i < a.L; ++i) a.focus_sequence.push_back(alpha.letters[t[i]]);
  }
  return a;
}

}  // namespace am::msa
