// attnmech CLI — log lines and the progress line on stderr: the context's log and progress callbacks.
// Log lines always (warnings and errors even with --quiet, debug lines only with --verbose); the progress
// line only when stderr is a terminal, redrawn in place at most every 80 ms.
#include "cli.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

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

extern "C" int progress_sink(void *user, double done, double total, const char *label) {
  auto *s = static_cast<Sinks *>(user);
  if (!s->tty || s->quiet) return 0;
  const auto now = std::chrono::steady_clock::now();
  if (now - s->last <= std::chrono::milliseconds(80) && done < total) return 0;
  s->last = now;
  draw_progress(done, total, label);
  s->line_open = true;
  return 0;  // never cancels: Ctrl-C cancels through the context (attnmech.cpp)
}

}  // namespace

void attach_sinks(am_context_settings *cs, Sinks *sinks) {
  cs->log = log_sink;
  cs->log_user = sinks;
  cs->progress = progress_sink;
  cs->progress_user = sinks;
}

}  // namespace am::cli
