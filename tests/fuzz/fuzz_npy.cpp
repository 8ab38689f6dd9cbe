// Fuzz harness "npy": the fuzzer's bytes are one .npy file, read by am_npy_read (libcore/src/npy.cpp).
// A file that reads must give an array whose every element converts to f64 (am_array_to_f64_c walks the
// whole storage, so a shape that claims more than was allocated is caught by ASan).
#include "fuzz_util.hpp"

#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static fuzz::MemFile file;
  am_context *ctx = fuzz::context();
  am_array *a = nullptr;
  const am_status st = am_npy_read(ctx, file.set(data, size).c_str(), &a);
  fuzz::expect_message(st);
  if (st != AM_OK) {
    if (a) std::abort();  // a failed read hands out nothing
    return 0;
  }
  const am_array_view v = am_array_get_view(a);
  const size_t n = am_array_view_count(&v);
  if (n * am_dtype_size(v.dtype) > size) std::abort();  // the data cannot be larger than the file
  std::vector<double> out(n ? n : 1);
  if (n && am_array_to_f64_c(ctx, &v, out.data(), n) != AM_OK) std::abort();
  am_array_destroy(&a);
  return 0;
}
