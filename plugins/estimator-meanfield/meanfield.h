// estimator "meanfield" — the mathematics of mean-field DCA (Morcos et al., PNAS 2011; the `mean_field` method of
// EVcouplings), the cheap baseline of the alignment fit (docs/msa.md, "The mean-field baseline"):
//
//   f_i(a), f_ij(a, b)   weighted single-site and pair frequencies, Σ_μ w_μ [s^μ_i = a] / W with W = Σ_μ w_μ;
//   f̃ = (1 − λ) f + λ / C (pairs: λ / C²; the pair table of a site with itself stays diagonal,
//        f̃_ii(a, b) = δ_ab f̃_i(a)); λ = `pseudocount`, the fraction of pseudo-data mixed in (λ = 0.5: as many
//        pseudo-sequences as Neff);
//   C(i a, j b) = f̃_ij(a, b) − f̃_i(a) f̃_j(b)   over the L·(C − 1) variables left once one state per site, the
//        reference state (the gap when the alphabet has one, else the last colour), is dropped;
//   e_ij(a, b) = −(C⁻¹)(i a, j b) for i ≠ j (0 on the reference state: the gauge the dropped state sets), the
//        inverse by Cholesky (dpotrf, dpotri) — never a general inverse;
//   h_i(a) = ln(f̃_i(a) / f̃_i(ref)) − Σ_{j ≠ i} Σ_b e_ij(a, b) f̃_j(b)   (the mean-field fields, h_i(ref) = 0);
//   then the alignment fit's scores: F_ij = ‖e_ij‖ in the zero-sum gauge over the non-gap states (msa_scores.h) and
//        S = APC(F).
//
// The statistics stay in one n × n column-major matrix (n = L·(C − 1)), of which the lower triangle is filled,
// factored and inverted in place, then mirrored. No threads of its own: the pair counts and the scores run on the
// caller's loop (BLAS and LAPACK on their own threads).
#ifndef ATTNMECH_MEANFIELD_MEANFIELD_H
#define ATTNMECH_MEANFIELD_MEANFIELD_H

#include <attnmech/context.h>
#include <attnmech/plugin.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace am::meanfield {

// Rows of an alignment: tokens [M, L] row-major, states 0..C−1, weights [M] (≥ 0, Σ > 0).
struct Rows {
  const int32_t *tokens = nullptr;
  const double *w = nullptr;
  size_t M = 0;
  int L = 0, C = 0;
};

// The regularised statistics; after invert() `c` holds C⁻¹ (same triangle).
struct Correlations {
  int L = 0, C = 0, ref = 0;  // sites, states, the dropped (reference) state
  size_t n = 0;               // L·(C − 1) variables
  double weight = 0.0;        // W = Σ w (Neff of the rows)
  std::vector<double> f;      // [L·C] f̃_i(a), every state (the reference state too)
  std::vector<double> c;      // [n·n] column-major: C in the lower triangle (row ≥ column); after invert(), C⁻¹ whole
  // The variable of site i in state a ≠ ref.
  size_t var(int i, int a) const { return (size_t)i * (C - 1) + (size_t)(a < ref ? a : a - 1); }
  // (C⁻¹)(r, s) after invert() (read down column s).
  double at(size_t r, size_t s) const { return c[r + s * n]; }
};

// The statistics of `rows` with the reference state `ref` and pseudocount λ ∈ [0, 1); the pair counts run on `loop`
// (each pair of sites summed in row order by one worker: the same bits on any thread count).
Correlations correlations(const Rows &rows, int ref, double pseudocount, const am::sdk::ParallelFor &loop);

// How an error names a variable: site numbers [L] and state letters [C] (either may be empty: 1-based site index,
// state index).
struct Labels {
  std::vector<double> sites;
  std::string letters;
};

// C → C⁻¹ in place by Cholesky (dpotrf, then dpotri; then its upper triangle mirrored), *rcond = the reciprocal
// 1-norm condition number of C (dpocon). AM_ERR_SINGULAR with a message naming the site and state where the
// factorisation stopped when C is not positive definite, or naming rcond when rcond < n·ε (numerically singular);
// `c` is then undefined.
am_status invert(am_context *ctx, Correlations &c, const Labels &labels, double pseudocount, double *rcond);

// e_ij(a, b) for every pair of states (0 where a or b is the reference state), i ≠ j, into e [C·C] row-major.
void coupling_block(const Correlations &inv, int i, int j, double *e);

// F (L×L row-major, symmetric, zero diagonal): the alignment fit's Frobenius norm (msa::frobenius_scores) of each
// pair's couplings, gap state `gap_state` (−1: none) left out; pairs on `loop`.
std::vector<double> frobenius(const Correlations &inv, int gap_state, const am::sdk::ParallelFor &loop);

// The mean-field fields h [L·C] (h_i(ref) = 0) and the couplings J [L·L·C·C] (J[((i·L + j)·C + a)·C + b] =
// e_ij(a, b), zero diagonal blocks: the layout of the alignment fit's params.J).
std::vector<double> fields(const Correlations &inv);
std::vector<double> couplings(const Correlations &inv);

}  // namespace am::meanfield
#endif
