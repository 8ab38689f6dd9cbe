// attnmech CLI — log lines and the progress line on stderr: the context's log and progress callbacks.
// Log lines always (warnings and errors even with --quiet, debug lines only with --verbose); the progress
// line redrawn in place at most every 80 ms when stderr is a terminal, else (start_piped) a line of its own
// every AM_PROGRESS_SECONDS from a timer thread.
#include "cli.hpp"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cctype>
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

// The phase line redrawn in place on a terminal.
void draw_progress(const std::string &text) {
  std::fprintf(stderr, "\r\033[K%s", text.c_str());
  std::fflush(stderr);
}

// A new phase wakes the piped timer: when its last line promised an end that has come (an ETA now due), the
// next phase is told at once instead of a whole interval later (issue 36: "ETA 2 s", then 25 s of silence).
void remember(Sinks *s, double done, double total, const char *label, bool open, double measure, double target) {
  bool fresh;
  {
    std::lock_guard<std::mutex> lock(s->mu);
    fresh = remember_report(&s->phase, std::chrono::steady_clock::now(), done, total, label, open, measure, target);
    s->phase_changed = s->phase_changed || fresh;
  }
  if (fresh && s->timer.joinable()) s->wake.notify_all();
}

// Both sinks: the phase remembered (the piped timer prints it), on a terminal the line redrawn (at most every 80 ms).
int report(Sinks *s, double done, double total, const char *label, bool open, double measure, double target) {
  if (s->quiet) return 0;
  if (!s->tty) {
    if (s->timer.joinable()) remember(s, done, total, label, open, measure, target);
    return 0;
  }
  remember(s, done, total, label, open, measure, target);
  const auto now = std::chrono::steady_clock::now();
  if (now - s->last <= std::chrono::milliseconds(80) && (open || total <= 0 || done < total)) return 0;
  s->last = now;
  std::string text;
  {
    std::lock_guard<std::mutex> lock(s->mu);
    text = phase_text(s->phase, now);
  }
  draw_progress(text);
  s->line_open = true;
  return 0;  // never cancels: Ctrl-C cancels through the context (attnmech.cpp)
}

extern "C" int progress_sink(void *user, double done, double total, const char *label) {
  return report(static_cast<Sinks *>(user), done, total, label, false, 0, 0);
}

extern "C" int convergence_sink(void *user, double iter, double measure, double target, const char *label) {
  return report(static_cast<Sinks *>(user), iter, 0, label, true, measure, target);
}

// The label less its numbers: "sampler | c1 warm-up 12/500 div 0" and "… 13/500 div 1" are one phase.
std::string phase_key(const std::string &label) {
  std::string k;
  for (char c : label)
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.') k += c;
  return k;
}

// "340x", "3.1e+05x", "2.5x" (the distance measure / target of an open-ended phase).
std::string ratio_text(double r) {
  char b[32];
  std::snprintf(b, sizeof b, r < 10 ? "%.1fx" : r < 1e4 ? "%.0fx" : "%.1ex", r);
  return b;
}

// ", ETA 3 min 5 s" / ", ETA any moment".
std::string eta_text(double left) { return ", ETA " + (left >= 1 ? duration_text(left) : std::string("any moment")); }

}  // namespace

bool remember_report(Sinks::Phase *p, std::chrono::steady_clock::time_point now, double done, double total,
                     const char *label, bool open, double measure, double target) {
  const std::string l = label ? label : "";
  const std::string key = phase_key(l) + (open ? "\n(open-ended)" : "");
  const bool fresh = !p->seen || key != p->key || done < p->done;
  if (fresh) {
    p->key = key;
    p->done_at_start = done;
    p->started = now;
    p->trend.clear();
  }
  p->label = l;
  p->open_ended = open;
  p->done = done;
  p->total = total;
  p->updated = now;
  p->seen = true;
  if (open) p->trend.add(std::chrono::duration<double>(now - p->started).count(), measure, target);
  return fresh;
}

double phase_eta(const Sinks::Phase &p, std::chrono::steady_clock::time_point now) {
  using secs = std::chrono::duration<double>;
  if (!p.seen) return NAN;
  const double since = secs(now - p.updated).count();
  if (p.open_ended) return p.trend.eta() - since;  // NaN while the trend cannot tell
  // A count's own rate up to its last report, once it has moved (none without a total).
  const double in_phase = secs(p.updated - p.started).count();
  if (!(p.total > 0 && p.done > p.done_at_start && p.done < p.total && in_phase > 0)) return NAN;
  return (p.total - p.done) / ((p.done - p.done_at_start) / in_phase) - since;
}

std::string phase_text(const Sinks::Phase &p, std::chrono::steady_clock::time_point now) {
  std::string line = p.label.empty() ? std::string("running") : p.label;
  char buf[96] = "";
  const double eta = phase_eta(p, now);
  if (p.open_ended) {  // an iteration, the distance to the stop, and the ETA from its trend only
    std::snprintf(buf, sizeof buf, " iteration %.0f", p.done);
    line += buf;
    const double r = p.trend.last_ratio();
    if (std::isfinite(r)) line += r > 1 ? " (" + ratio_text(r) + " its tolerance)" : " (at its tolerance)";
    return line + (std::isfinite(eta) ? eta_text(eta) : ", no ETA yet");
  }
  const bool whole = p.done == std::floor(p.done) && p.total == std::floor(p.total) && p.total <= 1e9;
  if (p.total > 0 && whole)
    std::snprintf(buf, sizeof buf, " %.0f/%.0f (%.0f%%)", p.done, p.total, 100.0 * std::min(1.0, p.done / p.total));
  else if (p.total > 0)
    std::snprintf(buf, sizeof buf, " %.0f%%", 100.0 * std::min(1.0, p.done / p.total));
  else if (p.done > 0 && p.done == std::floor(p.done))  // a count without a total: no share, no ETA
    std::snprintf(buf, sizeof buf, " %.0f", p.done);
  return line + buf + (std::isfinite(eta) ? eta_text(eta) : "");
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

namespace {

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
  // The last line's ETA fell before the next regular line (`promised`): the phase that follows is told at once.
  bool promised = false;
  for (;;) {
    const bool woken = s->wake.wait_until(lock, next, [&] { return s->stopping || (s->phase_changed && promised); });
    if (s->stopping) break;
    const auto now = std::chrono::steady_clock::now();
    const std::string line = piped_progress_line(s->phase, s->run_started, now);
    std::fprintf(stderr, "%s\n", line.c_str());  // one call: whole lines between log lines
    std::fflush(stderr);
    s->phase_changed = false;
    const bool regular = !woken || now >= next;  // an early line leaves the regular ones at their times
    if (regular) next += every;
    if (next < now) next = now + every;  // a suspended process does not print a burst of lines
    const double eta = phase_eta(s->phase, now);
    promised = std::isfinite(eta) && now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                             std::chrono::duration<double>(std::max(0.0, eta))) < next;
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
  line += phase_text(p, now);
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
  cs->convergence = convergence_sink;
  cs->convergence_user = sinks;
}

}  // namespace am::cli
