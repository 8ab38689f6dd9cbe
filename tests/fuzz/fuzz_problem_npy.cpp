// Fuzz harness "problem_npy": the first byte chooses one .npy file of a valid problem directory
// (problem_dir.hpp: X_train, y_train, X_test, y_test or one of the six Q/K head files), the remaining bytes
// replace that file, and am_problem_read (libcore/src/problem_read.cpp over am_npy_read) reads the
// directory: the shape cross-checks between files (P, S, N0, G) and the finiteness check see fuzzed
// arrays. The file is restored after each input.
#include "problem_dir.hpp"

#include <attnmech/attnmech.h>

#include <fstream>
#include <iterator>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::filesystem::path dir = [] {
    const auto d = fuzz::temp_dir() / "problem";
    fuzz::write_problem_dir(d);
    return d;
  }();
  // The valid bytes of every file, to restore it.
  static const std::vector<std::vector<uint8_t>> originals = [] {
    std::vector<std::vector<uint8_t>> o;
    for (const auto &f : fuzz::problem_files()) {
      std::ifstream in(dir / f.name, std::ios::binary);
      o.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    return o;
  }();
  if (size < 1) return 0;
  const size_t which = data[0] % originals.size();
  const std::filesystem::path target = dir / fuzz::problem_files()[which].name;
  fuzz::write_file(target, data + 1, size - 1);
  am_context *ctx = fuzz::context();
  am_record *ds = nullptr;
  if (am_record_create(&ds) != AM_OK) std::abort();
  const am_status st = am_problem_read(ctx, dir.c_str(), ds);
  fuzz::expect_message(st);
  if (st == AM_OK && !am_record_get(ds, "X_train")) std::abort();
  am_record_destroy(&ds);
  fuzz::write_file(target, originals[which].data(), originals[which].size());
  return 0;
}
