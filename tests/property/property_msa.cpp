// Property: random alignments — any M, L, alphabet (protein, rna, dna, custom), gaps ('-', '.'), insert letters,
// format (FASTA, A2M, A3M, Stockholm in interleaved blocks), line ends (LF, CRLF, CR), gzip, focus — through what
// the task msa and the estimator do: the reader (read_records), the dataset (make_dataset: encode, weights, split)
// and the alignment fit (run_msa_fit, 1–16 heads or plmc's model, gaps missing or a state). Every case succeeds
// with finite numbers or is refused with a message, and stays within its memory estimates: the reader's Tally within
// reader_bytes_bound of the text, and — measured as the peak resident set each stage adds (VmHWM reset through
// clear_refs; not under ASan, whose allocator is not the one counted) — the dataset within the reader's and the
// dataset's estimates, the fit within msa_fit_bytes, each × kFactor + kSlack.
#include <attnmech/array.h>
#include <malloc.h>
#include <sys/stat.h>
#include <unistd.h>
#if AM_MSA_ZLIB
#include <zlib.h>
#endif

#include <filesystem>
#include <fstream>

#include "../memory_limit.hpp"
#include "dataset.hpp"
#include "fit_memory.h"
#include "msa_fit.h"
#include "property.hpp"

using namespace prop;

namespace {

// Peak RSS ≤ estimate × kFactor + kSlack: the estimates count every array whole (tests/plugins/common/potts measures
// them within 10 %); the slack covers what a small case's allocations round to (pages, the allocator's arenas, the
// inflater's buffers, the doctest and record bookkeeping).
constexpr double kFactor = 1.25, kSlack = 6e6;

struct Spec {
  std::string alphabet = "protein", letters, format = "fasta", ends = "\n", focus;
  size_t M = 2, L = 2;
  double gaps = 0, inserts = 0, theta = 0.2;
  bool gzip = false, dots = false;
};

// The letters of the alphabet a row may use (a custom alphabet: its own; the gap letter of the built-in ones is '-').
std::string letters_of(const std::string &alphabet) {
  if (alphabet == "protein") return "ACDEFGHIKLMNPQRSTVWY";
  if (alphabet == "rna") return "ACGU";
  if (alphabet == "dna") return "ACGT";
  return alphabet;
}

Spec draw_spec(Gen &g) {
  Spec s;
  static const char *alphabets[] = {"protein", "rna", "dna", "AB", "XYZ-"};
  s.alphabet = alphabets[g.pick({4, 2, 1, 1, 1})];
  s.letters = letters_of(s.alphabet);
  static const char *formats[] = {"fasta", "a3m", "stockholm"};
  s.format = formats[g.pick({3, 1, 2})];
  static const char *ends[] = {"\n", "\r\n", "\r"};
  s.ends = ends[g.pick({4, 1, 1})];
  s.M = g.chance(0.2) ? g.integer(2, 4) : g.integer(5, g.chance(0.1) ? 2000 : 200);
  s.L = g.chance(0.2) ? g.integer(2, 4) : g.integer(5, g.chance(0.15) ? 160 : 60);
  s.gaps = g.chance(0.3) ? 0 : g.unif() * 0.5;
  s.dots = s.alphabet != "AB" && s.alphabet != "XYZ-" && g.chance(0.3);
  s.inserts = s.format == "stockholm" || g.chance(0.5) ? 0 : g.unif() * 0.2;
  s.theta = g.chance(0.3) ? 0 : g.chance(0.2) ? 1 : g.unif() * 0.5;
  s.gzip = g.chance(0.25);
  if (g.chance(0.3)) s.focus = "s0";
  g.note("alphabet=%s format=%s ends=%s M=%zu L=%zu gaps=%.2f dots=%d inserts=%.2f theta=%.2f gzip=%d focus=%s",
         s.alphabet.c_str(), s.format.c_str(), s.ends == "\n" ? "LF" : s.ends == "\r" ? "CR" : "CRLF", s.M, s.L, s.gaps,
         (int)s.dots, s.inserts, s.theta, (int)s.gzip, s.focus.c_str());
  return s;
}

// Row s: L columns of letters and gaps; with inserts, lowercase letters between them (A3M: removed on reading).
std::string draw_row(Gen &g, const Spec &s, const std::string &ancestor) {
  const std::string gap = s.alphabet == "AB" ? "" : s.dots ? "-." : "-";
  std::string row;
  for (size_t i = 0; i < s.L; ++i) {
    if (!gap.empty() && g.chance(s.gaps)) row += gap[g.integer(0, gap.size() - 1)];
    else row += g.chance(0.7) ? ancestor[i] : s.letters[g.integer(0, s.letters.size() - 1)];
    if (s.inserts > 0 && g.chance(s.inserts) && s.alphabet != "XYZ-") row += (char)std::tolower(s.letters[0]);
  }
  return row;
}

std::string write_text(Gen &g, const Spec &s) {
  std::string ancestor;
  for (size_t i = 0; i < s.L; ++i) ancestor += s.letters[g.integer(0, s.letters.size() - 1)];
  std::vector<std::string> rows(s.M);
  for (auto &r : rows) r = draw_row(g, s, ancestor);
  std::string t;
  const std::string &e = s.ends;
  if (s.format != "stockholm") {
    for (size_t k = 0; k < s.M; ++k) {
      t += ">s" + std::to_string(k) + "/3-" + std::to_string(2 + s.L) + " desc" + e;
      const size_t width = g.chance(0.5) ? rows[k].size() : g.integer(1, 80);  // sequences over several lines
      for (size_t at = 0; at < rows[k].size(); at += width) t += rows[k].substr(at, width) + e;
    }
    return t;
  }
  t = "# STOCKHOLM 1.0" + e + "#=GF ID random" + e;
  const size_t width = g.chance(0.5) ? s.L : g.integer(1, s.L);  // interleaved blocks of `width` columns
  for (size_t at = 0; at < s.L; at += width) {
    t += e;
    for (size_t k = 0; k < s.M; ++k) t += "s" + std::to_string(k) + "/3-" + std::to_string(2 + s.L) + " " + rows[k].substr(at, width) + e;
    if (g.chance(0.3)) t += "#=GC SS_cons " + std::string(std::min(width, s.L - at), '.') + e;
  }
  return t + "//" + e;
}

bool write_file(const std::string &path, const std::string &text, bool gzip) {
#if AM_MSA_ZLIB
  if (gzip) {
    gzFile f = gzopen(path.c_str(), "wb6");
    if (!f) return false;
    const bool ok = text.empty() || gzwrite(f, text.data(), (unsigned)text.size()) > 0;
    return gzclose(f) == Z_OK && ok;
  }
#endif
  (void)gzip;
  std::ofstream f(path, std::ios::binary);
  f << text;
  return bool(f);
}

// KiB `op` adds to the peak resident set (-1: not measurable here).
template <class F>
long rise_kib(F &&op) {
  malloc_trim(0);
  if (!am_test::reset_peak()) {
    op();
    return -1;
  }
  const long before = am_test::status_kib("VmRSS:");
  op();
  const long peak = am_test::status_kib("VmHWM:");
  return before < 0 || peak < 0 ? -1 : peak - before;
}

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kMeasure = false;
#else
constexpr bool kMeasure = true;
#endif

std::string over(const char *what, long kib, double estimate) {
  if (!kMeasure || kib < 0 || 1024.0 * double(kib) <= estimate * kFactor + kSlack) return "";
  return format("%s: peak RSS rose by %.1f MB, above the estimate %.1f MB × %.2f + %.0f MB", what, kib / 1024.0,
                estimate / 1e6, kFactor, kSlack / 1e6);
}

Outcome msa_case(Gen &g) {
  static const std::string dir = [] {
    std::string t = (std::filesystem::temp_directory_path() / "attnmech-prop-msa-XXXXXX").string();
    return std::string(mkdtemp(&t[0]) ? t.c_str() : "/tmp");
  }();
  const Spec s = draw_spec(g);
  const std::string text = write_text(g, s), path = dir + "/case" + (s.gzip ? ".gz" : ".fa");
  if (!write_file(path, text, s.gzip)) return {"cannot write " + path, ""};
  // the reader: its Tally within the bound of the text
  try {
    const am::msa::Records r = am::msa::read_records(path);
    if (r.tally->peak() > am::msa::reader_bytes_bound(double(text.size())))
      return {format("the reader held %.0f bytes for %zu of text, above reader_bytes_bound %.0f", r.tally->peak(),
                     text.size(), am::msa::reader_bytes_bound(double(text.size()))), ""};
  } catch (const am::sdk::Error &e) {
    if (!*e.what()) return {"the reader threw an empty message", ""};
    return {"", am_status_string(e.status)};
  }
  // the dataset
  am::msa::Options o;
  o.file = path, o.alphabet = s.alphabet, o.focus = s.focus, o.theta = s.theta, o.test_fraction = g.unif() * 0.3;
  am_record *ds = nullptr, *ex = nullptr;
  am_record_create(&ds), am_record_create(&ex);
  struct Free {
    am_record **a, **b;
    ~Free() { am_record_destroy(a), am_record_destroy(b); }
  } free_records{&ds, &ex};
  am_rng rng;
  am_rng_init(&rng, g.g(), 0);
  std::string err;
  am_status st = AM_OK;
  const long data_kib = rise_kib([&] {
    try {
      am::msa::make_dataset(o, rng, am::sdk::threads_loop(2), ds, ex);
    } catch (const am::sdk::Error &e) {
      err = e.what(), st = e.status;
    }
  });
  if (st != AM_OK) return err.empty() ? Outcome{"make_dataset threw an empty message", ""} : Outcome{"", am_status_string(st)};
  double M = 0, Mt = 0, L = 0;
  am_record_get_number(ex, "M", &M), am_record_get_number(ex, "M_test", &Mt), am_record_get_number(ds, "L", &L);
  const size_t Mall = size_t(M + Mt), Ls = size_t(L);
  const double data_est = std::max(am::msa::reader_bytes_bound(double(text.size())) + double(Mall) * double(Ls),
                                   am::msa::dataset_bytes(Mall, Ls));
  if (std::string f = over("make_dataset", data_kib, data_est); !f.empty()) return {f, ""};
  // the fit
  am::potts::PLOptions po;
  am::msa::FitOptions fo;
  po.heads = g.chance(0.2) && Ls <= 60 ? 0 : (int)g.integer(1, 16);  // plmc's model: L(L−1)/2 blocks, kept small
  fo.model = po.heads == 0 ? "potts" : "factored";
  po.heads = std::max(1, po.heads);
  fo.gaps = g.chance(0.3) ? "state" : "auto";
  po.max_iter = (int)g.integer(1, 3);
  po.init_scale = 0.1;
  g.note("heads=%d model=%s gaps=%s max_iter=%d", po.heads, fo.model.c_str(), fo.gaps.c_str(), po.max_iter);
  Context ctx;
  am_record *run = nullptr;
  am_record_create(&run);
  const long fit_kib = rise_kib([&] { st = am::msa::run_msa_fit(ctx.ctx, po, fo, ds, rng, run); });
  double train = NAN;
  am_record_get_number(run, "train_loss", &train);
  am_record_destroy(&run);
  if (st != AM_OK) return refusal(ctx.ctx, st, "run_msa_fit");
  if (!std::isfinite(train)) return {format("train_loss %g", train), ""};
  am::potts::FitShape fs;
  fs.M = size_t(M), fs.M_test = size_t(Mt), fs.L = (int)Ls;
  double C = 0;
  am_record_get_number(ds, "C", &C);
  const bool missing = fo.gaps == "auto" && s.alphabet != "AB";  // the built-in alphabets and "XYZ-" have a gap
  fs.C = (int)C - (missing ? 1 : 0);
  const double fit_est = am::msa::msa_fit_bytes(fs, fo.model == "potts" ? am::msa::MsaKind::Potts
                                                                        : am::msa::MsaKind::Factored,
                                                po.heads, true);
  if (std::string f = over("run_msa_fit", fit_kib, fit_est); !f.empty()) return {f, ""};
  return {};
}

}  // namespace

TEST_CASE("property: random alignments through reader, weights and fit stay within their memory estimates") {
  am_blas_threads_set(1);
  mallopt(M_PERTURB, 0);  // meson test's MALLOC_PERTURB_ would make reserved, unwritten pages resident
  // A fixed mmap threshold (as fit_memory_test.hpp's quiet_malloc): glibc's dynamic one, raised by the frees of
  // earlier cases, can put a later case's L-BFGS vectors in the heap, where they stay resident after the fit while
  // its outputs are written — the allocator's state between cases, not the fit's need (3.8: with the factored
  // couplings streamed, nothing else hides it; one run per process is within 3 % of its estimate, docs/msa.md).
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  const am_test::Limit unset(nullptr);
  CHECK(run_cases("msa", kCiMsa, msa_case) > 0);
}
