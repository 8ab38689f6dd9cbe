// The CLI's progress text (tools/cli_progress.cpp, tools/progress_trend.cpp) on synthetic report sequences: an
// open-ended loop's ETA comes from its stopping measure's trend against the tolerance, never from its iteration cap;
// no ETA until the trend can be estimated; counted phases keep their rate ETA.
#include <doctest/doctest.h>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "cli.hpp"

using am::cli::ConvergenceTrend;
using am::cli::Sinks;
using clock_type = std::chrono::steady_clock;

namespace {

clock_type::time_point at(double s) {
  return clock_type::time_point() + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(s));
}

// r(t) = r0 · exp(−k t), one report a second for n seconds: ln r falls at k per second.
ConvergenceTrend geometric(double r0, double k, int n, double noise = 0) {
  ConvergenceTrend tr;
  for (int i = 0; i < n; ++i) {
    const double wobble = i % 2 ? noise : -noise;  // deterministic: ±noise on ln r, alternating
    tr.add(i, r0 * std::exp(-k * i + wobble), 1.0);
  }
  return tr;
}

bool contains(const std::string &s, const std::string &part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("ETA of a converging sequence: where the measure's log-linear trend meets the tolerance") {
  // measure / tolerance = 1e4 · 2^−t: at t = 9 it is 19.53, 4.29 s of halvings from 1.
  const ConvergenceTrend tr = geometric(1e4, std::log(2.0), 10);
  CHECK(tr.last_ratio() == doctest::Approx(1e4 / 512).epsilon(1e-12));
  CHECK(tr.eta() == doctest::Approx(std::log(1e4 / 512) / std::log(2.0)).epsilon(1e-9));
  // The units of measure and tolerance do not matter, only their ratio.
  ConvergenceTrend units;
  for (int i = 0; i < 10; ++i) units.add(i, 3e-3 * std::pow(0.5, i), 3e-7);
  CHECK(units.eta() == doctest::Approx(std::log(1e4 / 512) / std::log(2.0)).epsilon(1e-9));
  // ±5 % around the trend (L-BFGS's gradient norm wobbles): within 10 % of the noiseless ETA.
  const ConvergenceTrend noisy = geometric(1e4, std::log(2.0), 10, 0.05);
  CHECK(noisy.eta() == doctest::Approx(tr.eta()).epsilon(0.1));
  // Past the tolerance on the fitted line: any moment.
  CHECK(geometric(4, 1.0, 10).eta() == 0.0);
}

TEST_CASE("ETA of a converging sequence: the recent trend counts, a slowdown lengthens it") {
  // Fast for 10 s (ln r falls 1/s), then 10 times slower: the ETA follows the slow recent half.
  ConvergenceTrend tr;
  double y = std::log(1e8);
  for (int i = 0; i < 20; ++i) {
    tr.add(i, std::exp(y), 1.0);
    y -= i < 10 ? 1.0 : 0.1;
  }
  const double y_last = std::log(1e8) - 10 - 0.1 * 9;
  CHECK(tr.eta() == doctest::Approx(y_last / 0.1).epsilon(1e-6));
}

TEST_CASE("no ETA until it can be estimated: too few reports, a flat, rising or erratic measure, no measure") {
  CHECK(std::isnan(ConvergenceTrend().eta()));
  CHECK(std::isnan(geometric(1e4, 0.5, 3).eta()));       // 3 reports: too few
  CHECK(std::isnan(geometric(1e4, 0.0, 20).eta()));      // flat
  CHECK(std::isnan(geometric(1e4, -0.1, 20).eta()));     // rising
  CHECK(std::isnan(geometric(1e4, 0.01, 20, 1.0).eta()));  // a faint trend drowned in noise
  ConvergenceTrend unknown;  // a rule that cannot tell yet (NaN), or no tolerance: nothing to extrapolate
  for (int i = 0; i < 10; ++i) unknown.add(i, NAN, 1.0), unknown.add(i, 1.0, 0.0);
  CHECK(unknown.empty());
  CHECK(std::isnan(unknown.eta()));
  ConvergenceTrend instant;  // every report at one instant: no rate
  for (int i = 0; i < 10; ++i) instant.add(0, 100.0 / (i + 1), 1.0);
  CHECK(std::isnan(instant.eta()));
}

TEST_CASE("a jump of the measure (the nearest rule changed) starts the trend again instead of reading a rate") {
  // The gradient rule at 1e7 x its tolerance for 6 reports, then the window rule, 400x and falling 20 % a second.
  ConvergenceTrend tr;
  for (int i = 0; i < 6; ++i) tr.add(i, 1e7 * std::pow(0.9, i), 1.0);
  for (int i = 6; i < 18; ++i) tr.add(i, 400 * std::pow(0.8, i - 6), 1.0);
  CHECK(tr.size() == 12);
  CHECK(tr.eta() == doctest::Approx(std::log(400 * std::pow(0.8, 11)) / -std::log(0.8)).epsilon(1e-9));
}

TEST_CASE("a long phase keeps a bounded trend over its whole span") {
  ConvergenceTrend tr = geometric(1e30, 0.01, 5000);
  CHECK(tr.size() <= ConvergenceTrend::kMaxPoints);
  CHECK(tr.eta() == doctest::Approx((std::log(1e30) - 0.01 * 4999) / 0.01).epsilon(1e-6));
}

TEST_CASE("progress line of an open-ended loop: its iteration and distance, never a share of max_iter") {
  // run msa on DHFR as issue 36 saw it: "L-BFGS 22/5000 (0%), ETA 1 h 39 min" and done 3 min later. Now the line
  // names the iteration and the stopping measure's distance, and an ETA only from that measure's trend.
  Sinks::Phase p;
  am::cli::remember_report(&p, at(0), 1, 0, "[run 1/1] L-BFGS", true, NAN, 1.0);  // the window rule cannot tell yet
  CHECK(am::cli::phase_text(p, at(0.5)) == "[run 1/1] L-BFGS iteration 1, no ETA yet");
  for (int i = 2; i <= 22; ++i)  // an iteration every 8 s; the distance halves every 8 iterations: 177x at 22
    am::cli::remember_report(&p, at(8.0 * (i - 1)), i, 0, "[run 1/1] L-BFGS", true,
                             1e3 * std::pow(0.5, (i - 2) / 8.0), 1.0);
  // log2(176.8) = 7.47 halvings of 64 s each: 478 s after the last report (at 168 s)
  CHECK(am::cli::phase_text(p, at(168)) == "[run 1/1] L-BFGS iteration 22 (177x its tolerance), ETA 7 min 58 s");
  Sinks::Phase q;
  for (int i = 1; i <= 10; ++i)
    am::cli::remember_report(&q, at(i), i, 0, "L-BFGS", true, 1e6 * std::pow(0.5, i), 1.0);  // r(10) = 976.6
  // ln(976.6)/ln 2 = 9.93 s after the last report; 2 s later, 8 s left.
  CHECK(am::cli::phase_text(q, at(12)) == "L-BFGS iteration 10 (977x its tolerance), ETA 8 s");
  const std::string piped = am::cli::piped_progress_line(q, at(0), at(12));
  CHECK(piped == "attnmech: progress 12 s: L-BFGS iteration 10 (977x its tolerance), ETA 8 s");
  // at its tolerance
  am::cli::remember_report(&q, at(13), 11, 0, "L-BFGS", true, 0.5, 1.0);
  CHECK(contains(am::cli::phase_text(q, at(13)), "L-BFGS iteration 11 (at its tolerance)"));
}

TEST_CASE("progress line of a counted phase: count, share and a rate ETA; a count without a total has none") {
  Sinks::Phase p;
  am::cli::remember_report(&p, at(0), 0, 10, "sampling", false);
  am::cli::remember_report(&p, at(5), 5, 10, "sampling", false);
  CHECK(am::cli::phase_text(p, at(5)) == "sampling 5/10 (50%), ETA 5 s");
  // A label that carries its own counts stays one phase (the posterior's chains), so its rate holds.
  Sinks::Phase c;
  am::cli::remember_report(&c, at(0), 0, 400, "posterior | c1 warm-up 0/100 div 0", false);
  am::cli::remember_report(&c, at(10), 100, 400, "posterior | c1 warm-up 50/100 div 3", false);
  CHECK(am::cli::phase_text(c, at(10)) == "posterior | c1 warm-up 50/100 div 3 100/400 (25%), ETA 30 s");
  // An open-ended count from a host-less loop (progress with total 0): the count alone.
  Sinks::Phase o;
  am::cli::remember_report(&o, at(0), 7, 0, "newton", false);
  CHECK(am::cli::phase_text(o, at(1)) == "newton 7");
}

TEST_CASE("piped progress: a phase whose ETA came due is followed by the next phase at once, not an interval later") {
  // Issue 36: "sampling 9728/10000, ETA 1 s", then silence until the next 30 s line while the fit ran. The timer
  // now prints the next phase when it begins, if the last line promised an end before the next regular line.
  char path[] = "/tmp/am_progress_XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  std::fflush(stderr);
  const int saved = dup(2);
  dup2(fd, 2);
  setenv("AM_PROGRESS_SECONDS", "1.5", 1);
  {
    Sinks s;
    am_context_settings cs;
    am_context_default_settings(&cs);
    am::cli::attach_sinks(&cs, &s);
    s.start_piped();
    cs.progress(cs.progress_user, 0, 10, "sampling");
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    cs.progress(cs.progress_user, 5, 10, "sampling");  // ETA 0.3 s: due before the next line (at 1.5 s)
    std::this_thread::sleep_for(std::chrono::milliseconds(1400));  // the line at 1.5 s: "ETA any moment"
    cs.convergence(cs.convergence_user, 1, 50, 1, "L-BFGS");          // the next phase, at 1.7 s: told at once
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    s.stop_piped();
  }
  unsetenv("AM_PROGRESS_SECONDS");
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(fd);
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  std::remove(path);
  REQUIRE(lines.size() == 2);  // the regular line at 1.5 s and the early one at 1.7 s (the next regular: 3 s)
  CHECK(contains(lines[0], "sampling 5/10 (50%), ETA any moment"));
  CHECK(lines[1] == "attnmech: progress 2 s: L-BFGS iteration 1 (50x its tolerance), no ETA yet");
}
