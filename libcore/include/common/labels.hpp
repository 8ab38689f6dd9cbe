// Human labels for result keys, one rule for the report library's plots (series, axis and colour-bar labels that
// are raw keys) and the sweep aggregates (titles and axes of <metric>_vs_<axis>.svg). The tools know no result key
// (docs/abi.md): the table of names comes with the document (`report.labels`, key → label, declared by the
// plugins that write the keys); what it lacks reads by generic rules (Greek letter names as letters, "_star" as
// "*", "_" and "." as spaces). Header-only: the sweep engine includes it without the report library's internals.
#ifndef ATTNMECH_COMMON_LABELS_HPP
#define ATTNMECH_COMMON_LABELS_HPP

#include <cctype>
#include <map>
#include <string>

namespace am::labels {

using Table = std::map<std::string, std::string>;  // key or dotted tail ("test.accuracy") → label

// A raw key: one word of letters, digits, "_", "." and "*" with at least one "_" or "." (a label with a space, or a
// plain word, is a human label already and is kept).
inline bool is_raw_key(const std::string &s) {
  bool sep = false;
  for (unsigned char c : s) {
    if (c == '_' || c == '.') sep = true;
    else if (!std::isalnum(c) && c != '*') return false;
  }
  return sep;
}

// One word by the generic rules, token by token between underscores: a Greek letter's name as the letter, a
// "star" after another token as "*" on it ("epsilon_star_train" → "ε* train", "train_loss" → "train loss").
inline std::string generic_word(const std::string &w) {
  static const std::map<std::string, std::string> greek = {
      {"alpha", "α"}, {"beta", "β"},   {"gamma", "γ"}, {"delta", "δ"}, {"epsilon", "ε"}, {"eps", "ε"},
      {"lambda", "λ"}, {"mu", "μ"},    {"nu", "ν"},    {"sigma", "σ"}, {"tau", "τ"},     {"theta", "θ"}};
  std::string out;
  for (size_t start = 0; start <= w.size();) {
    const size_t us = w.find('_', start);
    const std::string tok = w.substr(start, us == std::string::npos ? std::string::npos : us - start);
    const auto g = greek.find(tok);
    if (tok == "star" && !out.empty() && out.back() != ' ') out += "*";
    else out += (out.empty() || tok.empty() ? "" : " ") + (g != greek.end() ? g->second : tok);
    if (us == std::string::npos) break;
    start = us + 1;
  }
  return out;
}

// The human label of a result key or dotted path. The leading "runs.<i>." of a path is dropped; the longest tail
// of the rest that `table` names wins ("runs.0.gp.test.accuracy": "gp.test.accuracy", then "test.accuracy", then
// "accuracy"); else each dotted part by generic_word, joined with spaces ("train_loss" → "train loss",
// "epsilon_star" → "ε*", "runs.0.test.accuracy" → "test accuracy").
inline std::string human(const std::string &key, const Table *table = nullptr) {
  std::string k = key;
  if (k.compare(0, 5, "runs.") == 0) {
    size_t p = 5;
    while (p < k.size() && std::isdigit(static_cast<unsigned char>(k[p]))) ++p;
    if (p > 5 && p < k.size() && k[p] == '.') k = k.substr(p + 1);
  }
  for (size_t start = 0; table;) {
    const auto it = table->find(k.substr(start));
    if (it != table->end()) return it->second;
    const size_t dot = k.find('.', start);
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  std::string out;
  for (size_t start = 0; start <= k.size();) {
    const size_t dot = k.find('.', start);
    const std::string part = k.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!part.empty()) out += (out.empty() ? "" : " ") + generic_word(part);
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return out.empty() ? key : out;
}

// A label as shown: raw keys (and keys the table names) through human(), "+-" as "±" (the SVG, PDF and PNG are
// UTF-8).
inline std::string display(const std::string &label, const Table *table = nullptr) {
  std::string s = is_raw_key(label) || (table && table->count(label)) ? human(label, table) : label;
  for (size_t p; (p = s.find("+-")) != std::string::npos;) s.replace(p, 2, "±");
  return s;
}

}  // namespace am::labels

#endif
