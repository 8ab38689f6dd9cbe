// attnmech CLI — the host: one library context (log and progress to stderr) and the plugin registry
// (--plugin files first, then discovery: AM_PLUGIN_PATH, the build tree beside this executable, the
// install dir beside the library); output paths named by plugin parameters, made ready before a run computes.
#include "cli.hpp"

#include <attnmech/report.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <csignal>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

namespace am::cli {

namespace {

// The directory of this executable ("" when /proc is not there): discovery's build-tree entry.
std::string exe_dir() {
  std::vector<char> buf(PATH_MAX + 1, 0);
  const ssize_t n = readlink("/proc/self/exe", buf.data(), PATH_MAX);
  if (n <= 0) return "";
  const std::string p(buf.data(), static_cast<size_t>(n));
  const size_t slash = p.rfind('/');
  return slash == std::string::npos ? "." : p.substr(0, slash);
}

// Creates `dir` and its parents (a "" or "." directory is there already); the reason when it cannot.
std::string make_directory(const std::string &dir) {
  namespace fs = std::filesystem;
  if (dir.empty() || dir == ".") return "";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return ec.message();
  if (!fs::is_directory(dir, ec)) return "it exists and is not a directory";
  if (access(dir.c_str(), W_OK | X_OK) != 0) return "it is not writable";
  return "";
}

}  // namespace

namespace {

// A whole string as a finite number ("" or trailing text: false); *rest gets what follows the number when given.
bool number_text(const char *v, double *x, std::string *rest = nullptr) {
  char *end = nullptr;
  *x = std::strtod(v, &end);
  if (end == v || !std::isfinite(*x)) return false;
  if (rest) *rest = end;
  return rest || *end == '\0';
}

// Why the value of environment variable `name` is refused, or "" (unset and empty values are always fine).
std::string environment_problem(const char *name, const char *v) {
  const std::string var = std::string(name) + "='" + std::string(v).substr(0, 60) + "': ";
  double x = 0;
  std::string rest;
  if (std::strcmp(name, "AM_MEMORY_LIMIT") == 0) {  // libcore/src/context.cpp reads it
    const bool ok = number_text(v, &x, &rest) && x > 0 &&
                    (rest.empty() || (rest.size() == 1 && std::strchr("KMGTkmgt", rest[0])));
    return ok ? "" : var + "expected a positive number of bytes, or one with K, M, G or T (powers of 1024), e.g. 64G";
  }
  if (std::strcmp(name, "AM_PROGRESS_SECONDS") == 0)  // cli_progress.cpp: piped_progress_seconds
    return number_text(v, &x) && x >= 0.01 && x <= 1e6 ? "" : var + "expected seconds from 0.01 to 1e6 (default 30)";
  if (std::strcmp(name, "AM_SWEEP_PROGRESS_SECONDS") == 0)  // tools/sweep/runner.cpp: progress_every
    return number_text(v, &x) && x >= 0 ? "" : var + "expected seconds >= 0 (0: every report; default 30)";
  if (std::strcmp(name, "AM_PLUGIN_SHADOW") == 0)  // libcore/src/registry.cpp
    return std::strcmp(v, "0") == 0 || std::strcmp(v, "1") == 0 ? "" : var + "expected 1 (allow) or 0";
  if (std::strcmp(name, "AM_SCALAPACK_BLOCK") == 0)  // Host::open: the context's scalapack_block
    return number_text(v, &x) && x == std::floor(x) && x >= 8 && x <= 1024 ? ""
                                                                           : var + "expected a whole number from 8 to 1024 (default 64)";
  return "";
}

}  // namespace

void check_environment(const std::string &command) {
  for (const char *name :
       {"AM_MEMORY_LIMIT", "AM_PROGRESS_SECONDS", "AM_SWEEP_PROGRESS_SECONDS", "AM_PLUGIN_SHADOW", "AM_SCALAPACK_BLOCK"}) {
    const char *v = std::getenv(name);
    const std::string why = v && *v ? environment_problem(name, v) : "";
    if (!why.empty()) throw UsageError(why + "; nothing was computed", command);
  }
  am_context *c = nullptr;  // AM_PLOT_FORMATS: the report library's own rule
  if (am_context_create(&c, nullptr) != AM_OK) return;
  const am_status st = am_report_check_settings(c);
  const std::string why = am_context_last_error(c);
  am_context_destroy(&c);
  if (st != AM_OK) throw UsageError(why + "; nothing was computed", command);
}

std::string written_files_text(const std::vector<std::string> &files, size_t *svg) {
  auto count = [&](const std::string &ext) {
    return static_cast<size_t>(std::count_if(files.begin(), files.end(), [&](const std::string &f) {
      return f.size() > ext.size() && f.compare(f.size() - ext.size(), ext.size(), ext) == 0;
    }));
  };
  const size_t arrays = count(".npy");
  std::string text = "results.json, " + std::to_string(arrays) + " .npy";
  size_t known = 1 + arrays;  // results.json, .npy and plot files; the rest are the report's text files
  for (const char *ext : {".svg", ".pdf", ".png"})
    if (const size_t n = count(ext)) text += ", " + std::to_string(n) + " " + ext, known += n;
  *svg = count(".svg");
  return files.size() > known ? text + ", " + std::to_string(files.size() - known) + " text" : text;
}

uint32_t plots_option(const std::string &value, const std::string &command) {
  am_context *c = nullptr;
  if (am_context_create(&c, nullptr) != AM_OK) throw RuntimeError("cannot create the library context");
  uint32_t formats = 0;
  const am_status st = am_report_parse_formats(c, value.c_str(), &formats);
  const std::string why = am_context_last_error(c);
  am_context_destroy(&c);
  if (st != AM_OK) throw UsageError("--plots: " + why, command);
  return formats;
}

bool is_output_param(const std::string &key) {
  return key.rfind("out_", 0) == 0 || key.rfind("export_", 0) == 0;
}

void prepare_output_params(const std::vector<std::pair<std::string, std::string>> &sets) {
  for (const auto &kv : sets) {
    if (!is_output_param(kv.first) || kv.second.empty()) continue;
    // out_*: a prefix "data/seqs" → files data/seqs_train.npy, …: its directory must exist.
    std::string dir = kv.second;
    if (kv.first.rfind("out_", 0) == 0) {
      if (dir.back() == '/') throw RuntimeError("--set " + kv.first + "=" + kv.second +
                                                ": expected a file prefix such as DIR/NAME, got a directory");
      const size_t slash = dir.rfind('/');
      dir = slash == std::string::npos ? "" : slash == 0 ? "/" : dir.substr(0, slash);
    }
    prepare_out_dir("--set " + kv.first + "=" + kv.second, dir);
  }
}

void prepare_out_dir(const std::string &what, const std::string &dir) {
  const std::string why = make_directory(dir);
  if (!why.empty())
    throw RuntimeError(what + ": cannot create the directory " + dir + " (" + why + "); nothing was computed");
}

Host::~Host() {
  am_registry_destroy(&reg);
  am_context_destroy(&ctx);
}

namespace {

// The context's callbacks as the host wraps them: the sinks draw and print, then a checkpoint decides (a distributed
// run's stop agreement), and while plugins load the last log line is kept for the crash handler below.
struct Hooked {
  am_progress_fn progress;
  void *progress_user;
  am_convergence_fn convergence;
  void *convergence_user;
  am_log_fn log;
  void *log_user;
  const std::function<int()> *checkpoint;
  int checked(int stop) const { return (checkpoint && *checkpoint && (*checkpoint)()) || stop; }
};

extern "C" int hooked_progress(void *user, double done, double total, const char *label) {
  const auto *h = static_cast<const Hooked *>(user);
  return h->checked(h->progress ? h->progress(h->progress_user, done, total, label) : 0);
}

// An open-ended loop's report (Newton, L-BFGS: am_context_convergence) is a checkpoint too.
extern "C" int hooked_convergence(void *user, double iter, double measure, double target, const char *label) {
  const auto *h = static_cast<const Hooked *>(user);
  return h->checked(h->convergence ? h->convergence(h->convergence_user, iter, measure, target, label) : 0);
}

// A plugin that crashes in its constructors or am_plugin_entry took every command down with a bare "Segmentation
// fault". While plugins load, the registry says which module it is about to load (a debug log line, kept here), and
// a handler of the crash signals writes that line (write(2) only: async-signal-safe) before the signal takes its
// course: the previous disposition (the default, or a sanitizer's handler) is restored and the signal raised again.
char g_load_step[1024];
volatile std::sig_atomic_t g_load_step_len = 0;
volatile std::sig_atomic_t g_loading = 0;
constexpr int kCrashSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
struct sigaction g_before[sizeof kCrashSignals / sizeof kCrashSignals[0]];

extern "C" void hooked_log(void *user, am_log_level level, const char *msg) {
  const auto *h = static_cast<const Hooked *>(user);
  if (g_loading && msg) {
    const size_t n = std::min(std::strlen(msg), sizeof g_load_step);
    g_load_step_len = 0;
    std::memcpy(g_load_step, msg, n);
    g_load_step_len = static_cast<std::sig_atomic_t>(n);
  }
  if (h->log) h->log(h->log_user, level, msg);
}

void say(const char *s, size_t n) {
  while (n > 0) {
    const ssize_t k = ::write(STDERR_FILENO, s, n);
    if (k <= 0) return;
    s += k, n -= static_cast<size_t>(k);
  }
}

extern "C" void on_load_crash(int sig) {
  const char *name = sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : sig == SIGILL ? "SIGILL"
                     : sig == SIGFPE ? "SIGFPE" : "SIGABRT";
  static const char a[] = "\nattnmech: ", b[] = " while loading plugins, in: ",
                    c[] = "\n(remove that module from the plugin search path -- AM_PLUGIN_PATH, --plugin, the plugin "
                          "directories -- or fix it)\n";
  say(a, sizeof a - 1);
  say(name, std::strlen(name));
  say(b, sizeof b - 1);
  const size_t n = static_cast<size_t>(g_load_step_len);
  if (n > 0) say(g_load_step, n);
  else say("(before the first module)", 25);
  say(c, sizeof c - 1);
  for (size_t i = 0; i < sizeof kCrashSignals / sizeof kCrashSignals[0]; ++i)
    if (kCrashSignals[i] == sig) ::sigaction(sig, &g_before[i], nullptr);
  ::raise(sig);  // pending until this handler returns; a fault re-executed meets the restored disposition too
}

// The handlers above for as long as it lives (Host::load).
struct LoadCrashGuard {
  LoadCrashGuard() {
    g_load_step_len = 0;
    g_loading = 1;
    struct sigaction sa {};
    sa.sa_handler = on_load_crash;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof kCrashSignals / sizeof kCrashSignals[0]; ++i)
      ::sigaction(kCrashSignals[i], &sa, &g_before[i]);
  }
  ~LoadCrashGuard() {
    for (size_t i = 0; i < sizeof kCrashSignals / sizeof kCrashSignals[0]; ++i)
      ::sigaction(kCrashSignals[i], &g_before[i], nullptr);
    g_loading = 0;
  }
  LoadCrashGuard(const LoadCrashGuard &) = delete;
  LoadCrashGuard &operator=(const LoadCrashGuard &) = delete;
};

}  // namespace

void Host::open() {
  am_context_settings cs;
  am_context_default_settings(&cs);
  attach_sinks(&cs, &sinks);
  // `mpirun -np K attnmech run` may spread one solve over the ranks (cs.distribute stays AM_DISTRIBUTE_AUTO; the
  // sweep's points never do: tools/sweep/runner.cpp). The block size of that layout: the CLI maps the variable
  // AM_SCALAPACK_BLOCK (checked by check_environment) onto the context's setting; the library reads no variable.
  if (const char *b = std::getenv("AM_SCALAPACK_BLOCK"); b && *b) cs.scalapack_block = std::atoi(b);
  cs.data_part = data_part;
  cs.data_parts = data_parts;
  cs.threads = threads;
  auto hook = std::make_shared<Hooked>(Hooked{cs.progress, cs.progress_user, cs.convergence, cs.convergence_user, cs.log,
                                              cs.log_user, &checkpoint});
  cs.progress = hooked_progress;
  cs.progress_user = hook.get();
  if (cs.convergence) {  // without a sink of its own the library reports to the progress sink (a checkpoint already)
    cs.convergence = hooked_convergence;
    cs.convergence_user = hook.get();
  }
  cs.log = hooked_log;
  cs.log_user = hook.get();
  hook_ = hook;
  if (am_context_create(&ctx, &cs) != AM_OK) throw RuntimeError("cannot create the library context");
  // AM_SIMD (a testing override) that names no kernel set this CPU runs is ignored by the library: say so, once.
  const char *force = std::getenv("AM_SIMD");
  const char *level = am_simd_level();
  if (force && *force && std::strncmp(level, force, std::strlen(force)) != 0)
    std::fprintf(stderr, "attnmech: warning: AM_SIMD=%s names no SIMD kernel set this CPU runs (scalar, sse2, avx2, "
                 "avx512); using %s\n", force, level);
}

void Host::load(const std::vector<std::string> &plugin_files, bool strict) {
  if (am_registry_create(&reg) != AM_OK) throw RuntimeError("cannot create the plugin registry");
  const LoadCrashGuard guard;  // a module that crashes while it loads is named
  for (const auto &f : plugin_files)
    if (am_registry_load_file(ctx, reg, f.c_str()) != AM_OK && strict)
      throw RuntimeError("--plugin " + error(AM_ERR_PLUGIN));
  const std::string dir = exe_dir();
  am_registry_discover(ctx, reg, dir.empty() ? nullptr : dir.c_str());
}

void Host::report_load_problems(bool quiet) const {
  if (quiet) return;
  for (const std::string &line : am::sdk::registry_report(reg))
    std::fprintf(stderr, "attnmech: warning: plugin %s\n", line.c_str());
}

std::string Host::error(am_status st) const {
  const char *m = ctx ? am_context_last_error(ctx) : "";
  return m && *m ? std::string(m) : std::string(am_status_string(st));
}

int launcher_ranks(int *rank) {
  const char *const pairs[][2] = {{"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"}, {"PMI_SIZE", "PMI_RANK"}};
  for (const auto &p : pairs)
    if (const char *n = std::getenv(p[0])) {
      const char *r = std::getenv(p[1]);
      *rank = r ? std::atoi(r) : 0;
      return std::max(1, std::atoi(n));
    }
  *rank = 0;
  return 1;
}

int refuse_ranks(int rank, int size) {
  if (rank > 0) return EXIT_USAGE;  // rank 0 says why
  throw UsageError("this attnmech was built without ScaLAPACK: under mpirun or srun each of the " +
                       std::to_string(size) + " ranks would run the whole problem and write the same results; run "
                       "`attnmech run` as one process, or build with -Dscalapack=enabled (libscalapack-openmpi-dev) "
                       "to spread one solve over the ranks",
                   "run");
}

}  // namespace am::cli
