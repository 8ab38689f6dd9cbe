// attnmech — task "oneshot": in-context 2-way 1-shot image classification (docs/oneshot.md).
// The logic lives in the static library oneshot_core (tests link it directly); plugin.cpp is only the
// parameter table and the task class. Pieces:
//   images   — readers (IDX gz/raw, PNG directory laid out as Omniglot, Hershey .jhf fonts + renderer)
//   episodes — tokenisation (docs/oneshot.md; 8×8 patches, per-patch LayerNorm, sinusoidal positions,
//              frozen label embeddings) and episode sampling
//   gd       — the paper's network trained by Adam with a hand-written backward pass (path form), head masks
//   sources  — option checks, the image sources and their background/evaluation split, the episode sets and
//              the GD network (cached, resumed or trained): `prepare`
//   cache    — the on-disk cache: rendered images, the trained model, training checkpoints
//   records  — the attention dataset (train/val/test/OOD splits, Q/K heads, the trained network's path
//              weights, the temperature grid) and the extras (data summary, GD training): `make_dataset`.
//              The theory study itself is the `theory` estimator's work.
#ifndef ATTNMECH_TASK_ONESHOT_CORE_H
#define ATTNMECH_TASK_ONESHOT_CORE_H

#include <attnmech/attnmech.h>
#include <attnmech/plugin.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace am::oneshot {

// ------------------------------------------------------------------ images

// A set of grey images (side×side, row-major, values in [0,1], ink dark on light for glyphs), each with a
// class index; classes carry a name and an "alphabet" (group) index.
struct ImageSet {
  size_t side = 0;
  std::vector<float> pixels;             // n × side × side
  std::vector<int32_t> label;            // n, class index
  std::vector<std::string> class_names;  // per class
  std::vector<int32_t> class_group;      // per class: alphabet / family index
  std::vector<std::string> group_names;
  size_t size() const { return label.size(); }
  const float *image(size_t i) const { return pixels.data() + i * side * side; }
};

// IDX (MNIST format): unsigned-byte tensors, magic 0x0000 08 <ndim>, big-endian sizes; read gzipped (.gz,
// detected by the gzip magic) or raw. Images: ndim 3 → n × rows × cols; labels: ndim 1.
am_status read_idx_u8(am_context *ctx, const std::string &path, std::vector<uint8_t> *data, std::vector<size_t> *dims);
// An images file + a labels file → ImageSet (resized bilinearly to `side` when different; pixel/255).
am_status load_idx_pair(am_context *ctx, const std::string &images, const std::string &labels, size_t side,
                        ImageSet *out);
// The standard file names of an MNIST-like directory (train-images-idx3-ubyte[.gz] …); split "train"|"t10k".
am_status find_idx_files(am_context *ctx, const std::string &dir, const char *split, std::string *images,
                         std::string *labels);

// One PNG file as grey [0,1] (any colour type/bit depth; colour is averaged, alpha composited on white).
am_status read_png_grey(am_context *ctx, const std::string &path, std::vector<float> *grey, size_t *w, size_t *h);
// A directory laid out as Omniglot: <root>/<alphabet>/<character>/<drawing>.png. Classes = characters,
// groups = alphabets (sorted names). Images are resized to side×side (area averaging when shrinking).
am_status load_png_tree(am_context *ctx, const std::string &root, size_t side, ImageSet *out);

// Hershey fonts (.jhf): glyph = 5-char id, 3-char vertex count (incl. the margin pair), left/right margin,
// then coordinate pairs (char − 'R'); " R" lifts the pen. Lines may wrap (the count decides).
struct HersheyGlyph {
  int id = 0;
  int left = 0, right = 0;
  std::vector<std::vector<std::pair<int, int>>> strokes;  // (x, y), y downwards
};
am_status parse_hershey(am_context *ctx, const std::string &text, const std::string &name,
                        std::vector<HersheyGlyph> *glyphs);
am_status read_hershey_file(am_context *ctx, const std::string &path, std::vector<HersheyGlyph> *glyphs);

// Rendering of one glyph into side×side pixels (1 = background, 0 = full ink), with a random "drawer":
// vertex jitter, stroke width, rotation/shear/scale and translation. `plain` = no randomness.
struct DrawerSettings {
  double jitter = 0.35;       // vertex jitter (glyph units, std)
  double width_min = 1.3, width_max = 2.4;  // stroke width in pixels
  double rotate_deg = 10, shear = 0.15, scale_min = 0.85, scale_max = 1.1, shift_px = 1.5;
};
void render_glyph(const HersheyGlyph &g, size_t side, const DrawerSettings &d, am_rng *rng, bool plain, float *out);
// Ink of a glyph: total stroke length and bounding-box size in glyph units.
double glyph_ink(const HersheyGlyph &g, double *bbox_w, double *bbox_h);

// The Hershey font families (alphabets) and whether each goes to the background (training) or evaluation
// (test) split: many fonts are styles of the same letters, so a character = (family, glyph position) and
// the fonts of a family are some of its "drawers".
struct HersheyFamily {
  const char *name;
  const char *fonts;   // space-separated file stems
  int evaluation;      // 1: evaluation split
};
const HersheyFamily *hershey_families(size_t *n);
// Render the whole set: `drawers` drawings per character (font of the family chosen at random per drawing).
// Characters whose glyph is empty or near-empty (stroke length < min_ink or bbox < min_box units) are dropped.
// background/evaluation receive the two splits. Progress through ctx.
am_status render_hershey(am_context *ctx, const std::string &dir, size_t side, size_t drawers, uint64_t seed,
                         ImageSet *background, ImageSet *evaluation);

// Binary cache of an ImageSet (f4 .npy pixels + a small text index).
am_status save_imageset(am_context *ctx, const std::string &dir, const std::string &stem, const ImageSet &s);
am_status load_imageset(am_context *ctx, const std::string &dir, const std::string &stem, ImageSet *s);

// Bilinear resize (align-corners = false, as torchvision/PIL on upscaling), row-major.
void resize_bilinear(const float *in, size_t iw, size_t ih, float *out, size_t ow, size_t oh);
// Area-average resize (for shrinking), row-major.
void resize_area(const float *in, size_t iw, size_t ih, float *out, size_t ow, size_t oh);

// ------------------------------------------------------------------ episodes

struct TokenSpec {
  size_t side = 32, patch = 8, channels = 3;
  size_t patches() const { return (side / patch) * (side / patch); }
  size_t N0() const { return patch * patch * channels; }
  size_t S() const { return 3 * patches(); }
};

// Fixed tables: sinusoidal positions (S × N0, standardised over the whole table) and the frozen N(0,1)
// label embeddings (3 × N0; index 2 = query/unknown). Row-major.
struct Embeddings {
  TokenSpec spec;
  std::vector<double> pos;     // S × N0
  std::vector<double> label;   // 3 × N0
};
void make_embeddings(const TokenSpec &t, am_rng *rng, Embeddings *e);

// Normalisation of an image set: mean/std over all pixels of the split used for statistics.
struct Norm {
  double mean = 0, std = 1;
};
Norm pixel_stats(const ImageSet &s);

// Tokens of one normalised image: `patches` rows of N0 (patch flattened as (p1, p2, c), grey replicated to
// c channels), each row LayerNorm'ed (eps 1e-5, identity affine). out: patches × N0, row-major.
void image_tokens(const TokenSpec &t, const float *img, const Norm &nm, double *out);

// One episode: images (support a, support b, query), support labels, target ±1.
struct Episode {
  size_t img[3];
  int lab[2];     // labels 0/1 of the two supports
  double y;       // 2·label(query) − 1
};
// 2-way 1-shot episodes from the classes in `classes` (indices into the set's classes; each must have ≥ 2
// images): two distinct classes, random order, random 0/1 labels, query from one of them (another drawing).
// balanced: ⌈n/2⌉ targets +1 and ⌊n/2⌋ targets −1 in random order; else each target is a fair coin.
std::vector<Episode> sample_episodes(const ImageSet &s, const std::vector<int32_t> &classes, size_t n, am_rng *rng,
                                     bool balanced);
// OOD episodes between two fixed classes (c0 → label 0, c1 → label 1) of `s`: supports from `support_pool`
// images, query from `query_pool` images; support order random.
std::vector<Episode> sample_pair_episodes(const ImageSet &s, const std::vector<size_t> &support_pool0,
                                          const std::vector<size_t> &support_pool1,
                                          const std::vector<size_t> &query_pool0,
                                          const std::vector<size_t> &query_pool1, size_t n, am_rng *rng);
// X of episodes: C-order [n, S, N0] (= n column-major N0×S examples), y [n].
void episodes_to_X(const TokenSpec &t, const Embeddings &e, const ImageSet &s, const Norm &nm,
                   const std::vector<Episode> &eps, std::vector<double> *X, std::vector<double> *y);

// ------------------------------------------------------------------ gradient-descent model

struct ModelShape {
  size_t N0 = 192, S = 48, L = 2, H = 4, G = 32, W = 128;   // W: all value widths W_0..W_L
};

// Parameters, all stored as the effective weights of the forward pass:
//   x0 = V0 X;  x_l = c_l Σ_h m_lh V_lh x_{l−1} Ω_lh (c_l = (Σ_h m_lh)^{-1/2});  f = aᵀ x_L r,  r = 1/S
//   Ω_lh = softmax over keys of (K_lh x_s)·(Q_lh x_t)/√G, computed from the raw input X for every layer.
// Layouts (column-major): V0 W×N0; V[l][h] W×W; Q[l][h], K[l][h] G×N0; a W.
struct Model {
  ModelShape shape;
  std::vector<double> V0, a;
  std::vector<std::vector<double>> V, Q, K;   // index l*H + h
  size_t n_params() const;
  // Flat views for the optimiser (order: V0, a, V…, Q…, K…).
  std::vector<double *> blocks();
  std::vector<size_t> block_sizes() const;
};
void init_model(const ModelShape &s, am_rng *rng, Model *m);

// Head mask: 1 = keep, 0 = pruned; index l*H + h. Empty = all kept.
using Mask = std::vector<double>;

// Outputs f for n episodes (X C-order [n, S, N0]). pf: the parallel loop (the host's, or serial) over fixed
// blocks of episodes — the results are the same bits on every thread count.
void forward(const Model &m, const Mask &mask, size_t n, const double *X, double *f,
             const am::sdk::ParallelFor &pf = am::sdk::serial_loop());
// MSE loss mean (f − y)² over n episodes and its gradient (same layout as Model) into grad (block partial sums
// reduced in block order: the same bits on every thread count).
double loss_and_grad(const Model &m, size_t n, const double *X, const double *y, Model *grad,
                     const am::sdk::ParallelFor &pf = am::sdk::serial_loop());

struct TrainSettings {
  size_t steps = 2000, batch = 64;
  double lr = 2e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 5e-5;
};
struct TrainLog {
  std::vector<double> step, loss;     // running mean of the batch loss, every log_every steps
  double seconds = 0;
};
// Where a training stands: the next step, Adam's moments (one vector per Model::blocks() block), the batch
// losses summed since the last log point, and the training seconds spent before. step 0 with empty moments is
// a fresh start. Batches are a function of the step alone, so a training resumed from a saved state gives the
// same bits as one that never stopped.
struct TrainState {
  size_t step = 0;
  std::vector<std::vector<double>> mom, vel;
  double run = 0;
  size_t run_n = 0;
  double seconds = 0;
};
// Called every `every_seconds` of training and once when training is cancelled, with the state and the model
// after state.step steps (the log holds the points up to there).
using CheckpointFn = std::function<void(const TrainState &, const Model &, const TrainLog &)>;
struct Checkpoints {
  CheckpointFn fn;
  double every_seconds = 60;
};
// Adam (weight decay added to the gradient, as torch.optim.Adam). `batch_fn(step, X, y)` fills a batch.
// Reports progress and honours cancel (returns AM_CANCELLED, model = last iterate). `state` (may be NULL):
// where to start, and on return where it stopped; the log continues the one passed in.
using BatchFn = void (*)(void *user, size_t step, std::vector<double> *X, std::vector<double> *y);
am_status train(am_context *ctx, Model *m, const TrainSettings &ts, BatchFn fn, void *user,
                const am::sdk::ParallelFor &pf, TrainLog *log, TrainState *state = nullptr,
                const Checkpoints &checkpoints = Checkpoints());
// A training state on disk (docs/oneshot.md "Checkpoints"): `dir`/checkpoint.txt names the current
// generation dir `dir`/checkpoint-<step>/ (params.npy, adam_m.npy, adam_v.npy, state.txt); the pointer is
// replaced by a rename, so a reader sees one whole generation. `key` identifies the training settings.
am_status save_checkpoint(am_context *ctx, const std::string &dir, const std::string &key, const TrainState &st,
                          const Model &m, const TrainLog &log);
// Loads the checkpoint whose key equals `key`: AM_OK, or AM_ERR_NOT_FOUND (none, or another key).
am_status load_checkpoint(am_context *ctx, const std::string &dir, const std::string &key, const ModelShape &s,
                          TrainState *st, Model *m, TrainLog *log);
// Removes every checkpoint generation and the pointer under `dir`.
void remove_checkpoints(const std::string &dir);

// b^e in size_t: the number of paths H^L of a network and its partial-path counts.
size_t ipow(size_t b, size_t e);
// Effective path weights w_π = V0ᵀ V_{1,h1}ᵀ ⋯ V_{L,hL}ᵀ a (N0 × H_tot column-major, column π): the network in
// path form, f = Σ_π coef_π w_π·(X A_π).
std::vector<double> path_weights(const Model &m);
// GD-network overlap of effective path weights w_π·w_π' / W (H_tot × H_tot, column-major).
std::vector<double> path_overlap(const Model &m);
// Accuracy with sign(0) counted as a half.
double sign_accuracy(const double *f, const double *y, size_t n);

// A 1-D float64 .npy file.
am_status write_vector(am_context *ctx, const std::string &file, const std::vector<double> &x);
// Model (de)serialisation into a directory of .npy files.
am_status save_model(am_context *ctx, const std::string &dir, const Model &m);
am_status load_model(am_context *ctx, const std::string &dir, const ModelShape &s, Model *m);

// ------------------------------------------------------------------ the task

struct Options {
  std::string source = "hershey";            // hershey | fashion-mnist | omniglot:PATH | idx:DIR
  std::string ood = "auto";                  // auto | none | fashion-mnist | idx:DIR | hershey
  std::string hershey_dir = "/usr/share/hershey-fonts";
  std::string fashion_dir = "/usr/share/datasets/fashion-mnist";
  std::string cache;                          // "" = $XDG_CACHE_HOME/attnmech (or ~/.cache/attnmech); "none"
  size_t drawers = 20;
  size_t P = 600, P_val = 400, P_test = 1000;
  double val_class_fraction = 0.15;           // background classes held out for validation episodes
  ModelShape shape;
  TrainSettings train;
  std::vector<double> widths_scan{10, 100, 1000, 10000};
  std::vector<double> temperatures{0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5};  // temperatures_scan
  double temperature = 0.5;                   // the dataset's T (estimators that do not scan T)
};

// Checks consistency beyond the parameter table's ranges (the plugin's table fills Options; plugin.cpp).
am_status validate(am_context *ctx, const Options &o);

// Resolved cache directory ("" when caching is off).
std::string cache_dir(const Options &o);
// FNV-1a 64 as 16 hex digits.
std::string hash_key(const std::string &s);

// Everything up to the trained model (data, episodes, model); used by make_dataset and tests.
struct Prepared {
  TokenSpec tok;
  Embeddings emb;
  ImageSet background, evaluation, ood;      // ood empty when none
  Norm norm, ood_norm;
  std::vector<int32_t> train_classes, val_classes, eval_classes;
  std::vector<double> X_train, y_train, X_val, y_val, X_test, y_test, X_ood, y_ood;
  Model model;
  TrainLog log;
  bool model_from_cache = false, images_from_cache = false;
  size_t steps_done = 0, resumed_from = 0;   // GD steps taken in all; the checkpoint step this run resumed from
  bool trained = false;                      // the model holds a (possibly partial) training
  std::string checkpoint;                    // the checkpoint generation written last ("" = none)
  std::string ood_name;
};
am_status prepare(am_context *ctx, const Options &o, const am_rng &rng, const am::sdk::ParallelFor &pf,
                  Prepared *p);

// The cache (cache.cpp). `dir` "" = no cache: nothing is read or written. Load functions return false when the
// entry is missing, incomplete or of another key.
// Rendered image sets (p->background, p->evaluation) under `dir`.
bool load_cached_images(const std::string &dir, const std::string &key, Prepared *p);
void save_cached_images(am_context *ctx, const std::string &dir, const std::string &key, const Prepared &p);
// The key of a trained model: the image key and every setting that determines the training.
std::string model_cache_key(const Options &o, const std::string &img_key, uint64_t seed);
// The trained model (into p->model, shaped by p->model.shape) and its training log; saving also removes the
// checkpoints the finished model replaces.
bool load_cached_model(const std::string &dir, const std::string &key, Prepared *p);
void save_cached_model(am_context *ctx, const std::string &dir, const std::string &key, const Prepared &p);

// The whole task: fills `dataset` (dataset.h kind "attention") and `extras` (docs/oneshot.md).
am_status make_dataset(am_context *ctx, const Options &o, const am_rng &rng, const am::sdk::ParallelFor &pf,
                       am_record *dataset, am_record *extras);

}  // namespace am::oneshot

#endif
