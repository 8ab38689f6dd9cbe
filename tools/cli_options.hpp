// attnmech CLI — the one option table of `run`, `sweep` and `figure`: every option's spelling, argument, help and
// the commands that take it. Each command's parser matches arguments against its rows (Args::option,
// attnmech.cpp) and its --help lists them (usage line and options section, command_help): what is parsed is
// what is shown. Self-contained (no library, no Args) so that the CLI test checks the help against the table.
#ifndef ATTNMECH_TOOLS_CLI_OPTIONS_HPP
#define ATTNMECH_TOOLS_CLI_OPTIONS_HPP

#include <string>
#include <vector>

namespace am::cli {

// The commands the table serves, as bits of OptionRow::commands.
enum Command : unsigned { CMD_RUN = 1u, CMD_SWEEP = 2u, CMD_FIGURE = 4u };

// What an option sets; a command's parser switches on it.
enum class Opt {
  Estimator, Set, Width, Out, Plugin, Json, Quiet, Verbose,                           // run
  Shard, Jobs, Aggregate, Recompute, WarmStart, NoWarmStart, NoAggregate, DispatcherOnly, List,  // sweep
  PlotOnly, Check,                                                                    // figure
  Style, FontSize, Size,                                                              // figure (and plot)
  Plots,                                                                              // run, sweep, figure (and plot)
};

struct OptionRow {
  Opt id;
  const char *name;    // "--out"
  const char *alias;   // "-o", or nullptr
  const char *arg;     // "DIR"; nullptr for a flag
  unsigned commands;   // the commands that take it (Command bits)
  unsigned required;   // the commands whose main usage form needs it (shown without brackets)
  bool repeatable;     // shown as "[...]..."
  const char *help;    // one or more lines ('\n' between them)
};

// The help of --plots LIST (run, sweep, figure and plot).
extern const char *const kPlotsHelp;

// The rows a command takes, in table order (an option with a different help per command has one row each).
std::vector<const OptionRow *> option_rows(Command cmd);
// "--out, -o DIR": the label of a row in the options section.
std::string option_label(const OptionRow &r);
// The options of the usage line, wrapped to lines indented by `indent` columns:
// "[--estimator NAME] [--set key=value]... [--width N[,N...]]\n<indent>[--out DIR] ...".
std::string usage_options(Command cmd, size_t first_column, size_t indent);
// The "options:" section: one aligned row per option, help continued under itself.
std::string options_section(Command cmd);

// --style NAME, --font-size PT, --size WxH (figure and plot): the page the plots are drawn on.
struct PageOptions {
  double width = 0, height = 0, font_size = 0, line_scale = 0, marker_scale = 0;  // 0 = not given
  bool given() const { return width > 0 || font_size > 0; }
};
// Applies one of the three options' value to *o; "" when valid, else what is wrong (the option, what was expected,
// what came). --font-size and --size override the style's, whatever their order.
std::string page_option(Opt id, const std::string &value, PageOptions *o);
// The report.style fields of *o (name → number): width, height (pt), font_size (pt), line_scale, marker_scale;
// empty when no option was given (the default drawing).
std::vector<std::pair<std::string, double>> page_style(const PageOptions &o);

}  // namespace am::cli

#endif
