// kernels.cpp against independent (slow, literal) implementations: the kernel identities of spec
// attention-paths.md §8 item 3 (K_U(cI) = c/(s1..sL sa) K_GP, K_U = (1/H) Σ U C, the diagonal and cross paths).
#include <doctest/doctest.h>

#include <vector>

#include "random_problem.hpp"

TEST_CASE("kernel identities: K_U(cI) = c/(s1..sL sa) K_GP, K_U = (1/H) sum U C, diag, cross") {
  random_problem rp({2, 2}, {4, 4, 4}, {1.3, 0.8, 1.2, 1.5}, AM_READOUT_LAST, 9, 5, 4, 31);
  const size_t P = rp.P, N0 = rp.N0, H = rp.H;
  std::vector<double> Kgp(P * P), Ku(P * P), U(H * H, 0.0);
  REQUIRE(am_kernel_gp(nullptr, &rp.arch, N0, P, rp.xi.data(), Kgp.data(), P) == AM_OK);
  const double c = 2.5, prod = 0.8 * 1.2 * 1.5;
  for (size_t i = 0; i < H; ++i) U[i + i * H] = c;
  REQUIRE(am_kernel_u(nullptr, N0, H, U.data(), P, rp.xi.data(), P, rp.xi.data(), Ku.data(), P) == AM_OK);
  for (size_t k = 0; k < P * P; ++k) CHECK(Ku[k] == doctest::Approx(c / prod * Kgp[k]).epsilon(1e-13));
  // general (indefinite) U against the literal sum over pre-kernels
  for (size_t j = 0; j < H; ++j)
    for (size_t i = 0; i <= j; ++i) U[i + j * H] = U[j + i * H] = std::cos(1.0 + (double)(3 * i + 7 * j));
  REQUIRE(am_kernel_u(nullptr, N0, H, U.data(), P, rp.xi.data(), P, rp.xi.data(), Ku.data(), P) == AM_OK);
  std::vector<double> C(P * P), ref(P * P, 0.0);
  for (size_t a = 0; a < H; ++a)
    for (size_t b = 0; b < H; ++b) {
      REQUIRE(am_prekernel(nullptr, N0, H, P, rp.xi.data(), a, b, C.data(), P) == AM_OK);
      for (size_t k = 0; k < P * P; ++k) ref[k] += U[a + b * H] * C[k] / (double)H;
    }
  for (size_t k = 0; k < P * P; ++k) CHECK(Ku[k] == doctest::Approx(ref[k]).epsilon(1e-12).scale(1.0));
  // diagonal helper and the non-symmetric (cross) path agree with the symmetric kernel
  std::vector<double> d(P), Kx(P * P);
  REQUIRE(am_kernel_u_diag(nullptr, N0, H, U.data(), P, rp.xi.data(), d.data()) == AM_OK);
  std::vector<double> xi2(rp.xi);  // a different pointer forces the general GEMM path
  REQUIRE(am_kernel_u(nullptr, N0, H, U.data(), P, rp.xi.data(), P, xi2.data(), Kx.data(), P) == AM_OK);
  for (size_t m = 0; m < P; ++m) CHECK(d[m] == doctest::Approx(Ku[m + m * P]).epsilon(1e-12));
  for (size_t k = 0; k < P * P; ++k) CHECK(Kx[k] == doctest::Approx(Ku[k]).epsilon(1e-12).scale(1.0));
}
