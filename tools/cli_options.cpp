// attnmech CLI — the option table of `run`, `sweep` and `figure` (cli_options.hpp) and the help text made from it.
#include "cli_options.hpp"

#include <algorithm>

namespace am::cli {

namespace {

constexpr unsigned kRun = CMD_RUN, kSweep = CMD_SWEEP, kFigure = CMD_FIGURE;

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
     "write DIR/results.json, .npy arrays (arrays of >= 16 elements) and SVG plots"},
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
    {Opt::List, "--list", nullptr, nullptr, kSweep, 0, false,
     "print the points (key, cost, axis values) in the order they would run"},
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

}  // namespace am::cli
