// attnmech figure (docs/figures.md): a figure spec = named sweep specs (the sweep format, docs/sweep.md) + plot
// blocks + a caption. This library reads the spec, applies --set, and draws the figure from the sweeps' point
// directories with the report library's generic plot kinds. Like the sweep engine it knows no plugin, no task and
// no result key: every path, axis and label comes from the spec file.
//
//   spec.cpp   the figure spec: parse, --set (fixed settings or axes, per sweep with "id.key"), checks
//   draw.cpp   points → series (mean ± s.e. over the averaged axes, reference lines, arrays of a point, heat
//              maps, bars) → a report document → D/<name>.svg (or one file per panel), figure.json, caption.md
#ifndef ATTNMECH_TOOLS_FIGURE_HPP
#define ATTNMECH_TOOLS_FIGURE_HPP

#include "../sweep/sweep.hpp"

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace am::figure {

using ojson = nlohmann::ordered_json;

// A bad figure spec or --set (exit 2).
struct SpecError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct SweepEntry {
  std::string id;      // the sweep's name in the figure ("rn"); its results go to D/<id>/
  am::sweep::Spec spec;
};

struct Figure {
  std::string name;                  // file name without .json
  std::string title, paper_ref, runtime, long_text;
  ojson caption;                     // {paper, ours, numbers?: [...]}
  std::vector<SweepEntry> sweeps;
  std::vector<ojson> panels;         // plot blocks ("plot" = one panel)
  std::vector<std::pair<std::string, std::string>> sets;  // the --set given (for the caption's command)
  std::vector<std::pair<std::string, double>> style;      // report.style of the drawing (--style ...; empty = none)
  uint32_t plot_formats = 0;  // the files of each panel (--plots: AM_REPORT_FORMAT_* bits; 0 = the default, SVG)
};

// Parses a figure spec. `sets` ("key=value"): "id.key=v" changes sweep `id` only; "key=v" changes every sweep
// that has `key` as a fixed setting or an axis (every sweep when none has it). On an axis the value replaces the
// axis values: JSON (a list, {"range": [a, b]}) or comma-separated text. Throws SpecError.
Figure parse_figure(const std::string &text, const std::string &name,
                    const std::vector<std::pair<std::string, std::string>> &sets);
Figure read_figure(const std::string &path, const std::vector<std::pair<std::string, std::string>> &sets);

// Structural checks of the plot blocks against the sweeps: every reference names a sweep of the figure, every
// "x", "group" and "where" key an axis or fixed setting of it, every kind is known. Throws SpecError.
void check_plots(const Figure &f);

// The summary row of `figure --list`.
struct Listing {
  std::string name, title, paper_ref, runtime;
};
Listing list_entry(const std::string &path);

// ---------------------------------------------------------------- draw.cpp

struct DrawStats {
  std::vector<std::string> files;     // SVG files written (relative to the figure directory)
  size_t series = 0;                  // series and reference lines drawn, all panels
  std::vector<std::string> warnings;  // references that found no data
  size_t empty_panels = 0;            // panels with nothing to draw (no file)
  std::vector<std::string> bad_points;  // points whose files are corrupt (not drawn): what the sweep's check says
  std::vector<std::string> incomplete;  // per sweep with points not drawn (not computed, failed, corrupt): how many
};

// Draws the figure from D/<id>/points/*: D/<name>.svg (D/<name>-<panel>.svg for several panels), D/figure.json
// (the plotted numbers and the report spec that draws them) and D/caption.md. `command` is the command line
// quoted in the caption. Throws am::sweep::SweepError on I/O problems.
// The SVG files the panels become (<name>.svg, <name>-<panel id>.svg) checked by the one safe-name rule
// (libcore/include/common/safe_file.hpp) before anything runs: throws SpecError naming the panel.
void check_file_names(const Figure &f);
DrawStats draw(am_context *ctx, const Figure &f, const std::string &dir, const std::string &command);

}  // namespace am::figure

#endif
