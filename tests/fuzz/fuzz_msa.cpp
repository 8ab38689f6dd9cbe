// Fuzz harness "msa": the fuzzer's bytes are one alignment file (plain or gzip), read as the task msa reads it:
// am::msa::read_records (the file streamed in 64 KB pieces), and again as parse_records of the whole text cut into
// pieces of 1–8 bytes (every line end and UTF-8 byte-order mark split across pieces): both must give the same
// records, or both the same error. Then encode (protein without focus, then focus on the first record's name, then a
// custom alphabet), the weights, and the dataset (make_dataset: reader, weights, split, record). Bad input must be an
// am::sdk::Error with a message; what reads must be consistent (states below C, L site numbers, ≥ 2 rows and sites,
// weights in (0, 1]) and within the reader's memory bound (its Tally's peak ≤ reader_bytes_bound of the text).
// AM_MEMORY_LIMIT is 64 MB: a small file that inflates or indexes beyond it is refused by the budget checks (and so
// exercises them) instead of running the harness out of memory.
#include "fuzz_util.hpp"

#include "alignment.hpp"
#include "dataset.hpp"
#include "weights.hpp"

#include <cstdlib>

namespace {

void check(const am::msa::Alignment &a) {
  if (a.M < 2 || a.L < 2 || a.tokens.size() != a.M * a.L || a.site_numbers.size() != a.L) std::abort();
  if (a.M + a.M_dropped != a.M_read || a.record_of.size() != a.M) std::abort();
  for (uint8_t t : a.tokens)
    if (t >= a.C) std::abort();
  if (a.focus_row >= 0 && (a.focus_sequence.size() != a.L || static_cast<size_t>(a.focus_row) >= a.M)) std::abort();
  const std::vector<double> w = am::msa::cluster_weights(a.tokens.data(), a.M, a.L, 0.2, am::sdk::serial_loop());
  for (double x : w)
    if (!(x > 0 && x <= 1)) std::abort();
}

// Encodes with `alphabet` and `focus`; an error must say something.
void encode_checked(const am::msa::Records &r, const char *alphabet, const std::string &focus) {
  try {
    check(am::msa::encode(r, am::msa::make_alphabet(alphabet), focus, "fuzz"));
  } catch (const am::sdk::Error &e) {
    if (!*e.what()) std::abort();
  }
}

std::string dump(const am::msa::Records &r) {
  std::string s = r.format;
  for (size_t k = 0; k < r.size(); ++k)
    s += "|" + std::string(r.name(k)) + "=" + std::string(r.row(k)) + "@" + std::to_string(r.line_of(k));
  return s;
}

// The records of the whole text in pieces of `chunk` bytes; the error's status (0: none) in *st.
am::msa::Records pieces(const std::string &path, size_t chunk, am_status *st) {
  *st = AM_OK;
  try {
    const std::string text = am::msa::read_alignment_file(path);
    am::msa::Records r = am::msa::parse_records(text, path, chunk);
    if (r.tally->peak() > am::msa::reader_bytes_bound(double(text.size()))) std::abort();  // the memory bound
    return r;
  } catch (const am::sdk::Error &e) {
    if (!*e.what()) std::abort();
    *st = e.status;
  }
  return {};
}

void dataset_checked(const std::string &path) {
  am::msa::Options o;
  o.file = path;
  am_record *ds = nullptr, *ex = nullptr;
  am_record_create(&ds);
  am_record_create(&ex);
  am_rng rng;
  am_rng_init(&rng, 1, 0);
  try {
    am::msa::make_dataset(o, rng, am::sdk::serial_loop(), ds, ex);
    double L = 0;
    if (am_record_get_number(ds, "L", &L) != AM_OK || L < 2) std::abort();
  } catch (const am::sdk::Error &e) {
    if (!*e.what()) std::abort();
  }
  am_record_destroy(&ds);
  am_record_destroy(&ex);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static fuzz::MemFile file;
  static const bool limited = setenv("AM_MEMORY_LIMIT", "64M", 1) == 0;
  (void)limited;
  const std::string &path = file.set(data, size);
  am::msa::Records r;
  am_status streamed = AM_OK;
  try {
    r = am::msa::read_records(path);
  } catch (const am::sdk::Error &e) {
    if (!*e.what()) std::abort();
    streamed = e.status;
  }
  am_status st = AM_OK;
  const am::msa::Records p = pieces(path, 1 + (size ? data[size - 1] % 8 : 0), &st);
  if (st != streamed && st != AM_ERR_NO_MEMORY && streamed != AM_ERR_NO_MEMORY) std::abort();  // same verdict
  if (streamed != AM_OK) return 0;
  if (st == AM_OK && dump(p) != dump(r)) std::abort();  // the same records however the stream is cut
  if (r.size() == 0 || r.row_end.size() != r.size() || r.name_end.size() != r.size()) std::abort();
  for (size_t k = 0; k < r.size(); ++k)
    if (r.row(k).size() != r.columns() || r.row(k).empty()) std::abort();
  encode_checked(r, "protein", "");
  encode_checked(r, "rna", std::string(r.name(0).substr(0, 3)));
  encode_checked(r, ".ACGT-", std::string(r.name(r.size() - 1)));
  dataset_checked(path);
  return 0;
}
