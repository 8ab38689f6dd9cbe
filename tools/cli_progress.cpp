// attnmech CLI — log lines and the progress line on stderr: the context's log and progress callbacks.
// Log lines always (warnings and errors even with --quiet, debug lines only with --verbose); the progress
// line redrawn in place at most every 80 ms when stderr is a terminal, else (start_piped) a line of its own
// every AM_PROGRESS_SECONDS from a timer thread.
#include "cli.hpp"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace am::cli {

void Sinks::clear_line() {
  if (!line_open) return;
  std::fputs("\r\033[K", stderr);
  line_open = false;
}

namespace {

extern "C" void log_sink(void *user, am_log_level level, const char *msg) {
  auto *s = static_cast<Sinks *>(user);
  if (level == AM_LOG_DEBUG && !s->verbose) return;
  if (level < AM_LOG_WARN && s->quiet) return;
  s->clear_line();
  const char *tag = level == AM_LOG_ERROR ? "error: " : level == AM_LOG_WARN ? "warning: " : "";
  std::fprintf(stderr, "%s%s\n", tag, msg ? msg : "");
}

// "label 3/10" for whole counts, else "label  30%".
void draw_progress(double done, double total, const char *label) {
  char buf[64] = "";
  if (total > 0 && total <= 1e6 && done == std::floor(done) && total == std::floor(total))
    std::snprintf(buf, sizeof buf, " %.0f/%.0f", done, total);
  else if (total > 0)
    std::snprintf(buf, sizeof buf, " %3.0f%%", 100.0 * std::min(1.0, done / total));
  std::fprintf(stderr, "\r\033[K%s%s", label ? label : "", buf);
  std::fflush(stderr);
}

// The run's report kept for the timer thread: a new label starts a new phase (and a new ETA rate).
void remember_phase(Sinks *s, double done, double total, const char *label) {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(s->mu);
  Sinks::Phase &p = s->phase;
  const std::string l = label ? label : "";
  if (!p.seen || l != p.label || done < p.done) {
    p.label = l;
    p.done_at_start = done;
    p.started = now;
  }
  p.done = done;
  p.total = total;
  p.updated = now;
  p.seen = true;
}

extern "C" int progress_sink(void *user, double done, double total, const char *label) {
  auto *s = static_cast<Sinks *>(user);
  if (s->quiet) return 0;
  if (!s->tty) {
    if (s->timer.joinable()) remember_phase(s, done, total, label);
    return 0;
  }
  const auto now = std::chrono::steady_clock::now();
  if (now - s->last <= std::chrono::milliseconds(80) && done < total) return 0;
  s->last = now;
  draw_progress(done, total, label);
  s->line_open = true;
  return 0;  // never cancels: Ctrl-C cancels through the context (attnmech.cpp)
}

// "42 s", "3 min 5 s", "2 h 10 min".
std::string duration_text(double secs) {
  char buf[48];
  const long t = std::lround(std::max(0.0, secs));
  if (t < 60) std::snprintf(buf, sizeof buf, "%ld s", t);
  else if (t < 3600) std::snprintf(buf, sizeof buf, "%ld min %ld s", t / 60, t % 60);
  else std::snprintf(buf, sizeof buf, "%ld h %ld min", t / 3600, (t % 3600) / 60);
  return buf;
}

// Signals go to the main thread, whose handler cancels the run (attnmech.cpp).
void block_stop_signals_here() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&set, sig);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

void piped_progress_loop(Sinks *s) {
  block_stop_signals_here();
  const auto every = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(piped_progress_seconds()));
  std::unique_lock<std::mutex> lock(s->mu);
  auto next = s->run_started + every;
  while (!s->wake.wait_until(lock, next, [s] { return s->stopping; })) {
    const auto now = std::chrono::steady_clock::now();
    const std::string line = piped_progress_line(s->phase, s->run_started, now);
    std::fprintf(stderr, "%s\n", line.c_str());  // one call: whole lines between log lines
    std::fflush(stderr);
    next += every;
    if (next < now) next = now + every;  // a suspended process does not print a burst of lines
  }
}

}  // namespace

double piped_progress_seconds() {
  const char *e = std::getenv("AM_PROGRESS_SECONDS");
  char *end = nullptr;
  const double v = e ? std::strtod(e, &end) : 30.0;
  // Below 10 ms the lines would be noise even in a test; a bad value keeps the default.
  return e && end != e && *end == '\0' && v >= 0.01 && v <= 1e6 ? v : 30.0;
}

std::string piped_progress_line(const Sinks::Phase &p, std::chrono::steady_clock::time_point run_started,
                                std::chrono::steady_clock::time_point now) {
  using secs = std::chrono::duration<double>;
  std::string line = "attnmech: progress " + duration_text(secs(now - run_started).count()) + ": ";
  if (!p.seen) return line + "running (no phase reported yet)";
  line += p.label.empty() ? std::string("running") : p.label;
  char buf[96] = "";
  const bool whole = p.done == std::floor(p.done) && p.total == std::floor(p.total) && p.total <= 1e9;
  if (p.total > 0 && whole)
    std::snprintf(buf, sizeof buf, " %.0f/%.0f (%.0f%%)", p.done, p.total, 100.0 * std::min(1.0, p.done / p.total));
  else if (p.total > 0)
    std::snprintf(buf, sizeof buf, " %.0f%%", 100.0 * std::min(1.0, p.done / p.total));
  line += buf;
  // ETA from this phase's own rate up to its last report, once it has moved (a phase that reports no total has
  // none), less the time since that report.
  const double in_phase = secs(p.updated - p.started).count();
  if (p.total > 0 && p.done > p.done_at_start && p.done < p.total && in_phase > 0) {
    const double rate = (p.done - p.done_at_start) / in_phase;
    const double left = (p.total - p.done) / rate - secs(now - p.updated).count();
    line += ", ETA " + (left >= 1 ? duration_text(left) : std::string("any moment"));
  }
  // A phase that stopped reporting (a long step without a count, or the next phase not yet named) says so.
  const double quiet_for = secs(now - p.updated).count();
  if (quiet_for >= std::max(5.0, piped_progress_seconds())) line += "; last report " + duration_text(quiet_for) + " ago";
  return line;
}

void Sinks::start_piped() {
  if (tty || quiet || timer.joinable()) return;
  run_started = std::chrono::steady_clock::now();
  stopping = false;
  timer = std::thread(piped_progress_loop, this);
}

void Sinks::stop_piped() {
  if (!timer.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu);
    stopping = true;
  }
  wake.notify_all();
  timer.join();
}

void attach_sinks(am_context_settings *cs, Sinks *sinks) {
  cs->log = log_sink;
  cs->log_user = sinks;
  cs->progress = progress_sink;
  cs->progress_user = sinks;
}

}  // namespace am::cli
