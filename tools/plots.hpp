// SVG plots drawn from a results document (results.json), used by `attnmech run --out` and `attnmech plot`.
#ifndef ATTNMECH_TOOLS_PLOTS_HPP
#define ATTNMECH_TOOLS_PLOTS_HPP

#include "results.hpp"

#include <string>
#include <vector>

namespace amtool {

// Draw every plot that applies to `doc` into `dir`; returns the file names written. Unknown result
// shapes are skipped. On a write failure returns false with `err` set.
bool write_plots(const json &doc, const std::string &dir, std::vector<std::string> *written, std::string *err);

// Plots of the oneshot task's extras (tools/plot_oneshot.cpp, docs/oneshot.md).
bool write_oneshot_plots(const json &doc, const std::string &dir, std::vector<std::string> *written, std::string *err);

// Overlay several results documents (labels name them): accuracy vs width of attention runs, training
// curves (test loss vs epoch) of sequence estimators. Writes compare_*.svg into `dir`.
bool write_comparison(const std::vector<json> &docs, const std::vector<std::string> &labels, const std::string &dir,
                      std::vector<std::string> *written, std::string *err);

}  // namespace amtool

#endif
