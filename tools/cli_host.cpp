// attnmech CLI — the host: one library context (log and progress to stderr) and the plugin registry
// (--plugin files first, then discovery: AM_PLUGIN_PATH, the build tree beside this executable, the
// install dir beside the library); output paths named by plugin parameters, made ready before a run computes.
#include "cli.hpp"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
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

void Host::open() {
  am_context_settings cs;
  am_context_default_settings(&cs);
  attach_sinks(&cs, &sinks);
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
