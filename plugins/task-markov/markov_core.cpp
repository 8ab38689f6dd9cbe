// attnmech — task "markov" (docs/tasks.md): generator, hand-built heads, configurations,
// the dataset record (with the path subsets "good" and "good_denoising", whose GP limits the theory estimator
// reports) and the extras.
#include "markov_core.h"

#include <attnmech/plugin.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

namespace am::markov {

size_t tokens(const Options &o) { return o.seq_len + 1; }
size_t input_dim(const Options &o) { return o.feature_dim + tokens(o); }

double effective_out_of_plane(const Options &o) {
  if (o.noise_out_of_plane >= 0) return o.noise_out_of_plane;
  return o.config == Config::TwoPaths ? 5.0 : 1.0;
}

const char *config_name(Config c) {
  switch (c) {
    case Config::All: return "all";
    case Config::Good: return "good";
    case Config::GoodDenoising: return "good_denoising";
    case Config::TwoPaths: return "2paths";
  }
  return "?";
}

am_status validate(am_context *ctx, const Options &o) {
  if (o.P < 2) return am_context_fail(ctx, AM_ERR_USAGE, "markov: P must be >= 2 (got %zu)", o.P);
  // Memory before anything is allocated: X of this process's rows of both splits (all of them unless the data is
  // made in parts, am_context_data_part), one split's twice (generated, then stored in the dataset), and the path
  // inputs ξ the estimator makes of every sequence (N0 × H_tot each, H_tot <= 4 here), in doubles.
  int part = 0, parts = 1;
  am_context_data_part(ctx, &part, &parts);
  size_t b0 = 0, e0 = 0, b1 = 0, e1 = 0;
  part_rows(o.P, part, parts, &b0, &e0);
  part_rows(o.P_test, part, parts, &b1, &e1);
  const double rows = double(e0 - b0) + double(e1 - b1), most = double(std::max(e0 - b0, e1 - b1));
  const double n = double(o.P) + double(o.P_test), S = double(tokens(o)), N0 = double(input_dim(o));
  if (am_memory_check(ctx, 8.0 * ((rows + most) * S * N0 + n * 4.0 * N0),
                      parts > 1 ? "markov: this rank's part of the data (P + P_test sequences)"
                                : "markov: the data (P + P_test sequences)",
                      nullptr) != AM_OK)
    return AM_ERR_NO_MEMORY;
  if (o.seq_len < 1) return am_context_fail(ctx, AM_ERR_USAGE, "markov: seq_len must be >= 1");
  if (o.feature_dim < 2 || o.feature_dim % 2 != 0)
    return am_context_fail(ctx, AM_ERR_USAGE, "markov: feature_dim must be even and >= 2 (got %zu)", o.feature_dim);
  if (!(o.stay_pos >= 0 && o.stay_pos <= 1) || !(o.stay_neg >= 0 && o.stay_neg <= 1))
    return am_context_fail(ctx, AM_ERR_USAGE, "markov: stay probabilities must lie in [0, 1]");
  if (!(o.temperature > 0) || !std::isfinite(o.temperature))
    return am_context_fail(ctx, AM_ERR_USAGE, "markov: temperature must be > 0 (got %g)", o.temperature);
  if (!(o.noise_inplane_sum >= 0) || !(o.noise_inplane_diff >= 0) || !std::isfinite(o.noise_inplane_sum) ||
      !std::isfinite(o.noise_inplane_diff))
    return am_context_fail(ctx, AM_ERR_USAGE, "markov: noise_inplane_sum and noise_inplane_diff must be >= 0");
  if (!(o.noise_out_of_plane >= 0 || o.noise_out_of_plane == -1.0) || !std::isfinite(o.noise_out_of_plane))
    return am_context_fail(ctx, AM_ERR_USAGE,
                           "markov: noise_out_of_plane must be >= 0, or -1 for auto (got %g)", o.noise_out_of_plane);
  if (!(o.beta_heads >= 0) || !std::isfinite(o.beta_heads))
    return am_context_fail(ctx, AM_ERR_USAGE, "markov: beta_heads must be >= 0");
  if (!(o.p_random >= 0) || !std::isfinite(o.p_random))
    return am_context_fail(ctx, AM_ERR_USAGE, "markov: p_random must be >= 0");
  if (o.widths_scan.empty()) return am_context_fail(ctx, AM_ERR_USAGE, "markov: widths_scan must not be empty");
  for (double w : o.widths_scan)
    if (!(w > 0) || !std::isfinite(w))
      return am_context_fail(ctx, AM_ERR_USAGE, "markov: widths_scan entries must be > 0 (got %g)", w);
  if (o.variances.size() != 4)
    return am_context_fail(ctx, AM_ERR_USAGE,
                           "markov: variances needs 4 entries s_0,s_1,s_2,s_a (L = 2), got %zu", o.variances.size());
  for (double v : o.variances)
    if (!(v > 0) || !std::isfinite(v))
      return am_context_fail(ctx, AM_ERR_USAGE, "markov: variances must be > 0 (got %g)", v);
  return AM_OK;
}

namespace {

// *r moved to word w of its stream (counter-based: block n is a pure function of the key, the stream and n, rng.h).
void seek_word(am_rng *r, uint64_t w) {
  r->counter = w / 4;
  r->used = 4;  // empty: the next word refills from block w / 4
  r->has_spare = 0;
  for (uint64_t i = 0; i < w % 4; ++i) am_rng_u32(r);
}

// Sequence μ's tokens: BOS (zero features) + T emissions with decomposed noise; one-hot positions 0..T. z: N_f scratch.
void emit_tokens(const Options &o, am_rng *rng, const int8_t *st, double *Xm, std::vector<double> &z) {
  const size_t T = o.seq_len, Nf = o.feature_dim, N0 = input_dim(o), half = Nf / 2;
  const double sq2 = std::sqrt(2.0);
  const double inv_sqrt_nf = 1.0 / std::sqrt(double(Nf));   // entries of u_∥ (all +) and u_⊥ (±)
  const double s_sum = o.noise_inplane_sum, s_diff = o.noise_inplane_diff, s_oop = effective_out_of_plane(o);
  Xm[Nf + 0] = 1.0;  // BOS: position code e_0, features zero
  for (size_t t = 1; t <= T; ++t) {
    double *x = Xm + t * N0;
    am_rng_fill_normal(rng, z.data(), Nf);
    double a = 0, b = 0;  // projections on u_∥, u_⊥
    for (size_t i = 0; i < half; ++i) { a += z[i]; b += z[i]; }
    for (size_t i = half; i < Nf; ++i) { a += z[i]; b -= z[i]; }
    a *= inv_sqrt_nf;
    b *= inv_sqrt_nf;
    const int8_t state = st[t - 1];
    for (size_t i = 0; i < Nf; ++i) {
      const double upar = inv_sqrt_nf, uperp = i < half ? inv_sqrt_nf : -inv_sqrt_nf;
      const double rest = z[i] - a * upar - b * uperp;
      const double clean = ((state > 0) == (i < half)) ? sq2 : 0.0;
      x[i] = clean + s_sum * a * upar + s_diff * b * uperp + s_oop * rest;
    }
    x[Nf + t] = 1.0;
  }
}

}  // namespace

void part_rows(size_t P, int part, int parts, size_t *begin, size_t *end) {
  const size_t k = parts > 1 ? size_t(parts) : 1, r = parts > 1 ? size_t(part) : 0;
  *begin = P * r / k;  // P ≤ 1e9 (the parameter table) and parts < 2^31: no overflow
  *end = P * (r + 1) / k;
}

void generate_split(const Options &o, am_rng *rng, size_t P, Split *out, size_t begin, size_t end) {
  const size_t T = o.seq_len, S = tokens(o), Nf = o.feature_dim, N0 = input_dim(o);
  const size_t n_pos = P / 2;
  if (end == 0 || end > P) end = P;
  begin = std::min(begin, end);
  out->P = P;
  out->begin = begin;
  out->rows = end - begin;
  out->y.assign(P, 0.0);
  out->states.assign(P * T, 0);
  out->X.assign(out->rows * S * N0, 0.0);

  // 1. hidden chains, class +1 first (all of them: the labels and the statistics are the whole split's)
  for (size_t mu = 0; mu < P; ++mu) {
    const bool pos = mu < n_pos;
    out->y[mu] = pos ? 1.0 : -1.0;
    const double p_stay = pos ? o.stay_pos : o.stay_neg;
    int8_t *st = &out->states[mu * T];
    st[0] = am_rng_uniform(rng) >= 0.5 ? 1 : -1;
    for (size_t t = 1; t < T; ++t) st[t] = am_rng_uniform(rng) < p_stay ? st[t - 1] : static_cast<int8_t>(-st[t - 1]);
  }

  // 2. the noise of rows [begin, end), from the word where the whole split's generator draws row `begin`'s
  const uint64_t chains = 2 * uint64_t(P) * T, per_row = 2 * uint64_t(T) * Nf;
  if (begin > 0) seek_word(rng, chains + per_row * begin);
  std::vector<double> z(Nf);
  for (size_t mu = begin; mu < end; ++mu) emit_tokens(o, rng, &out->states[mu * T], &out->X[(mu - begin) * S * N0], z);
  seek_word(rng, chains + per_row * P);  // where the whole split leaves the stream
}

SplitStats split_stats(const Options &o, const Split &s) {
  SplitStats r;
  const size_t T = o.seq_len;
  for (size_t mu = 0; mu < s.P; ++mu) {
    const bool pos = s.y[mu] > 0;
    (pos ? r.positives : r.negatives)++;
    const int8_t *st = &s.states[mu * T];
    for (size_t t = 1; t < T; ++t) {
      const bool stay = st[t] == st[t - 1];
      if (pos) {
        r.transitions_pos++;
        r.stays_pos += stay;
      } else {
        r.transitions_neg++;
        r.stays_neg += stay;
      }
    }
  }
  return r;
}

std::vector<double> build_head(const Options &o, HeadKind kind, am_rng *rng) {
  const size_t Nf = o.feature_dim, S = tokens(o), N0 = input_dim(o), T = o.seq_len;
  std::vector<double> W(N0 * N0, 0.0);
  auto at = [&](size_t i, size_t j) -> double & { return W[i + N0 * j]; };  // i = key side
  const double beta = o.beta_heads;
  switch (kind) {
    case HeadKind::SameToken: {
      // B_feat = q qᵀ with q = (v₊ − v₋)/N_f: entries ±√2/N_f
      const double qv = std::sqrt(2.0) / double(Nf);
      for (size_t j = 0; j < Nf; ++j)
        for (size_t i = 0; i < Nf; ++i) {
          const double qi = i < Nf / 2 ? qv : -qv, qj = j < Nf / 2 ? qv : -qv;
          at(i, j) = beta * qi * qj;
        }
      // B_pos[s, s+1] = 1 for s = 1..T−1 (key just before the query); B_pos[0, t] = 1.5 for t ≥ 1 (BOS fallback)
      for (size_t s = 1; s + 1 <= T; ++s) at(Nf + s, Nf + s + 1) = beta * 1.0;
      for (size_t t = 1; t < S; ++t) at(Nf + 0, Nf + t) = beta * 1.5;
      break;
    }
    case HeadKind::Uniform:
      for (size_t j = 0; j < S; ++j)
        for (size_t i = 0; i < S; ++i) at(Nf + i, Nf + j) = beta;
      break;
    case HeadKind::Random: {
      const double p = o.p_random;
      // feature block, row by row (key index outer, as a C-order draw)
      for (size_t i = 0; i < Nf; ++i)
        for (size_t j = 0; j < Nf; ++j) at(i, j) = beta * p * am_rng_normal(rng) / double(Nf);
      for (size_t i = 0; i < S; ++i)
        for (size_t j = 0; j < S; ++j) at(Nf + i, Nf + j) = beta * p * am_rng_normal(rng);
      // full N0×N0 draw; its feature×position and position×feature blocks are the cross part
      if (p > 0) {
        const double c = beta * p / std::sqrt(double(Nf));
        for (size_t i = 0; i < N0; ++i)
          for (size_t j = 0; j < N0; ++j) {
            const double g = am_rng_normal(rng);
            if ((i < Nf) != (j < Nf)) at(i, j) = c * g;
          }
      }
      break;
    }
    case HeadKind::Blank:
      break;  // zero matrix ⇒ uniform attention
  }
  return W;
}

Network network_for(Config c) {
  Network n;
  switch (c) {
    case Config::All:
      n.layers = {{HeadKind::SameToken, HeadKind::Random}, {HeadKind::Uniform, HeadKind::Random}};
      n.path_labels = {"g (same→unif)", "a1 (same→rand)", "d (rand→unif)", "a2 (rand→rand)"};
      break;
    case Config::Good:
      n.layers = {{HeadKind::SameToken}, {HeadKind::Uniform}};
      n.path_labels = {"g (same→unif)"};
      break;
    case Config::GoodDenoising:
      n.layers = {{HeadKind::SameToken, HeadKind::Random}, {HeadKind::Uniform}};
      n.path_labels = {"g (same→unif)", "d (rand→unif)"};
      break;
    case Config::TwoPaths:
      n.layers = {{HeadKind::SameToken, HeadKind::Blank}, {HeadKind::Uniform}};
      n.path_labels = {"g (same→unif)", "d (unif→unif)"};
      break;
  }
  return n;
}

std::vector<PathSubset> path_subsets(Config c) {
  switch (c) {
    case Config::All: return {{"good", {0}}, {"good_denoising", {0, 2}}};
    case Config::Good: return {{"good", {0}}};
    case Config::GoodDenoising:
    case Config::TwoPaths: return {{"good", {0}}, {"good_denoising", {0, 1}}};
  }
  return {};
}

HeadMatrices build_network_heads(const Options &o, const Network &net, const am_rng &heads_rng) {
  HeadMatrices hm;
  for (size_t l = 0; l < net.layers.size(); ++l) {
    hm.heads.push_back(net.layers[l].size());
    for (HeadKind k : net.layers[l]) {
      am_rng r;
      am_rng_split(&heads_rng, l == 0 ? STREAM_HEAD_L1 : STREAM_HEAD_L2, &r);
      hm.W.push_back(build_head(o, k, &r));
    }
  }
  return hm;
}

am_status network_arch(am_context *ctx, const Options &o, const Network &net, double width, am_arch *arch) {
  am_arch_default(arch);
  arch->layers = static_cast<uint32_t>(net.layers.size());
  for (size_t l = 0; l < net.layers.size(); ++l) arch->heads[l] = static_cast<uint32_t>(net.layers[l].size());
  for (size_t l = 0; l <= net.layers.size(); ++l) arch->widths[l] = width;
  for (size_t l = 0; l < net.layers.size() + 2; ++l) arch->variances[l] = o.variances[l];
  return am_arch_validate(ctx, arch);
}

namespace {

// X_<split> and y_<split> of the rows the split holds; made in parts, also part.<split> = [begin, P] (dataset.h).
am_status put_split(am_context *ctx, am_record *ds, const char *split, const Options &o, const Split &s, bool parted) {
  const std::string xkey = std::string("X_") + split, ykey = std::string("y_") + split;
  const size_t shape[3] = {s.rows, tokens(o), input_dim(o)};
  const am_array_view v = am_array_view_make(AM_F64, 3, shape, 0, s.X.data());
  am_status st = am_record_set_array(ds, xkey.c_str(), &v);
  if (st == AM_OK) st = am_record_set_vector(ds, ykey.c_str(), s.y.data() + s.begin, s.rows);
  if (st == AM_OK && parted) {
    am_record *part = am_record_object(ds, "part");
    const double rows[2] = {double(s.begin), double(s.P)};
    st = part ? am_record_set_vector(part, split, rows, 2) : AM_ERR_NO_MEMORY;
  }
  if (st != AM_OK) return am_context_fail(ctx, st, "markov: cannot store %s/%s in the dataset", xkey.c_str(), ykey.c_str());
  return AM_OK;
}

// One split made (its rows of this process's part of the data, am_context_data_part) and stored; its X freed once
// the dataset holds its copy, so the generated data is held twice only one split at a time.
am_status make_split(am_context *ctx, const Options &o, am_rng *rng, const char *split, size_t P, am_record *ds,
                     Split *s) {
  int part = 0, parts = 1;
  am_context_data_part(ctx, &part, &parts);
  size_t begin = 0, end = P;
  part_rows(P, part, parts, &begin, &end);
  generate_split(o, rng, P, s, begin, end);
  const am_status st = put_split(ctx, ds, split, o, *s, parts > 1);
  s->X = std::vector<double>();
  return st;
}

am_status put_stats(am_record *obj, const SplitStats &s) {
  am_status st = AM_OK;
  if (!obj) return AM_ERR_NO_MEMORY;
  if (st == AM_OK) st = am_record_set_number(obj, "positives", double(s.positives));
  if (st == AM_OK) st = am_record_set_number(obj, "negatives", double(s.negatives));
  if (st == AM_OK) st = am_record_set_number(obj, "stay_frequency_pos", s.stay_frequency_pos());
  if (st == AM_OK) st = am_record_set_number(obj, "stay_frequency_neg", s.stay_frequency_neg());
  if (st == AM_OK) st = am_record_set_number(obj, "transitions_pos", double(s.transitions_pos));
  if (st == AM_OK) st = am_record_set_number(obj, "transitions_neg", double(s.transitions_neg));
  return st;
}

// st, or (when it is an error) the failure "cannot store '<key>'" on ctx.
am_status stored(am_context *ctx, am_status st, const char *key) {
  if (st == AM_OK) return AM_OK;
  return am_context_fail(ctx, st, "markov: cannot store '%s' (%s)", key, am_status_string(st));
}

// obj.key = [values...] (numbers).
am_status put_numbers(am_context *ctx, am_record *obj, const char *key, const std::vector<double> &values) {
  am_record *l = am_record_list(obj, key);
  if (!l) return stored(ctx, AM_ERR_NO_MEMORY, key);
  for (double v : values) AM_SDK_TRY(stored(ctx, am_record_append_number(l, v), key));
  return AM_OK;
}

// obj.key = [values...] (strings).
am_status put_strings(am_context *ctx, am_record *obj, const char *key, const std::vector<const char *> &values) {
  am_record *l = am_record_list(obj, key);
  if (!l) return stored(ctx, AM_ERR_NO_MEMORY, key);
  for (const char *v : values) AM_SDK_TRY(stored(ctx, am_record_append_string(l, v), key));
  return AM_OK;
}

// dataset.attention.l<l>_h<h>: the heads' N0 × N0 matrices.
am_status put_attention(am_context *ctx, am_record *ds, const Options &o, const Network &net, const HeadMatrices &hm) {
  am_record *att = am_record_object(ds, "attention");
  if (!att) return stored(ctx, AM_ERR_NO_MEMORY, "attention");
  const size_t N0 = input_dim(o);
  size_t k = 0;
  for (size_t l = 0; l < net.layers.size(); ++l)
    for (size_t h = 0; h < net.layers[l].size(); ++h, ++k) {
      const std::string key = "l" + std::to_string(l + 1) + "_h" + std::to_string(h + 1);
      AM_SDK_TRY(stored(ctx, am_record_set_matrix(att, key.c_str(), hm.W[k].data(), N0, N0, N0), "attention"));
    }
  return AM_OK;
}

// dataset.path_subsets: [{name, paths: [...]}, ...] of the configuration.
am_status put_path_subsets(am_context *ctx, am_record *ds, const Options &o) {
  am_record *subsets = am_record_list(ds, "path_subsets");
  if (!subsets) return stored(ctx, AM_ERR_NO_MEMORY, "path_subsets");
  for (const PathSubset &ps : path_subsets(o.config)) {
    am_record *e = am_record_append_object(subsets);
    am_record *pl = e ? am_record_list(e, "paths") : nullptr;
    if (!pl) return stored(ctx, AM_ERR_NO_MEMORY, "path_subsets");
    AM_SDK_TRY(stored(ctx, am_record_set_string(e, "name", ps.name), "path_subsets"));
    for (size_t p : ps.paths) AM_SDK_TRY(stored(ctx, am_record_append_number(pl, double(p)), "path_subsets"));
  }
  return AM_OK;
}

// The dataset (dataset.h, kind "attention").
// (after "kind" and the splits, make_split)
am_status fill_dataset(am_context *ctx, const Options &o, const Network &net, const HeadMatrices &hm, am_record *ds) {
  std::vector<double> heads;
  for (const auto &layer : net.layers) heads.push_back(double(layer.size()));
  AM_SDK_TRY(put_numbers(ctx, ds, "heads", heads));
  AM_SDK_TRY(put_numbers(ctx, ds, "widths", std::vector<double>(net.layers.size() + 1, o.widths_scan[0])));
  AM_SDK_TRY(put_numbers(ctx, ds, "variances", o.variances));
  AM_SDK_TRY(stored(ctx, am_record_set_number(ds, "temperature", o.temperature), "temperature"));
  AM_SDK_TRY(stored(ctx, am_record_set_string(ds, "readout", "last"), "readout"));
  AM_SDK_TRY(put_attention(ctx, ds, o, net, hm));
  AM_SDK_TRY(put_strings(ctx, ds, "path_labels", net.path_labels));
  AM_SDK_TRY(put_path_subsets(ctx, ds, o));
  return put_numbers(ctx, ds, "widths_scan", o.widths_scan);
}

// The task extras: configuration, noise, sizes, generator settings and the data statistics.
am_status fill_extras(am_context *ctx, const Options &o, const Network &net, const Split &train, const Split &test,
                      am_record *extras) {
  AM_SDK_TRY(stored(ctx, am_record_set_string(extras, "config", config_name(o.config)), "config"));
  AM_SDK_TRY(put_strings(ctx, extras, "path_labels", net.path_labels));
  am_record *noise = am_record_object(extras, "noise");
  if (!noise) return stored(ctx, AM_ERR_NO_MEMORY, "noise");
  AM_SDK_TRY(stored(ctx, am_record_set_number(noise, "inplane_sum", o.noise_inplane_sum), "noise"));
  AM_SDK_TRY(stored(ctx, am_record_set_number(noise, "inplane_diff", o.noise_inplane_diff), "noise"));
  AM_SDK_TRY(stored(ctx, am_record_set_number(noise, "out_of_plane", effective_out_of_plane(o)), "noise"));
  const struct {
    const char *key;
    double value;
  } numbers[] = {{"feature_dim", double(o.feature_dim)}, {"seq_len", double(o.seq_len)},
                 {"N0", double(input_dim(o))},           {"S", double(tokens(o))},
                 {"stay_prob_pos", o.stay_pos},           {"stay_prob_neg", o.stay_neg},
                 {"beta_heads", o.beta_heads},            {"p_random", o.p_random}};
  for (const auto &n : numbers) AM_SDK_TRY(stored(ctx, am_record_set_number(extras, n.key, n.value), n.key));
  am_record *stats = am_record_object(extras, "data_stats");
  if (!stats) return stored(ctx, AM_ERR_NO_MEMORY, "data_stats");
  AM_SDK_TRY(stored(ctx, put_stats(am_record_object(stats, "train"), split_stats(o, train)), "data_stats"));
  if (o.P_test > 0)
    AM_SDK_TRY(stored(ctx, put_stats(am_record_object(stats, "test"), split_stats(o, test)), "data_stats"));
  return AM_OK;
}

am_status fill_record(am_context *ctx, const Options &o, const am_rng &rng, am_record *ds, am_record *extras) {
  am_status st = validate(ctx, o);
  if (st != AM_OK) return st;
  const Network net = network_for(o.config);
  am_rng r_train, r_test, r_heads;
  am_rng_split(&rng, STREAM_TRAIN, &r_train);
  am_rng_split(&rng, STREAM_TEST, &r_test);
  am_rng_split(&rng, STREAM_HEADS, &r_heads);

  Split train, test;
  AM_SDK_TRY(stored(ctx, am_record_set_string(ds, "kind", AM_DATASET_ATTENTION), "kind"));
  AM_SDK_TRY(make_split(ctx, o, &r_train, "train", o.P, ds, &train));
  if (o.P_test > 0) AM_SDK_TRY(make_split(ctx, o, &r_test, "test", o.P_test, ds, &test));
  if (am_context_progress(ctx, 1, 3, "markov: data generated")) return AM_CANCELLED;
  const HeadMatrices hm = build_network_heads(o, net, r_heads);
  if ((st = fill_dataset(ctx, o, net, hm, ds)) != AM_OK) return st;
  if (am_context_progress(ctx, 2, 3, "markov: dataset stored")) return AM_CANCELLED;
  if (extras && (st = fill_extras(ctx, o, net, train, test, extras)) != AM_OK) return st;
  am_context_progress(ctx, 3, 3, "markov: done");
  return AM_OK;
}

}  // namespace

am_status make_dataset(am_context *ctx, const Options &o, const am_rng &rng, am_record *dataset, am_record *extras) {
  if (!dataset) return am_context_fail(ctx, AM_ERR_INVALID_ARGUMENT, "markov: no dataset record");
  try {
    return fill_record(ctx, o, rng, dataset, extras);
  } catch (const std::bad_alloc &) {
    return am_context_fail(ctx, AM_ERR_NO_MEMORY, "markov: out of memory generating the dataset");
  } catch (...) {
    return am_context_fail(ctx, AM_ERR_INTERNAL, "markov: unexpected exception");
  }
}

}  // namespace am::markov
