// attnmech — the one rule for names that become file names, the one routine for creating files in a directory
// others may write (a sweep DIR on a shared file system, an out dir's parent), and the one atomic writer of files
// (write_atomic) and of whole directories (write_dir_atomically: results and problem directories). Header-only and
// internal (not installed): libcore's problem writer, and the report library, the sweep engine and the CLI
// through libcore's src/ directory.
//
// The rule (docs/reliability.md, "file names"): a component of a path made from a string we were given (a plot
// name, a figure panel id, a sweep id, a record key) is 1..kMaxNameBytes bytes of [A-Za-z0-9._+%-], does not start
// with '.' or '-' (so never '.', '..', a hidden file or an option), and so holds no '/', no NUL, no byte >= 0x80.
// Names a user chose (plot files, panel ids) are refused when they break it; names made of data (the dotted
// record path of an exported .npy array) are encoded onto it by encode_name (percent-encoding, injective).
//
// Files in shared directories are never opened by a predictable name with O_TRUNC: create_new opens with
// O_CREAT|O_EXCL|O_NOFOLLOW (a planted file or symlink makes it fail with EEXIST/ELOOP instead of being followed),
// write_atomic writes a mkstemp file beside the target (O_EXCL, unpredictable) and renames it over the target
// (rename replaces a planted symlink, it never writes through it).
#ifndef ATTNMECH_COMMON_SAFE_FILE_HPP
#define ATTNMECH_COMMON_SAFE_FILE_HPP

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace am {
namespace files {

constexpr size_t kMaxNameBytes = 200;  // well under NAME_MAX (255) with room for ".npy", ".svg", "compare_"

inline bool name_char(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '+' || c == '-' || c == '%';
}

// "" when `name` may be a file name under the rule above, else why not (for a message).
inline std::string name_problem(const std::string &name) {
  if (name.empty()) return "an empty name";
  if (name.size() > kMaxNameBytes) return "longer than " + std::to_string(kMaxNameBytes) + " bytes";
  if (name[0] == '.' || name[0] == '-') return "starts with '" + name.substr(0, 1) + "'";
  for (unsigned char c : name)
    if (!name_char(c)) {
      char b[16];
      std::snprintf(b, sizeof b, c >= 0x20 && c < 0x7f ? "'%c'" : "byte 0x%02x", c);
      return std::string("holds ") + b + " (a file name is letters, digits and . _ + - %)";
    }
  return "";
}
inline bool safe_name(const std::string &name) { return name_problem(name).empty(); }

// FNV-1a 64 of s as 16 hex digits.
inline std::string fnv_hex(const std::string &s) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a 64 offset basis
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  char b[20];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(h));
  return b;
}

// `s` mapped onto the rule: bytes outside [A-Za-z0-9._+-] (and '%' itself) as %XX, a leading '.' or '-' as %2E /
// %2D; distinct strings give distinct names. One longer than the rule allows keeps its first bytes and ends in
// "%%" + FNV-1a 64 of the whole encoding ('%%' never appears in an encoding, so no short name collides).
// suffix_room: bytes the caller appends (".npy").
inline std::string encode_name(const std::string &s, size_t suffix_room = 0) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (name_char(c) && c != '%' && !(i == 0 && (c == '.' || c == '-'))) {
      out += static_cast<char>(c);
    } else {
      char b[4];
      std::snprintf(b, sizeof b, "%%%02X", c);
      out += b;
    }
  }
  if (out.empty()) out = "%";  // the empty key
  const size_t max = kMaxNameBytes - suffix_room;
  if (out.size() > max) {
    const std::string h = fnv_hex(out);
    out.resize(max - h.size() - 2);
    while (!out.empty() && out.back() == '%') out.pop_back();  // never three '%' in a row
    if (out.size() >= 2 && out[out.size() - 2] == '%') out.resize(out.size() - 2);  // no cut escape
    out += "%%" + h;
  }
  return out;
}

// ---- files in directories others may write

// A new file at `path`, opened for writing: O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC. -1 with errno when the name is
// taken (by anything, a symlink included: EEXIST) or cannot be created.
inline int create_new(const std::string &path, mode_t mode = 0644) {
  return ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
}

inline bool write_all(int fd, const char *data, size_t size) {
  size_t off = 0;
  while (off < size) {
    const ssize_t n = ::write(fd, data + off, size - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}
inline bool write_all(int fd, const std::string &text) { return write_all(fd, text.data(), text.size()); }

// A tag of this process for names of temporary files and directories: "<pid>.<hash of the host name>", so a
// later process can tell a leftover of a dead process on this host (stale) from one of a live one.
inline std::string owner_tag() {
  char host[256] = "";
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return std::to_string(static_cast<long>(getpid())) + "." + fnv_hex(host).substr(0, 8);
}

// Temporary names beside `path`: path + ".tmp-" + owner_tag() + "-XXXXXX" (mkstemp / mkdtemp fill the X's).
inline std::string temp_template(const std::string &path) { return path + ".tmp-" + owner_tag() + "-XXXXXX"; }

// If `name` is a temporary name of ours (…".tmp-<pid>.<host>-XXXXXX" or …".old-<pid>.<host>-XXXXXX") made by a
// process of this host that is gone, true.
inline bool stale_temp_name(const std::string &name) {
  for (const char *kind : {".tmp-", ".old-"}) {
    const size_t at = name.rfind(kind);
    if (at == std::string::npos || at == 0) continue;
    const std::string rest = name.substr(at + 5);  // <pid>.<host8>-XXXXXX
    const size_t dot = rest.find('.'), dash = rest.find('-');
    if (dot == std::string::npos || dot == 0 || dash != dot + 9 || rest.size() != dash + 7) continue;
    const std::string pid = rest.substr(0, dot), tag = owner_tag();
    if (pid.find_first_not_of("0123456789") != std::string::npos || pid.size() > 9) continue;
    if (rest.substr(dot, 9) != tag.substr(tag.find('.'))) continue;  // another host's: cannot tell
    const long p = std::atol(pid.c_str());
    if (p > 0 && p != static_cast<long>(getpid()) && ::kill(static_cast<pid_t>(p), 0) != 0 && errno == ESRCH)
      return true;
  }
  return false;
}

// Leftovers of writers killed before they finished (SIGKILL, power loss) in `dir`: temporary files and directories
// of ours (stale_temp_name: this host, process gone), owned by us, never through a symlink (lstat; a link of the
// pattern is left alone, and remove_all removes links inside, not what they name). Once per directory and process:
// a sweep writes thousands of points into one parent.
inline void remove_stale_temps(const std::string &dir) {
  static std::mutex mu;
  static std::set<std::string> done;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!done.insert(dir).second) return;
  }
  DIR *d = ::opendir(dir.c_str());
  if (!d) return;
  std::vector<std::string> stale;
  while (const dirent *e = ::readdir(d))
    if (stale_temp_name(e->d_name)) stale.push_back(e->d_name);
  ::closedir(d);
  for (const auto &n : stale) {
    const std::string p = dir + "/" + n;
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || st.st_uid != ::geteuid()) continue;
    if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) continue;
    std::error_code ec;
    std::filesystem::remove_all(p, ec);
  }
}

// Text written in pieces to a file descriptor through a buffer of a fixed size (a document of any length costs
// the buffer, never its whole text). ok() turns false at the first failed write (errno kept in error()); later
// writes are dropped.
class FdWriter {
 public:
  explicit FdWriter(int fd, size_t capacity = size_t(1) << 16) : fd_(fd), cap_(capacity) { buf_.reserve(cap_); }
  void write(const char *p, size_t n) {
    if (buf_.size() + n > cap_) flush();
    if (n > cap_) {
      put(p, n);
      return;
    }
    buf_.append(p, n);
  }
  void write(const std::string &s) { write(s.data(), s.size()); }
  bool flush() {
    if (!buf_.empty()) put(buf_.data(), buf_.size());
    buf_.clear();
    return ok_;
  }
  bool ok() const { return ok_; }
  int error() const { return errno_; }

 private:
  void put(const char *p, size_t n) {
    if (ok_ && !write_all(fd_, p, n)) ok_ = false, errno_ = errno ? errno : EIO;
  }
  int fd_;
  size_t cap_;
  std::string buf_;
  bool ok_ = true;
  int errno_ = 0;
};

// Writes what produce(FdWriter &) writes to `path` whole or not at all: a mkstemp file beside it (never a
// predictable name), written, fsynced, made `mode`, renamed over `path`. "" on success, else the message; an
// exception of `produce` propagates after the temporary file is removed.
// Stale temporaries of killed writers beside `path` (remove_stale_temps of its directory) go first: a file writer
// killed by SIGTERM or SIGKILL (`attnmech plot`, a sweep's point.json) leaves its .tmp- file, which nothing else reads.
template <class Produce>
std::string write_atomic_streamed(const std::string &path, Produce &&produce, mode_t mode = 0644) {
  const std::string parent = std::filesystem::path(path).parent_path().string();
  remove_stale_temps(parent.empty() ? "." : parent);
  std::string tmpl = temp_template(path);
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  const int fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) return "cannot create a file beside " + path + ": " + std::strerror(errno);
  FdWriter out(fd);
  try {
    produce(out);
  } catch (...) {
    ::close(fd);
    ::unlink(name.data());
    throw;
  }
  bool ok = out.flush();
  int e = ok ? 0 : out.error();
  ok = ok && ::fchmod(fd, mode) == 0 && ::fsync(fd) == 0;
  if (!ok && e == 0) e = errno;
  ok = (::close(fd) == 0) && ok;
  if (ok && ::rename(name.data(), path.c_str()) == 0) return "";
  if (ok || e == 0) e = errno;
  ::unlink(name.data());
  return "cannot write " + path + ": " + std::strerror(e);
}

// Writes `text` to `path` whole or not at all (write_atomic_streamed of one piece).
inline std::string write_atomic(const std::string &path, const std::string &text, mode_t mode = 0644) {
  return write_atomic_streamed(path, [&](FdWriter &w) { w.write(text); }, mode);
}

// ---- directories written whole (a results directory, a problem directory)

// A directory created or replaced whole: absent, empty, or holding its marker file (a previous one of its kind:
// results.json, model.json). `what` names it in messages ("results directory").
struct DirKind {
  const char *marker, *what;
};

inline std::string sys_error(const std::string &what, const std::string &path) {
  return what + " " + path + ": " + std::strerror(errno);
}

// fsync of a file or a directory: "" or the message. A directory's EINVAL is no error (file systems that cannot
// sync a directory say so).
inline std::string fsync_path(const std::string &path, bool dir) {
  const int fd = ::open(path.c_str(), dir ? (O_RDONLY | O_DIRECTORY) : O_RDONLY);
  if (fd < 0) return sys_error("cannot open", path);
  const int rc = ::fsync(fd);
  const int e = errno;
  ::close(fd);
  errno = e;
  if (rc != 0 && !(dir && errno == EINVAL)) return sys_error("cannot sync", path);
  return "";
}

// `dir` as an absolute, normal path without a trailing slash into *target; it must have a parent. "" or why not.
inline std::string dir_target(const std::string &dir, const DirKind &kind, std::filesystem::path *target) {
  if (dir.empty()) return "no directory given";
  std::filesystem::path p = std::filesystem::absolute(std::filesystem::path(dir)).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();
  if (p == p.root_path() || p.filename() == "." || p.filename() == "..")
    return "cannot use '" + dir + "' as a " + kind.what + " (name a directory to create or replace)";
  *target = p;
  return "";
}

// Whether `dir` may become a directory of `kind` (checked before anything is computed or written): absent, empty,
// or holding kind.marker; its nearest existing ancestor a writable directory. "" or why not.
inline std::string check_dir(const std::string &dir, const DirKind &kind) {
  namespace fs = std::filesystem;
  fs::path target;
  std::string err = dir_target(dir, kind, &target);
  if (!err.empty()) return err;
  std::error_code ec;
  if (fs::exists(target, ec)) {
    if (!fs::is_directory(target, ec)) return "'" + dir + "' exists and is not a directory";
    if (!fs::is_empty(target, ec) && !fs::exists(target / kind.marker, ec))
      return "'" + dir + "' holds files but no " + kind.marker + ": not replacing a directory that is not a " +
             kind.what;
  }
  fs::path up = target.parent_path();
  while (!fs::exists(up, ec) && up != up.root_path()) up = up.parent_path();
  if (!fs::is_directory(up, ec)) return "cannot create '" + dir + "': '" + up.string() + "' is not a directory";
  if (::access(up.c_str(), W_OK | X_OK) != 0) return sys_error("cannot create '" + dir + "' in", up.string());
  return "";
}

// Swaps the finished temporary directory `tmp` into `target`; the previous `target` (if any) is removed. "" or
// the message (then `target` is as it was).
inline std::string swap_into_place(const std::filesystem::path &tmp, const std::filesystem::path &target) {
  std::error_code ec;
  if (!std::filesystem::exists(target, ec)) {
    if (::rename(tmp.c_str(), target.c_str()) != 0) return sys_error("cannot rename into", target.string());
    return "";
  }
#ifdef RENAME_EXCHANGE
  if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) == 0) {
    std::filesystem::remove_all(tmp, ec);  // now holds the old one
    return "";
  }
#endif
  std::string old = target.string() + ".old-" + owner_tag() + "-XXXXXX";
  if (!::mkdtemp(old.data())) return sys_error("cannot create", old);
  if (::rename(target.c_str(), old.c_str()) != 0) {
    const std::string e = sys_error("cannot move aside", target.string());
    std::filesystem::remove(old, ec);
    return e;
  }
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    const std::string e = sys_error("cannot rename into", target.string());
    ::rename(old.c_str(), target.c_str());  // put the old one back
    return e;
  }
  std::filesystem::remove_all(old, ec);
  return "";
}

// Creates the directory `dir` whole or not at all: fill(tmp) writes the files into a fresh temporary sibling
// (temp_template; missing parents are created, stale temporaries of killed writers beside it removed), which is
// fsynced and then takes the place of `dir` (a previous `dir` is removed): a reader sees the old complete
// directory or the new one. check_dir's rules first. "" or the message; an exception of `fill` propagates. On any
// failure the temporary directory is removed and `dir` is left as it was.
template <class Fill>
std::string write_dir_atomically(const std::string &dir, const DirKind &kind, Fill &&fill) {
  namespace fs = std::filesystem;
  std::string err = check_dir(dir, kind);
  fs::path target;
  if (err.empty()) err = dir_target(dir, kind, &target);
  if (!err.empty()) return err;
  const fs::path parent = target.parent_path();
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) return "cannot create " + parent.string() + ": " + ec.message();
  remove_stale_temps(parent.string());
  std::string tmp = temp_template(target.string());
  if (!::mkdtemp(tmp.data())) return sys_error("cannot create", tmp);
  ::chmod(tmp.c_str(), 0755);  // mkdtemp makes it 0700; the result is a normal directory
  try {
    fill(tmp);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  err = fsync_path(tmp, true);
  if (err.empty()) err = swap_into_place(tmp, target);
  if (err.empty()) err = fsync_path(parent.string(), true);
  if (!err.empty()) fs::remove_all(tmp, ec);
  return err;
}

}  // namespace files
}  // namespace am

#endif
