// attnmech — the command-line tool: list / run / help / plot (docs/cli.md). A thin shell over the library:
// parse the arguments → run spec → am_run_execute → am_report_write → summary on stdout (plots: report
// library). This file holds main and `run`; the other commands and the host are in tools/cli_*.cpp.
// Exit codes: 0 ok, 1 runtime error (including a solver that did not converge), 2 usage error.
#include "cli.hpp"

#include <attnmech/report.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace am::cli;

// ---------------------------------------------------------------- the argument cursor

bool Args::take(const char *name, std::string *value) {
  const std::string &a = v[i];
  const size_t n = std::strlen(name);
  if (a == name) {
    if (i + 1 >= v.size()) throw UsageError(std::string("option ") + name + " needs a value", cmd);
    *value = v[i + 1];
    i += 2;
    return true;
  }
  if (a.size() > n && a.compare(0, n, name) == 0 && a[n] == '=') {
    *value = a.substr(n + 1);
    ++i;
    return true;
  }
  return false;
}

bool Args::flag(std::initializer_list<const char *> names) {
  for (const char *n : names)
    if (v[i] == n) {
      ++i;
      return true;
    }
  return false;
}

bool Args::option(Command command, Opt *id, std::string *value) {
  for (const OptionRow *r : option_rows(command)) {
    const bool hit = r->arg ? take(r->name, value) || (r->alias && take(r->alias, value))
                            : r->alias ? flag({r->name, r->alias}) : flag({r->name});
    if (hit) {
      *id = r->id;
      return true;
    }
  }
  return false;
}

void Args::add_set(const std::string &val, std::vector<std::pair<std::string, std::string>> *sets) const {
  const size_t eq = val.find('=');
  const std::string key = eq == std::string::npos ? "" : am::text::trim(val.substr(0, eq));
  if (key.empty()) throw UsageError("malformed --set '" + val + "': expected key=value", cmd);
  sets->emplace_back(key, val.substr(eq + 1));
}

int Args::jobs(const std::string &val) const {
  uint64_t j = 0;
  if (!am::text::parse_u64(val, &j) || j > 4096) throw UsageError("bad --jobs '" + val + "'", cmd);
  return static_cast<int>(j);
}

void Args::reject(const std::string &why_extra) const {
  if (is_option()) throw UsageError("unknown option '" + v[i] + "'", cmd);
  throw UsageError("unexpected argument '" + v[i] + "'" + why_extra, cmd);
}

namespace {

// ---------------------------------------------------------------- run: the options

struct RunOptions {
  std::string name, estimator, out;
  std::vector<std::pair<std::string, std::string>> sets;
  std::vector<double> widths;
  bool width_given = false, json_out = false, quiet = false, verbose = false;
  std::vector<std::string> plugins;
  uint32_t plot_formats = AM_REPORT_FORMATS_DEFAULT;  // --plots (the report library's setting)
};

void parse_widths(const std::string &s, std::vector<double> *out) {
  size_t pos = 0;
  do {
    const size_t k = s.find(',', pos);
    const std::string part = am::text::trim(s.substr(pos, k == std::string::npos ? std::string::npos : k - pos));
    uint64_t v = 0;
    if (!am::text::parse_u64(part, &v) || v == 0 || v > 100000000ull)
      throw UsageError("bad --width '" + s + "': expected positive whole numbers separated by commas (e.g. 10,100,1000)",
                       "run");
    out->push_back(static_cast<double>(v));
    pos = k == std::string::npos ? k : k + 1;
  } while (pos != std::string::npos);
}

RunOptions parse_run(Args &a) {
  RunOptions o;
  Opt id;
  std::string val;
  while (!a.done()) {
    if (!a.option(CMD_RUN, &id, &val)) {
      if (!o.name.empty() || a.is_option()) a.reject(" (NAME is already '" + o.name + "')");
      o.name = a.v[a.i++];
      continue;
    }
    switch (id) {
      case Opt::Estimator: o.estimator = val; break;
      case Opt::Set: a.add_set(val, &o.sets); break;
      case Opt::Width:
        parse_widths(val, &o.widths);
        o.width_given = true;
        break;
      case Opt::Out:
        if (val.empty()) throw UsageError("--out needs a directory", "run");
        o.out = val;
        break;
      case Opt::Plugin: o.plugins.push_back(val); break;
      case Opt::Plots: o.plot_formats = plots_option(val, "run"); break;
      case Opt::Json: o.json_out = true; break;
      case Opt::Quiet: o.quiet = true; break;
      case Opt::Verbose: o.verbose = true; break;
      default: throw RuntimeError("no handler for an option of `run`");  // the table and this switch disagree
    }
  }
  return o;
}

// ---------------------------------------------------------------- run: spec → execute → write → summary

void build_spec(const RunOptions &o, am::sdk::RunSpec *spec) {
  if (am_run_spec_create(spec->out()) != AM_OK) throw RuntimeError("out of memory");
  am_run_spec_set_task(spec->get(), o.name.c_str());
  am_run_spec_set_estimator(spec->get(), o.estimator.c_str());
  for (const auto &kv : o.sets) am_run_spec_set(spec->get(), kv.first.c_str(), kv.second.c_str());
  if (o.width_given) am_run_spec_set_widths(spec->get(), o.widths.data(), o.widths.size());
}

// The library's verdict: AM_ERR_USAGE → usage error (exit 2), anything else → runtime error (exit 1).
[[noreturn]] void throw_status(const Host &h, am_status st) {
  if (st == AM_ERR_USAGE) throw UsageError(h.error(st), "run");
  throw RuntimeError(h.error(st));
}

// The results directory; returns why its plots could not all be drawn ("" when they were): the results are then
// written without them, and the run says so after its summary (exit 1).
std::string write_out(Host &h, const RunOptions &o, const am_record *doc) {
  std::vector<std::string> files;
  am_report_write_options wo;
  am_report_write_default_options(&wo);
  wo.on_file = [](void *user, const char *name) { static_cast<std::vector<std::string> *>(user)->push_back(name); };
  wo.user = &files;
  wo.formats = o.plot_formats;
  const am_status ws = am_report_write(h.ctx, doc, o.out.c_str(), &wo);
  if (ws != AM_OK && std::find(files.begin(), files.end(), "results.json") == files.end())
    throw RuntimeError(h.error(AM_ERR_IO));
  const std::string plots_failed = ws != AM_OK ? h.error(ws) : "";
  if (o.quiet) return plots_failed;
  size_t svg = 0;
  const std::string kinds = written_files_text(files, &svg);
  std::fprintf(stderr, "wrote %zu files to %s/ (%s)\n", files.size(), o.out.c_str(), kinds.c_str());
  note_plot_formats(svg);
  return plots_failed;
}

// The summary tables (or the JSON document) on stdout.
void print_results(Host &h, const RunOptions &o, const am_record *doc) {
  char *text = nullptr;
  const am_status ts = o.json_out ? am_report_json(h.ctx, doc, &text) : am_report_summary(h.ctx, doc, &text);
  if (ts != AM_OK) throw RuntimeError(h.error(ts));
  std::fputs(text, stdout);
  am_free(text);
  if (!o.json_out && !o.out.empty()) std::printf("\nresults written to %s/\n", o.out.c_str());
  std::fflush(stdout);
}

am_context *g_run_ctx = nullptr;            // the context a stop signal cancels (NULL: a distributed run's ranks agree)
volatile std::sig_atomic_t g_stop_signal = 0;  // the first stop signal received or agreed on (0: none)

// SIGINT, SIGTERM (a scheduler's limit, `timeout`, `kill`) and SIGHUP (a closed terminal) all stop a run
// the same way: cancel through the context, write what was computed, exit 128 + the signal number.
extern "C" void on_stop_signal(int sig) {
  if (!g_stop_signal) g_stop_signal = sig;
  if (g_run_ctx) am_context_cancel(g_run_ctx);  // lock-free and async-signal-safe
  std::signal(sig, SIG_DFL);                    // a second signal of the kind ends the process at once
}

void catch_stop_signals(am_context *ctx) {
  g_run_ctx = ctx;
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
}

// The exit code of a run whose results were written: what the run's status says; after a stop signal,
// 128 + its number, as shells and schedulers expect. A stopped run says where its partial results went.
// `reason`: why the ranks of a distributed run stopped, when no signal did ("rank 1 failed").
int run_verdict(am_status st, const std::string &failure, const RunOptions &o, const std::string &reason) {
  if (st == AM_ERR_USAGE) throw UsageError(failure, "run");
  const int sig = g_stop_signal;
  const std::string kept = !o.out.empty() ? "partial results written to " + o.out + "/"
                           : std::string("partial results only on stdout (") + (o.json_out ? "--json" : "the summary") +
                                 "); no --out, so no files were written";
  std::string why;
  const char *name = sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP" : "a signal";
  if (!failure.empty()) why = failure;
  else if (sig) why = std::string("stopped by ") + name + "; " + kept;
  else if (st == AM_CANCELLED) why = (reason.empty() ? "interrupted" : "stopped: " + reason) + "; " + kept;
  else if (st == AM_ERR_NOT_CONVERGED) why = "the solver did not converge in at least one run (marked in the results)";
  if (why.empty()) return EXIT_OK;
  std::fprintf(stderr, "attnmech: %s%s\n", failure.empty() ? "" : "error: ", why.c_str());
  return sig ? 128 + sig : EXIT_RUNTIME;
}

// With no NAME: the main experiment, results in attnmech-out/ unless --out says otherwise.
void main_experiment_defaults(RunOptions *o) {
  if (!o->name.empty()) return;
  o->name = AM_MAIN_TASK;
  if (!o->out.empty()) return;
  o->out = "attnmech-out";
  std::fprintf(o->json_out ? stderr : stdout,
               "attnmech: main experiment (run %s with its defaults); results and plots go to %s/\n", AM_MAIN_TASK,
               o->out.c_str());
}

}  // namespace

int am::cli::stop_signal() { return g_stop_signal; }
void am::cli::note_stop_signal(int sig) {
  if (!g_stop_signal) g_stop_signal = sig;
}

// `ranks`: one rank of a distributed run (cli_ranks.cpp). Its stop signals and failures are agreed on with the other
// ranks at every checkpoint (the handler only notes them), and rank 0 writes after every rank's run has ended.
int am::cli::cmd_run(Args &a, RunRanks *ranks) {
  RunOptions o = parse_run(a);
  const int rank = ranks ? ranks->rank() : 0;
  if (rank > 0) {
    o.quiet = true;
    if (o.name.empty()) o.name = AM_MAIN_TASK;
    o.out.clear();
  } else {
    main_experiment_defaults(&o);
  }
  Host h;
  h.sinks.quiet = o.quiet;
  h.sinks.verbose = o.verbose;
  h.sinks.tty = isatty(STDERR_FILENO) != 0;
  if (ranks) {
    h.checkpoint = [ranks] { return ranks->checkpoint(); };
    ranks->setup(&h);
  }
  h.open();
  h.load(o.plugins, true);
  h.report_load_problems(o.quiet);
  am::sdk::RunSpec spec;  // destroyed after the document (declared first)
  am::sdk::Record doc;
  build_spec(o, &spec);
  am_status st = am_run_validate(h.ctx, h.reg, spec.get());
  if (st != AM_OK) throw_status(h, st);
  if (!o.out.empty() && am_report_check_dir(h.ctx, o.out.c_str()) != AM_OK) throw RuntimeError(h.error(AM_ERR_IO));
  prepare_output_params(o.sets);
  catch_stop_signals(ranks ? nullptr : h.ctx);
  h.sinks.start_piped();
  st = am_run_execute(h.ctx, h.reg, spec.get(), doc.out());
  h.sinks.stop_piped();
  h.sinks.clear_line();
  if (ranks) ranks->ended(!doc || (st < 0 && st != AM_ERR_NOT_CONVERGED && st != AM_CANCELLED));
  if (!doc) throw_status(h, st);
  const std::string failure = st < 0 && st != AM_ERR_NOT_CONVERGED ? h.error(st) : "";
  if (rank > 0) return st == AM_OK ? EXIT_OK : g_stop_signal ? 128 + g_stop_signal : EXIT_RUNTIME;
  const std::string plots_failed = o.out.empty() ? "" : write_out(h, o, doc.get());
  print_results(h, o, doc.get());
  const int code = run_verdict(st, failure, o, ranks ? ranks->stop_reason() : "");
  if (plots_failed.empty()) return code;
  std::fprintf(stderr, "attnmech: error: %s\n", plots_failed.c_str());
  return code ? code : EXIT_RUNTIME;
}

namespace {

// ---------------------------------------------------------------- main

// OpenBLAS starts one thread per core and lets idle threads spin. The problems here are small (Γ is
// P × P with P ~ 100–1000) and the library runs its own parallel loops, so a threaded BLAS mostly burns
// system time; on a busy 2-core machine the main job took 65 s with it and 20 s without. Unless the user
// chose (OPENBLAS_NUM_THREADS / OMP_NUM_THREADS), use one BLAS thread (a BLAS without the control: no-op).
void single_threaded_blas() {
  if (std::getenv("OPENBLAS_NUM_THREADS") || std::getenv("OMP_NUM_THREADS")) return;
  am_blas_threads_set(1);
}

bool g_blas_blocked = false;  // OpenBLAS's threads cannot get their buffers: every exit leaves by _exit (leave)

// Under `ulimit -v` below what OpenBLAS needs, its threads (started when the library loaded) wait forever for their
// buffers: the first BLAS call would spin, and so would the exit, whose OpenBLAS destructor joins them. The message
// ("" when the limit is enough); every command's exit then goes through leave().
std::string address_space_problem() {
  am_context *c = nullptr;
  if (am_context_create(&c, nullptr) != AM_OK) return "";  // the run itself will say what is wrong
  const am_status st = am_address_space_check(c);
  const std::string msg = am_context_last_error(c);
  am_context_destroy(&c);
  g_blas_blocked = st != AM_OK;
  return g_blas_blocked ? msg : "";
}

// main's exit: with OpenBLAS's threads blocked (above), _exit once stdout and stderr are flushed (0.1 s instead of a
// hang; the results were written and synced before, nothing else waits for the exit handlers).
int leave(int code) {
  if (!g_blas_blocked) return code;
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(code);
}

bool wants_help(const std::vector<std::string> &v) {
  for (const auto &a : v) {
    if (a == "--") break;
    if (a == "--help" || a == "-h") return true;
  }
  return false;
}

// One command: its --help, or the command itself.
int dispatch(const std::string &cmd, Args &a) {
  const char *help = command_help(cmd);
  if (!help) {
    if (!cmd.empty() && cmd[0] == '-') throw UsageError("unknown option '" + cmd + "'");
    throw UsageError("unknown command '" + cmd + "' (commands: list, run, help, plot, sweep, figure)");
  }
  if (wants_help(a.v)) {
    std::fputs(help, stdout);
    return EXIT_OK;
  }
  if (cmd == "run" || cmd == "sweep" || cmd == "figure" || cmd == "plot") check_environment(cmd);  // before any work
  if (cmd == "run" || cmd == "sweep" || cmd == "figure") single_threaded_blas();
  const std::string blas = address_space_problem();  // every command: leave() then exits without the hang
  if (cmd == "list") return cmd_list(a);
  if (cmd == "help") return cmd_help(a);
  if (cmd == "plot") return cmd_plot(a);
  if (!blas.empty()) throw RuntimeError(blas);  // before any work (exit 1)
  if (cmd == "sweep") return cmd_sweep(a);
  if (cmd == "figure") return cmd_figure(a);
#if AM_RUN_SCALAPACK
  return cmd_run_ranks(a);
#else
  if (int rank = 0, size = launcher_ranks(&rank); size > 1) return refuse_ranks(rank, size);
  return cmd_run(a, nullptr);
#endif
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fputs(kMainHelp, stderr);
    return EXIT_USAGE;
  }
  const std::string cmd = argv[1];
  if (cmd == "--help" || cmd == "-h") {
    std::fputs(kMainHelp, stdout);
    return EXIT_OK;
  }
  if (cmd == "--version" || cmd == "-V") {
    std::printf("attnmech %s (library %s, plugin ABI %u, sweep: %s, plots: %s)\nscalapack: %s\nsimd: %s\n",
                ATTNMECH_TOOL_VERSION, am_version(), am_abi_version(), kSweepBackends, kPlotFormats, kScalapack,
                am_simd_level());
    return EXIT_OK;
  }
  Args a;
  a.v.assign(argv + 2, argv + argc);
  a.cmd = cmd;
  try {
    return leave(dispatch(cmd, a));
  } catch (const UsageError &e) {
    std::fflush(stdout);
    std::fprintf(stderr, "attnmech: usage error: %s\n(see 'attnmech %s--help')\n", e.what(),
                 e.command.empty() ? "" : (e.command + " ").c_str());
    return leave(EXIT_USAGE);
  } catch (const std::exception &e) {  // RuntimeError and anything else
    std::fflush(stdout);
    std::fprintf(stderr, "attnmech: error: %s\n", e.what());
    return leave(EXIT_RUNTIME);
  }
}
