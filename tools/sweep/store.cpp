// attnmech sweep — the sweep directory: DIR/points/<key>/ (results written by the report library's atomic
// writer, point.json beside them), DIR/claims/<key> (who is computing a point), DIR/spec.json.
#include "sweep.hpp"

#include "read_input.hpp"  // tools/report: the one reader of the tools' inputs

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace sweep {

namespace fs = std::filesystem;

namespace {

std::string hostname() {
  char buf[HOST_NAME_MAX + 1] = "";
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::string read_text(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return "";
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string claim_path(const std::string &out, const Point &p) { return out + "/claims/" + p.key; }

}  // namespace

void write_file_atomic(const std::string &path, const std::string &text) {
  const fs::path target(path);
  std::error_code ec;
  fs::create_directories(target.parent_path(), ec);
  std::string tmpl = path + ".tmp-XXXXXX";
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  const int fd = mkstemp(name.data());
  if (fd < 0) throw SweepError("cannot create a file beside " + path + ": " + std::strerror(errno));
  size_t off = 0;
  bool ok = true;
  while (off < text.size()) {
    const ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ok = false;
      break;
    }
    off += static_cast<size_t>(n);
  }
  ok = ok && fchmod(fd, 0644) == 0 && fsync(fd) == 0;
  ok = (::close(fd) == 0) && ok;
  if (!ok || std::rename(name.data(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(name.data());
    throw SweepError("cannot write " + path + ": " + std::strerror(e));
  }
}

std::string point_dir(const std::string &out, const Point &p) { return out + "/points/" + p.key; }

bool point_complete(const std::string &out, const Point &p) {
  const std::string file = point_dir(out, p) + "/results.json";
  std::error_code ec;
  if (!fs::exists(file, ec)) return false;
  try {
    const auto j = amr::parse_strict<nlohmann::json>(amr::read_regular_file(file, amr::kMaxResultsBytes, "a results.json file"));
    if (!j.is_object() || !j.contains("status") || !j["status"].is_string()) return false;
    const std::string st = j["status"].get<std::string>();
    return st == "ok" || st == "warning";
  } catch (const std::exception &) {
    return false;
  }
}

void write_point_json(const std::string &out, const Point &p, const std::string &status, const std::string &message) {
  ojson j = ojson::object();
  j["key"] = p.key;
  j["task"] = p.canonical["task"];
  j["estimator"] = p.canonical["estimator"];
  j["settings"] = ojson::object();
  for (const auto &kv : p.settings) j["settings"][kv.first] = kv.second;
  j["axes"] = ojson::object();
  for (const auto &av : p.axis_values) j["axes"][av.first] = av.second;
  j["status"] = status;
  if (!message.empty()) j["message"] = message;
  j["attnmech_version"] = am_version();
  j["key_text"] = p.canonical.dump();  // the exact text whose FNV-1a 64 is the key
  write_file_atomic(point_dir(out, p) + "/point.json", j.dump(1) + "\n");
}

void write_spec_json(const std::string &out, const Spec &spec) {
  ojson j = spec.source;
  write_file_atomic(out + "/spec.json", j.dump(1) + "\n");
}

bool try_claim(const std::string &out, const Point &p, std::string *holder) {
  const std::string path = claim_path(out, p);
  std::error_code ec;
  fs::create_directories(out + "/claims", ec);
  const std::string me = std::to_string(getpid()) + " " + hostname() + "\n";
  // The claim appears whole or not at all: written to a private file first, then hard-linked to its name (link
  // fails with EEXIST when the name is taken, atomically, also on NFS). A claim created empty and filled
  // afterwards would look "being written" to every other sweep when its writer is killed in between.
  fs::create_directories(out + "/.claims-pending", ec);
  static std::atomic<unsigned long> serial{0};
  const std::string mine = out + "/.claims-pending/" + p.key + "." + std::to_string(getpid()) + "." +
                           std::to_string(serial++);
  {
    const int fd = ::open(mine.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const bool ok = fd >= 0 && ::write(fd, me.data(), me.size()) == static_cast<ssize_t>(me.size());
    if (fd >= 0) ::close(fd);
    if (!ok) {
      ::unlink(mine.c_str());
      throw SweepError("cannot write the claim file " + mine + ": " + std::strerror(errno));
    }
  }
  struct Unlink {
    const std::string &f;
    ~Unlink() { ::unlink(f.c_str()); }
  } unlink_mine{mine};
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (::link(mine.c_str(), path.c_str()) == 0) return true;
    if (errno != EEXIST) throw SweepError("cannot create the claim file " + path + ": " + std::strerror(errno));
    // Held: by a live process, or stale (same host, process gone).
    const std::string text = read_text(path);
    long pid = 0;
    std::string host;
    std::istringstream fields(text);
    if (!(fields >> pid >> host) || pid <= 0) {
      // Being written right now, or garbage: garbage older than a minute is stale.
      struct stat st {};
      if (::stat(path.c_str(), &st) == 0 && time(nullptr) - st.st_mtime > 60) {
        ::unlink(path.c_str());
        continue;
      }
      *holder = "another sweep";
      return false;
    }
    const bool same_host = hostname() == host;
    if (same_host && (pid == getpid() || (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH))) {
      // Stale: take it over (rename is atomic: only one taker wins the old file, the loser sees ENOENT).
      const std::string stale = path + ".stale-" + std::to_string(getpid());
      if (std::rename(path.c_str(), stale.c_str()) == 0) ::unlink(stale.c_str());
      continue;
    }
    *holder = "pid " + std::to_string(pid) + " on " + host;  // a live process, or one on another host
    return false;
  }
  *holder = "another sweep (claim contended)";
  return false;
}

void release_claim(const std::string &out, const Point &p) { ::unlink(claim_path(out, p).c_str()); }

}  // namespace sweep
