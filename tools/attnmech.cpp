// attnmech — the command-line tool: list / run / help / plot (docs/cli.md).
// Exit codes: 0 ok, 1 runtime error (including a solver that did not converge), 2 usage error.
#include <attnmech/attnmech.h>
#include <attnmech/report.h>

#include <nlohmann/json.hpp>

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#ifndef AM_MAIN_TASK
#error "AM_MAIN_TASK (the task of the main experiment) comes from the meson option main_task"
#endif

namespace {

using json = nlohmann::ordered_json;
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
    "Statistical mechanics of attention networks: the attention-path kernel renormalisation, with task\n"
    "and estimator plugins.\n"
    "\n"
    "commands:\n"
    "  list             list the plugins (tasks, estimators) and any that failed to load\n"
    "  run [NAME]       run a task (or a task-free estimator); with no NAME: the main experiment\n"
    "                   (`run " AM_MAIN_TASK "`, results and plots in attnmech-out/)\n"
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
    "experiment, `run " AM_MAIN_TASK "` with its defaults, results written to attnmech-out/.\n"
    "\n"
    "options:\n"
    "  --estimator NAME  estimator to use (default: the task's default estimator)\n"
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
    "Re-draw the SVG plots of DIR/results.json into DIR: the plots its plugins declared (the document's\n"
    "`report`; a document written before plugins declared plots gets them from the plugins named in it).\n"
    "With several DIRs: overlay the line plots they share into OUTDIR/compare_<plot>.svg.\n"
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
  return 0;
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

struct SpecPtr {
  am_run_spec *p = nullptr;
  ~SpecPtr() { am_run_spec_destroy(&p); }
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
    const am_param_def &p = *am_plugin_param(d, i);
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
                d->default_estimator && *d->default_estimator ? d->default_estimator : "(none: give --estimator)");
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

// Throws the library's verdict on a run spec: AM_ERR_USAGE → usage error (exit 2), else runtime error.
[[noreturn]] void throw_status(Host &h, am_status st, const std::string &what) {
  std::string msg = what.empty() ? h.error(st) : what + ": " + h.error(st);
  if (st == AM_ERR_USAGE) throw UsageError(msg, "run");
  throw RuntimeError(msg);
}

am_run_spec *build_spec(const RunOptions &o) {
  am_run_spec *spec = nullptr;
  if (am_run_spec_create(&spec) != AM_OK) throw RuntimeError("out of memory");
  am_run_spec_set_task(spec, o.name.c_str());
  am_run_spec_set_estimator(spec, o.estimator.c_str());
  for (const auto &kv : o.sets) am_run_spec_set(spec, kv.first.c_str(), kv.second.c_str());
  if (o.width_given) am_run_spec_set_widths(spec, o.widths.data(), o.widths.size());
  return spec;
}

size_t count_suffix(const std::vector<std::string> &files, const char *suffix) {
  const size_t n = std::strlen(suffix);
  return static_cast<size_t>(std::count_if(files.begin(), files.end(), [&](const std::string &f) {
    return f.size() > n && f.compare(f.size() - n, n, suffix) == 0;
  }));
}

void write_out(Host &h, const RunOptions &o, const am_record *doc) {
  std::vector<std::string> files;
  am_report_write_options wo;
  am_report_write_default_options(&wo);
  wo.on_file = [](void *user, const char *name) { static_cast<std::vector<std::string> *>(user)->push_back(name); };
  wo.user = &files;
  if (am_report_write(h.ctx, doc, o.out.c_str(), &wo) != AM_OK) throw RuntimeError(h.error(AM_ERR_IO));
  if (!o.quiet)
    std::fprintf(stderr, "wrote %zu files to %s/ (results.json, %zu .npy, %zu .svg)\n", files.size(), o.out.c_str(),
                 count_suffix(files, ".npy"), count_suffix(files, ".svg"));
}

am_context *g_run_ctx = nullptr;  // the context a signal cancels

extern "C" void on_stop_signal(int sig) {
  if (g_run_ctx) am_context_cancel(g_run_ctx);
  std::signal(sig, SIG_DFL);  // a second signal ends the process at once
}

int cmd_run(Args &a) {
  RunOptions o = parse_run(a);
  if (o.name.empty()) {
    o.name = AM_MAIN_TASK;
    if (o.out.empty()) {
      o.out = "attnmech-out";
      std::fprintf(o.json_out ? stderr : stdout, "attnmech: main experiment (run %s with its defaults); results and "
                   "plots go to %s/\n", AM_MAIN_TASK, o.out.c_str());
    }
  }
  Host h;
  h.sinks.quiet = o.quiet;
  h.sinks.verbose = o.verbose;
  h.sinks.tty = isatty(STDERR_FILENO) != 0;
  h.open(0);
  h.load(o.plugins);
  SpecPtr spec{build_spec(o)};
  am_status st = am_run_validate(h.ctx, h.reg, spec.p);
  if (st != AM_OK) throw_status(h, st, "");
  if (!o.out.empty() && am_report_check_dir(h.ctx, o.out.c_str()) != AM_OK) throw RuntimeError(h.error(AM_ERR_IO));
  g_run_ctx = h.ctx;
  std::signal(SIGINT, on_stop_signal);
  am_record *doc_p = nullptr;
  st = am_run_execute(h.ctx, h.reg, spec.p, &doc_p);
  RecordPtr doc(doc_p);
  h.sinks.clear_line();
  if (!doc.p) throw_status(h, st, "");
  const std::string failure = st < 0 && st != AM_ERR_NOT_CONVERGED ? h.error(st) : "";
  if (!o.out.empty()) write_out(h, o, doc.p);
  char *text = nullptr;
  const am_status ts = o.json_out ? am_report_json(h.ctx, doc.p, &text) : am_report_summary(h.ctx, doc.p, &text);
  if (ts != AM_OK) throw RuntimeError(h.error(ts));
  std::fputs(text, stdout);
  am_free(text);
  if (!o.json_out && !o.out.empty()) std::printf("\nresults written to %s/\n", o.out.c_str());
  std::fflush(stdout);
  if (st == AM_ERR_USAGE) throw UsageError(failure, "run");
  if (!failure.empty()) {
    std::fprintf(stderr, "attnmech: error: %s\n", failure.c_str());
    return EXIT_RUNTIME;
  }
  if (st == AM_CANCELLED) {
    std::fprintf(stderr, "attnmech: interrupted; partial results written\n");
    return EXIT_RUNTIME;
  }
  if (st == AM_ERR_NOT_CONVERGED) {
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
  // Documents written before the plugins declared their plots (no `report`) get one from the plugins
  // named in them; then the plugins must be found (the registry is loaded only then).
  std::vector<RecordPtr> docs(dirs.size());
  std::unique_ptr<Host> host;
  am_context *ctx = nullptr;
  am_context_create(&ctx, nullptr);
  std::unique_ptr<am_context, void (*)(am_context *)> ctx_owner(ctx, [](am_context *c) { am_context_destroy(&c); });
  for (size_t i = 0; i < dirs.size(); ++i) {
    am_record_destroy(&docs[i].p);
    if (am_report_read(ctx, dirs[i].c_str(), &docs[i].p) != AM_OK) throw RuntimeError(am_context_last_error(ctx));
    if (am_record_get(docs[i].p, "report")) continue;
    if (!host) {
      host.reset(new Host);
      host->open(0);
      host->load({});
    }
    if (am_run_describe(host->ctx, host->reg, docs[i].p) != AM_OK)
      std::fprintf(stderr, "attnmech: warning: %s: cannot describe its plots: %s\n", dirs[i].c_str(),
                   am_context_last_error(host->ctx));
  }
  std::vector<std::string> files;
  const std::string target = out.empty() ? dirs[0] : out;
  if (!out.empty()) {
    std::error_code ec;
    fs::create_directories(out, ec);
    if (ec) throw RuntimeError("cannot create directory " + out + ": " + ec.message());
  }
  auto collect = [](void *user, const char *name) { static_cast<std::vector<std::string> *>(user)->push_back(name); };
  if (docs.size() == 1) {
    if (am_report_plot(ctx, docs[0].p, target.c_str(), collect, &files) != AM_OK)
      throw RuntimeError(am_context_last_error(ctx));
  } else {
    std::vector<std::string> labels;
    std::vector<const char *> label_ptrs;
    std::vector<const am_record *> doc_ptrs;
    for (size_t i = 0; i < docs.size(); ++i) {
      std::string base = fs::path(dirs[i]).lexically_normal().filename().string();
      if (base.empty() || base == ".") base = dirs[i];
      const char *e = nullptr;
      labels.push_back(base + (am_record_get_string(docs[i].p, "estimator", &e) == AM_OK ? " (" + std::string(e) + ")" : ""));
      doc_ptrs.push_back(docs[i].p);
    }
    for (const auto &l : labels) label_ptrs.push_back(l.c_str());
    if (am_report_compare(ctx, doc_ptrs.data(), label_ptrs.data(), docs.size(), target.c_str(), collect, &files) != AM_OK)
      throw RuntimeError(am_context_last_error(ctx));
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
