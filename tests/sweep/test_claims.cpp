// Claims in a shared sweep DIR (tools/sweep/store.cpp): a symlink planted at a claim's name or in
// .claims-pending is never written through, and a stale claim taken over by several sweeps at once ends with
// exactly one owner (the old read → rename takeover could remove a claim another taker had just made).
#include "../temp_dir.hpp"
#include <doctest/doctest.h>

#include "sweep.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

using am_test::slurp;
using am_test::dead_pid;
using am_test::TempDir;

namespace {

std::string host() {
  char b[HOST_NAME_MAX + 1] = "";
  gethostname(b, sizeof b - 1);
  return b;
}


}  // namespace

TEST_CASE("claims: a planted symlink at the claim name or the lock is not followed; the point stays held") {
  TempDir t("attnmech-claims");
  const std::string out = t.path.string();
  am::sweep::Point p;
  p.key = "0123456789abcdef";
  fs::create_directories(t.path / "claims");
  std::ofstream(t.path / "victim") << "precious";
  fs::create_symlink(t.path / "victim", t.path / "claims" / p.key);  // someone else's file behind the name
  std::string holder;
  CHECK_FALSE(am::sweep::try_claim(out, p, &holder));  // a link is not a claim of ours: held (young, not parsable)
  CHECK(holder == "another sweep");
  CHECK(slurp(t.path / "victim") == "precious");
  // Planted lock file as a symlink to the victim: refused with a message, the victim untouched.
  fs::remove(t.path / "claims" / p.key);
  std::ofstream(t.path / "claims" / p.key) << dead_pid() << " " << host() << "\n";  // stale: needs the lock
  fs::create_symlink(t.path / "victim", t.path / ".claims-lock");
  CHECK_THROWS_WITH_AS(am::sweep::try_claim(out, p, &holder), doctest::Contains("cannot open the claim lock"),
                       am::sweep::SweepError);
  CHECK(slurp(t.path / "victim") == "precious");
  fs::remove(t.path / ".claims-lock");
  REQUIRE(am::sweep::try_claim(out, p, &holder));  // now taken over
  CHECK(slurp(t.path / "claims" / p.key) == std::to_string(getpid()) + " " + host() + "\n");
  CHECK(slurp(t.path / "victim") == "precious");
  am::sweep::release_claim(out, p);
  CHECK(!fs::exists(t.path / "claims" / p.key));
}

TEST_CASE("claims: an empty or unparsable claim holds its point for 2 s after its time, never longer") {
  // Issue 37 item 8: such a file (no sweep writes one) held its point for a minute, and for as long as a time in
  // the future said.
  TempDir t("attnmech-claims");
  const std::string out = t.path.string();
  am::sweep::Point p;
  p.key = "00112233445566ff";
  fs::create_directories(t.path / "claims");
  const fs::path claim = t.path / "claims" / p.key;
  const auto now = fs::file_time_type::clock::now();
  std::string holder;
  for (const char *text : {"", "garbage\n", "-5 host\n"}) {
    CAPTURE(text);
    std::ofstream(claim) << text;
    CHECK_FALSE(am::sweep::try_claim(out, p, &holder));  // just written: a writer of an older attnmech may be at it
    CHECK(holder == "another sweep");
    fs::last_write_time(claim, now - std::chrono::seconds(10));
    REQUIRE(am::sweep::try_claim(out, p, &holder));  // 10 s old: stale, taken over
    CHECK(slurp(claim) == std::to_string(getpid()) + " " + host() + "\n");
    am::sweep::release_claim(out, p);
    std::ofstream(claim) << text;
    fs::last_write_time(claim, now + std::chrono::hours(24));  // a day ahead: not trusted either
    REQUIRE(am::sweep::try_claim(out, p, &holder));
    am::sweep::release_claim(out, p);
  }
  CHECK(!fs::exists(claim));
}

TEST_CASE("claims: N concurrent takers of a stale claim → exactly one owner, every round") {
  // 8 processes released together by a pipe try to take the same stale claim; each reports whether it owns the
  // point and keeps running (its claim stays live) until all have answered. 40 rounds: the old takeover gave two
  // owners in some rounds on a 2-core machine; one owner is the only correct answer, so no tolerance.
  TempDir t("attnmech-claims");
  const std::string out = t.path.string();
  am::sweep::Point p;
  p.key = "fedcba9876543210";
  fs::create_directories(t.path / "claims");
  constexpr int kTakers = 8, kRounds = 40;
  for (int round = 0; round < kRounds; ++round) {
    CAPTURE(round);
    { std::ofstream(t.path / "claims" / p.key) << dead_pid() << " " << host() << "\n"; }
    int go[2], answers[2], done[2];
    REQUIRE(pipe(go) == 0);
    REQUIRE(pipe(answers) == 0);
    REQUIRE(pipe(done) == 0);
    std::vector<pid_t> kids;
    for (int k = 0; k < kTakers; ++k) {
      const pid_t c = fork();
      REQUIRE(c >= 0);
      if (c == 0) {
        close(go[1]);
        close(answers[0]);
        close(done[1]);
        char b;
        if (read(go[0], &b, 1) != 1) _exit(3);
        std::string holder;
        char mine = 'n';
        try {
          mine = am::sweep::try_claim(out, p, &holder) ? 'y' : 'n';
        } catch (...) {
          mine = 'e';
        }
        if (write(answers[1], &mine, 1) != 1) _exit(3);
        if (read(done[0], &b, 1) < 0) _exit(3);  // EOF when the parent closes: all have answered
        _exit(0);
      }
      kids.push_back(c);
    }
    close(go[0]);
    close(answers[1]);
    close(done[0]);
    const std::string start(kTakers, 'g');
    REQUIRE(write(go[1], start.data(), start.size()) == static_cast<ssize_t>(start.size()));
    int owners = 0, errors = 0;
    for (int k = 0; k < kTakers; ++k) {
      char a = 0;
      REQUIRE(read(answers[0], &a, 1) == 1);
      owners += a == 'y';
      errors += a == 'e';
    }
    close(done[1]);
    for (pid_t c : kids) waitpid(c, nullptr, 0);
    close(go[1]);
    close(answers[0]);
    CHECK(owners == 1);
    CHECK(errors == 0);
    fs::remove(t.path / "claims" / p.key);
  }
  CHECK(fs::is_empty(t.path / ".claims-pending"));  // every private claim file removed
}
