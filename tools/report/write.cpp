// attnmech-report — writing a results directory atomically (results.json, .npy arrays, SVG plots).
#include "internal.hpp"

#include <safe_file.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <mutex>
#include <set>

namespace amr {

namespace {

namespace fs = std::filesystem;

std::string sys_error(const std::string &what, const std::string &path) {
  return what + " " + path + ": " + std::strerror(errno);
}

void fsync_path(const std::string &path, bool dir) {
  const int fd = ::open(path.c_str(), dir ? (O_RDONLY | O_DIRECTORY) : O_RDONLY);
  if (fd < 0) throw Error(AM_ERR_IO, sys_error("cannot open", path));
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0 && !(dir && errno == EINVAL)) throw Error(AM_ERR_IO, sys_error("cannot sync", path));
}

// Every array of at least `min_elements` elements under `n` as <dir>/<prefix>.npy, named by its path. The path is
// data (any JSON key): it becomes a file name through the one rule's encoding (libcore/src/safe_file.hpp), so a key
// "../../x" is written as "%2E.%2F..%2Fx.npy" inside `dir`, never outside it.
void export_npy(am_context *ctx, const am_record *n, const std::string &dir, const std::string &prefix,
                size_t min_elements, std::vector<std::string> *written) {
  const am_record_type t = am_record_type_of(n);
  if (t == AM_REC_ARRAY) {
    am_array_view v{};
    if (am_record_array(n, &v) != AM_OK || am_array_view_count(&v) < min_elements) return;
    const std::string file = am::files::encode_name(prefix, 4) + ".npy", path = dir + "/" + file;
    if (am_npy_write(ctx, path.c_str(), &v) != AM_OK)
      throw Error(AM_ERR_IO, "cannot write " + path + ": " + am_context_last_error(ctx));
    fsync_path(path, false);
    written->push_back(file);
    return;
  }
  if (t != AM_REC_OBJECT && t != AM_REC_LIST) return;
  for (size_t i = 0; i < am_record_size(n); ++i) {
    const char *key = t == AM_REC_OBJECT ? am_record_key(n, i) : nullptr;
    const std::string name = key ? std::string(key) : std::to_string(i);
    export_npy(ctx, am_record_at(n, i), dir, prefix.empty() ? name : prefix + "." + name, min_elements, written);
  }
}

// `dir` as an absolute, normal path without a trailing slash; it must have a parent.
fs::path target_of(const std::string &dir, const DirKind &kind) {
  if (dir.empty()) throw Error(AM_ERR_IO, "no directory given");
  fs::path p = fs::absolute(fs::path(dir)).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();
  if (p == p.root_path() || p.filename() == "." || p.filename() == "..")
    throw Error(AM_ERR_IO, "cannot use '" + dir + "' as a " + kind.what + " (name a directory to create or replace)");
  return p;
}

// Swap the finished temporary directory `tmp` into `target`; the previous `target` (if any) is removed.
void swap_into_place(const fs::path &tmp, const fs::path &target) {
  std::error_code ec;
  if (!fs::exists(target, ec)) {
    if (::rename(tmp.c_str(), target.c_str()) != 0) throw Error(AM_ERR_IO, sys_error("cannot rename into", target));
    return;
  }
#ifdef RENAME_EXCHANGE
  if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) == 0) {
    fs::remove_all(tmp, ec);  // now holds the old run
    return;
  }
#endif
  std::string old = target.string() + ".old-" + am::files::owner_tag() + "-XXXXXX";
  if (!::mkdtemp(old.data())) throw Error(AM_ERR_IO, sys_error("cannot create", old));
  if (::rename(target.c_str(), old.c_str()) != 0) {
    const Error e(AM_ERR_IO, sys_error("cannot move aside", target));
    fs::remove(old, ec);
    throw e;
  }
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    const Error e(AM_ERR_IO, sys_error("cannot rename into", target));
    ::rename(old.c_str(), target.c_str());  // put the old run back
    throw e;
  }
  fs::remove_all(old, ec);
}

}  // namespace

void write_file_synced(const std::string &path, const std::string &content) {
  const std::string err = am::files::write_atomic(path, content);
  if (!err.empty()) throw Error(AM_ERR_IO, err);
}

const DirKind kResultsDir{"results.json", "results directory"};
const DirKind kProblemDir{"model.json", "problem directory"};

void check_dir(const std::string &dir, const DirKind &kind) {
  const fs::path target = target_of(dir, kind);
  std::error_code ec;
  if (fs::exists(target, ec)) {
    if (!fs::is_directory(target, ec)) throw Error(AM_ERR_IO, "'" + dir + "' exists and is not a directory");
    if (!fs::is_empty(target, ec) && !fs::exists(target / kind.marker, ec))
      throw Error(AM_ERR_IO, "'" + dir + "' holds files but no " + kind.marker + ": not replacing a directory that is "
                                         "not a " + kind.what);
  }
  fs::path up = target.parent_path();
  while (!fs::exists(up, ec) && up != up.root_path()) up = up.parent_path();
  if (!fs::is_directory(up, ec)) throw Error(AM_ERR_IO, "cannot create '" + dir + "': '" + up.string() + "' is not a directory");
  if (::access(up.c_str(), W_OK | X_OK) != 0) throw Error(AM_ERR_IO, sys_error("cannot create '" + dir + "' in", up));
}

void write_dir_atomically(const std::string &dir, const DirKind &kind, const std::function<void(const std::string &)> &fill) {
  check_dir(dir, kind);
  const fs::path target = target_of(dir, kind), parent = target.parent_path();
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) throw Error(AM_ERR_IO, "cannot create " + parent.string() + ": " + ec.message());
  am::files::remove_stale_temps(parent.string());
  std::string tmp = am::files::temp_template(target.string());
  if (!::mkdtemp(tmp.data())) throw Error(AM_ERR_IO, sys_error("cannot create", tmp));
  ::chmod(tmp.c_str(), 0755);  // mkdtemp makes it 0700; the result is a normal directory
  try {
    fill(tmp);
    fsync_path(tmp, true);
    swap_into_place(tmp, target);
    fsync_path(parent.string(), true);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
}

void write_results_dir(am_context *ctx, const am_record *doc, const std::string &dir,
                       const am_report_write_options &opt, std::vector<std::string> *written) {
  check_dir(dir, kResultsDir);  // before the document is serialised
  const std::string text = dump_results(record_to_json(ctx, doc));  // before touching the disk
  std::vector<std::string> files;
  write_dir_atomically(dir, kResultsDir, [&](const std::string &tmp) {
    write_file_synced(tmp + "/results.json", text);
    files.push_back("results.json");
    export_npy(ctx, doc, tmp, "", opt.npy_min_elements, &files);
    if (opt.plots) draw_plots(doc, tmp, &files);
  });
  written->insert(written->end(), files.begin(), files.end());
}

}  // namespace amr
