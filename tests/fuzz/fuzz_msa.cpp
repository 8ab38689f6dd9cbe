// Fuzz harness "msa": the fuzzer's bytes are one alignment file (plain or gzip), read as the task msa reads it:
// am::msa::read_alignment_file, parse_records, encode (protein without focus, then focus on the first record's
// name, then a custom alphabet) and the weights. Bad input must be an am::sdk::Error with a message; what reads
// must be consistent (states below C, L site numbers, ≥ 2 rows and sites, weights in (0, 1]).
#include "fuzz_util.hpp"

#include "alignment.hpp"
#include "weights.hpp"

#include <cstdlib>

namespace {

void check(const am::msa::Alignment &a) {
  if (a.M < 2 || a.L < 2 || a.tokens.size() != a.M * a.L || a.site_numbers.size() != a.L) std::abort();
  if (a.M + a.M_dropped != a.M_read || a.names.size() != a.M) std::abort();
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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static fuzz::MemFile file;
  const std::string &path = file.set(data, size);
  am::msa::Records r;
  try {
    r = am::msa::parse_records(am::msa::read_alignment_file(path), path);
  } catch (const am::sdk::Error &e) {
    if (!*e.what()) std::abort();
    return 0;
  }
  if (r.rows.empty() || r.rows.size() != r.names.size()) std::abort();
  for (const std::string &row : r.rows)
    if (row.size() != r.rows[0].size() || row.empty()) std::abort();
  encode_checked(r, "protein", "");
  encode_checked(r, "rna", r.names[0].substr(0, 3));
  encode_checked(r, ".ACGT-", r.names.back());
  return 0;
}
