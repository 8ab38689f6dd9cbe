// attnmech — internal view of the theory handle (theory.cpp; read by theory_memory.cpp, metrics.cpp, dataset.cpp,
// the white-box tests and bench/).
#pragma once
#include <vector>

#include "attnmech/theory.h"

struct am_theory {
  am_arch arch;
  size_t P = 0, N0 = 0, H = 0;  // H = H_tot
  // ξ (P × N0·H_tot, P fastest) and y: the handle's copies (am_theory_create), or the caller's arrays, which outlive
  // the handle (am_theory_create_view; xi_own and y_own stay empty).
  std::vector<double> xi_own, y_own;
  const double *xi = nullptr, *y = nullptr;
  double T = 0;
  uint32_t L = 0;
  size_t D[AM_MAX_LAYERS + 2] = {};     // D[l], l = 1..L+1 (D[L+1] = 1)
  size_t uoff[AM_MAX_LAYERS + 2] = {};  // offset of U_l in a U set
  size_t voff[AM_MAX_LAYERS + 2] = {};  // offset of U_l's coordinates in vech
  size_t usize = 0, vsize = 0;
  double Wmax = 0;
  // Workspaces of the Hessian, kept between calls: at N0·H_tot = 3072 they are ~75 MB each, and
  // allocating (and zero-filling) them on every evaluation cost ~30 % of a Newton iteration in
  // page faults. A handle is used by one thread at a time, like every attnmech handle.
  mutable std::vector<double> ws_mfull, ws_qv, ws_bt;
  // What the handle has computed, for tests and benchmarks: Γ = K_U + T·I built and factored, and gradients or
  // Hessians evaluated.
  mutable unsigned long long gamma_factorizations = 0, derivative_evaluations = 0;
  // The engine doing the P-sized work (am_theory_set_engine), when has_engine; it holds the factor of Γ number
  // engine_factor (gamma_factorizations when it was built).
  am_theory_engine engine{};
  bool has_engine = false;
  mutable unsigned long long engine_factor = 0;
  // Without an engine: the factor L of the last Γ = K_{U_1} + T·I the handle built, α = Γ⁻¹y, and the U_1 (H×H) and
  // T it was built at; gamma_id is its number among gamma_factorizations (0: none held). An evaluation, a solve step
  // or a prediction at the same U_1 and T (the same bits) takes it instead of building and factoring Γ again — the
  // operations that would rebuild it are the same on the same bits, so the results are too. Any other point
  // replaces it, freed first, so the handle holds one P×P factor at a time; it stays after the call (the solve's
  // last point is its solution, which the predictions ask for next) until am_theory_release, am_theory_kernel,
  // am_theory_alignment, a new temperature or an engine frees it.
  mutable std::vector<double> gamma_L, gamma_alpha, gamma_U1;
  mutable double gamma_T = 0;
  mutable unsigned long long gamma_id = 0;
  void release_gamma() const {
    gamma_L = std::vector<double>();
    gamma_alpha = std::vector<double>();
    gamma_U1 = std::vector<double>();
    gamma_id = 0;
  }
  am_theory() = default;
  am_theory(const am_theory &) = delete;
  am_theory &operator=(const am_theory &) = delete;
  ~am_theory() {
    if (has_engine && engine.release) engine.release(engine.user);
  }
};

namespace am {
// U set ↔ vech coordinates (upper triangle, column by column).
void theory_vech_to_u(const am_theory &th, const double *v, double *U);
void theory_u_to_vech(const am_theory &th, const double *U, double *v);
// max_{l,ij} |G_l,ij| of a vech gradient.
double theory_grad_max_vech(const am_theory &th, const double *g);

// The one memory estimate of the theory (theory_memory.cpp). Sizes in doubles, so no product overflows;
// theory_sizes_of fills P, N0, H and the U-set sizes from an architecture (validated by the caller).
struct theory_sizes {
  double P = 0, N0 = 0, H = 1, usize = 0, vsize = 0;  // usize = Σ D_l², vsize = Σ D_l(D_l+1)/2
  double Pt = 0;             // test inputs (kMemPredict)
  double k = 0;              // principal components (kMemAlignment, kMemKernels)
  double S = 0;              // tokens per example (kMemXi)
  bool store_kernels = false;  // the estimator's H path pre-kernels (kMemKernels)
  double extra_doubles = 0;  // resident buffers of the caller counted in (e.g. the estimator's ξ of its splits)
  // An engine (am_theory_set_engine) does the P-sized work and holds engine_bytes at its peak in this process: the
  // handle's own P×P and P×N0·H work matrices are then not counted (its copy of ξ and y still is).
  bool engine = false;
  double engine_bytes = 0;
};
theory_sizes theory_sizes_of(const am_arch &arch, double P, double N0);
// What will be allocated: OR these. The resident parts add up, the phases (one at a time) take their maximum.
enum : unsigned {
  kMemHandle = 1,      // am_theory_create: ξ and y copied into the handle
  kMemValue = 2,       // one action evaluation (the P×P Γ)
  kMemGradient = 4,    // its gradient (the handle then keeps B̃, P·N0·H)
  kMemHessian = 8,     // its Hessian (the handle then keeps two (N0·H)² workspaces)
  kMemNewton = 16,     // the Newton solve's vech-sized matrices
  kMemPredict = 32,    // am_theory_predict of Pt inputs
  kMemAlignment = 64,  // am_kernel_alignment (P×P copies, dsyevr/dsyevd)
  kMemKernels = 128,   // the estimator's renormalised and GP kernels (+ path pre-kernels), then the alignment
  kMemXi = 256,        // am_dataset_xi: X as float64 and ξ
  kMemAlignFactor = 512,  // am_theory_alignment from K_U's factor (when alignment_from_factor)
};
// am_theory_alignment takes the k leading eigenpairs of K_U = Z Zᵀ from the thin QR of its factor Z (P × N0·H)
// when the factor is narrower than the kernel and holds the k components; otherwise from the whole kernel.
inline bool alignment_from_factor(double P, double NH, double k) { return NH < P && k <= NH; }
// The kernels of ξ (kernels.cpp): Z = Ξ_t·M (P·N0 × H) and the symmetric K_U = Σ_i ξ_i U ξ_iᵀ (P×P, ld ldk).
void xi_times(size_t P, size_t N0, size_t H, const double *xi, const double *M, double *Z);
void kernel_u_sym(size_t N0, size_t H, const double *U, size_t P, const double *xi, double *K, size_t ldk);
// L with U = L Lᵀ (H×H, lower; the upper triangle zeroed), or false when U is not numerically positive definite.
bool u_cholesky(const double *U, size_t H, std::vector<double> *L);
// Peak bytes for those operations.
double theory_bytes(const theory_sizes &s, unsigned ops);
// Before allocating: AM_OK, or AM_ERR_NO_MEMORY with am_memory_check's message ("<what> needs X GB; this machine has
// Y GB (set AM_MEMORY_LIMIT=...)") — also when a BLAS dimension exceeds 32 bits or the bytes the address space.
am_status theory_memory_check(am_context *ctx, const theory_sizes &s, unsigned ops, const char *what);
}  // namespace am
