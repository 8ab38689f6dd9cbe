// attnmech CLI — the time left of an open-ended loop (L-BFGS, Newton: am_context_convergence) from the trend of its
// stopping rule's measure against the rule's tolerance. Never from the iteration cap: a loop that reports 22 of at
// most 5000 iterations may end at 34. Self-contained (no library calls), so a test feeds it synthetic sequences.
#ifndef ATTNMECH_TOOLS_PROGRESS_TREND_HPP
#define ATTNMECH_TOOLS_PROGRESS_TREND_HPP

#include <cstddef>
#include <vector>

namespace am::cli {

// The reports of one open-ended phase: at `t` seconds, the rule's distance r = measure / target (> 1: not there;
// the loop stops once r ≤ 1). The ETA is where a least-squares line through ln r over the recent half of the
// phase's time reaches 0 — linear convergence makes ln r fall linearly — and only while that line falls clearly
// (its slope at least twice its standard error, from at least kMinPoints reports): a measure that stalls, rises
// or jumps about gives no ETA.
class ConvergenceTrend {
 public:
  static constexpr size_t kMinPoints = 4;
  static constexpr size_t kMaxPoints = 256;  // beyond: every other older point dropped (the span is kept)
  static constexpr double kJump = 1000;      // a factor between two reports that starts the trend again
  void clear() { pts_.clear(); }
  // A report; a NaN, infinite or non-positive measure or a target ≤ 0 (no distance known) adds nothing.
  void add(double t, double measure, double target);
  bool empty() const { return pts_.empty(); }
  size_t size() const { return pts_.size(); }
  // The last known distance measure / target (NaN when none).
  double last_ratio() const;
  // Seconds from the last report to r = 1, or NaN when not estimable (see above); 0 when the fitted r is ≤ 1.
  double eta() const;

 private:
  struct Point {
    double t, y;  // y = ln r
  };
  std::vector<Point> pts_;
};

}  // namespace am::cli
#endif
