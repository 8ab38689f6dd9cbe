// attnmech CLI — the host: one library context (log and progress to stderr) and the plugin registry
// (--plugin files first, then discovery: AM_PLUGIN_PATH, the build tree beside this executable, the
// install dir beside the library).
#include "cli.hpp"

#include <unistd.h>

#include <climits>
#include <cstdio>
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

}  // namespace

Host::~Host() {
  am_registry_destroy(&reg);
  am_context_destroy(&ctx);
}

void Host::open() {
  am_context_settings cs;
  am_context_default_settings(&cs);
  attach_sinks(&cs, &sinks);
  if (am_context_create(&ctx, &cs) != AM_OK) throw RuntimeError("cannot create the library context");
}

void Host::load(const std::vector<std::string> &plugin_files, bool strict) {
  if (am_registry_create(&reg) != AM_OK) throw RuntimeError("cannot create the plugin registry");
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

}  // namespace am::cli
