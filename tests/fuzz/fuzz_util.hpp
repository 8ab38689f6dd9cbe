// attnmech fuzzing — what every harness shares: the readers under test take paths, so the fuzzer's bytes go
// into an in-memory file (memfd) that the reader opens as /proc/self/fd/N; files that must sit in a
// directory (problem directories) go into a private temporary directory removed at exit.
#ifndef ATTNMECH_FUZZ_UTIL_HPP
#define ATTNMECH_FUZZ_UTIL_HPP

#include <attnmech/attnmech.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace fuzz {

[[noreturn]] inline void die(const char *what) {
  std::perror(what);
  std::abort();
}

// One in-memory file per process, rewritten for every input.
class MemFile {
 public:
  MemFile() {
    fd_ = memfd_create("attnmech-fuzz", 0);
    if (fd_ < 0) die("memfd_create");
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  // Replaces the content with `n` bytes.
  const std::string &set(const uint8_t *data, size_t n) {
    if (ftruncate(fd_, 0) != 0) die("ftruncate");
    size_t done = 0;
    while (done < n) {
      const ssize_t w = pwrite(fd_, data + done, n - done, static_cast<off_t>(done));
      if (w <= 0) die("pwrite");
      done += static_cast<size_t>(w);
    }
    return path_;
  }
  const std::string &path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

// A private directory under $TMPDIR (or /tmp), removed when the process exits normally.
inline const std::filesystem::path &temp_dir() {
  static const std::filesystem::path dir = [] {
    const char *t = std::getenv("TMPDIR");
    std::string tmpl = std::string(t && *t ? t : "/tmp") + "/attnmech-fuzz-XXXXXX";
    if (!mkdtemp(&tmpl[0])) die("mkdtemp");
    static std::string keep;
    keep = tmpl;
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(keep, ec);
    });
    return std::filesystem::path(tmpl);
  }();
  return dir;
}

// Writes `n` bytes to `path` (whole file replaced).
inline void write_file(const std::filesystem::path &path, const uint8_t *data, size_t n) {
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f) die(path.c_str());
  if (n && std::fwrite(data, 1, n, f) != n) die("fwrite");
  if (std::fclose(f) != 0) die("fclose");
}

// The context every call reports into (created once; the library never prints, errors stay in it).
inline am_context *context() {
  static am_context *ctx = [] {
    am_context *c = nullptr;
    if (am_context_create(&c, nullptr) != AM_OK || !c) die("am_context_create");
    return c;
  }();
  return ctx;
}

// A failing call must leave a message; a harness aborts (= a finding) when one does not.
inline void expect_message(am_status st) {
  if (st == AM_OK) return;
  const char *m = am_context_last_error(context());
  if (!m || !*m) {
    std::fprintf(stderr, "status %d without a message\n", static_cast<int>(st));
    std::abort();
  }
}

}  // namespace fuzz

#endif
