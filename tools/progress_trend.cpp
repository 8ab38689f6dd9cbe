// attnmech CLI — the ETA of an open-ended loop from its convergence trend (see progress_trend.hpp).
#include "progress_trend.hpp"

#include <cmath>

namespace am::cli {

void ConvergenceTrend::add(double t, double measure, double target) {
  if (!(std::isfinite(measure) && measure > 0 && std::isfinite(target) && target > 0 && std::isfinite(t))) return;
  const double y = std::log(measure / target);
  if (!std::isfinite(y)) return;
  // A jump of more than kJump in one report is another regime (the nearest stopping rule changed, a solver's final
  // quadratic steps): the trend starts again from it rather than read the jump as a rate.
  if (!pts_.empty() && std::fabs(y - pts_.back().y) > std::log(kJump)) pts_.clear();
  if (pts_.size() >= kMaxPoints) {  // thin the older half, keep the recent reports whole
    std::vector<Point> kept;
    const size_t half = pts_.size() / 2;
    for (size_t i = 0; i < pts_.size(); ++i)
      if (i >= half || i % 2 == 0) kept.push_back(pts_[i]);
    pts_.swap(kept);
  }
  pts_.push_back({t, y});
}

double ConvergenceTrend::last_ratio() const { return pts_.empty() ? NAN : std::exp(pts_.back().y); }

double ConvergenceTrend::eta() const {
  if (pts_.size() < kMinPoints) return NAN;
  const double t_last = pts_.back().t, from = pts_.front().t + 0.5 * (t_last - pts_.front().t);
  double n = 0, st = 0, sy = 0;
  for (const Point &p : pts_)
    if (p.t >= from) n += 1, st += p.t, sy += p.y;
  if (n < kMinPoints) return NAN;
  const double tm = st / n, ym = sy / n;
  double stt = 0, sty = 0;
  for (const Point &p : pts_)
    if (p.t >= from) stt += (p.t - tm) * (p.t - tm), sty += (p.t - tm) * (p.y - ym);
  if (!(stt > 0)) return NAN;  // every report at one instant: no rate
  const double b = sty / stt, a = ym - b * tm;
  double sse = 0;
  for (const Point &p : pts_)
    if (p.t >= from) sse += (p.y - a - b * p.t) * (p.y - a - b * p.t);
  const double se_b = std::sqrt(sse / (n - 2) / stt);
  if (!(b < 0) || -b < 2 * se_b) return NAN;  // not falling, or not clearly
  const double y_now = a + b * t_last;
  return y_now <= 0 ? 0.0 : y_now / -b;
}

}  // namespace am::cli
