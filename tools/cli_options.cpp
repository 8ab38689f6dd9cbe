// attnmech CLI — the option table of `run`, `sweep` and `figure` (cli_options.hpp) and the help text made from it.
#include "cli_options.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace am::cli {

namespace {

constexpr unsigned kRun = CMD_RUN, kSweep = CMD_SWEEP, kFigure = CMD_FIGURE;

}  // namespace

const char *const kPlotsHelp =
    "the files of every plot: svg, pdf, png (comma-separated) or all. Default: svg\n"
    "(PDF and PNG need a build with cairo; AM_PLOT_FORMATS=all: all three)";

namespace {

// Table order is the order of the usage line and of the options section of every command.
const OptionRow kOptions[] = {
    {Opt::Out, "--out", "-o", "DIR", kSweep, kSweep, false,
     "the sweep directory (created; may hold an earlier sweep: it is resumed)"},
    {Opt::Out, "--out", "-o", "DIR", kFigure, kFigure, false,
     "the figure directory (created; an earlier run of the same figure is resumed)"},
    {Opt::Estimator, "--estimator", nullptr, "NAME", kRun, 0, false,
     "estimator to use (default: the task's default estimator)"},
    {Opt::Set, "--set", "-s", "key=value", kRun, 0, true,
     "set a parameter (repeatable; a list value is comma-separated). Host keys every\n"
     "run accepts: seed (default 0), threads (0 = all cores), widths (W0,...,WL, when\n"
     "the task does not define it). Other keys are looked up in the task's parameter\n"
     "table, then the estimator's (see `attnmech help NAME`)."},
    {Opt::Set, "--set", "-s", "key=value", kSweep, 0, true, "add or replace a fixed setting of SPEC (repeatable)"},
    {Opt::Set, "--set", "-s", "key=value", kFigure, 0, true,
     "change a fixed setting or an axis of every sweep that has it (repeatable);\n"
     "--set ID.key=value changes sweep ID only; an axis takes a list: seed=0,1,2 or\n"
     "'seed={\"range\": [0, 30]}'"},
    {Opt::Width, "--width", "--widths", "N[,N...]", kRun, 0, false,
     "widths to scan; each run sets W_0 = ... = W_L = N (overrides --set widths=...).\n"
     "Default: the task's widths_scan list if it has one, else a single run."},
    {Opt::Out, "--out", "-o", "DIR", kRun, 0, false,
     "write DIR/results.json, .npy arrays (arrays of >= 16 elements) and the plots"},
    {Opt::Plots, "--plots", nullptr, "LIST", kRun | kSweep | kFigure, 0, false, kPlotsHelp},
    {Opt::Shard, "--shard", nullptr, "k/n", kSweep, 0, false,
     "run only share k of n (0 <= k < n); then `--aggregate DIR` merges"},
    {Opt::Jobs, "--jobs", "-j", "N", kSweep, 0, false,
     "points in parallel in this process (default: all cores when SPEC fixes threads=1,\n"
     "else 1); under MPI each rank runs one point at a time"},
    {Opt::Jobs, "--jobs", "-j", "N", kFigure, 0, false,
     "points in parallel (default as `sweep`: all cores when a sweep fixes threads=1)"},
    {Opt::Recompute, "--recompute", nullptr, nullptr, kSweep, 0, false,
     "run complete points again (e.g. with a newer attnmech)"},
    {Opt::Recompute, "--recompute", nullptr, nullptr, kFigure, 0, false, "run complete points again"},
    {Opt::WarmStart, "--warm-start", nullptr, nullptr, kSweep, 0, false,
     "start each Newton solve from the previous point's U when only warm axes differ"},
    {Opt::NoWarmStart, "--no-warm-start", nullptr, nullptr, kSweep, 0, false,
     "no warm starts, whatever SPEC's warm_start says"},
    {Opt::DispatcherOnly, "--dispatcher-only", nullptr, nullptr, kSweep, 0, false,
     "under MPI, rank 0 only hands out points"},
    {Opt::NoAggregate, "--no-aggregate", nullptr, nullptr, kSweep, 0, false, "skip sweep.json / sweep.csv / plots"},
    {Opt::PlotOnly, "--plot-only", nullptr, "DIR", kFigure, 0, false,
     "draw from the results already in DIR (their spec.json), run nothing"},
    {Opt::Check, "--check", nullptr, nullptr, kFigure, 0, false,
     "validate the spec and every point against the plugins, run nothing"},
    {Opt::Style, "--style", nullptr, "NAME", kFigure, 0, false,
     "draw for a page: paper1 (one column, 246 x 185 pt, 8 pt text), paper2 (two\n"
     "columns, 510 x 255 pt, 9 pt text) or slides (16:9, 640 x 360 pt, 16 pt text);\n"
     "line widths and markers scale with it. Default: the plain drawing"},
    {Opt::FontSize, "--font-size", nullptr, "PT", kFigure, 0, false,
     "axis labels' size on the page in pt (4 to 72; ticks and legend 11/13 of it;\n"
     "overrides the style's)"},
    {Opt::Size, "--size", nullptr, "WxH", kFigure, 0, false,
     "the page in pt, e.g. 246x185 (each 36 to 14400; overrides the style's)"},
    {Opt::List, "--list", nullptr, nullptr, kSweep, 0, false,
     "print the points (key, cost, axis values) in the order they would run; without\n"
     "SPEC: the shipped specs (name, description)"},
    {Opt::List, "--list", nullptr, nullptr, kFigure, 0, false,
     "the shipped figures: name, title, paper reference, run time here"},
    {Opt::Aggregate, "--aggregate", nullptr, "DIR", kSweep, 0, false,
     "(re)build the aggregate of DIR from DIR/spec.json and the points found"},
    {Opt::Json, "--json", nullptr, nullptr, kRun, 0, false, "print results.json on stdout (instead of the tables)"},
    {Opt::Quiet, "--quiet", "-q", nullptr, kRun, 0, false, "no per-run log lines and no progress on stderr"},
    {Opt::Quiet, "--quiet", "-q", nullptr, kSweep | kFigure, 0, false, "only failures and the summary"},
    {Opt::Verbose, "--verbose", "-v", nullptr, kRun, 0, false, "also show debug log lines"},
    {Opt::Plugin, "--plugin", nullptr, "FILE", kRun | kSweep | kFigure, 0, true,
     "load this plugin module first (repeatable)"},
};

// "[--set key=value]...", or "--out DIR" when the command's main form needs it.
std::string usage_token(const OptionRow &r, Command cmd) {
  std::string t = std::string(r.name) + (r.arg ? std::string(" ") + r.arg : "");
  if (!(r.required & cmd)) t = "[" + t + "]";
  return r.repeatable ? t + "..." : t;
}

}  // namespace

std::vector<const OptionRow *> option_rows(Command cmd) {
  std::vector<const OptionRow *> rows;
  for (const OptionRow &r : kOptions)
    if (r.commands & cmd) rows.push_back(&r);
  return rows;
}

std::string option_label(const OptionRow &r) {
  std::string l = r.name;
  if (r.alias) l += std::string(", ") + r.alias;
  if (r.arg) l += std::string(" ") + r.arg;
  return l;
}

std::string usage_options(Command cmd, size_t first_column, size_t indent) {
  constexpr size_t kWidth = 112;  // the longest usage line
  std::string out;
  size_t column = first_column;
  for (const OptionRow *r : option_rows(cmd)) {
    const std::string t = usage_token(*r, cmd);
    if (column + 1 + t.size() > kWidth && column > indent) {
      out += "\n" + std::string(indent, ' ');
      column = indent;
    } else if (!out.empty()) {
      out += " ";
      ++column;
    }
    out += t;
    column += t.size();
  }
  return out;
}

std::string options_section(Command cmd) {
  const std::vector<const OptionRow *> rows = option_rows(cmd);
  size_t width = 0;
  for (const OptionRow *r : rows) width = std::max(width, option_label(*r).size());
  std::string out = "options:\n";
  for (const OptionRow *r : rows) {
    std::string label = option_label(*r);
    label.resize(width, ' ');
    out += "  " + label + "  ";
    for (const char *h = r->help; *h; ++h) {
      out += *h;
      if (*h == '\n') out += std::string(width + 4, ' ');
    }
    out += "\n";
  }
  return out;
}

namespace {

struct PageStyleRow {
  const char *name;
  double width, height, font_size, line_scale, marker_scale;
};

// Single and double column of a two-column journal (246 and 510 pt wide), and a 16:9 slide.
const PageStyleRow kPageStyles[] = {
    {"paper1", 246, 185, 8, 0.75, 0.75},
    {"paper2", 510, 255, 9, 1, 1},
    {"slides", 640, 360, 16, 1.25, 1.25},
};

// A number in [lo, hi] that is all of `text`; false otherwise.
bool number_in(const std::string &text, double lo, double hi, double *v) {
  if (text.empty() || text.size() > 32) return false;
  char *end = nullptr;
  *v = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size() && std::isfinite(*v) && *v >= lo && *v <= hi;
}

}  // namespace

std::string page_option(Opt id, const std::string &value, PageOptions *o) {
  if (id == Opt::Style) {
    for (const PageStyleRow &r : kPageStyles)
      if (value == r.name) {
        if (o->width == 0) o->width = r.width, o->height = r.height;  // a --size given first is kept
        if (o->font_size == 0) o->font_size = r.font_size;
        o->line_scale = r.line_scale, o->marker_scale = r.marker_scale;
        return "";
      }
    return "--style: expected paper1, paper2 or slides, got '" + value + "'";
  }
  if (id == Opt::FontSize) {
    double v = 0;
    if (!number_in(value, 4, 72, &v)) return "--font-size: expected a size in pt from 4 to 72, got '" + value + "'";
    o->font_size = v;
    return "";
  }
  const size_t x = value.find('x');
  double w = 0, h = 0;
  if (x == std::string::npos || !number_in(value.substr(0, x), 36, 14400, &w) ||
      !number_in(value.substr(x + 1), 36, 14400, &h))
    return "--size: expected WxH in pt, each from 36 to 14400 (e.g. 246x185), got '" + value + "'";
  o->width = w, o->height = h;
  return "";
}

std::vector<std::pair<std::string, double>> page_style(const PageOptions &o) {
  std::vector<std::pair<std::string, double>> s;
  if (!o.given()) return s;
  if (o.width > 0) s.push_back({"width", o.width}), s.push_back({"height", o.height});
  s.push_back({"font_size", o.font_size > 0 ? o.font_size : 13});  // the drawing's axis labels: 13 px
  s.push_back({"line_scale", o.line_scale > 0 ? o.line_scale : 1});
  s.push_back({"marker_scale", o.marker_scale > 0 ? o.marker_scale : 1});
  return s;
}

}  // namespace am::cli
