// attnmech — the command-line tool: list / run / help / plot (docs/cli.md).
// Exit codes: 0 ok, 1 runtime error (including a solver that did not converge), 2 usage error.
#include "plots.hpp"
#include "results.hpp"

#include <attnmech/attnmech.h>

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using amtool::json;
namespace fs = std::filesystem;

// ---------------------------------------------------------------- errors and exit codes

enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

struct UsageError : std::runtime_error {
  std::string command;
  std::string hint;  // replaces "see 'attnmech <command> --help'"
  UsageError(const std::string &msg, std::string cmd = "", std::string h = "")
      : std::runtime_error(msg), command(std::move(cmd)), hint(std::move(h)) {}
};
struct RuntimeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// ---------------------------------------------------------------- help texts

const char *kMainHelp =
    "usage: attnmech <command> [options]\n"
    "\n"
    "Statistical mechanics of attention networks: theory of the attention-path kernel renormalisation,\n"
    "with task and estimator plugins.\n"
    "\n"
    "commands:\n"
    "  list             list the plugins (tasks, estimators) and any that failed to load\n"
    "  run [NAME]       run a task (or a task-free estimator); with no NAME: the main experiment\n"
    "                   (Markov all-paths width scan, results and plots in attnmech-out/)\n"
    "  help NAME        parameters of a plugin (or help on a command)\n"
    "  plot DIR         re-draw the SVG plots from DIR/results.json\n"
    "\n"
    "options:\n"
    "  --help, -h       this help (every command has its own --help)\n"
    "  --version        print the version\n"
    "\n"
    "exit codes: 0 ok, 1 runtime error (e.g. a solver that did not converge), 2 usage error\n";

const char *kListHelp =
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

const char *kRunHelp =
    "usage: attnmech run [NAME] [--estimator NAME] [--set key=value]... [--width N[,N...]]\n"
    "                    [--out DIR] [--json] [--quiet] [--plugin FILE]...\n"
    "\n"
    "Run task NAME (or an estimator that needs no task) and report the results. With no NAME: the main\n"
    "experiment, `run markov` with its defaults, results written to attnmech-out/.\n"
    "\n"
    "options:\n"
    "  --estimator NAME  estimator to use (default: the task's default, usually `theory`)\n"
    "  --set key=value   set a parameter (repeatable; a list value is comma-separated). Host keys every\n"
    "                    run accepts: seed (default 0), threads (0 = all cores), widths (W0,...,WL, when\n"
    "                    the task does not define it). Other keys are looked up in the task's parameter\n"
    "                    table, then the estimator's (see `attnmech help NAME`).\n"
    "  --width N[,N...]  widths to scan; each run sets W_0 = ... = W_L = N (overrides --set widths=...).\n"
    "                    Default: the task's widths_scan list if it has one, else a single run.\n"
    "  --out DIR         write DIR/results.json, .npy arrays (arrays of >= 16 elements) and SVG plots\n"
    "  --json            print results.json on stdout (instead of the tables)\n"
    "  --quiet, -q       no per-run log lines and no progress on stderr\n"
    "  --verbose, -v     also show debug log lines\n"
    "  --plugin FILE     load this plugin module first (repeatable)\n"
    "\n"
    "A run whose solver does not converge still writes its results (marked) and the exit code is 1.\n"
    "Ctrl-C stops after the current step; the results gathered so far are still written.\n";

const char *kHelpHelp =
    "usage: attnmech help NAME [--plugin FILE]...\n"
    "\n"
    "Show a plugin's description and parameter table (name, type, default, range or choices, help),\n"
    "or the help of a command (list, run, help, plot).\n"
    "\n"
    "options:\n"
    "  --plugin FILE    load this plugin module first (repeatable)\n";

const char *kPlotHelp =
    "usage: attnmech plot DIR\n"
    "       attnmech plot DIR1 DIR2 ... --out OUTDIR\n"
    "\n"
    "Re-draw the SVG plots of DIR/results.json into DIR (accuracy vs width, U heat maps, kernels,\n"
    "alignment bars, head scores; replica curves; learned vs true matrices and training curves of the\n"
    "sequence estimators). With several DIRs: overlay them (accuracy vs width, test loss vs epoch) into\n"
    "OUTDIR/compare_*.svg.\n"
    "\n"
    "options:\n"
    "  --out DIR        where the plots go (default: DIR itself; required with several DIRs)\n"
    "  --help           this help\n";

// ---------------------------------------------------------------- small helpers

std::string exe_dir() {
  std::vector<char> buf(PATH_MAX + 1, 0);
  ssize_t n = readlink("/proc/self/exe", buf.data(), PATH_MAX);
  if (n <= 0) return "";
  std::string p(buf.data(), static_cast<size_t>(n));
  size_t slash = p.rfind('/');
  return slash == std::string::npos ? "." : p.substr(0, slash);
}

std::vector<std::string> split(const std::string &s, char sep) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (true) {
    size_t k = s.find(sep, pos);
    out.push_back(s.substr(pos, k == std::string::npos ? std::string::npos : k - pos));
    if (k == std::string::npos) break;
    pos = k + 1;
  }
  return out;
}

std::string trim(const std::string &s) {
  size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

bool parse_u64(const std::string &s, uint64_t *v) {
  if (s.empty() || s[0] == '-' || s[0] == '+') return false;
  errno = 0;
  char *end = nullptr;
  unsigned long long x = std::strtoull(s.c_str(), &end, 10);
  if (errno || *end) return false;
  *v = x;
  return true;
}

const char *kind_name(uint32_t kind) {
  return kind == AM_PLUGIN_TASK ? "task" : kind == AM_PLUGIN_ESTIMATOR ? "estimator" : "?";
}

std::string data_kinds_text(uint32_t mask) {
  std::vector<std::string> k;
  if (mask & AM_DATA_ATTENTION) k.push_back("attention");
  if (mask & AM_DATA_SEQUENCE) k.push_back("sequence");
  if (mask & AM_DATA_NONE) k.push_back("none (runs without a task)");
  std::string s;
  for (size_t i = 0; i < k.size(); ++i) s += (i ? ", " : "") + k[i];
  return s.empty() ? "-" : s;
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
  if (p.type == AM_PARAM_STRING) return "";
  if (p.min > p.max) return "";
  char buf[96];
  std::snprintf(buf, sizeof buf, "[%g, %g]", p.min, p.max);
  return buf;
}

// ---------------------------------------------------------------- the host: context, registry, signals

volatile std::sig_atomic_t g_interrupted = 0;

extern "C" void on_sigint(int) {
  g_interrupted = 1;
  std::signal(SIGINT, SIG_DFL);  // a second Ctrl-C ends the process at once
}

struct Sinks {
  bool quiet = false, verbose = false, tty = false;
  bool line_open = false;   // a progress line is on screen (tty)
  std::string prefix;       // "[run 2/7 N=30] "
  std::chrono::steady_clock::time_point last = {};
  void clear_line() {
    if (line_open) {
      std::fputs("\r\033[K", stderr);
      line_open = false;
    }
  }
};

extern "C" void log_sink(void *user, am_log_level level, const char *msg) {
  auto *s = static_cast<Sinks *>(user);
  if (level == AM_LOG_DEBUG && !s->verbose) return;
  if (level < AM_LOG_WARN && s->quiet) return;
  s->clear_line();
  const char *tag = level == AM_LOG_ERROR ? "error: " : level == AM_LOG_WARN ? "warning: " : "";
  std::fprintf(stderr, "%s%s%s\n", s->prefix.c_str(), tag, msg ? msg : "");
}

extern "C" int progress_sink(void *user, double done, double total, const char *label) {
  auto *s = static_cast<Sinks *>(user);
  if (s->tty && !s->quiet) {
    auto now = std::chrono::steady_clock::now();
    if (now - s->last > std::chrono::milliseconds(80) || done >= total) {
      s->last = now;
      char buf[64] = "";
      if (total > 0 && total <= 1e6 && done == std::floor(done) && total == std::floor(total))
        std::snprintf(buf, sizeof buf, " %.0f/%.0f", done, total);
      else if (total > 0)
        std::snprintf(buf, sizeof buf, " %3.0f%%", 100.0 * std::min(1.0, done / total));
      std::fprintf(stderr, "\r\033[K%s%s%s", s->prefix.c_str(), label ? label : "", buf);
      std::fflush(stderr);
      s->line_open = true;
    }
  }
  return g_interrupted ? 1 : 0;
}

struct Host {
  am_context *ctx = nullptr;
  am_registry *reg = nullptr;
  Sinks sinks;
  ~Host() {
    am_registry_destroy(&reg);
    am_context_destroy(&ctx);
  }
  void open(int threads) {
    am_context_settings cs;
    am_context_default_settings(&cs);
    cs.log = log_sink;
    cs.log_user = &sinks;
    cs.progress = progress_sink;
    cs.progress_user = &sinks;
    cs.threads = threads;
    if (am_context_create(&ctx, &cs) != AM_OK) throw RuntimeError("cannot create the library context");
  }
  void load(const std::vector<std::string> &plugin_files) {
    if (am_registry_create(&reg) != AM_OK) throw RuntimeError("cannot create the plugin registry");
    for (const auto &f : plugin_files) am_registry_load_file(ctx, reg, f.c_str());  // failures go to the report
    std::string dir = exe_dir();
    am_registry_discover(ctx, reg, dir.empty() ? nullptr : dir.c_str());
  }
  std::string error(am_status st) const {
    const char *m = ctx ? am_context_last_error(ctx) : "";
    return m && *m ? std::string(m) : std::string(am_status_string(st));
  }
};

// Throws on a library error: AM_ERR_USAGE → usage error (exit 2), anything else → runtime error (exit 1).
void check(Host &h, am_status st, const std::string &what) {
  if (st >= 0) return;
  std::string msg = what.empty() ? h.error(st) : what + ": " + h.error(st);
  if (st == AM_ERR_USAGE) throw UsageError(msg, "run");
  throw RuntimeError(msg);
}

struct RecordPtr {
  am_record *p = nullptr;
  RecordPtr() {
    if (am_record_create(&p) != AM_OK) throw RuntimeError("out of memory");
  }
  explicit RecordPtr(am_record *q) : p(q) {}
  ~RecordPtr() { am_record_destroy(&p); }
  RecordPtr(const RecordPtr &) = delete;
  RecordPtr &operator=(const RecordPtr &) = delete;
};

struct Instance {
  const am_plugin_desc *d = nullptr;
  void *inst = nullptr;
  ~Instance() {
    if (d && inst && d->destroy) d->destroy(inst);
  }
};

// ---------------------------------------------------------------- argument parsing

struct Args {
  std::vector<std::string> v;
  size_t i = 0;
  std::string cmd;
  bool done() const { return i >= v.size(); }
  // "--opt VALUE" or "--opt=VALUE"; returns true if v[i] is this option.
  bool take(const char *name, std::string *value) {
    const std::string &a = v[i];
    size_t n = std::strlen(name);
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
  bool flag(std::initializer_list<const char *> names) {
    for (const char *n : names)
      if (v[i] == n) {
        ++i;
        return true;
      }
    return false;
  }
};

bool wants_help(const std::vector<std::string> &v) {
  for (const auto &a : v) {
    if (a == "--") break;
    if (a == "--help" || a == "-h") return true;
  }
  return false;
}

// ---------------------------------------------------------------- list

// Where discovery looked, one "<dir> (<source>, <what it held>)" per search dir.
std::vector<std::string> searched_dirs(const am_registry *r) {
  std::vector<std::string> out;
  for (size_t i = 0; i < am_registry_search_dir_count(r); ++i) {
    const char *dir = am_registry_search_dir_at(r, i);
    const char *src = am_registry_search_dir_source(r, i);
    const size_t np = am_registry_search_dir_plugins(r, i);
    std::error_code ec;
    std::string what = np > 0 ? std::to_string(np) + (np == 1 ? " plugin" : " plugins")
                              : (std::filesystem::is_directory(dir, ec) ? "no plugins" : "missing");
    out.push_back(std::string(dir) + " (" + (src ? src : "") + ", " + what + ")");
  }
  return out;
}

bool no_dir_held_a_plugin(const am_registry *r) {
  for (size_t i = 0; i < am_registry_search_dir_count(r); ++i)
    if (am_registry_search_dir_plugins(r, i) > 0) return false;
  return true;
}

// list: warn on stderr when no search dir held a plugin (a broken or moved install); exit 1 when no
// plugin was found at all (not even through --plugin), so a script notices.
int list_verdict(const am_registry *r) {
  if (!no_dir_held_a_plugin(r)) return EXIT_OK;
  std::string where;
  for (const auto &l : searched_dirs(r)) where += "\n  " + l;
  std::fprintf(stderr, "attnmech: warning: no plugins found in the plugin directories; searched:%s\n"
               "  (set AM_PLUGIN_PATH to a directory of plugin modules, or pass --plugin FILE)\n",
               where.empty() ? " (none)" : where.c_str());
  return am_registry_count(r) > 0 ? EXIT_OK : EXIT_RUNTIME;
}

int cmd_list(Args &a) {
  std::vector<std::string> plugins;
  bool as_json = false;
  while (!a.done()) {
    std::string val;
    if (a.take("--plugin", &val))
      plugins.push_back(val);
    else if (a.flag({"--json"}))
      as_json = true;
    else if (a.v[a.i].size() > 1 && a.v[a.i][0] == '-')
      throw UsageError("unknown option '" + a.v[a.i] + "'", "list");
    else
      throw UsageError("unexpected argument '" + a.v[a.i] + "'", "list");
  }
  Host h;
  h.open(0);
  h.load(plugins);
  size_t n = am_registry_count(h.reg);
  if (as_json) {
    json out = json::object();
    out["plugins"] = json::array();
    for (size_t i = 0; i < n; ++i) {
      const am_plugin_desc *d = am_registry_at(h.reg, i);
      out["plugins"].push_back({{"name", d->name},
                                {"kind", kind_name(d->kind)},
                                {"version", d->version ? d->version : ""},
                                {"description", d->description ? d->description : ""},
                                {"data_kinds", data_kinds_text(d->data_kinds)},
                                {"path", am_registry_path_at(h.reg, i) ? am_registry_path_at(h.reg, i) : ""}});
    }
    out["load_report"] = json::array();
    for (size_t i = 0; i < am_registry_report_count(h.reg); ++i)
      out["load_report"].push_back(am_registry_report_at(h.reg, i));
    out["search_dirs"] = json::array();
    for (size_t i = 0; i < am_registry_search_dir_count(h.reg); ++i)
      out["search_dirs"].push_back({{"path", am_registry_search_dir_at(h.reg, i)},
                                    {"source", am_registry_search_dir_source(h.reg, i)},
                                    {"plugins", am_registry_search_dir_plugins(h.reg, i)}});
    std::printf("%s\n", out.dump(2).c_str());
    return list_verdict(h.reg);
  }
  for (uint32_t kind : {static_cast<uint32_t>(AM_PLUGIN_TASK), static_cast<uint32_t>(AM_PLUGIN_ESTIMATOR)}) {
    std::vector<const am_plugin_desc *> ds;
    size_t wn = 4, wv = 7;
    for (size_t i = 0; i < n; ++i) {
      const am_plugin_desc *d = am_registry_at(h.reg, i);
      if (d->kind != kind) continue;
      ds.push_back(d);
      wn = std::max(wn, std::strlen(d->name));
      wv = std::max(wv, std::strlen(d->version ? d->version : ""));
    }
    std::printf("%s:\n", kind == AM_PLUGIN_TASK ? "tasks" : "estimators");
    if (ds.empty()) std::printf("  (none)\n");
    for (const auto *d : ds) {
      std::string extra;
      if (kind == AM_PLUGIN_ESTIMATOR) extra = "  [data: " + data_kinds_text(d->data_kinds) + "]";
      std::printf("  %-*s  %-*s  %s  %s%s\n", static_cast<int>(wn), d->name, static_cast<int>(wv),
                  d->version ? d->version : "", kind_name(d->kind), d->description ? d->description : "",
                  extra.c_str());
    }
  }
  size_t nr = am_registry_report_count(h.reg);
  if (nr > 0) {
    std::printf("load problems:\n");
    for (size_t i = 0; i < nr; ++i) std::printf("  %s\n", am_registry_report_at(h.reg, i));
  }
  std::printf("searched:\n");
  for (const auto &l : searched_dirs(h.reg)) std::printf("  %s\n", l.c_str());
  return list_verdict(h.reg);
}

// ---------------------------------------------------------------- help NAME

void print_param_table(const am_plugin_desc *d) {
  struct Row {
    std::string name, type, def, range, help;
  };
  std::vector<Row> rows;
  for (uint32_t i = 0; i < d->n_params; ++i) {
    const am_param_def &p = d->params[i];
    rows.push_back({p.name ? p.name : "", type_name(p.type), p.default_value ? p.default_value : "", range_text(p),
                    p.help ? p.help : ""});
  }
  if (rows.empty()) {
    std::printf("  (no parameters)\n");
    return;
  }
  size_t w[4] = {4, 4, 7, 6};
  for (const auto &r : rows) {
    w[0] = std::max(w[0], r.name.size());
    w[1] = std::max(w[1], r.type.size());
    w[2] = std::max(w[2], std::min<size_t>(r.def.size(), 24));
    w[3] = std::max(w[3], std::min<size_t>(r.range.size(), 28));
  }
  std::printf("  %-*s  %-*s  %-*s  %-*s  %s\n", (int)w[0], "name", (int)w[1], "type", (int)w[2], "default", (int)w[3],
              "range", "help");
  for (const auto &r : rows)
    std::printf("  %-*s  %-*s  %-*s  %-*s  %s\n", (int)w[0], r.name.c_str(), (int)w[1], r.type.c_str(), (int)w[2],
                r.def.empty() ? "-" : r.def.c_str(), (int)w[3], r.range.empty() ? "-" : r.range.c_str(),
                r.help.c_str());
}

int cmd_help(Args &a) {
  std::vector<std::string> plugins;
  std::string name;
  while (!a.done()) {
    std::string val;
    if (a.take("--plugin", &val))
      plugins.push_back(val);
    else if (a.v[a.i].size() > 1 && a.v[a.i][0] == '-')
      throw UsageError("unknown option '" + a.v[a.i] + "'", "help");
    else if (name.empty())
      name = a.v[a.i++];
    else
      throw UsageError("unexpected argument '" + a.v[a.i] + "'", "help");
  }
  if (name.empty()) {
    std::fputs(kMainHelp, stdout);
    return EXIT_OK;
  }
  static const std::map<std::string, const char *> cmds = {
      {"list", kListHelp}, {"run", kRunHelp}, {"help", kHelpHelp}, {"plot", kPlotHelp}};
  Host h;
  h.open(0);
  h.load(plugins);
  const am_plugin_desc *d = am_registry_find(h.reg, name.c_str(), 0);
  if (!d) {
    auto c = cmds.find(name);
    if (c != cmds.end()) {
      std::fputs(c->second, stdout);
      return EXIT_OK;
    }
    std::string known;
    for (size_t i = 0; i < am_registry_count(h.reg); ++i) known += std::string(i ? ", " : "") + am_registry_at(h.reg, i)->name;
    throw UsageError("unknown plugin or command '" + name + "' (plugins: " + (known.empty() ? "none found" : known) +
                         "; commands: list, run, help, plot)",
                     "help");
  }
  std::printf("%s %s %s\n", kind_name(d->kind), d->name, d->version ? d->version : "");
  std::printf("  %s\n", d->description ? d->description : "");
  if (d->kind == AM_PLUGIN_TASK) {
    std::printf("  makes %s data; default estimator: %s\n", data_kinds_text(d->data_kinds).c_str(),
                d->default_estimator ? d->default_estimator : "theory");
    std::printf("  run: attnmech run %s [--set key=value]...\n", d->name);
  } else {
    std::printf("  accepts data: %s\n", data_kinds_text(d->data_kinds).c_str());
    if (d->data_kinds & AM_DATA_NONE) std::printf("  run: attnmech run %s [--set key=value]...\n", d->name);
    else std::printf("  run: attnmech run TASK --estimator %s [--set key=value]...\n", d->name);
  }
  const char *path = nullptr;
  for (size_t i = 0; i < am_registry_count(h.reg); ++i)
    if (am_registry_at(h.reg, i) == d) path = am_registry_path_at(h.reg, i);
  if (path) std::printf("  module: %s\n", path);
  std::printf("\nparameters (--set key=value):\n");
  print_param_table(d);
  std::printf("\nhost keys (every run): seed (uint, default 0), threads (int >= 0, 0 = all cores)%s\n",
              d->kind == AM_PLUGIN_TASK || !(d->data_kinds & AM_DATA_NONE) ? ", widths (W0,...,WL)" : "");
  return EXIT_OK;
}

// ---------------------------------------------------------------- run

struct RunOptions {
  std::string name;
  std::string estimator;
  std::vector<std::pair<std::string, std::string>> sets;
  std::vector<double> widths;
  bool width_given = false;
  std::string out;
  bool json_out = false, quiet = false, verbose = false;
  std::vector<std::string> plugins;
};

std::vector<double> parse_widths(const std::string &s) {
  std::vector<double> out;
  for (const auto &part : split(s, ',')) {
    std::string t = trim(part);
    uint64_t v = 0;
    if (!parse_u64(t, &v) || v == 0 || v > 100000000ull)
      throw UsageError("bad --width '" + s + "': expected positive whole numbers separated by commas (e.g. 10,100,1000)",
                       "run");
    out.push_back(static_cast<double>(v));
  }
  return out;
}

RunOptions parse_run(Args &a) {
  RunOptions o;
  while (!a.done()) {
    std::string val;
    if (a.take("--estimator", &val)) {
      o.estimator = val;
    } else if (a.take("--set", &val) || a.take("-s", &val)) {
      size_t eq = val.find('=');
      std::string key = eq == std::string::npos ? "" : trim(val.substr(0, eq));
      if (eq == std::string::npos || key.empty())
        throw UsageError("malformed --set '" + val + "': expected key=value", "run");
      o.sets.emplace_back(key, val.substr(eq + 1));
    } else if (a.take("--width", &val) || a.take("--widths", &val)) {
      auto w = parse_widths(val);
      o.widths.insert(o.widths.end(), w.begin(), w.end());
      o.width_given = true;
    } else if (a.take("--out", &val) || a.take("-o", &val)) {
      if (val.empty()) throw UsageError("--out needs a directory", "run");
      o.out = val;
    } else if (a.take("--plugin", &val)) {
      o.plugins.push_back(val);
    } else if (a.flag({"--json"})) {
      o.json_out = true;
    } else if (a.flag({"--quiet", "-q"})) {
      o.quiet = true;
    } else if (a.flag({"--verbose", "-v"})) {
      o.verbose = true;
    } else if (a.v[a.i].size() > 1 && a.v[a.i][0] == '-') {
      throw UsageError("unknown option '" + a.v[a.i] + "'", "run");
    } else if (o.name.empty()) {
      o.name = a.v[a.i++];
    } else {
      throw UsageError("unexpected argument '" + a.v[a.i] + "' (NAME is already '" + o.name + "')", "run");
    }
  }
  return o;
}

std::string names_of(const am_registry *r, uint32_t kind, uint32_t need_data) {
  std::string s;
  for (size_t i = 0; i < am_registry_count(r); ++i) {
    const am_plugin_desc *d = am_registry_at(r, i);
    if (d->kind != kind || (need_data && !(d->data_kinds & need_data))) continue;
    s += (s.empty() ? "" : ", ") + std::string(d->name);
  }
  return s.empty() ? "none" : s;
}

std::string param_names(const am_plugin_desc *d) {
  std::string s;
  if (!d) return s;
  s = std::string("; ") + kind_name(d->kind) + " " + d->name + ":";
  for (uint32_t i = 0; i < d->n_params; ++i) s += std::string(i ? ", " : " ") + d->params[i].name;
  if (d->n_params == 0) s += " (none)";
  return s;
}

bool has_param(const am_plugin_desc *d, const std::string &key) {
  if (!d) return false;
  for (uint32_t i = 0; i < d->n_params; ++i)
    if (key == d->params[i].name) return true;
  return false;
}

// Parse the settings against a plugin's table; `used` marks the keys taken.
void parse_params(Host &h, const am_plugin_desc *d, const std::vector<std::pair<std::string, std::string>> &kv,
                  std::vector<int> &used, am_record *params) {
  std::vector<const char *> keys, vals;
  std::vector<size_t> idx;
  for (size_t i = 0; i < kv.size(); ++i)
    if (!used[i]) {
      keys.push_back(kv[i].first.c_str());
      vals.push_back(kv[i].second.c_str());
      idx.push_back(i);
    }
  std::vector<int> consumed(keys.size() + 1, 0);
  am_status st = am_params_parse(h.ctx, d, keys.size(), keys.data(), vals.data(), consumed.data(), params);
  if (st < 0) {
    std::string msg = h.error(st);
    if (st == AM_ERR_USAGE)
      throw UsageError(msg, "run", std::string("see 'attnmech help ") + d->name + "' for its parameters");
    throw RuntimeError(std::string(d->name) + ": cannot parse parameters: " + msg);
  }
  for (size_t k = 0; k < idx.size(); ++k)
    if (consumed[k]) used[idx[k]] = 1;
}

std::string run_status_name(am_status st) {
  switch (st) {
    case AM_OK: return "ok";
    case AM_CONVERGED_ROUNDOFF: return "ok";
    case AM_CANCELLED: return "cancelled";
    case AM_ERR_NOT_CONVERGED: return "not_converged";
    default: return "error";
  }
}

// Set dataset["widths"] to `n_layers + 1` copies of N (a list of numbers).
void set_widths(Host &h, am_record *ds, const std::vector<double> &widths) {
  am_record_remove(ds, "widths");
  am_record *l = am_record_list(ds, "widths");
  if (!l) throw RuntimeError("cannot set the dataset's widths");
  for (double w : widths) check(h, am_record_append_number(l, w), "cannot set widths");
}

size_t n_widths(const am_record *ds) {
  size_t n = 0;
  if (am_record_get_vector(ds, "widths", nullptr, 0, &n) == AM_OK && n > 0) return n;
  const am_record *heads = am_record_get(ds, "heads");
  if (heads) {
    size_t L = am_record_size(heads);
    if (L == 0 && am_record_get_vector(ds, "heads", nullptr, 0, &L) != AM_OK) L = 0;
    if (L > 0) return L + 1;
  }
  return 0;
}

int cmd_run(Args &a) {
  auto t_start = std::chrono::steady_clock::now();
  RunOptions o = parse_run(a);
  bool main_job = o.name.empty();
  if (main_job) {
    o.name = "markov";
    if (o.out.empty()) {
      o.out = "attnmech-out";
      std::fprintf(o.json_out ? stderr : stdout,
                   "attnmech: main experiment (run markov, all paths, width scan); results and plots go to %s/\n",
                   o.out.c_str());
    }
  }

  // Host keys.
  uint64_t seed = 0;
  int threads = 0;
  bool have_host_widths = false;
  std::vector<double> host_widths;
  std::vector<int> used(o.sets.size(), 0);
  // Later --set of the same key wins: mark earlier duplicates as used.
  for (size_t i = 0; i < o.sets.size(); ++i)
    for (size_t j = i + 1; j < o.sets.size(); ++j)
      if (o.sets[i].first == o.sets[j].first) used[i] = 1;
  for (size_t i = 0; i < o.sets.size(); ++i) {
    if (used[i]) continue;
    const auto &kv = o.sets[i];
    if (kv.first == "seed") {
      if (!parse_u64(trim(kv.second), &seed))
        throw UsageError("bad value '" + kv.second + "' for seed: expected a whole number in [0, 2^64-1]", "run");
      used[i] = 1;
    } else if (kv.first == "threads") {
      uint64_t t = 0;
      if (!parse_u64(trim(kv.second), &t) || t > 4096)
        throw UsageError("bad value '" + kv.second + "' for threads: expected a whole number in [0, 4096]", "run");
      threads = static_cast<int>(t);
      used[i] = 1;
    }
  }

  Host h;
  h.sinks.quiet = o.quiet;
  h.sinks.verbose = o.verbose;
  h.sinks.tty = isatty(STDERR_FILENO) != 0;
  h.open(threads);
  h.load(o.plugins);

  // NAME: a task, or else an estimator that runs without a task.
  const am_plugin_desc *task = am_registry_find(h.reg, o.name.c_str(), AM_PLUGIN_TASK);
  const am_plugin_desc *est = nullptr;
  if (!task) {
    const am_plugin_desc *e = am_registry_find(h.reg, o.name.c_str(), AM_PLUGIN_ESTIMATOR);
    if (e && (e->data_kinds & AM_DATA_NONE)) {
      if (!o.estimator.empty() && o.estimator != o.name)
        throw UsageError("'" + o.name + "' is an estimator that runs without a task; --estimator does not apply", "run");
      est = e;
    } else if (e) {
      throw UsageError("'" + o.name + "' is an estimator that needs a task (accepts " +
                           data_kinds_text(e->data_kinds) + " data): attnmech run TASK --estimator " + o.name,
                       "run");
    } else {
      std::string msg = "unknown task '" + o.name + "' (tasks: " + names_of(h.reg, AM_PLUGIN_TASK, 0) +
                        "; estimators without a task: " + names_of(h.reg, AM_PLUGIN_ESTIMATOR, AM_DATA_NONE) + ")";
      if (am_registry_count(h.reg) == 0) {
        std::string where;
        for (const auto &l : searched_dirs(h.reg)) where += (where.empty() ? "" : ", ") + l;
        msg += "; no plugins were found at all (searched: " + (where.empty() ? std::string("nothing") : where) +
               "); set AM_PLUGIN_PATH or see 'attnmech list'";
      } else if (am_registry_report_count(h.reg) > 0) {
        msg += "; some plugins failed to load, see 'attnmech list'";
      }
      throw UsageError(msg, "run");
    }
  } else {
    std::string en = !o.estimator.empty()
                         ? o.estimator
                         : (task->default_estimator && *task->default_estimator ? task->default_estimator : "theory");
    est = am_registry_find(h.reg, en.c_str(), AM_PLUGIN_ESTIMATOR);
    if (!est)
      throw UsageError("unknown estimator '" + en + "' (estimators: " + names_of(h.reg, AM_PLUGIN_ESTIMATOR, 0) + ")",
                       "run");
    if (!(est->data_kinds & task->data_kinds))
      throw UsageError("estimator '" + en + "' does not accept the " + data_kinds_text(task->data_kinds) +
                           " data that task '" + task->name + "' makes (it accepts: " +
                           data_kinds_text(est->data_kinds) + ")",
                       "run");
  }
  if (!task && o.width_given) throw UsageError("--width needs a task ('" + o.name + "' runs without one)", "run");

  // Parameters: the task's table first, then the estimator's; `widths` is a host key unless the task has it.
  RecordPtr task_params, est_params;
  if (task) parse_params(h, task, o.sets, used, task_params.p);
  for (size_t i = 0; i < o.sets.size(); ++i) {
    if (used[i] || o.sets[i].first != "widths") continue;
    if (has_param(est, "widths")) continue;
    if (!task) throw UsageError("'widths' needs a task ('" + o.name + "' runs without one)", "run");
    for (const auto &part : split(o.sets[i].second, ',')) {
      uint64_t v = 0;
      if (!parse_u64(trim(part), &v) || v == 0)
        throw UsageError("bad value '" + o.sets[i].second +
                             "' for widths: expected positive whole numbers W0,...,WL separated by commas",
                         "run");
      host_widths.push_back(static_cast<double>(v));
    }
    have_host_widths = true;
    used[i] = 1;
  }
  parse_params(h, est, o.sets, used, est_params.p);
  for (size_t i = 0; i < o.sets.size(); ++i)
    if (!used[i])
      throw UsageError("unknown key '" + o.sets[i].first + "' (valid keys: host: seed, threads" +
                           (task ? std::string(", widths") : std::string()) + param_names(task) + param_names(est) +
                           ")",
                       "run");
  bool user_widths = have_host_widths;
  for (const auto &kv : o.sets)
    if (kv.first == "widths") user_widths = true;

  std::signal(SIGINT, on_sigint);

  // The task: one dataset for all runs.
  am_host task_host{}, est_host{};
  task_host.struct_size = est_host.struct_size = sizeof(am_host);
  task_host.ctx = est_host.ctx = h.ctx;
  task_host.seed = est_host.seed = seed;
  task_host.threads = est_host.threads = threads;
  task_host.params = task_params.p;
  est_host.params = est_params.p;
  am_rng_init(&task_host.rng, seed, 1);

  RecordPtr dataset, extras;
  bool failed = false, not_converged = false, cancelled = false;
  std::string failure;
  if (task) {
    Instance ti;
    ti.d = task;
    h.sinks.prefix = std::string("[") + task->name + "] ";
    check(h, task->create(&task_host, &ti.inst), std::string("task '") + task->name + "'");
    if (!task->make_dataset) throw RuntimeError(std::string("task '") + task->name + "' has no make_dataset");
    am_status st = task->make_dataset(ti.inst, dataset.p, extras.p);
    h.sinks.clear_line();
    if (st == AM_CANCELLED || g_interrupted) {
      cancelled = true;
    } else {
      check(h, st, std::string("task '") + task->name + "'");
      // Attention (hence ξ) does not depend on the widths: compute it once for the whole width scan.
      const char *kind = nullptr;
      if (am_record_get_string(dataset.p, "kind", &kind) == AM_OK && std::string(kind) == AM_DATASET_ATTENTION)
        check(h, am_dataset_cache_xi(h.ctx, dataset.p), std::string("task '") + task->name + "' (path inputs)");
    }
  }

  // The width scan.
  std::vector<std::vector<double>> scan;  // per run: the widths list to set (empty = leave the dataset's)
  if (task && !cancelled) {
    size_t nw = n_widths(dataset.p);
    if (o.width_given) {
      if (nw == 0) throw UsageError("--width: the dataset of task '" + std::string(task->name) + "' has no widths", "run");
      for (double w : o.widths) scan.push_back(std::vector<double>(nw, w));
    } else if (have_host_widths) {
      if (nw && host_widths.size() != nw)
        throw UsageError("bad value for widths: expected " + std::to_string(nw) + " numbers W0,...,WL, got " +
                             std::to_string(host_widths.size()),
                         "run");
      scan.push_back(host_widths);
    } else {
      std::vector<double> ws;
      if (!user_widths) {
        size_t n = 0;
        if (am_record_get_vector(dataset.p, "widths_scan", nullptr, 0, &n) == AM_OK && n > 0) {
          ws.resize(n);
          am_record_get_vector(dataset.p, "widths_scan", ws.data(), n, &n);
        }
      }
      if (!ws.empty() && nw > 0)
        for (double w : ws) scan.push_back(std::vector<double>(nw, w));
      else
        scan.emplace_back();
    }
  } else if (!task) {
    scan.emplace_back();
  }

  json runs = json::array();
  std::vector<RecordPtr *> run_records;  // kept for .npy export
  std::vector<std::unique_ptr<RecordPtr>> owned;
  const size_t nruns = scan.size();
  for (size_t r = 0; r < nruns && !cancelled; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    // The estimator sees the task's dataset with this run's widths. Estimators only read it (const), so
    // the widths are set in place instead of cloning the record (X_test alone is 57 MB for the main job).
    if (task && !scan[r].empty()) set_widths(h, dataset.p, scan[r]);
    char pre[96];
    if (!scan[r].empty())
      std::snprintf(pre, sizeof pre, "[run %zu/%zu N=%g] ", r + 1, nruns, *std::max_element(scan[r].begin(), scan[r].end()));
    else
      std::snprintf(pre, sizeof pre, "[run %zu/%zu] ", r + 1, nruns);
    h.sinks.prefix = pre;
    owned.emplace_back(new RecordPtr());
    am_record *run = owned.back()->p;
    am_rng_init(&est_host.rng, seed, 2);
    Instance ei;
    ei.d = est;
    am_status st = est->create(&est_host, &ei.inst);
    std::string err;
    if (st >= 0) {
      st = est->estimate(ei.inst, task ? dataset.p : nullptr, run);
    }
    if (st < 0 && st != AM_ERR_NOT_CONVERGED) err = h.error(st);
    // A run interrupted by Ctrl-C is partial even if the estimator carried on after its solver stopped
    // (e.g. predictions from the last iterate): mark it cancelled.
    if (st >= 0 && st != AM_CANCELLED) {
      const char *ss = nullptr;
      const am_record *sv = am_record_get(run, "solver");
      bool solver_cancelled = sv && am_record_get_string(sv, "status", &ss) == AM_OK && ss &&
                              std::strcmp(ss, "cancelled") == 0;
      if (g_interrupted || solver_cancelled) st = AM_CANCELLED;
    }
    h.sinks.clear_line();
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    am_record_set_string(run, "run_status", run_status_name(st).c_str());
    if (!err.empty()) am_record_set_string(run, "error", err.c_str());
    am_record_set_number(run, "wall_time_s", secs);
    json jr = amtool::record_to_json(h.ctx, run);
    if (st == AM_CANCELLED || g_interrupted) cancelled = true;
    if (st == AM_ERR_NOT_CONVERGED) not_converged = true;
    if (st < 0 && st != AM_ERR_NOT_CONVERGED) {
      failed = true;
      failure = std::string(est->name) + ": " + err;
      if (st == AM_ERR_USAGE) {
        h.sinks.prefix.clear();
        throw UsageError(failure, "run");
      }
    }
    if (!o.quiet) {
      h.sinks.prefix.clear();
      std::string line = std::string(pre) + run_status_name(st);
      char buf[256];
      if (amtool::is_attention_run(jr)) {
        std::snprintf(buf, sizeof buf, "  accuracy %.4f (GP %.4f)  S_code %.6f  iterations %.0f", 
                      amtool::jnumber(amtool::jpath(jr, "test.accuracy")),
                      amtool::jnumber(amtool::jpath(jr, "gp.test.accuracy")), amtool::jnumber(amtool::jpath(jr, "action")),
                      amtool::jnumber(amtool::jpath(jr, "solver.iterations")));
        line += buf;
      }
      std::snprintf(buf, sizeof buf, "  (%.2f s)", secs);
      line += buf;
      if (!err.empty()) line += "  " + err;
      std::fprintf(stderr, "%s\n", line.c_str());
    }
    runs.push_back(std::move(jr));
    run_records.push_back(owned.back().get());
    if (failed) break;
  }
  h.sinks.prefix.clear();

  // The results document.
  json doc = json::object();
  doc["attnmech_version"] = am_version();
  doc["schema_version"] = 1;
  doc["task"] = task ? json(task->name) : json(nullptr);
  doc["estimator"] = est->name;
  doc["seed"] = seed;
  doc["threads"] = threads;
  doc["params"] = {{"task", task ? amtool::record_to_json(h.ctx, task_params.p) : json::object()},
                   {"estimator", amtool::record_to_json(h.ctx, est_params.p)}};
  doc["task_extras"] = task ? amtool::record_to_json(h.ctx, extras.p) : json::object();
  doc["runs"] = std::move(runs);
  doc["status"] = failed ? "error" : cancelled ? "cancelled" : not_converged ? "not_converged" : "ok";
  doc["wall_time_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();

  if (!o.out.empty()) {
    std::error_code ec;
    fs::create_directories(o.out, ec);
    if (ec) throw RuntimeError("cannot create directory " + o.out + ": " + ec.message());
    {
      std::ofstream f(o.out + "/results.json", std::ios::trunc);
      f << amtool::dump_results(doc);
      if (!f) throw RuntimeError("cannot write " + o.out + "/results.json");
    }
    std::vector<std::string> files{"results.json"};
    std::string err;
    bool ok = amtool::export_npy(h.ctx, extras.p, o.out, "task_extras", 16, &files, &err);
    for (size_t r = 0; ok && r < run_records.size(); ++r)
      ok = amtool::export_npy(h.ctx, run_records[r]->p, o.out, "runs." + std::to_string(r), 16, &files, &err);
    if (ok) ok = amtool::write_plots(doc, o.out, &files, &err);
    if (!ok) throw RuntimeError(err);
    if (!o.quiet)
      std::fprintf(stderr, "wrote %zu files to %s/ (results.json, %zu .npy, %zu .svg)\n", files.size(), o.out.c_str(),
                   static_cast<size_t>(std::count_if(files.begin(), files.end(), [](const std::string &f) {
                     return f.size() > 4 && f.compare(f.size() - 4, 4, ".npy") == 0;
                   })),
                   static_cast<size_t>(std::count_if(files.begin(), files.end(), [](const std::string &f) {
                     return f.size() > 4 && f.compare(f.size() - 4, 4, ".svg") == 0;
                   })));
  }
  if (o.json_out) {
    std::fputs(amtool::dump_results(doc).c_str(), stdout);
  } else {
    amtool::print_summary(stdout, doc);
    if (!o.out.empty()) std::printf("\nresults written to %s/\n", o.out.c_str());
  }
  std::fflush(stdout);
  if (failed) {
    std::fprintf(stderr, "attnmech: error: %s\n", failure.c_str());
    return EXIT_RUNTIME;
  }
  if (cancelled) {
    std::fprintf(stderr, "attnmech: interrupted; partial results written\n");
    return EXIT_RUNTIME;
  }
  if (not_converged) {
    std::fprintf(stderr, "attnmech: the solver did not converge in at least one run (marked in the results)\n");
    return EXIT_RUNTIME;
  }
  return EXIT_OK;
}

// ---------------------------------------------------------------- plot DIR

int cmd_plot(Args &a) {
  std::vector<std::string> dirs;
  std::string out;
  while (!a.done()) {
    std::string val;
    if (a.take("--out", &val) || a.take("-o", &val)) {
      out = val;
      continue;
    }
    if (a.v[a.i].size() > 1 && a.v[a.i][0] == '-') throw UsageError("unknown option '" + a.v[a.i] + "'", "plot");
    dirs.push_back(a.v[a.i++]);
  }
  if (dirs.empty()) throw UsageError("missing DIR (a directory holding results.json)", "plot");
  if (dirs.size() > 1 && out.empty()) throw UsageError("comparing several DIRs needs --out DIR for the plots", "plot");
  std::vector<json> docs;
  for (const auto &dir : dirs) {
    std::ifstream f(dir + "/results.json");
    if (!f) throw RuntimeError("cannot read " + dir + "/results.json");
    try {
      docs.push_back(json::parse(f));
    } catch (const std::exception &e) {
      throw RuntimeError(dir + "/results.json is not valid JSON: " + e.what());
    }
  }
  std::vector<std::string> files;
  std::string err;
  std::string target = out.empty() ? dirs[0] : out;
  if (!out.empty()) {
    std::error_code ec;
    fs::create_directories(out, ec);
    if (ec) throw RuntimeError("cannot create directory " + out + ": " + ec.message());
  }
  if (docs.size() == 1) {
    if (!amtool::write_plots(docs[0], target, &files, &err)) throw RuntimeError(err);
  } else {
    std::vector<std::string> labels;
    for (size_t i = 0; i < docs.size(); ++i) {
      std::string base = fs::path(dirs[i]).lexically_normal().filename().string();
      if (base.empty() || base == ".") base = dirs[i];
      const json &e = docs[i]["estimator"];
      labels.push_back(base + (e.is_string() ? " (" + e.get<std::string>() + ")" : ""));
    }
    if (!amtool::write_comparison(docs, labels, target, &files, &err)) throw RuntimeError(err);
  }
  for (const auto &fl : files) std::printf("%s/%s\n", target.c_str(), fl.c_str());
  if (files.empty()) std::printf("no plots apply to %s\n", docs.size() == 1 ? (dirs[0] + "/results.json").c_str() : "these results");
  return EXIT_OK;
}

// OpenBLAS starts one thread per core and lets idle threads spin. The problems here are small (Γ is
// P × P with P ~ 100–1000) and the library runs its own parallel loops, so a threaded BLAS mostly burns
// system time; on a busy 2-core machine the main job took 65 s with it and 20 s without. Unless the user
// chose (OPENBLAS_NUM_THREADS / OMP_NUM_THREADS), use one BLAS thread. Looked up at run time so the tool
// does not link BLAS itself; a BLAS without this entry point is left alone.
void single_threaded_blas() {
  if (std::getenv("OPENBLAS_NUM_THREADS") || std::getenv("OMP_NUM_THREADS")) return;
  using set_fn = void (*)(int);
  if (void *f = dlsym(RTLD_DEFAULT, "openblas_set_num_threads")) reinterpret_cast<set_fn>(f)(1);
}

const char *command_help(const std::string &cmd) {
  if (cmd == "list") return kListHelp;
  if (cmd == "run") return kRunHelp;
  if (cmd == "help") return kHelpHelp;
  if (cmd == "plot") return kPlotHelp;
  return kMainHelp;
}

}  // namespace

int main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string cmd;
  try {
    if (args.empty()) {
      std::fputs(kMainHelp, stderr);
      return EXIT_USAGE;
    }
    cmd = args[0];
    if (cmd == "--help" || cmd == "-h") {
      std::fputs(kMainHelp, stdout);
      return EXIT_OK;
    }
    if (cmd == "--version" || cmd == "-V") {
      std::printf("attnmech %s (library %s, plugin ABI %u)\n", ATTNMECH_TOOL_VERSION, am_version(), am_abi_version());
      return EXIT_OK;
    }
    if (cmd != "list" && cmd != "run" && cmd != "help" && cmd != "plot") {
      if (!cmd.empty() && cmd[0] == '-') throw UsageError("unknown option '" + cmd + "'");
      throw UsageError("unknown command '" + cmd + "' (commands: list, run, help, plot)");
    }
    Args a;
    a.v.assign(args.begin() + 1, args.end());
    a.cmd = cmd;
    if (wants_help(a.v)) {
      std::fputs(command_help(cmd), stdout);
      return EXIT_OK;
    }
    if (cmd == "list") return cmd_list(a);
    if (cmd == "run") {
      single_threaded_blas();
      return cmd_run(a);
    }
    if (cmd == "help") return cmd_help(a);
    return cmd_plot(a);
  } catch (const UsageError &e) {
    std::fflush(stdout);
    std::fprintf(stderr, "attnmech: usage error: %s\n", e.what());
    std::string c = e.command.empty() ? "" : e.command + " ";
    if (!e.hint.empty())
      std::fprintf(stderr, "(%s)\n", e.hint.c_str());
    else
      std::fprintf(stderr, "(see 'attnmech %s--help')\n", c.c_str());
    return EXIT_USAGE;
  } catch (const RuntimeError &e) {
    std::fflush(stdout);
    std::fprintf(stderr, "attnmech: error: %s\n", e.what());
    return EXIT_RUNTIME;
  } catch (const std::exception &e) {
    std::fflush(stdout);
    std::fprintf(stderr, "attnmech: error: %s\n", e.what());
    return EXIT_RUNTIME;
  }
}
