// Fuzz harness "problem_model": the fuzzer's bytes are the model.json of a problem directory whose .npy
// files are valid (problem_dir.hpp), read by am_problem_read (libcore/src/problem_read.cpp) as the `npy`
// task reads it. A directory that reads must give an attention dataset (kind, X_train, heads).
#include "problem_dir.hpp"

#include <attnmech/attnmech.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::filesystem::path dir = [] {
    const auto d = fuzz::temp_dir() / "problem";
    fuzz::write_problem_dir(d);
    return d;
  }();
  fuzz::write_file(dir / "model.json", data, size);
  am_context *ctx = fuzz::context();
  am_record *ds = nullptr;
  if (am_record_create(&ds) != AM_OK) std::abort();
  const am_status st = am_problem_read(ctx, dir.c_str(), ds);
  fuzz::expect_message(st);
  if (st == AM_OK && (!am_record_get(ds, "X_train") || !am_record_get(ds, "heads"))) std::abort();
  am_record_destroy(&ds);
  return 0;
}
