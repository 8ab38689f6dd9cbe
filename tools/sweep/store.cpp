// attnmech sweep — the sweep directory: DIR/points/<key>/ (results written by the report library's atomic
// writer, point.json beside them), DIR/claims/<key> (who is computing a point), DIR/spec.json.
#include "sweep.hpp"

#include <common/read_input.hpp>  // the one reader of the tools' inputs
#include <common/safe_file.hpp>
#include <sys/file.h>

#include <attnmech/report.h>

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

namespace am::sweep {

namespace fs = std::filesystem;

namespace {

std::string hostname() {
  char buf[HOST_NAME_MAX + 1] = "";
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

// A point's key names its directory and claim: hex digits from spec.cpp; checked by the one safe-name rule anyway.
const std::string &checked_key(const Point &p) {
  if (!am::files::safe_name(p.key))
    throw SweepError("point key '" + p.key.substr(0, 40) + "' cannot be a file name: " + am::files::name_problem(p.key));
  return p.key;
}

std::string claim_path(const std::string &out, const Point &p) { return out + "/claims/" + checked_key(p); }

}  // namespace

void write_file_atomic(const std::string &path, const std::string &text) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  const std::string err = am::files::write_atomic(path, text);  // mkstemp beside + rename: no planted name followed
  if (!err.empty()) throw SweepError(err);
}

std::string point_dir(const std::string &out, const Point &p) { return out + "/points/" + checked_key(p); }

namespace {

// Whose results `j` are: its sweep_point.key, else (an older attnmech's document) the key of the point.json beside
// it when that names the point by the same text; "" when neither says.
std::string identity(const nlohmann::json &j, const std::string &dir, const Point &p) {
  const auto sp = j.find("sweep_point");
  if (sp != j.end() && sp->is_object() && sp->contains("key") && (*sp)["key"].is_string())
    return (*sp)["key"].get<std::string>();
  try {
    const auto pj = am::input::parse_strict<nlohmann::json>(
        am::input::read_regular_file(dir + "/point.json", am::input::kMaxSpecBytes, "a point.json file"));
    if (pj.value("key_text", "") == p.canonical.dump()) return pj.value("key", "");
  } catch (const std::exception &) {
  }
  return "";
}

// results.json and every .npy it refers to, read by the report library's one reader: "" or its message.
std::string read_whole(const std::string &dir) {
  am_context *ctx = nullptr;
  if (am_context_create(&ctx, nullptr) != AM_OK) return "out of memory";
  am_record *doc = nullptr;
  const am_status st = am_report_read(ctx, dir.c_str(), &doc);
  const std::string why = st == AM_OK ? "" : am_context_last_error(ctx);
  am_record_destroy(&doc);
  am_context_destroy(&ctx);
  return why;
}

}  // namespace

PointCheck check_point(const std::string &out, const Point &p) {
  PointCheck c;
  const std::string dir = point_dir(out, p), file = dir + "/results.json";
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return c;  // not computed yet
  if (S_ISLNK(st.st_mode)) return c.problem = dir + " is a symbolic link (the sweep makes none; not followed)", c;
  if (!S_ISDIR(st.st_mode)) return c.problem = dir + " is " + am::input::file_kind(st.st_mode) + ", not a point", c;
  if (::lstat(file.c_str(), &st) != 0) return c.problem = file + ": missing", c;
  nlohmann::json j;
  try {
    const std::string text = am::input::read_regular_file(file, am::input::kMaxResultsBytes, "a results.json file");
    try {
      j = am::input::parse_strict<nlohmann::json>(text);
    } catch (const std::exception &e) {
      return c.problem = file + " is not valid JSON: " + e.what(), c;
    }
  } catch (const std::exception &e) {  // the reader names the file
    return c.problem = e.what(), c;
  }
  if (!j.is_object() || !j.contains("status") || !j["status"].is_string())
    return c.problem = file + ": no status", c;
  c.status = j["status"].get<std::string>();
  if (c.status != "ok" && c.status != "warning") return c;  // a failed or interrupted run: run again
  const std::string who = identity(j, dir, p);
  if (who != p.key)
    return c.problem = file + (who.empty() ? " does not say which point it is (no sweep_point, no point.json naming it)"
                                           : " is point " + who.substr(0, 40) + "'s, not this one's"), c;
  c.problem = read_whole(dir);
  c.complete = c.problem.empty();
  return c;
}

bool point_complete(const std::string &out, const Point &p, std::string *status) {
  const PointCheck c = check_point(out, p);
  if (status) *status = c.status;
  return c.complete;
}

void clear_point_dir(const std::string &out, const Point &p) {
  const std::string dir = point_dir(out, p);
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return;
  std::error_code ec;
  if (!S_ISDIR(st.st_mode)) ::unlink(dir.c_str());  // a symlink is removed, not what it names
  else if (::lstat((dir + "/results.json").c_str(), &st) != 0) fs::remove_all(dir, ec);  // never follows links inside
}

void mark_point(am_record *doc, const Point &p) {
  am_record *report = nullptr;  // `report` stays the document's last key (docs/results-schema.md)
  if (const am_record *r = am_record_get(doc, "report")) {
    if (am_record_clone(r, &report) != AM_OK) throw SweepError("out of memory");
    am_record_remove(doc, "report");
  }
  am_record *sp = am_record_object(doc, "sweep_point");
  const bool ok = sp && am_record_set_string(sp, "key", p.key.c_str()) == AM_OK &&
                  am_record_set_string(sp, "key_text", p.canonical.dump().c_str()) == AM_OK &&
                  (!report || am_record_set_copy(doc, "report", report) == AM_OK);
  am_record_destroy(&report);
  if (!ok) throw SweepError("out of memory");
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

void ensure_point_json(const std::string &out, const Point &p, const std::string &status) {
  std::error_code ec;
  if (!fs::exists(point_dir(out, p) + "/point.json", ec)) write_point_json(out, p, status, "");
}

void write_spec_json(const std::string &out, const Spec &spec) {
  ojson j = spec.source;
  write_file_atomic(out + "/spec.json", j.dump(1) + "\n");
}

namespace {

// A claim file whose text is not "<pid> <host>" (empty, garbage, a planted link) is no claim of a live sweep: since
// 3.x claims appear whole (linked from a written file), and an older attnmech wrote its one line right after creating
// it. Held for this long after its time (so such a writer finishes), stale after; a time in the future (clock skew,
// a touched file) counts as old: before, such a file held its point for as long as its time said (issue 37).
constexpr time_t kUnparsableClaimSeconds = 2;

// Who holds a claim, from its text "<pid> <host>\n"; stale = a process of this host that is gone, or text that is
// not a claim (above). false with *holder set when the claim is held.
bool claim_is_stale(const std::string &path, std::string *holder) {
  std::string text(256, '\0');  // a claim is one short line; a planted symlink, FIFO or device is not read
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  struct stat fst {};
  const ssize_t n = fd >= 0 && ::fstat(fd, &fst) == 0 && S_ISREG(fst.st_mode) ? ::read(fd, &text[0], text.size()) : -1;
  if (fd >= 0) ::close(fd);
  text.resize(n > 0 ? static_cast<size_t>(n) : 0);
  long pid = 0;
  std::string host;
  std::istringstream fields(text);
  if (!(fields >> pid >> host) || pid <= 0) {
    struct stat st {};
    const time_t age = ::lstat(path.c_str(), &st) == 0 ? time(nullptr) - st.st_mtime : 0;
    if (age > kUnparsableClaimSeconds || age < -kUnparsableClaimSeconds) return true;
    *holder = "another sweep";
    return false;
  }
  if (hostname() == host && (pid == getpid() || (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)))
    return true;
  *holder = "pid " + std::to_string(pid) + " on " + host;  // a live process, or one on another host
  return false;
}

// An exclusive flock on DIR/.claims-lock for as long as it lives: stale-claim takeovers are serialised, so a
// taker judges and removes a claim with no other taker in between. Opened without following a planted symlink
// (O_NOFOLLOW) and without blocking on a planted FIFO (O_NONBLOCK, then a regular file is required).
class TakeoverLock {
 public:
  explicit TakeoverLock(const std::string &out) {
    const std::string path = out + "/.claims-lock";
    fd_ = ::open(path.c_str(), O_RDONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
    struct stat st {};
    if (fd_ < 0 || ::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode))
      fail("cannot open the claim lock " + path + (fd_ < 0 ? std::string(": ") + std::strerror(errno) : ": not a file"));
    while (::flock(fd_, LOCK_EX) != 0)
      if (errno != EINTR) fail("cannot lock " + path + ": " + std::strerror(errno));
  }
  ~TakeoverLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  TakeoverLock(const TakeoverLock &) = delete;
  TakeoverLock &operator=(const TakeoverLock &) = delete;

 private:
  int fd_ = -1;
  [[noreturn]] void fail(const std::string &msg) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    throw SweepError(msg);
  }
};

}  // namespace

bool try_claim(const std::string &out, const Point &p, std::string *holder) {
  const std::string path = claim_path(out, p);
  std::error_code ec;
  fs::create_directories(out + "/claims", ec);
  const std::string me = std::to_string(getpid()) + " " + hostname() + "\n";
  // The claim appears whole or not at all: written to a private file first (mkstemp: an unpredictable name made
  // with O_EXCL, so nothing planted in the shared DIR is followed), then hard-linked to its name (link fails with
  // EEXIST when the name is taken, atomically, also on NFS; it never follows a symlink planted at the name).
  fs::create_directories(out + "/.claims-pending", ec);
  std::string tmpl = out + "/.claims-pending/" + p.key + ".XXXXXX";
  const int fd = ::mkostemp(tmpl.data(), O_CLOEXEC);
  const std::string &mine = tmpl;
  if (fd < 0) throw SweepError("cannot write a claim file in " + out + "/.claims-pending: " + std::strerror(errno));
  const bool ok = am::files::write_all(fd, me) && ::fchmod(fd, 0644) == 0;
  const int err = errno;
  ::close(fd);
  struct Unlink {
    const std::string &f;
    ~Unlink() { ::unlink(f.c_str()); }
  } unlink_mine{mine};
  if (!ok) throw SweepError("cannot write the claim file " + mine + ": " + std::strerror(err));
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (::link(mine.c_str(), path.c_str()) == 0) return true;
    if (errno != EEXIST) throw SweepError("cannot create the claim file " + path + ": " + std::strerror(errno));
    if (!claim_is_stale(path, holder)) return false;
    // Stale: take it over. Judged again under the lock: between the first look and the lock another taker may have
    // removed it and linked its own (live) claim, which must not be removed. Under the lock the name can change
    // only by a link (refused while the stale file is there) or its dead owner (gone), so what is judged is removed.
    TakeoverLock lock(out);
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) continue;  // removed meanwhile: link again
    if (!claim_is_stale(path, holder)) return false;
    const std::string stale = path + ".stale-" + am::files::owner_tag();
    if (::rename(path.c_str(), stale.c_str()) == 0) ::unlink(stale.c_str());
  }
  *holder = "another sweep (claim contended)";
  return false;
}

void release_claim(const std::string &out, const Point &p) { ::unlink(claim_path(out, p).c_str()); }

void drop_stale_claim(const std::string &out, const Point &p) {
  const std::string path = claim_path(out, p);
  struct stat st {};
  std::string holder;
  if (::lstat(path.c_str(), &st) != 0 || !claim_is_stale(path, &holder)) return;
  TakeoverLock lock(out);  // judged again under the lock, as a takeover is
  if (::lstat(path.c_str(), &st) != 0 || !claim_is_stale(path, &holder)) return;
  const std::string stale = path + ".stale-" + am::files::owner_tag();
  if (::rename(path.c_str(), stale.c_str()) == 0) ::unlink(stale.c_str());
}

}  // namespace am::sweep
