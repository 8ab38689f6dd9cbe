// attnmech — the one way every text/JSON input is read: model.json of a problem directory (libcore,
// problem_read.cpp), results.json (report library), sweep SPECs and point files (tools/sweep), figure specs
// (tools/figure), alignment files (plugins/common/msa, streamed). Header-only and internal (libcore/include/common:
// not installed): libcore, plugins and the tools share one source without new exports; nlohmann_json is a
// compile-time dependency of parse_strict's callers only (this header does not include it).
//
//   read_regular_file  a whole regular file of at most N bytes; a FIFO, /dev/zero, a directory... is named
//                      ("<path>: is a FIFO, not a sweep spec") instead of hanging or reading forever
//   open_regular_file, read_some   the same opening and reading for a reader that streams (msa's alignments)
//   parse_strict       JSON text → value, objects/lists nested deeper than kMaxJsonDepth refused (what reads the
//                      value back recurses once per level), duplicate keys refused, optionally NUL characters
//   file_kind          the words for what a path that is not a regular file is (also the .npy reader's)
#ifndef ATTNMECH_COMMON_READ_INPUT_HPP
#define ATTNMECH_COMMON_READ_INPUT_HPP

#include <attnmech/status.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

namespace am::input {

// An error carrying a status; the C entry points (libcore's problem directories, the report library) turn it into
// am_context_fail, the CLI into its exit codes (the callers wrap it).
struct Error : std::runtime_error {
  am_status code;
  Error(am_status c, const std::string &msg) : std::runtime_error(msg), code(c) {}
};

// Size limits of the inputs: far above anything the project writes, low enough that reading one is no risk.
constexpr size_t kMaxSpecBytes = size_t(16) << 20;     // sweep / figure specs, model.json, point.json
constexpr size_t kMaxResultsBytes = size_t(1) << 30;   // results.json (small arrays inline)

// What a path that is not a regular file is ("is a FIFO"): one wording for every reader, am_npy_read's included.
inline const char *file_kind(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

// A regular file open for reading, closed by its destructor. open_regular_file checks the kind before the open (which
// is non-blocking, so a FIFO swapped in between cannot hang it) and again with fstat; `what` names the expected
// content for the messages ("<path>: is a FIFO, not an alignment file"). Throws Error: AM_ERR_IO when it cannot be
// opened ("<path>: cannot open: No such file or directory"), AM_ERR_FORMAT when it is not a regular file.
struct RegularFile {
  int fd = -1;
  unsigned long long size = 0;  // st_size at the open (a file may still grow: readers bound what they read)
  RegularFile() = default;
  RegularFile(const RegularFile &) = delete;
  RegularFile &operator=(const RegularFile &) = delete;
  ~RegularFile() {
    if (fd >= 0) ::close(fd);
  }
};

inline void open_regular_file(const std::string &path, const std::string &what, RegularFile *f) {
  struct stat st {};
  auto not_regular = [&](mode_t m) { return Error(AM_ERR_FORMAT, path + ": is " + file_kind(m) + ", not " + what); };
  if (::stat(path.c_str(), &st) != 0) throw Error(AM_ERR_IO, path + ": cannot open: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw not_regular(st.st_mode);
  f->fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (f->fd < 0) throw Error(AM_ERR_IO, path + ": cannot open: " + std::strerror(errno));
  if (::fstat(f->fd, &st) != 0) throw Error(AM_ERR_IO, path + ": cannot stat: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw not_regular(st.st_mode);
  f->size = static_cast<unsigned long long>(st.st_size);
}

// Up to `cap` bytes of an open file into buf (a read interrupted by a signal is retried); 0 at its end. Throws
// Error(AM_ERR_IO) on a read error.
inline size_t read_some(const RegularFile &f, const std::string &path, char *buf, size_t cap) {
  for (;;) {
    const ssize_t n = ::read(f.fd, buf, cap);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(AM_ERR_IO, path + ": read error: " + std::strerror(errno));
    return static_cast<size_t>(n);
  }
}

// The whole content of the regular file `path` (symlinks followed), at most `max_bytes`. `what` names the
// expected content for the messages ("a sweep spec"). Throws Error as open_regular_file does, and AM_ERR_FORMAT when
// the file is too large.
inline std::string read_regular_file(const std::string &path, size_t max_bytes, const std::string &what) {
  RegularFile f;
  open_regular_file(path, what, &f);
  auto too_large = [&] {
    return Error(AM_ERR_FORMAT, path + ": larger than " + std::to_string(max_bytes >> 20) + " MB, too large for " + what);
  };
  if (f.size > max_bytes) throw too_large();
  std::string text;
  text.reserve(static_cast<size_t>(f.size));
  char buf[65536];
  // to the end, not to st_size: a file may grow while it is read (the cap still holds)
  for (size_t n; (n = read_some(f, path, buf, sizeof buf)) > 0;) {
    if (text.size() + n > max_bytes) throw too_large();
    text.append(buf, n);
  }
  return text;
}

// JSON text → J (json or ordered_json). Refused with Error(AM_ERR_FORMAT), or the parser's own exception for
// malformed text: objects and lists nested deeper than kMaxJsonDepth (what reads the value back recurses once per
// level; 10^4 levels, a 20 KB file, overflowed the stack: found by tests/fuzz, harness results_json), a key named
// twice in one object (nlohmann keeps the last silently) and, with refuse_nul (specs: their strings become task
// names, keys, paths and C strings), a NUL character in a string.
constexpr int kMaxJsonDepth = 128;
template <class J>
J parse_strict(const std::string &text, bool refuse_nul = false) {
  std::vector<std::unordered_set<std::string>> keys;  // the keys seen in each open object (hashed: an object of
                                                      // 10^5 keys costs 10^5 lookups, not 10^10 comparisons)
  std::string last_key;
  auto cb = [&](int depth, typename J::parse_event_t ev, J &parsed) {
    using E = typename J::parse_event_t;
    if ((ev == E::object_start || ev == E::array_start) && depth >= kMaxJsonDepth)
      throw Error(AM_ERR_FORMAT, "objects and lists nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    if (ev == E::object_start) keys.emplace_back();
    if (ev == E::object_end && !keys.empty()) keys.pop_back();
    if (ev == E::key) {
      const std::string k = parsed.template get<std::string>();
      if (refuse_nul && k.find('\0') != std::string::npos)
        throw Error(AM_ERR_FORMAT, "the key " + parsed.dump() + " holds a NUL character (\\u0000)");
      if (!keys.empty() && !keys.back().insert(k).second) throw Error(AM_ERR_FORMAT, "duplicate key \"" + k + "\"");
      last_key = k;
    }
    if (refuse_nul && ev == E::value && parsed.is_string() &&
        parsed.template get_ref<const std::string &>().find('\0') != std::string::npos)
      throw Error(AM_ERR_FORMAT, "the string " + parsed.dump() + " (under \"" + last_key +
                                     "\") holds a NUL character (\\u0000)");
    return true;
  };
  try {
    return J::parse(text, cb);
  } catch (const Error &) {
    throw;
  } catch (const std::exception &e) {  // the JSON library's message quotes what it last read: raw bytes of the file
    std::string msg;
    for (const unsigned char c : std::string(e.what())) {
      if (c >= 0x20 && c < 0x7f) {
        msg += static_cast<char>(c);
      } else {
        char b[8];
        std::snprintf(b, sizeof b, "\\x%02x", c);
        msg += b;
      }
    }
    throw Error(AM_ERR_FORMAT, msg);
  }
}

}  // namespace am::input

#endif
