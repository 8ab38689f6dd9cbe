// attnmech CLI — what the command files share: exit codes, the two error kinds, the argument cursor, the
// host (library context + plugin registry) and the command entry points (one file per command:
// attnmech.cpp run + main, cli_list.cpp, cli_help.cpp, cli_plot.cpp, cli_sweep.cpp, cli_figure.cpp; cli_progress.cpp
// the stderr sinks; cli_options.cpp the option table of run, sweep and figure).
#ifndef ATTNMECH_TOOLS_CLI_HPP
#define ATTNMECH_TOOLS_CLI_HPP

#include <attnmech/attnmech.h>
#include <attnmech/host.hpp>

#include "cli_options.hpp"  // the option table of run, sweep and figure
#include "progress_trend.hpp"  // the ETA of an open-ended loop
#include <common/text.hpp>  // data_kinds_text, trim, parse_u64 (shared with the run API)

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace am::sweep {
struct Spec;
}

namespace am::cli {

enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

// A usage error (exit 2): "attnmech: usage error: <msg>" and "(see 'attnmech <command> --help')".
struct UsageError : std::runtime_error {
  std::string command;
  UsageError(const std::string &msg, std::string cmd = "") : std::runtime_error(msg), command(std::move(cmd)) {}
};
// A runtime error (exit 1): "attnmech: error: <msg>".
struct RuntimeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The arguments after the command word, consumed left to right.
struct Args {
  std::vector<std::string> v;
  size_t i = 0;
  std::string cmd;
  bool done() const { return i >= v.size(); }
  const std::string &cur() const { return v[i]; }
  bool is_option() const { return v[i].size() > 1 && v[i][0] == '-'; }
  // "--opt VALUE" or "--opt=VALUE": true (and *value set) when the current argument is this option.
  bool take(const char *name, std::string *value);
  // One of these flags: true (and consumed) when the current argument is one of them.
  bool flag(std::initializer_list<const char *> names);
  // An option of `command` (a row of the option table, by its name or alias): true (and consumed) with *id and,
  // for an option with an argument, *value set.
  bool option(Command command, Opt *id, std::string *value);
  // The value of --set key=value appended to *sets (a usage error without a key).
  void add_set(const std::string &value, std::vector<std::pair<std::string, std::string>> *sets) const;
  // The value of --jobs N: N in [0, 4096] (a usage error otherwise).
  int jobs(const std::string &value) const;
  // Throws the usage error for the current argument: an unknown option or an unexpected word.
  [[noreturn]] void reject(const std::string &why_extra = "") const;
};

// Log lines and the progress line on stderr (cli_progress.cpp). On a terminal the progress line is redrawn in
// place; when stderr is piped (a log file, CI, `| tee`), start_piped() prints one progress line every
// AM_PROGRESS_SECONDS (default 30) from a timer thread: elapsed time, the phase the run last reported, its
// count and an ETA, so a long run is never silent even while a phase reports nothing.
struct Sinks {
  bool quiet = false, verbose = false, tty = false;
  bool line_open = false;  // a progress line is on screen (tty)
  std::chrono::steady_clock::time_point last = {};
  void clear_line();
  // The timer thread of piped progress (no-op on a terminal or with quiet); stop_piped() ends it (idempotent).
  void start_piped();
  void stop_piped();
  Sinks() = default;
  Sinks(const Sinks &) = delete;
  Sinks &operator=(const Sinks &) = delete;
  ~Sinks() { stop_piped(); }

  // What the run last reported (guarded by mu): the phase label, its count, when the phase began and at
  // which count (the ETA's rate is measured within one phase). A phase is its label less its numbers (a label
  // that carries counts, "c1 warm-up 12/500", stays one phase). An open-ended phase (am_context_convergence:
  // L-BFGS, Newton) has an iteration, no total, and the trend of its stopping rule's measure, its only ETA.
  struct Phase {
    std::string label, key;
    double done = 0, total = 0, done_at_start = 0;
    std::chrono::steady_clock::time_point started = {}, updated = {};
    bool seen = false, open_ended = false;
    ConvergenceTrend trend;
  };
  std::mutex mu;
  std::condition_variable wake;
  Phase phase;
  bool stopping = false;
  bool phase_changed = false;  // a new phase since the last piped line
  std::chrono::steady_clock::time_point run_started = {};
  std::thread timer;
};
// Seconds between piped progress lines: AM_PROGRESS_SECONDS (tests use a fraction of a second), default 30.
double piped_progress_seconds();
// One piped progress line (without the newline), e.g. "attnmech: progress 95 s: SGD epochs 12/40 (30%), ETA 3 min
// 42 s" or "attnmech: progress 2 min 0 s: [run 1/1] L-BFGS iteration 26 (340x its tolerance), ETA 1 min 10 s".
std::string piped_progress_line(const Sinks::Phase &p, std::chrono::steady_clock::time_point run_started,
                                 std::chrono::steady_clock::time_point now);
// The phase's part of a progress line: "label 3/10 (30%), ETA 5 s", "label iteration 22 (340x its tolerance), ETA
// 2 min 5 s", "label iteration 3, no ETA yet" (an open-ended phase whose trend cannot be estimated yet).
std::string phase_text(const Sinks::Phase &p, std::chrono::steady_clock::time_point now);
// A report into *p at `now` (a new phase when the label's words change or the count goes back: then true); an
// open-ended report (open) adds measure / target to the phase's trend.
bool remember_report(Sinks::Phase *p, std::chrono::steady_clock::time_point now, double done, double total,
                     const char *label, bool open, double measure = 0, double target = 0);
// Seconds left in the phase at `now` (its count's rate, or an open-ended phase's convergence trend), less the time
// since its last report; NaN when not estimable.
double phase_eta(const Sinks::Phase &p, std::chrono::steady_clock::time_point now);
// "42 s", "3 min 5 s", "2 h 10 min".
std::string duration_text(double secs);

// The environment variables the tools and the library read, checked before anything is computed (cli_host.cpp):
// AM_PLOT_FORMATS (the report library's check), AM_MEMORY_LIMIT, AM_PROGRESS_SECONDS, AM_SWEEP_PROGRESS_SECONDS,
// AM_PLUGIN_SHADOW. A value none of them would read as meant is a UsageError of `command` (exit 2) naming the
// variable and what it takes; before, a bad value was silently ignored or refused only when the results were
// written (AM_PLOT_FORMATS: after the compute, and the results with it).
void check_environment(const std::string &command);
// Output paths named by plugin parameters (--set out_sequences=data/seqs, --set export_dir=D), checked before
// any compute (cli_host.cpp): `out_*` is a file prefix (its parent directory is created), `export_*` a
// directory (created). Throws RuntimeError naming the parameter when a directory cannot be made.
void prepare_output_params(const std::vector<std::pair<std::string, std::string>> &sets);
// `dir` and its parents created before any compute, else RuntimeError "<what>: cannot create the directory …".
void prepare_out_dir(const std::string &what, const std::string &dir);
// Whether a plugin parameter names an output path by the convention above.
bool is_output_param(const std::string &key);
void attach_sinks(am_context_settings *cs, Sinks *sinks);

// The library context and the plugin registry (--plugin files first, then discovery).
struct Host {
  am_context *ctx = nullptr;
  am_registry *reg = nullptr;
  Sinks sinks;
  // Set before open(): asked after the sinks at every progress report of the context; nonzero stops the run (a
  // distributed run's stop agreement, cli_ranks.cpp).
  std::function<int()> checkpoint;
  // Set before open(), by a rank of a distributed run (RunRanks::setup): the context's data_part/data_parts (its
  // part of the task's data) and threads (0: all cores).
  int data_part = 0, data_parts = 0, threads = 0;
  Host() = default;
  Host(const Host &) = delete;
  Host &operator=(const Host &) = delete;
  ~Host();
  void open();
  // strict: a --plugin file that fails to load is an error (RuntimeError naming the file and the reason);
  // otherwise it is a line of the load report (what `list` shows).
  void load(const std::vector<std::string> &plugin_files, bool strict = false);
  // Every other load problem (a broken module on the search path, a module not used because it would
  // shadow a built-in) as a warning on stderr, unless quiet.
  void report_load_problems(bool quiet) const;
  // The context's last message, else the status's name.
  std::string error(am_status st) const;

 private:
  std::shared_ptr<void> hook_;  // what the context's callbacks are given when open() wraps them (cli_host.cpp)
};

// Help texts and plugin words (cli_help.cpp). The help of run, sweep and figure lists the rows of the option table.
extern const char *const kMainHelp;
const char *command_help(const std::string &cmd);  // NULL for an unknown command
using am::text::data_kinds_text;            // "attention, sequence", …
const char *kind_name(uint32_t kind);              // "task", "estimator"
// attnmech(1) in roff and the bash completion script, made from the help texts and the option table
// (cli_docgen.cpp; `attnmech help --man`, `attnmech help --completion bash`).
std::string man_page(const char *version);
std::string bash_completion();

// One rank of a distributed `run` (cli_ranks.cpp): the stop agreement the run takes part in (docs/cli.md "Under MPI").
class RunRanks {
 public:
  virtual ~RunRanks() = default;
  virtual int rank() const = 0;
  // The run context of this rank (before Host::open): it makes its part of the task's data, and its own loops take
  // its share of the node's cores (the ranks on a node × their threads ≤ its cores; BLAS: one thread, attnmech.cpp).
  virtual void setup(Host *h) const = 0;
  // The run context's progress hook: 1 = stop. On the main thread a round of the agreement with every rank (so every
  // rank stops at the same checkpoint); on the run's own threads this rank's signal alone (they make no MPI calls).
  virtual int checkpoint() = 0;
  // This rank's run has ended (`failed`: with an error of its own, which stops the other ranks at their next
  // checkpoint): rounds until every rank's run has ended. Only the first call counts.
  virtual void ended(bool failed) = 0;
  // Why the ranks stopped when it was not a signal ("rank 1 failed"), else "".
  virtual std::string stop_reason() const = 0;
};
// `run` (attnmech.cpp): one process (ranks NULL), or one rank of a distributed run, which writes and prints nothing
// unless it is rank 0 and returns its exit code without a message (rank 0 says it).
int cmd_run(Args &a, RunRanks *ranks);
int cmd_run_ranks(Args &a);  // cli_ranks.cpp: `run` under mpirun/srun with K > 1 ranks (a build with ScaLAPACK)
// The stop signal this process received (attnmech.cpp's handler), or that the ranks of a distributed run agreed on
// (note_stop_signal: the first one counts).
int stop_signal();
void note_stop_signal(int sig);

int cmd_list(Args &a);  // cli_list.cpp
int cmd_help(Args &a);  // cli_help.cpp
int cmd_plot(Args &a);  // cli_plot.cpp
int cmd_sweep(Args &a); // cli_sweep.cpp (engine: tools/sweep)
int cmd_figure(Args &a); // cli_figure.cpp (specs and drawing: tools/figure)
// cli_host.cpp: the ranks an MPI launcher started this process among (Open MPI's variables, or PMI's under srun),
// 1 without one (*rank: this process's); and `run` refused on K > 1 ranks by a build without ScaLAPACK (each rank
// would run the whole problem): rank 0 throws the usage error, the others return its exit code silently.
int launcher_ranks(int *rank);
int refuse_ranks(int rank, int size);

// One parsed sweep run by the sweep command's machinery (resume, threads or the MPI farm, aggregate) into
// job.out: what `figure` does for each sweep of a figure (cli_sweep.cpp). Returns the sweep's exit code.
struct SweepJob {
  std::string out;
  std::vector<std::string> plugins;
  int jobs = 0;
  bool quiet = false, recompute = false;
  uint32_t plot_formats = 0;  // --plots (0: the report library's default)
};
int sweep_parsed(const am::sweep::Spec &spec, const SweepJob &job, bool mpi, int rank, int size);
// The --help text of `figure` around its options (cli_figure.cpp): usage forms after the first, the description
// (each ends in "\n"), what follows the options section.
extern const char *const kFigureForms;
extern const char *const kFigureAbout;
extern const char *const kFigureAfter;

// How `sweep` can run here: "threads, MPI" or "threads (built without MPI)" (cli_help.cpp).
extern const char *const kSweepBackends;
// The plot formats the report library writes ("SVG, PDF, PNG" with cairo), for `list` and `--version`.
extern const char *const kPlotFormats;
// Whether `mpirun -np K attnmech run` spreads one solve over the ranks: "yes (scalapack-openmpi 2.2.1)" or "no (...)".
extern const char *const kScalapack;
// Without cairo: once per run, when AM_PLOT_FORMATS=all asked for PDF and PNG and plots were written, a line on
// stderr that they are SVG only.
void note_plot_formats(size_t svg_files);
// What the files of a results directory are, for run's stderr line (cli_host.cpp): "results.json, 95 .npy, 15 .svg,
// 15 .pdf, 2 text" (a format only when written); *svg: the number of .svg files.
std::string written_files_text(const std::vector<std::string> &files, size_t *svg);
// --plots LIST (run, sweep, figure, plot; cli_host.cpp): the report library's AM_REPORT_FORMAT_* bits. A list it
// refuses (an unknown name, PDF or PNG without cairo) is a UsageError of `command` naming the valid formats.
uint32_t plots_option(const std::string &value, const std::string &command);

}  // namespace am::cli

#endif
