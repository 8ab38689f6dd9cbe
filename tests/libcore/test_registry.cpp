// The plugin registry (plugin.h): load checks in order, one report line per failure, discovery,
// the example plugin of docs/writing-a-plugin.md end to end, and the build tree's own plugins.
#include <doctest/doctest.h>

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "attnmech/attnmech.h"
#include "attnmech/host.hpp"

namespace {

const std::string kDir = AM_FIXTURE_DIR;
std::string fx(const char *name) { return kDir + "/" + name; }

// ABI 2's one-value getters, written over registry.h's *_info getters, so the assertions below read as before.
size_t reg_count(const am_registry *r) { return am::sdk::registry_summary(r).plugins; }
am_plugin_info plugin_at(const am_registry *r, size_t i) {
  am_plugin_info p{};
  p.struct_size = sizeof p;
  am_registry_plugin_info(r, i, &p);
  return p;
}
const am_plugin_desc *reg_at(const am_registry *r, size_t i) { return plugin_at(r, i).desc; }
const char *reg_path_at(const am_registry *r, size_t i) { return plugin_at(r, i).path; }
size_t reg_report_count(const am_registry *r) { return am::sdk::registry_summary(r).report_lines; }
am_search_dir_info dir_at(const am_registry *r, size_t i) {
  am_search_dir_info d{};
  d.struct_size = sizeof d;
  am_registry_search_dir_info(r, i, &d);
  return d;
}
size_t reg_search_dir_count(const am_registry *r) { return am::sdk::registry_summary(r).search_dirs; }
const char *reg_search_dir_at(const am_registry *r, size_t i) { return dir_at(r, i).path; }
const char *reg_search_dir_source(const am_registry *r, size_t i) { return dir_at(r, i).source; }
size_t reg_search_dir_plugins(const am_registry *r, size_t i) { return dir_at(r, i).plugins; }
const char *reg_install_dir() { return am::sdk::registry_summary(nullptr).install_dir; }

struct env {
  am_context *ctx = nullptr;
  am_registry *reg = nullptr;
  env() {
    REQUIRE(am_context_create(&ctx, nullptr) == AM_OK);
    REQUIRE(am_registry_create(&reg) == AM_OK);
  }
  ~env() {
    am_registry_destroy(&reg);
    am_context_destroy(&ctx);
  }
  std::vector<std::string> report() const {
    std::vector<std::string> v;
    for (size_t i = 0; i < reg_report_count(reg); ++i) v.push_back(am_registry_report_line(reg, i));
    return v;
  }
};

bool starts_with(const std::string &s, const std::string &p) { return s.compare(0, p.size(), p) == 0; }
bool contains(const std::string &s, const std::string &p) { return s.find(p) != std::string::npos; }

std::string slurp(const std::string &p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct progress_state {
  int calls = 0;
  int cancel_at = -1;
};
int progress_fn(void *u, double, double, const char *) {
  auto *s = static_cast<progress_state *>(u);
  return ++s->calls == s->cancel_at;
}

}  // namespace

TEST_CASE("the good example loads; lookups by name and kind") {
  env e;
  CHECK(am_registry_load_file(e.ctx, e.reg, fx("am-example.so").c_str()) == AM_OK);
  REQUIRE(reg_count(e.reg) == 1);
  CHECK(reg_report_count(e.reg) == 0);
  const am_plugin_desc *d = am_registry_find(e.reg, "example", 0);
  REQUIRE(d != nullptr);
  CHECK(d == reg_at(e.reg, 0));
  CHECK(am_registry_find(e.reg, "example", AM_PLUGIN_ESTIMATOR) == d);
  CHECK(am_registry_find(e.reg, "example", AM_PLUGIN_TASK) == nullptr);
  CHECK(am_registry_find(e.reg, "nope", 0) == nullptr);
  CHECK(std::string(reg_path_at(e.reg, 0)) == fx("am-example.so"));
  CHECK(reg_at(e.reg, 1) == nullptr);
  CHECK(d->n_params == 3);
  CHECK(std::string(d->params[0].name) == "n");
  // the same file again: nothing new, no report line
  CHECK(am_registry_load_file(e.ctx, e.reg, fx("am-example.so").c_str()) == AM_OK);
  CHECK(reg_count(e.reg) == 1);
  CHECK(reg_report_count(e.reg) == 0);
}

TEST_CASE("registry info getters: growable outputs, out-of-range index refused, NULL registry") {
  env e;
  REQUIRE(am_registry_load_file(e.ctx, e.reg, fx("am-example.so").c_str()) == AM_OK);
  am_plugin_info p{};
  p.struct_size = sizeof p;
  CHECK(am_registry_plugin_info(e.reg, 0, &p) == AM_OK);
  CHECK(p.struct_size == sizeof p);
  CHECK(std::string(p.desc->name) == "example");
  // An older caller whose struct ends before `path` gets only the bytes it has: path stays untouched.
  struct {
    am_plugin_info info;
    char guard;
  } older{};
  older.info.struct_size = offsetof(am_plugin_info, path);
  older.info.path = "untouched";
  CHECK(am_registry_plugin_info(e.reg, 0, &older.info) == AM_OK);
  CHECK(older.info.struct_size == offsetof(am_plugin_info, path));
  CHECK(older.info.desc == p.desc);
  CHECK(std::string(older.info.path) == "untouched");
  p.struct_size = sizeof p;
  CHECK(am_registry_plugin_info(e.reg, 1, &p) == AM_ERR_INVALID_ARGUMENT);
  CHECK(p.desc == nullptr);
  p.struct_size = 2;  // below the end of struct_size itself
  CHECK(am_registry_plugin_info(e.reg, 0, &p) == AM_ERR_INVALID_ARGUMENT);
  CHECK(am_registry_plugin_info(e.reg, 0, nullptr) == AM_ERR_INVALID_ARGUMENT);
  am_search_dir_info d{};
  d.struct_size = sizeof d;
  CHECK(am_registry_search_dir_info(e.reg, 0, &d) == AM_ERR_INVALID_ARGUMENT);  // load_file looks in no dir
  am_registry_summary s{};
  s.struct_size = sizeof s;
  CHECK(am_registry_info(e.reg, &s) == AM_OK);
  CHECK(s.plugins == 1);
  CHECK(s.search_dirs == 0);
  CHECK(s.report_lines == 0);
  CHECK(am_registry_info(nullptr, &s) == AM_OK);
  CHECK(s.plugins == 0);
  CHECK(contains(s.install_dir, "attnmech-plugins-" + std::to_string(AM_ABI_VERSION)));
  CHECK(am_registry_report_line(e.reg, 0) == nullptr);
  CHECK(am_registry_info(e.reg, nullptr) == AM_ERR_INVALID_ARGUMENT);
}

TEST_CASE("every failure gives one report line '<path>: <reason>' and no plugin code but the entry runs") {
  unsetenv("AM_TEST_FIXTURE_CODE_RAN");
  env e;
  REQUIRE(am_registry_load_file(e.ctx, e.reg, fx("am-example.so").c_str()) == AM_OK);
  struct bad {
    const char *file;
    am_status code;
    std::string reason;
  };
  const bad cases[] = {
      {"am-wrong-abi.so", AM_ERR_ABI,
       "built for ABI 7, this attnmech has ABI " + std::to_string(AM_ABI_VERSION)},
      {"am-no-entry.so", AM_ERR_PLUGIN, "no entry symbol 'am_plugin_entry'"},
      {"am-zz-duplicate.so", AM_ERR_PLUGIN,
       "duplicate plugin name 'example' (already loaded from " + fx("am-example.so") + ")"},
      {"am-small-struct.so", AM_ERR_PLUGIN, "invalid descriptor: struct_size 16 is smaller than"},
      {"am-no-estimate.so", AM_ERR_PLUGIN, "invalid descriptor: estimator without estimate"},
      {"am-bad-default.so", AM_ERR_PLUGIN, "invalid descriptor: default of parameter 'k': '50' is out of range [1, 10]"},
      {"am-garbage.so", AM_ERR_PLUGIN, "cannot open: "},
      {"missing.so", AM_ERR_PLUGIN, "cannot open: "},
  };
  size_t k = 0;
  for (const auto &c : cases) {
    CAPTURE(c.file);
    const std::string path = fx(c.file);
    CHECK(am_registry_load_file(e.ctx, e.reg, path.c_str()) == c.code);
    REQUIRE(reg_report_count(e.reg) == ++k);
    const std::string line = am_registry_report_line(e.reg, k - 1);
    CHECK(starts_with(line, path + ": " + c.reason));
    CHECK(std::string(am_context_last_error(e.ctx)) == line);
  }
  CHECK(contains(e.report()[7], "No such file"));  // dlerror text of the missing file
  CHECK(reg_count(e.reg) == 1);             // the first "example" still wins
  CHECK(std::string(am_registry_find(e.reg, "example", 0)->description) ==
        "mean and variance of draws from a normal distribution");
  CHECK(std::getenv("AM_TEST_FIXTURE_CODE_RAN") == nullptr);
  CHECK(am_registry_report_line(e.reg, 99) == nullptr);
}

TEST_CASE("scan_dir: modules in the dir and one level below, sorted, failures reported, scanning continues") {
  unsetenv("AM_TEST_FIXTURE_CODE_RAN");
  env e;
  // The fixtures live one level below the test's build dir.
  const std::string parent = kDir.substr(0, kDir.rfind('/'));
  CHECK(am_registry_scan_dir(e.ctx, e.reg, parent.c_str()) == AM_OK);
  CHECK(reg_count(e.reg) == 1);
  CHECK(std::string(am_registry_find(e.reg, "example", 0)->version) == "1.0");  // am-example.so sorts first
  const std::vector<std::string> rep = e.report();
  const char *order[] = {"am-bad-default.so", "am-garbage.so",   "am-no-entry.so",
                         "am-no-estimate.so", "am-small-struct.so", "am-wrong-abi.so", "am-zz-duplicate.so"};
  REQUIRE(rep.size() == 7);
  for (size_t i = 0; i < 7; ++i) CHECK(starts_with(rep[i], fx(order[i]) + ": "));
  CHECK(std::getenv("AM_TEST_FIXTURE_CODE_RAN") == nullptr);
  // scanning again adds nothing
  CHECK(am_registry_scan_dir(e.ctx, e.reg, kDir.c_str()) == AM_OK);
  CHECK(reg_report_count(e.reg) == 7);
  CHECK(reg_count(e.reg) == 1);
  CHECK(am_registry_scan_dir(e.ctx, e.reg, "/nonexistent-am-dir") == AM_ERR_IO);
  CHECK(e.report().back() == "/nonexistent-am-dir: cannot open directory: No such file or directory");
}

TEST_CASE("discover: AM_PLUGIN_PATH entries (empty ignored, missing reported, relative ignored), each dir once") {
  const char *saved = std::getenv("AM_PLUGIN_PATH");
  const std::string saved_value = saved ? saved : "";
  {
    env e;
    const std::string path = "::" + kDir + "::/nonexistent-am-plugins:" + kDir + "/";
    setenv("AM_PLUGIN_PATH", path.c_str(), 1);
    CHECK(am_registry_discover(e.ctx, e.reg, nullptr) == AM_OK);
    CHECK(reg_count(e.reg) == 1);
    const auto rep = e.report();
    CHECK(rep.size() == 8);  // 7 broken fixtures once + the missing dir
    size_t missing = 0;
    for (const auto &l : rep) missing += l == "/nonexistent-am-plugins: cannot open directory: No such file or directory";
    CHECK(missing == 1);
  }
  {
    // exe_dir/../plugins: a build tree layout; a missing implicit location is silent
    env e;
    setenv("AM_PLUGIN_PATH", "", 1);
    const std::string exe_dir = kDir;  // exe_dir/../plugins = the fixtures' parent/plugins: does not exist
    CHECK(am_registry_discover(e.ctx, e.reg, exe_dir.c_str()) == AM_OK);
    for (const auto &l : e.report()) CHECK(!starts_with(l, kDir));
  }
  {
    // A relative entry is ignored with a report line (issue 37 item 8: it loaded from the current directory): here
    // the fixtures' own directory, named from its parent, loads nothing.
    env e;
    const std::string parent = kDir.substr(0, kDir.rfind('/')), base = kDir.substr(kDir.rfind('/') + 1);
    char cwd[4096];
    REQUIRE(getcwd(cwd, sizeof cwd) != nullptr);
    REQUIRE(chdir(parent.c_str()) == 0);
    setenv("AM_PLUGIN_PATH", (base + ":./" + base).c_str(), 1);
    CHECK(am_registry_discover(e.ctx, e.reg, nullptr) == AM_OK);
    REQUIRE(chdir(cwd) == 0);
    CHECK(reg_count(e.reg) == 0);
    const auto rep = e.report();
    REQUIRE(rep.size() >= 2);
    CHECK(rep[0] == base + ": ignored: a relative AM_PLUGIN_PATH entry would load from the current directory; give "
                           "an absolute path (e.g. $PWD/" + base + ")");
    CHECK(starts_with(rep[1], "./" + base + ": ignored: a relative AM_PLUGIN_PATH entry"));
  }
  if (saved) setenv("AM_PLUGIN_PATH", saved_value.c_str(), 1);
  else unsetenv("AM_PLUGIN_PATH");
  CHECK(contains(reg_install_dir(), "attnmech-plugins-" + std::to_string(AM_ABI_VERSION)));
}

TEST_CASE("discover records every directory it searched, where it came from and what it held") {
  const char *saved = std::getenv("AM_PLUGIN_PATH");
  const std::string saved_value = saved ? saved : "";
  {
    env e;
    setenv("AM_PLUGIN_PATH", (kDir + ":/nonexistent-am-plugins:" + kDir + "/").c_str(), 1);
    CHECK(am_registry_discover(e.ctx, e.reg, "/nonexistent-am-exe/bin") == AM_OK);
    // kDir once (named twice), the missing dir, the install dir next to the library; no build tree: the
    // executable's dir has none beside it (an installed CLI), so none is listed (not even as missing)
    REQUIRE(reg_search_dir_count(e.reg) == 3);
    CHECK(std::string(reg_search_dir_at(e.reg, 0)) == kDir);
    CHECK(std::string(reg_search_dir_source(e.reg, 0)) == "AM_PLUGIN_PATH");
    CHECK(reg_search_dir_plugins(e.reg, 0) == 1);  // the example; the broken fixtures do not count
    CHECK(std::string(reg_search_dir_at(e.reg, 1)) == "/nonexistent-am-plugins");
    CHECK(reg_search_dir_plugins(e.reg, 1) == 0);
    CHECK(std::string(reg_search_dir_at(e.reg, 2)) == reg_install_dir());
    CHECK(std::string(reg_search_dir_source(e.reg, 2)) == "install dir");
    CHECK(reg_search_dir_at(e.reg, 3) == nullptr);
    CHECK(reg_search_dir_source(e.reg, 3) == nullptr);
    CHECK(reg_search_dir_plugins(e.reg, 3) == 0);
  }
  {
    env e;  // am_registry_scan_dir is recorded too
    CHECK(am_registry_scan_dir(e.ctx, e.reg, kDir.c_str()) == AM_OK);
    REQUIRE(reg_search_dir_count(e.reg) == 1);
    CHECK(std::string(reg_search_dir_source(e.reg, 0)) == "scan");
    CHECK(reg_search_dir_plugins(e.reg, 0) == 1);
  }
  CHECK(reg_search_dir_count(nullptr) == 0);
  CHECK(reg_search_dir_at(nullptr, 0) == nullptr);
  // The install dir is found next to the loaded library (an absolute path ending in the ABI-named dir).
  const std::string inst = reg_install_dir();
  CHECK(starts_with(inst, "/"));
  CHECK(inst.size() > 18);
  CHECK(contains(inst, "/attnmech-plugins-" + std::to_string(AM_ABI_VERSION)));
  if (saved) setenv("AM_PLUGIN_PATH", saved_value.c_str(), 1);
  else unsetenv("AM_PLUGIN_PATH");
}

TEST_CASE("a third-party module never silently shadows a built-in; AM_PLUGIN_SHADOW=1 opts in, loudly") {
  const char *saved = std::getenv("AM_PLUGIN_PATH");
  const std::string saved_value = saved ? saved : "";
  // <tmp>/bin is the executable's dir, so <tmp>/plugins is a build tree holding the built-in 'example';
  // <tmp>/third holds another module named 'example' (a copy at another path), found first via AM_PLUGIN_PATH.
  char tmpl[] = "/tmp/am_shadow_XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::string t = tmpl, builtin = t + "/bin/../plugins/am-example.so", third = t + "/third/am-example.so";
  REQUIRE(std::system(("mkdir -p " + t + "/bin " + t + "/plugins " + t + "/third && cp " + fx("am-example.so") +
                       " " + builtin + " && cp " + fx("am-example.so") + " " + third + " && touch " + t +
                       "/plugins/.attnmech-build-tree").c_str()) == 0);
  setenv("AM_PLUGIN_PATH", (t + "/third").c_str(), 1);
  for (int allow : {0, 1}) {
    CAPTURE(allow);
    if (allow) setenv("AM_PLUGIN_SHADOW", "1", 1);
    env e;
    CHECK(am_registry_discover(e.ctx, e.reg, (t + "/bin").c_str()) == AM_OK);
    REQUIRE(reg_count(e.reg) == 1);
    const std::string used = reg_path_at(e.reg, 0);
    const auto rep = e.report();
    REQUIRE(rep.size() == 1);
    // search dirs: third (AM_PLUGIN_PATH), the build tree, the install dir; the count follows the module used
    CHECK(reg_search_dir_plugins(e.reg, 0) == (allow ? 1u : 0u));
    CHECK(reg_search_dir_plugins(e.reg, 1) == (allow ? 0u : 1u));
    if (!allow) {
      CHECK(used == builtin);
      CHECK(rep[0] == third + ": not used: it would shadow the built-in plugin 'example' (" + builtin +
                          "); set AM_PLUGIN_SHADOW=1 to use it");
    } else {
      CHECK(used == third);
      CHECK(rep[0] == builtin + ": built-in plugin 'example' shadowed by " + third + " (shadowing allowed)");
    }
  }
  unsetenv("AM_PLUGIN_SHADOW");
  {
    env e;  // the API switch does the same as the variable
    am_registry_allow_shadowing(e.reg, 1);
    CHECK(am_registry_discover(e.ctx, e.reg, (t + "/bin").c_str()) == AM_OK);
    REQUIRE(reg_count(e.reg) == 1);
    CHECK(std::string(reg_path_at(e.reg, 0)) == third);
  }
  CHECK(std::system(("rm -rf " + t).c_str()) == 0);
  if (saved) setenv("AM_PLUGIN_PATH", saved_value.c_str(), 1);
  else unsetenv("AM_PLUGIN_PATH");
}

TEST_CASE("the example plugin end to end: params, host, create, estimate, cancel, destroy") {
  env e;
  REQUIRE(am_registry_load_file(e.ctx, e.reg, fx("am-example.so").c_str()) == AM_OK);
  const am_plugin_desc *d = am_registry_find(e.reg, "example", AM_PLUGIN_ESTIMATOR);
  REQUIRE(d != nullptr);
  am_record *params = nullptr;
  REQUIRE(am_record_create(&params) == AM_OK);
  const char *keys[] = {"n", "mu", "sigma"};
  const char *vals[] = {"20000", "1.5", "2"};
  REQUIRE(am_params_parse(e.ctx, d, 3, keys, vals, nullptr, params) == AM_OK);

  am_host host{};
  host.struct_size = sizeof host;
  host.ctx = e.ctx;
  host.params = params;
  host.seed = 11;
  host.rng_stream = 5;
  void *inst = nullptr;
  REQUIRE(d->create(&host, &inst) == AM_OK);
  am_record *run = nullptr, *inputs = nullptr;
  REQUIRE(am_record_create(&run) == AM_OK);
  REQUIRE(am_record_create(&inputs) == AM_OK);  // a run without widths or start
  REQUIRE(d->estimate(inst, nullptr, inputs, run) == AM_OK);
  // a second estimate on the same instance (the next width of a scan) draws the same numbers
  am_record *again = nullptr;
  REQUIRE(am_record_create(&again) == AM_OK);
  REQUIRE(d->estimate(inst, nullptr, inputs, again) == AM_OK);
  CHECK(am_record_number(am_record_get(again, "mean")) == am_record_number(am_record_get(run, "mean")));
  am_record_destroy(&again);
  d->destroy(inst);
  // independent recomputation from the same stream
  am_rng r;
  am_rng_init(&r, 11, 5);
  double s = 0, s2 = 0;
  for (int i = 0; i < 20000; ++i) {
    double x = 1.5 + 2 * am_rng_normal(&r);
    s += x;
    s2 += x * x;
  }
  const double mean = s / 20000, var = (s2 - 20000 * mean * mean) / 19999;
  double got = 0;
  REQUIRE(am_record_get_number(run, "mean", &got) == AM_OK);
  CHECK(got == doctest::Approx(mean).epsilon(1e-12));  // same draws, same order of sums
  CHECK(std::fabs(got - 1.5) < 5 * 2 / std::sqrt(20000.0));  // 5 standard errors of the mean
  REQUIRE(am_record_get_number(run, "variance", &got) == AM_OK);
  CHECK(got == doctest::Approx(var).epsilon(1e-12));
  am_record_destroy(&run);

  // cancel through the progress sink: partial results, AM_CANCELLED
  progress_state ps;
  ps.cancel_at = 1;
  am_context_settings cs;
  am_context_default_settings(&cs);
  cs.progress = progress_fn;
  cs.progress_user = &ps;
  am_context *pctx = nullptr;
  REQUIRE(am_context_create(&pctx, &cs) == AM_OK);
  const char *vals2[] = {"250000", "0", "1"};
  REQUIRE(am_params_parse(e.ctx, d, 3, keys, vals2, nullptr, params) == AM_OK);
  host.ctx = pctx;
  REQUIRE(d->create(&host, &inst) == AM_OK);
  REQUIRE(am_record_create(&run) == AM_OK);
  CHECK(d->estimate(inst, nullptr, inputs, run) == AM_CANCELLED);
  am_record_destroy(&inputs);
  d->destroy(inst);
  REQUIRE(am_record_get_number(run, "draws", &got) == AM_OK);
  CHECK(got == 100000);
  CHECK(ps.calls == 1);
  am_record_destroy(&run);
  am_context_destroy(&pctx);

  const char *bad[] = {"0"};
  CHECK(am_params_parse(e.ctx, d, 1, keys, bad, nullptr, params) == AM_ERR_USAGE);
  CHECK(std::string(am_context_last_error(e.ctx)) ==
        "parameter 'n' of estimator 'example': '0' is out of range [1, 1000000000]");
  am_record_destroy(&params);
}

TEST_CASE("docs/writing-a-plugin.md shows the example plugin's source verbatim") {
  const std::string src = slurp(AM_EXAMPLE_SOURCE);
  const std::string guide = slurp(AM_PLUGIN_GUIDE);
  REQUIRE(!src.empty());
  REQUIRE(!guide.empty());
  CHECK(contains(guide, "```cpp\n" + src + "```"));
}

TEST_CASE("every plugin of the build tree loads cleanly and its defaults parse") {
  const char *path = std::getenv("AM_PLUGIN_PATH");
  if (!path || !*path) {
    MESSAGE("skipped: AM_PLUGIN_PATH is not set (run through meson test)");
    return;
  }
  env e;
  CHECK(am_registry_discover(e.ctx, e.reg, nullptr) == AM_OK);
  for (const auto &l : e.report()) {
    CAPTURE(l);
    CHECK(contains(l, "cannot open directory"));  // only a missing dir may be reported, no module failure
  }
  MESSAGE("build-tree plugins loaded: " << reg_count(e.reg));
  for (size_t i = 0; i < reg_count(e.reg); ++i) {
    const am_plugin_desc *d = reg_at(e.reg, i);
    CAPTURE(d->name);
    am_record *p = nullptr;
    REQUIRE(am_record_create(&p) == AM_OK);
    am_status st = am_params_parse(e.ctx, d, 0, nullptr, nullptr, nullptr, p);
    // a parameter without default is "required" (usage), never a broken table
    CHECK((st == AM_OK || st == AM_ERR_USAGE));
    if (st == AM_OK) CHECK(am_record_size(p) == d->n_params);
    am_record_destroy(&p);
  }
}

namespace {

// A fresh directory with a copy of the constructor fixture (am-ctor.fixture → am-ctor.so) at `mode`.
std::string ctor_dir(const std::string &t, const std::string &name, mode_t mode) {
  const std::string d = t + "/" + name;
  REQUIRE(std::system(("mkdir -p " + d + " && cp " + fx("am-ctor.fixture") + " " + d + "/am-ctor.so").c_str()) == 0);
  REQUIRE(chmod(d.c_str(), mode) == 0);
  return d;
}

bool ctor_ran() { return std::getenv("AM_TEST_FIXTURE_CTOR_RAN") != nullptr; }

}  // namespace

TEST_CASE("plugins: a directory or module writable by others, or owned by someone else, is refused before dlopen") {
  // A module's constructors run when dlopen maps it, before any check: a module in /tmp/plugins (mode 1777)
  // or any place another user can write must not be opened at all. One load-report line each.
  char tmpl[] = "/tmp/am_trust_XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::string t = tmpl;
  unsetenv("AM_TEST_FIXTURE_CTOR_RAN");
  const std::string ww = ctor_dir(t, "ww", 01777), gw = ctor_dir(t, "gw", 0775), ok = ctor_dir(t, "ok", 0755);
  // gw's group must be a shared one: one with no group entry (root can give the directory to it); a user's own
  // private group (umask 002) is allowed — see the case below.
  if (geteuid() == 0) REQUIRE(chown(gw.c_str(), 0, 54321) == 0);
  {
    env e;
    CHECK(am_registry_scan_dir(e.ctx, e.reg, ww.c_str()) == AM_ERR_PLUGIN);
    CHECK(am_registry_scan_dir(e.ctx, e.reg, gw.c_str()) == AM_ERR_PLUGIN);
    REQUIRE(chmod((ok + "/am-ctor.so").c_str(), 0666) == 0);
    CHECK(am_registry_load_file(e.ctx, e.reg, (ok + "/am-ctor.so").c_str()) == AM_ERR_PLUGIN);
    CHECK(am_registry_load_file(e.ctx, e.reg, (ww + "/am-ctor.so").c_str()) == AM_ERR_PLUGIN);
    const auto rep = e.report();
    REQUIRE(rep.size() == 4);
    CHECK(rep[0] == ww + ": not scanned: directory writable by others (mode 1777); a plugin directory must be "
                         "writable by you (or root) only");
    if (geteuid() == 0)  // not root: gw's group is the user's own, private or not depending on the system
      CHECK(rep[1] == gw + ": not scanned: directory writable by its group (mode 0775); a plugin directory must be "
                           "writable by you (or root) only");
    CHECK(rep[2] == ok + "/am-ctor.so: not loaded: file writable by others (mode 0666); a module must be writable "
                         "by you (or root) only");
    CHECK(rep[3] == ww + "/am-ctor.so: not loaded: " + ww + ": directory writable by others (mode 1777); a module "
                         "must be writable by you (or root) only");
    CHECK(reg_count(e.reg) == 0);
  }
  if (geteuid() == 0) {  // ownership: only root can give a file away
    REQUIRE(chmod((ok + "/am-ctor.so").c_str(), 0644) == 0);
    REQUIRE(chown((ok + "/am-ctor.so").c_str(), 12345, 12345) == 0);
    env e;
    CHECK(am_registry_load_file(e.ctx, e.reg, (ok + "/am-ctor.so").c_str()) == AM_ERR_PLUGIN);
    REQUIRE(e.report().size() == 1);
    CHECK(contains(e.report()[0], "not loaded: file owned by uid 12345 (not you or root)"));
  }
  CHECK_FALSE(ctor_ran());  // nothing of the refused modules ran
  CHECK(std::system(("chmod -R u+w " + t + " && rm -rf " + t).c_str()) == 0);
}

TEST_CASE("plugins: group write by the owner's private group (umask 002) is trusted") {
  // Debian/Ubuntu/Fedora give each user a group of their own and umask 002: a build tree made that way is mode 0775
  // with the user's private group and must still be scanned. As root: group root has no other members.
  if (geteuid() != 0) return;  // only root knows the group here is private (named as the user, no members)
  char tmpl[] = "/tmp/am_upg_XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::string t = tmpl, d = t + "/plugins";
  REQUIRE(std::system(("mkdir -p " + d + " && cp " + fx("am-example.so") + " " + d + "/am-example.so").c_str()) == 0);
  REQUIRE(chmod(d.c_str(), 0775) == 0);
  REQUIRE(chown(d.c_str(), 0, 0) == 0);
  {
    env e;
    CHECK(am_registry_scan_dir(e.ctx, e.reg, d.c_str()) == AM_OK);
    CHECK(e.report().empty());
    CHECK(reg_count(e.reg) == 1);
  }
  CHECK(std::system(("rm -rf " + t).c_str()) == 0);
}

TEST_CASE("plugins: <exe dir>/../plugins is scanned only when Meson's build-tree marker is there") {
  // A copy of the binary in /tmp/x/bin used to scan /tmp/plugins. Now: not a build tree → one report line,
  // nothing loaded; the real build tree has the marker.
  const char *saved = std::getenv("AM_PLUGIN_PATH");
  const std::string saved_value = saved ? saved : "";
  REQUIRE(saved != nullptr);  // plugin_env: the build tree's plugins dir
  CHECK(std::ifstream(saved_value + "/.attnmech-build-tree").good());
  char tmpl[] = "/tmp/am_tree_XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::string t = tmpl;
  REQUIRE(std::system(("mkdir -p " + t + "/bin").c_str()) == 0);
  ctor_dir(t, "plugins", 0755);
  unsetenv("AM_TEST_FIXTURE_CTOR_RAN");
  setenv("AM_PLUGIN_PATH", "", 1);
  {
    env e;
    CHECK(am_registry_discover(e.ctx, e.reg, (t + "/bin").c_str()) == AM_OK);
    const auto rep = e.report();
    REQUIRE(rep.size() == 1);
    CHECK(rep[0] == t + "/bin/../plugins: not scanned: not an attnmech build tree (no .attnmech-build-tree)");
    for (size_t i = 0; i < reg_search_dir_count(e.reg); ++i)  // not searched, so not a search dir
      CHECK(std::string(reg_search_dir_source(e.reg, i)) != "build tree");
    CHECK_FALSE(ctor_ran());
  }
  {
    std::ofstream(t + "/plugins/.attnmech-build-tree") << "marker\n";
    env e;  // a build tree: scanned (the fixture's constructor runs: it is a module of ours now)
    CHECK(am_registry_discover(e.ctx, e.reg, (t + "/bin").c_str()) == AM_OK);
    CHECK(ctor_ran());
  }
  setenv("AM_PLUGIN_PATH", saved_value.c_str(), 1);
  unsetenv("AM_TEST_FIXTURE_CTOR_RAN");
  CHECK(std::system(("rm -rf " + t).c_str()) == 0);
}

TEST_CASE("plugins: a bare --plugin name is a file in the current directory, never the system library path") {
  // dlopen("libm.so.6") searches the system path; am_registry_load_file resolves names with realpath first.
  {
    env e;
    CHECK(am_registry_load_file(e.ctx, e.reg, "libm.so.6") == AM_ERR_PLUGIN);
    REQUIRE(e.report().size() == 1);
    CHECK(e.report()[0] == "libm.so.6: cannot open: No such file or directory");
  }
  char tmpl[] = "/tmp/am_bare_XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::string t = tmpl;
  REQUIRE(chmod(t.c_str(), 0755) == 0);
  REQUIRE(std::system(("cp " + fx("am-example.so") + " " + t + "/am-example.so").c_str()) == 0);
  char cwd[4096];
  REQUIRE(getcwd(cwd, sizeof cwd) != nullptr);
  REQUIRE(chdir(t.c_str()) == 0);
  {
    env e;
    CHECK(am_registry_load_file(e.ctx, e.reg, "am-example.so") == AM_OK);  // the file here
    CHECK(reg_count(e.reg) == 1);
  }
  REQUIRE(chdir(cwd) == 0);
  CHECK(std::system(("rm -rf " + t).c_str()) == 0);
}
