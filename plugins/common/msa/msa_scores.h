// msa_core — pair scores of an alignment fit (docs/msa.md): from the couplings J (directional, L·L·C·C,
// J[((i·L + j)·C + a)·C + b] = J_ij(a, b)) to the APC-corrected Frobenius scores and the ranked contact list.
//   J̃_ij(a, b) = (J_ij(a, b) + J_ji(b, a)) / 2, put into the zero-sum gauge over the non-gap states (the gap state,
//   if any, is left out entirely); F_ij = ‖J̃_ij‖_F; S_ij = F_ij − F_i· F_·j / F_·· with F_i· the mean over j ≠ i and
//   F_·· the mean over pairs i < j (plmc's average product correction).
#ifndef ATTNMECH_MSA_SCORES_H
#define ATTNMECH_MSA_SCORES_H

#include <functional>
#include <vector>

namespace am::msa {

// F (L×L row-major, symmetric, zero diagonal); gap_state < 0: no gap state.
std::vector<double> frobenius_scores(const double *J, int L, int C, int gap_state);
// The same from the symmetrised blocks row by row, without the L·L·C·C table (3.9): rows(i, out) writes
// J̃_ij(a, b) at out[((j − i − 1)·C + a)·C + b] for j = i + 1 .. L − 1.
using PairRows = std::function<void(int i, double *out)>;
std::vector<double> frobenius_scores(int L, int C, int gap_state, const PairRows &rows);
// S = APC(F) (L×L row-major, symmetric, zero diagonal); F_·· = 0 leaves F unchanged.
std::vector<double> apc_scores(const std::vector<double> &F, int L);

struct RankedPair {
  int i, j;  // 0-based sites, i < j
  double score;
};
// All pairs i < j by score descending; ties by i, then j.
std::vector<RankedPair> rank_pairs(const std::vector<double> &S, int L);

}  // namespace am::msa
#endif
