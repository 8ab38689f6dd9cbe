// attnmech CLI — `attnmech list`: the plugins found (tasks, then estimators), the load report (one line per
// module that could not be loaded) and the directories discovery searched; as text or as JSON. Warns on
// stderr when no search dir held a plugin (a broken or moved install) and exits 1 when no plugin was found
// at all (not even through --plugin), so a script notices.
#include "cli.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace am::cli {

namespace {

using json = nlohmann::ordered_json;

const char *or_empty(const char *s) { return s ? s : ""; }

// Where discovery looked, one "<dir> (<source>, <what it held>)" per search dir.
std::vector<std::string> searched_dirs(const am_registry *r) {
  std::vector<std::string> out;
  for (const am_search_dir_info &sd : am::sdk::registry_search_dirs(r)) {
    const char *dir = sd.path;
    const size_t np = sd.plugins;
    std::error_code ec;
    const std::string what = np > 0 ? std::to_string(np) + (np == 1 ? " plugin" : " plugins")
                                    : (std::filesystem::is_directory(dir, ec) ? "no plugins" : "missing");
    out.push_back(std::string(dir) + " (" + or_empty(sd.source) + ", " + what + ")");
  }
  return out;
}

int verdict(const am_registry *r) {
  for (const am_search_dir_info &sd : am::sdk::registry_search_dirs(r))
    if (sd.plugins > 0) return EXIT_OK;
  std::string where;
  for (const auto &l : searched_dirs(r)) where += "\n  " + l;
  std::fprintf(stderr, "attnmech: warning: no plugins found in the plugin directories; searched:%s\n"
               "  (set AM_PLUGIN_PATH to a directory of plugin modules, or pass --plugin FILE)\n",
               where.empty() ? " (none)" : where.c_str());
  return am::sdk::registry_summary(r).plugins > 0 ? EXIT_OK : EXIT_RUNTIME;
}

void print_json(const am_registry *r) {
  json out = {{"plugins", json::array()}, {"load_report", json::array()}, {"search_dirs", json::array()},
              {"sweep", kSweepBackends}, {"plots", kPlotFormats}, {"scalapack", kScalapack}};
  for (const am_plugin_info &p : am::sdk::registry_plugins(r)) {
    const am_plugin_desc *d = p.desc;
    out["plugins"].push_back({{"name", d->name}, {"kind", kind_name(d->kind)}, {"version", or_empty(d->version)},
                              {"description", or_empty(d->description)},
                              {"data_kinds", data_kinds_text(d->data_kinds)},
                              {"path", or_empty(p.path)}});
  }
  for (const std::string &line : am::sdk::registry_report(r)) out["load_report"].push_back(line);
  for (const am_search_dir_info &sd : am::sdk::registry_search_dirs(r))
    out["search_dirs"].push_back({{"path", sd.path}, {"source", sd.source}, {"plugins", sd.plugins}});
  std::printf("%s\n", out.dump(2).c_str());
}

// "tasks:" / "estimators:" and one aligned line per plugin of that kind.
void print_kind(const am_registry *r, uint32_t kind) {
  std::vector<const am_plugin_desc *> ds;
  int wn = 4, wv = 7;
  for (const am_plugin_info &p : am::sdk::registry_plugins(r)) {
    const am_plugin_desc *d = p.desc;
    if (d->kind != kind) continue;
    ds.push_back(d);
    wn = std::max(wn, static_cast<int>(std::strlen(d->name)));
    wv = std::max(wv, static_cast<int>(std::strlen(or_empty(d->version))));
  }
  std::printf("%s:\n", kind == AM_PLUGIN_TASK ? "tasks" : "estimators");
  if (ds.empty()) std::printf("  (none)\n");
  for (const auto *d : ds) {
    const std::string extra = kind == AM_PLUGIN_ESTIMATOR ? "  [data: " + data_kinds_text(d->data_kinds) + "]" : "";
    std::printf("  %-*s  %-*s  %s  %s%s\n", wn, d->name, wv, or_empty(d->version), kind_name(d->kind),
                or_empty(d->description), extra.c_str());
  }
}

void print_text(const am_registry *r) {
  print_kind(r, AM_PLUGIN_TASK);
  print_kind(r, AM_PLUGIN_ESTIMATOR);
  const std::vector<std::string> report = am::sdk::registry_report(r);
  if (!report.empty()) std::printf("load problems:\n");
  for (const std::string &line : report) std::printf("  %s\n", line.c_str());
  std::printf("sweep: %s\n", kSweepBackends);
  std::printf("plots: %s\n", kPlotFormats);
  std::printf("scalapack: %s\n", kScalapack);
  std::printf("searched:\n");
  for (const auto &l : searched_dirs(r)) std::printf("  %s\n", l.c_str());
}

}  // namespace

int cmd_list(Args &a) {
  std::vector<std::string> plugins;
  bool as_json = false;
  std::string val;
  while (!a.done()) {
    if (a.take("--plugin", &val))
      plugins.push_back(val);
    else if (a.flag({"--json"}))
      as_json = true;
    else
      a.reject();
  }
  Host h;
  h.open();
  h.load(plugins);
  if (as_json)
    print_json(h.reg);
  else
    print_text(h.reg);
  return verdict(h.reg);
}

}  // namespace am::cli
