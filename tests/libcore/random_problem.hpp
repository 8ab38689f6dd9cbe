// Random attention problems for the core tests (fixed seeds; std::mt19937_64 with our own mapping to
// doubles, so the numbers do not depend on the standard library's distributions).
#pragma once
#include <cmath>
#include <random>
#include <vector>

#include "attnmech/attnmech.h"

struct random_problem {
  size_t P, N0, S, H;
  am_arch arch;
  std::vector<double> X, y, xi;
  std::vector<std::vector<double>> W;
  std::vector<am_head> heads;
  std::mt19937_64 gen;

  double unif() { return (double)(gen() >> 11) * 0x1.0p-53; }
  double normal() {
    const double u = unif() + 1e-300, v = unif();
    return std::sqrt(-2 * std::log(u)) * std::cos(6.283185307179586 * v);
  }

  random_problem(std::vector<uint32_t> hs, std::vector<double> widths, std::vector<double> vars, am_readout ro,
                 size_t P_ = 12, size_t N0_ = 6, size_t S_ = 5, uint64_t seed = 1)
      : P(P_), N0(N0_), S(S_), gen(seed) {
    am_arch_default(&arch);
    arch.layers = (uint32_t)hs.size();
    for (size_t l = 0; l < hs.size(); ++l) arch.heads[l] = hs[l];
    for (size_t l = 0; l < widths.size(); ++l) arch.widths[l] = widths[l];
    for (size_t l = 0; l < vars.size(); ++l) arch.variances[l] = vars[l];
    H = am_arch_paths(&arch);
    X.resize(P * N0 * S);
    for (auto &v : X) v = normal();
    y.resize(P);
    for (size_t m = 0; m < P; ++m) y[m] = (m % 2) ? -1.0 : 1.0;
    size_t nheads = 0;
    for (auto h : hs) nheads += h;
    W.resize(nheads);
    for (auto &w : W) {
      w.resize(N0 * N0);
      for (auto &v : w) v = 0.7 * normal();
    }
    for (auto &w : W) heads.push_back(am_head AM_BILINEAR_HEAD(w.data()));
    xi.resize(P * N0 * H);
    am_xi(nullptr, &arch, heads.data(), ro, P, N0, S, X.data(), xi.data());
  }

  // A random positive-definite U set near the GP point.
  std::vector<double> random_u(const am_theory *th) {
    std::vector<double> U(am_theory_u_size(th));
    am_theory_gp_point(th, U.data());
    for (uint32_t l = 1; l <= arch.layers; ++l) {
      const size_t d = am_arch_dim(&arch, l);
      double *Ul = U.data() + am_theory_u_offset(th, l);
      std::vector<double> A(d * d);
      for (auto &v : A) v = 0.3 * normal();
      for (size_t i = 0; i < d; ++i)
        for (size_t j = 0; j < d; ++j) {
          double s = 0;
          for (size_t k = 0; k < d; ++k) s += A[i + k * d] * A[j + k * d];
          Ul[i + j * d] += s;
        }
    }
    return U;
  }
};
