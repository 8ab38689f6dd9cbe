// attnmech — task "oneshot": tokenisation and episode sampling (docs/oneshot.md "Episodes").
#include "oneshot_core.h"

#include <algorithm>
#include <cmath>

namespace am::oneshot {

void make_embeddings(const TokenSpec &t, am_rng *rng, Embeddings *e) {
  e->spec = t;
  const size_t S = t.S(), D = t.N0();
  e->pos.assign(S * D, 0.0);
  for (size_t p = 0; p < S; ++p)
    for (size_t i = 0; i < D; ++i) {
      const double freq = std::pow(10000.0, -double(2 * (i / 2)) / double(D));
      e->pos[p * D + i] = (i % 2 == 0) ? std::sin(double(p) * freq) : std::cos(double(p) * freq);
    }
  double mean = 0, var = 0;
  for (double v : e->pos) mean += v;
  mean /= double(e->pos.size());
  for (double v : e->pos) var += (v - mean) * (v - mean);
  const double sd = std::sqrt(var / double(e->pos.size()));
  for (double &v : e->pos) v = (v - mean) / sd;
  e->label.resize(3 * D);
  am_rng_fill_normal(rng, e->label.data(), e->label.size());
}

Norm pixel_stats(const ImageSet &s) {
  Norm n;
  double m = 0, q = 0;
  for (float v : s.pixels) m += v;
  const double cnt = double(std::max<size_t>(1, s.pixels.size()));
  m /= cnt;
  for (float v : s.pixels) q += (v - m) * (v - m);
  n.mean = m;
  n.std = std::sqrt(q / cnt);
  if (!(n.std > 1e-12)) n.std = 1;
  return n;
}

void image_tokens(const TokenSpec &t, const float *img, const Norm &nm, double *out) {
  const size_t P = t.patch, side = t.side, grid = side / P, D = t.N0();
  for (size_t gy = 0; gy < grid; ++gy)
    for (size_t gx = 0; gx < grid; ++gx) {
      double *row = out + (gy * grid + gx) * D;
      for (size_t p1 = 0; p1 < P; ++p1)
        for (size_t p2 = 0; p2 < P; ++p2) {
          const double v = (double(img[(gy * P + p1) * side + gx * P + p2]) - nm.mean) / nm.std;
          for (size_t c = 0; c < t.channels; ++c) row[(p1 * P + p2) * t.channels + c] = v;
        }
      double m = 0, q = 0;
      for (size_t i = 0; i < D; ++i) m += row[i];
      m /= double(D);
      for (size_t i = 0; i < D; ++i) q += (row[i] - m) * (row[i] - m);
      const double inv = 1.0 / std::sqrt(q / double(D) + 1e-5);
      for (size_t i = 0; i < D; ++i) row[i] = (row[i] - m) * inv;
    }
}

namespace {

// Images of each class of the set.
std::vector<std::vector<size_t>> by_class(const ImageSet &s) {
  std::vector<std::vector<size_t>> out(s.class_names.size());
  for (size_t i = 0; i < s.size(); ++i) out[size_t(s.label[i])].push_back(i);
  return out;
}

}  // namespace

std::vector<Episode> sample_episodes(const ImageSet &s, const std::vector<int32_t> &classes, size_t n, am_rng *rng,
                                     bool balanced) {
  const auto members = by_class(s);
  std::vector<int32_t> usable;
  for (int32_t c : classes)
    if (members[size_t(c)].size() >= 2) usable.push_back(c);
  std::vector<Episode> out;
  if (usable.size() < 2) return out;
  std::vector<double> targets(n);
  for (size_t i = 0; i < n; ++i) targets[i] = balanced ? (i < (n + 1) / 2 ? 1.0 : -1.0) : 0.0;
  if (balanced)
    for (size_t i = n; i > 1; --i) std::swap(targets[i - 1], targets[size_t(am_rng_below(rng, i))]);
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const size_t ia = size_t(am_rng_below(rng, usable.size()));
    size_t ib = size_t(am_rng_below(rng, usable.size() - 1));
    if (ib >= ia) ++ib;
    const auto &ma = members[size_t(usable[ia])], &mb = members[size_t(usable[ib])];
    Episode e;
    e.lab[0] = int(am_rng_below(rng, 2));
    e.lab[1] = 1 - e.lab[0];
    const double y = balanced ? targets[i] : (am_rng_below(rng, 2) ? 1.0 : -1.0);
    e.y = y;
    const int qlab = y > 0 ? 1 : 0;
    const int qpos = e.lab[0] == qlab ? 0 : 1;   // support position of the query's class
    const auto &mq = qpos == 0 ? ma : mb;
    const size_t sa = size_t(am_rng_below(rng, ma.size())), sb = size_t(am_rng_below(rng, mb.size()));
    e.img[0] = ma[sa];
    e.img[1] = mb[sb];
    const size_t used = qpos == 0 ? sa : sb;
    size_t q = size_t(am_rng_below(rng, mq.size() - 1));
    if (q >= used) ++q;
    e.img[2] = mq[q];
    out.push_back(e);
  }
  return out;
}

std::vector<Episode> sample_pair_episodes(const ImageSet &s, const std::vector<size_t> &support_pool0,
                                          const std::vector<size_t> &support_pool1,
                                          const std::vector<size_t> &query_pool0,
                                          const std::vector<size_t> &query_pool1, size_t n, am_rng *rng) {
  (void)s;
  std::vector<Episode> out;
  if (support_pool0.empty() || support_pool1.empty() || query_pool0.empty() || query_pool1.empty()) return out;
  for (size_t i = 0; i < n; ++i) {
    Episode e;
    const size_t s0 = support_pool0[size_t(am_rng_below(rng, support_pool0.size()))];
    const size_t s1 = support_pool1[size_t(am_rng_below(rng, support_pool1.size()))];
    const bool swap = am_rng_below(rng, 2) != 0;   // random support order (the reference used a fixed one)
    e.img[0] = swap ? s1 : s0;
    e.img[1] = swap ? s0 : s1;
    e.lab[0] = swap ? 1 : 0;
    e.lab[1] = swap ? 0 : 1;
    const bool q1 = i % 2 == 0;                     // balanced targets
    const auto &qp = q1 ? query_pool1 : query_pool0;
    e.img[2] = qp[size_t(am_rng_below(rng, qp.size()))];
    e.y = q1 ? 1.0 : -1.0;
    out.push_back(e);
  }
  return out;
}

void episodes_to_X(const TokenSpec &t, const Embeddings &e, const ImageSet &s, const Norm &nm,
                   const std::vector<Episode> &eps, std::vector<double> *X, std::vector<double> *y) {
  const size_t S = t.S(), D = t.N0(), np = t.patches();
  X->assign(eps.size() * S * D, 0.0);
  y->resize(eps.size());
  for (size_t k = 0; k < eps.size(); ++k) {
    double *x = X->data() + k * S * D;
    for (int j = 0; j < 3; ++j) {
      image_tokens(t, s.image(eps[k].img[j]), nm, x + size_t(j) * np * D);
      const int lab = j < 2 ? eps[k].lab[j] : 2;
      for (size_t p = 0; p < np; ++p) {
        const size_t tok = size_t(j) * np + p;
        for (size_t i = 0; i < D; ++i) x[tok * D + i] += e.pos[tok * D + i] + e.label[size_t(lab) * D + i];
      }
    }
    (*y)[k] = eps[k].y;
  }
}

}  // namespace am::oneshot
