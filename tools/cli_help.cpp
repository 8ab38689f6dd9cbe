// attnmech CLI — help: the texts of `--help` for every command, and `attnmech help NAME`: a plugin's page
// (kind, description, how to run it, its module, the parameter table built from its descriptor).
#include "cli.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#ifndef AM_MAIN_TASK
#error "AM_MAIN_TASK (the task of the main experiment) comes from the meson option main_task"
#endif

namespace am::cli {

#if AM_SWEEP_MPI
const char *const kSweepBackends = "threads, MPI";
#else
const char *const kSweepBackends = "threads (built without MPI)";
#endif

const char *const kScalapack = AM_SCALAPACK_INFO;

#if AM_REPORT_CAIRO
const char *const kPlotFormats = "SVG, PDF, PNG";
#else
const char *const kPlotFormats = "SVG (built without cairo: no PDF or PNG)";
#endif

void note_plot_formats(size_t svg_files) {
#if !AM_REPORT_CAIRO
  static bool said = false;
  const char *asked = std::getenv("AM_PLOT_FORMATS");  // --plots pdf or png is refused before any work
  if (svg_files == 0 || said || !asked || std::strcmp(asked, "all") != 0) return;
  said = true;
  std::fprintf(stderr, "attnmech: plots are SVG only: this attnmech was built without cairo (libcairo2-dev), "
                       "so no .pdf or .png beside them\n");
#else
  (void)svg_files;
#endif
}

const char *const kMainHelp =
    "usage: attnmech <command> [options]\n"
    "\n"
    "Statistical mechanics of attention networks: the attention-path kernel renormalisation, with task\n"
    "and estimator plugins.\n"
    "\n"
    "commands:\n"
    "  list             list the plugins (tasks, estimators) and any that failed to load\n"
    "  run [NAME]       run a task (or a task-free estimator); with no NAME: the main experiment\n"
    "                   (`run " AM_MAIN_TASK "`, results and plots in attnmech-out/)\n"
    "  help NAME        parameters of a plugin (or help on a command)\n"
    "  plot DIR         re-draw the plots from DIR/results.json (SVG; --plots svg,pdf,png for PDF and PNG),\n"
    "                   for a page: --style paper1|paper2|slides, --font-size PT, --size WxH\n"
    "  sweep SPEC       run a parameter grid (resumable; threads, MPI with mpirun, or shards)\n"
    "  figure NAME      run and draw one figure of the papers (`figure --list` lists them)\n"
    "\n"
    "options:\n"
    "  --help, -h       this help (every command has its own --help)\n"
    "  --version        print the version\n"
    "\n"
    "exit codes: 0 ok, 1 runtime error (e.g. a solver that did not converge), 2 usage error (also a value of\n"
    "an environment variable below that the tools would not read as meant: refused before any work)\n"
    "\n"
    "environment:\n"
    "  AM_PLUGIN_PATH        colon-separated absolute directories searched for plugin modules before the\n"
    "                        install directory (a relative entry is ignored, with a load-problem line)\n"
    "  AM_PLOT_FORMATS       the plots of a command without --plots: all = SVG, PDF and PNG (a build with\n"
    "                        cairo), svg = SVG only (unset: SVG, the default since 3.7)\n"
    "  AM_PROGRESS_SECONDS   seconds between progress lines when stderr is not a terminal (default 30)\n"
    "  AM_MEMORY_LIMIT       the memory a task plans for, e.g. 64G, per process: per rank under mpirun (default:\n"
    "                        the machine's physical memory, shared by the ranks on it)\n"
    "  OPENBLAS_NUM_THREADS  BLAS threads; with it and OMP_NUM_THREADS unset, run, sweep and figure use one\n"
    "                        (the library runs its own parallel loops)\n"
    "  AM_SCALAPACK_BLOCK    block size (8 to 1024, default 64) of `mpirun -np K attnmech run`'s block-cyclic\n"
    "                        layout; the CLI sets the library context's scalapack_block from it\n";


namespace {

const char *const kListHelp =
    "usage: attnmech list [--plugin FILE]... [--json]\n"
    "\n"
    "List the plugins found (name, kind, version, description), the load report (one line per module\n"
    "that could not be loaded) and the directories searched. Search order: --plugin files, AM_PLUGIN_PATH\n"
    "(colon-separated), the build tree (<dir of attnmech>/../plugins), the install dir (next to the\n"
    "library: <libdir>/attnmech-plugins-<ABI>). When no directory held a plugin it warns on stderr; when\n"
    "no plugin was found at all it exits 1.\n"
    "\n"
    "options:\n"
    "  --plugin FILE    load this plugin module first (repeatable)\n"
    "  --json           machine-readable listing on stdout\n";

// The --help of run, sweep and figure: the first usage line and the options section come from the option table
// (cli_options.cpp); these texts go around them.
struct CommandText {
  Command cmd;
  const char *word, *operand;  // "run", "[NAME]"
  const char *forms;           // further usage lines
  const char *about;           // the description
  const char *after;           // after the options
};

const CommandText kRunText = {
    CMD_RUN, "run", "[NAME]",
    // Shown in every build, so the help (and docs/cli.md, checked against it) is the same whatever was found;
    // `attnmech --version` says whether this build has ScaLAPACK.
    "       mpirun -np K attnmech run [NAME] ...                (built with ScaLAPACK: one solve over K ranks)\n",
    "Run task NAME (or an estimator that needs no task) and report the results. With no NAME: the main\n"
    "experiment, `run " AM_MAIN_TASK "` with its defaults, results written to attnmech-out/.\n",
    "\n"
    "A run whose solver does not converge still writes its results (marked) and the exit code is 1.\n"
    "Ctrl-C stops after the current step; the results gathered so far are still written.\n"};

const char *const kHelpHelp =
    "usage: attnmech help NAME [--plugin FILE]...\n"
    "       attnmech help --man | --completion bash\n"
    "\n"
    "Show a plugin's description and parameter table (name, type, default, range or choices, help),\n"
    "or the help of a command (list, run, help, plot).\n"
    "\n"
    "options:\n"
    "  --plugin FILE    load this plugin module first (repeatable)\n"
    "  --man            print the manual page attnmech(1) (roff; installed as share/man/man1/attnmech.1)\n"
    "  --completion SHELL\n"
    "                   print the completion script for SHELL (bash; installed as\n"
    "                   share/bash-completion/completions/attnmech)\n";

const char *const kPlotHelp =
    "usage: attnmech plot DIR [--style NAME] [--font-size PT] [--size WxH] [--plots LIST]\n"
    "       attnmech plot DIR1 DIR2 ... --out OUTDIR [--plots LIST]\n"
    "\n"
    "Re-draw the plots of DIR/results.json into DIR: the plots its plugins declared (the document's\n"
    "`report`; a document written before plugins declared plots gets them from the plugins named in it).\n"
    "With several DIRs: overlay the line plots they share into OUTDIR/compare_<plot>.svg.\n"
    "\n"
    "options:\n"
    "  --out DIR        where the plots go (default: DIR itself; required with several DIRs)\n"
    "  --style NAME     draw for a page: paper1 (one column, 246 x 185 pt, 8 pt text), paper2 (two\n"
    "                   columns, 510 x 255 pt, 9 pt text) or slides (16:9, 640 x 360 pt, 16 pt text);\n"
    "                   line widths and markers scale with it. Default: the plain drawing\n"
    "  --font-size PT   axis labels' size on the page in pt (4 to 72; ticks and legend 11/13 of it;\n"
    "                   overrides the style's)\n"
    "  --size WxH       the page in pt, e.g. 246x185 (each 36 to 14400; overrides the style's)\n"
    "  --plots LIST     the files of every plot: svg, pdf, png (comma-separated) or all. Default: svg\n"
    "                   (PDF and PNG need a build with cairo; AM_PLOT_FORMATS=all: all three)\n"
    "  --help           this help\n";

const CommandText kSweepText = {
    CMD_SWEEP, "sweep", "SPEC",
    "       attnmech sweep --aggregate DIR\n"
    "       attnmech sweep --list                               (the shipped specs)\n"
    "       mpirun -np K attnmech sweep SPEC --out DIR          (an MPI task farm; also under srun)\n",
    "Run every point of the grid in SPEC (JSON: task, estimator, fixed settings, axes, zip groups, seeds;\n"
    "docs/sweep.md) as one run each, written to DIR/points/<key>/ (results.json + point.json). Re-running\n"
    "skips complete points (status ok or warning) and redoes interrupted or failed ones. At the end:\n"
    "DIR/sweep.json, DIR/sweep.csv and DIR/plots/<metric>_vs_<axis>.svg (mean +- s.e. over seeds).\n"
    "Shipped specs: <prefix>/share/attnmech/sweeps/ (examples/sweeps in the source tree); `sweep --list`\n"
    "lists them.\n",
    "\n"
    "exit codes: 0 all points complete, 1 a point failed (recorded; the others finish) or is missing,\n"
    "2 usage error, 128+n stopped by signal n (completed points kept)\n"};

std::string help_text(const CommandText &t) {
  const std::string head = std::string("usage: attnmech ") + t.word + " ";
  return head + t.operand + " " + usage_options(t.cmd, head.size() + std::strlen(t.operand) + 1, head.size()) +
         "\n" + t.forms + "\n" + t.about + "\n" + options_section(t.cmd) + t.after;
}

const char *type_name(am_param_type t) {
  switch (t) {
    case AM_PARAM_INT: return "int";
    case AM_PARAM_REAL: return "real";
    case AM_PARAM_BOOL: return "bool";
    case AM_PARAM_STRING: return "string";
    case AM_PARAM_CHOICE: return "choice";
    case AM_PARAM_INT_LIST: return "int list";
    case AM_PARAM_REAL_LIST: return "real list";
  }
  return "?";
}

std::string range_text(const am_param_def &p) {
  if (p.type == AM_PARAM_CHOICE) return p.choices ? p.choices : "";
  if (p.type == AM_PARAM_BOOL) return "true|false";
  if (p.type == AM_PARAM_STRING || p.min > p.max) return "";
  char buf[96];
  std::snprintf(buf, sizeof buf, "[%g, %g]", p.min, p.max);
  return buf;
}

// name, type, default, range, help: one aligned row per parameter (default and range columns capped).
void print_param_table(const am_plugin_desc *d) {
  struct Row {
    std::string name, type, def, range, help;
  };
  std::vector<Row> rows;
  for (uint32_t i = 0; i < d->n_params; ++i) {
    const am_param_def &p = *am_plugin_param(d, i);
    rows.push_back({p.name ? p.name : "", type_name(p.type), p.default_value ? p.default_value : "", range_text(p),
                    p.help ? p.help : ""});
  }
  if (rows.empty()) {
    std::printf("  (no parameters)\n");
    return;
  }
  int w[4] = {4, 4, 7, 6};
  for (const auto &r : rows) {
    w[0] = std::max(w[0], static_cast<int>(r.name.size()));
    w[1] = std::max(w[1], static_cast<int>(r.type.size()));
    w[2] = std::max(w[2], static_cast<int>(std::min<size_t>(r.def.size(), 24)));
    w[3] = std::max(w[3], static_cast<int>(std::min<size_t>(r.range.size(), 28)));
  }
  std::printf("  %-*s  %-*s  %-*s  %-*s  %s\n", w[0], "name", w[1], "type", w[2], "default", w[3], "range", "help");
  for (const auto &r : rows)
    std::printf("  %-*s  %-*s  %-*s  %-*s  %s\n", w[0], r.name.c_str(), w[1], r.type.c_str(), w[2],
                r.def.empty() ? "-" : r.def.c_str(), w[3], r.range.empty() ? "-" : r.range.c_str(), r.help.c_str());
}

// The plugin's page: identity, what it makes or accepts, how to run it, its module, its parameters.
void print_plugin(const am_registry *reg, const am_plugin_desc *d) {
  std::printf("%s %s %s\n", kind_name(d->kind), d->name, d->version ? d->version : "");
  std::printf("  %s\n", d->description ? d->description : "");
  const bool taskless = d->kind == AM_PLUGIN_ESTIMATOR && (d->data_kinds & AM_DATA_NONE);
  if (d->kind == AM_PLUGIN_TASK)
    std::printf("  makes %s data; default estimator: %s\n", data_kinds_text(d->data_kinds).c_str(),
                d->default_estimator && *d->default_estimator ? d->default_estimator : "(none: give --estimator)");
  else
    std::printf("  accepts data: %s\n", data_kinds_text(d->data_kinds).c_str());
  if (d->kind == AM_PLUGIN_TASK || taskless)
    std::printf("  run: attnmech run %s [--set key=value]...\n", d->name);
  else
    std::printf("  run: attnmech run TASK --estimator %s [--set key=value]...\n", d->name);
  for (const am_plugin_info &p : am::sdk::registry_plugins(reg))
    if (p.desc == d && p.path) std::printf("  module: %s\n", p.path);
  std::printf("\nparameters (--set key=value):\n");
  print_param_table(d);
  std::printf("\nhost keys (every run): seed (uint, default 0), threads (int >= 0, 0 = all cores)%s\n",
              taskless ? "" : ", widths (W0,...,WL)");
}

}  // namespace

const char *kind_name(uint32_t kind) {
  return kind == AM_PLUGIN_TASK ? "task" : kind == AM_PLUGIN_ESTIMATOR ? "estimator" : "?";
}


const char *command_help(const std::string &cmd) {
  static const std::string run = help_text(kRunText), sweep = help_text(kSweepText),
                           figure = help_text({CMD_FIGURE, "figure", "NAME", kFigureForms, kFigureAbout, kFigureAfter});
  if (cmd == "list") return kListHelp;
  if (cmd == "run") return run.c_str();
  if (cmd == "help") return kHelpHelp;
  if (cmd == "plot") return kPlotHelp;
  if (cmd == "sweep") return sweep.c_str();
  if (cmd == "figure") return figure.c_str();
  return nullptr;
}

int cmd_help(Args &a) {
  std::vector<std::string> plugins;
  std::string name, val;
  while (!a.done()) {
    if (a.take("--plugin", &val)) {
      plugins.push_back(val);
    } else if (a.flag({"--man"})) {
      std::fputs(man_page(ATTNMECH_TOOL_VERSION).c_str(), stdout);
      return EXIT_OK;
    } else if (a.take("--completion", &val)) {
      if (val != "bash") throw UsageError("--completion: expected a shell, bash; got '" + val + "'", "help");
      std::fputs(bash_completion().c_str(), stdout);
      return EXIT_OK;
    } else if (name.empty() && !a.is_option()) {
      name = a.v[a.i++];
    } else {
      a.reject();
    }
  }
  if (name.empty()) {
    std::fputs(kMainHelp, stdout);
    return EXIT_OK;
  }
  Host h;
  h.open();
  h.load(plugins);
  if (const am_plugin_desc *d = am_registry_find(h.reg, name.c_str(), 0)) {
    print_plugin(h.reg, d);
    return EXIT_OK;
  }
  if (const char *text = command_help(name)) {
    std::fputs(text, stdout);
    return EXIT_OK;
  }
  std::string known;
  for (const am_plugin_info &p : am::sdk::registry_plugins(h.reg)) known += std::string(known.empty() ? "" : ", ") + p.desc->name;
  throw UsageError("unknown plugin or command '" + name + "' (plugins: " + (known.empty() ? "none found" : known) +
                       "; commands: list, run, help, plot, sweep, figure)",
                   "help");
}

}  // namespace am::cli
