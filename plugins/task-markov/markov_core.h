// attnmech — task "markov": hidden Markov chain classification (Tiberi et al. 2024, arXiv:2405.15926; docs/tasks.md).
// The logic lives here (static library markov_core) so tests can call it directly; plugin.cpp is
// only the parameter table and the task class.
#ifndef ATTNMECH_TASK_MARKOV_CORE_H
#define ATTNMECH_TASK_MARKOV_CORE_H

#include <attnmech/attnmech.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace am::markov {

// Network configurations of the paper (docs/tasks.md).
// (The order is that of the plugin parameter config's choices "all|good|good_denoising|2paths".)
enum class Config { All = 0, Good = 1, GoodDenoising = 2, TwoPaths = 3 };

// Hand-built heads of the paper (docs/tasks.md).
enum class HeadKind { SameToken = 0, Uniform = 1, Random = 2, Blank = 3 };

struct Options {
  size_t P = 100;                 // training sequences (first ⌊P/2⌋ label +1)
  size_t P_test = 1000;           // test sequences (0 = no test split)
  size_t seq_len = 30;            // T_seq real tokens; S = seq_len + 1 with BOS
  size_t feature_dim = 200;       // N_f (even); N0 = N_f + S
  double stay_pos = 0.7;          // stay probability of class +1 chains
  double stay_neg = 0.3;          // stay probability of class −1 chains
  double temperature = 0.01;
  double noise_inplane_sum = 1.0;   // σ along u_∥ ∝ v₊+v₋ (code "parallel")
  double noise_inplane_diff = 1.0;  // σ along u_⊥ ∝ v₊−v₋ (code "perpendicular")
  double noise_out_of_plane = -1.0; // σ_oop (paper's "perpendicular noise"); < 0 = auto (5 for 2paths, else 1)
  double beta_heads = 10.0;
  double p_random = 1.0;
  Config config = Config::All;
  std::vector<double> widths_scan{10, 30, 50, 100, 300, 500, 1000};
  std::vector<double> variances{1, 1, 1, 1};
};

// σ_oop actually used (resolves the "auto" value).
double effective_out_of_plane(const Options &o);
size_t tokens(const Options &o);       // S = seq_len + 1
size_t input_dim(const Options &o);    // N0 = feature_dim + S
const char *config_name(Config c);

// Checks consistency beyond the parameter table's ranges (the plugin's table fills Options; plugin.cpp).
am_status validate(am_context *ctx, const Options &o);

// One split of generated data: the labels and hidden chains of all P sequences, the inputs X of rows
// [begin, begin + rows) (all of them unless the split was made in parts).
struct Split {
  size_t P = 0;
  size_t begin = 0, rows = 0;   // the sequences X holds
  std::vector<double> X;        // C order [rows, S, N0] (= column-major N0×S examples back to back)
  std::vector<double> y;        // [P], ±1
  std::vector<int8_t> states;   // [P, seq_len] hidden states ±1 (C order)
};

// The generator, in this order: for every chain (class +1 first) one uniform for the initial state (≥ 0.5 → +)
// then one uniform per transition (< p_stay → stay); afterwards all noise normals, chain by chain, token by
// token (N_f each), decomposed along u_∥, u_⊥ and the rest. Every draw takes a fixed number of the stream's 32-bit
// words (a uniform 2, a pair of normals 4; N_f is even, so no chain leaves a spare normal), so sequence μ's noise
// starts at word 2·P·T + 2·μ·T·N_f of the stream: X of rows [begin, end) alone (end = 0: P) is made by starting
// there, the same bits as those rows of the whole split. Leaves *rng where the whole split would.
void generate_split(const Options &o, am_rng *rng, size_t P, Split *out, size_t begin = 0, size_t end = 0);

// Rows [begin, end) of part `part` of `parts` of a split of P sequences: contiguous blocks, ⌊P·part/parts⌋ onward.
void part_rows(size_t P, int part, int parts, size_t *begin, size_t *end);

struct SplitStats {
  size_t positives = 0, negatives = 0;
  size_t transitions_pos = 0, stays_pos = 0;   // over class +1 chains
  size_t transitions_neg = 0, stays_neg = 0;   // over class −1 chains
  double stay_frequency_pos() const { return transitions_pos ? double(stays_pos) / double(transitions_pos) : 0.0; }
  double stay_frequency_neg() const { return transitions_neg ? double(stays_neg) / double(transitions_neg) : 0.0; }
};
SplitStats split_stats(const Options &o, const Split &s);

// Head matrix W (N0×N0, column-major, W(i,j) at i + N0·j, i = key side), already multiplied by β.
// `rng` is used by HeadKind::Random only (draw order: feature block, position block, full N0×N0 cross matrix).
std::vector<double> build_head(const Options &o, HeadKind kind, am_rng *rng);

// The head layout of a network and its path labels (packing order, h_1 most significant).
struct Network {
  std::vector<std::vector<HeadKind>> layers;
  std::vector<const char *> path_labels;
};
Network network_for(Config c);

// Sub-networks declared in the dataset (key path_subsets): their paths in the packing order of the config's
// network. "good" = the good path g; "good_denoising" = g and the denoising path d (for 2paths the whole
// network, whose d runs through the blank head). A sub-network's attention is that of the full network (the
// same head matrices), so its GP limit is the theory's GP over those paths with 1/H_sub normalisation.
struct PathSubset {
  const char *name;
  std::vector<size_t> paths;
};
std::vector<PathSubset> path_subsets(Config c);

// Head matrices of a network. Every head is a deterministic function of (kind, layer, heads stream):
// the random heads use child streams 147 (layer 1) and 247 (layer 2) of `heads_rng`, so the same head is
// shared by every network that contains it.
struct HeadMatrices {
  std::vector<std::vector<double>> W;   // Σ_l H_l matrices, layer 1 first
  std::vector<size_t> heads;            // H_l
};
HeadMatrices build_network_heads(const Options &o, const Network &net, const am_rng &heads_rng);

// Architecture of a network at width N (all widths N) with the options' variances.
am_status network_arch(am_context *ctx, const Options &o, const Network &net, double width, am_arch *arch);

// Stream ids (children of the instance's rng).
enum : uint64_t { STREAM_TRAIN = 27, STREAM_TEST = 59, STREAM_HEADS = 7, STREAM_HEAD_L1 = 147, STREAM_HEAD_L2 = 247 };

// The whole task: fills `dataset` (dataset.h, kind "attention") and `extras` (docs/tasks.md).
// `rng` is the instance's stream (am_host_rng).
am_status make_dataset(am_context *ctx, const Options &o, const am_rng &rng, am_record *dataset, am_record *extras);

}  // namespace am::markov

#endif
