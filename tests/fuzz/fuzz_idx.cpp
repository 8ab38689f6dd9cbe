// Fuzz harnesses "idx" and "idx_gz" (this file built twice): am::oneshot::read_idx_u8
// (plugins/task-oneshot/images.cpp), the reader of MNIST-like IDX files, plain or gzipped.
//   idx    (default): the fuzzer's bytes are the file as it is, opened through a name ending in .gz (as
//                     t10k-images-idx3-ubyte.gz is); zlib passes non-gzip bytes through, so raw IDX headers
//                     and damaged gzip streams are both explored.
//   idx_gz (-DFUZZ_IDX_GZIP=1): the fuzzer's bytes are the IDX content, gzip-compressed here before they
//                     are written, so the IDX parser is explored behind the gzip layer.
// A file that reads must hold exactly the product of its dimensions in bytes.
#include "fuzz_util.hpp"

#include "oneshot_core.h"

#include <zlib.h>

#include <vector>

namespace {

#if FUZZ_IDX_GZIP
std::vector<uint8_t> gzip(const uint8_t *data, size_t size) {
  z_stream z{};
  if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) std::abort();
  std::vector<uint8_t> out(deflateBound(&z, static_cast<uLong>(size)) + 32);
  z.next_in = const_cast<Bytef *>(data);
  z.avail_in = static_cast<uInt>(size);
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) std::abort();
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}
#endif

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static fuzz::MemFile file;
#if FUZZ_IDX_GZIP
  const std::vector<uint8_t> gz = gzip(data, size);
  const std::string &path = file.set(gz.data(), gz.size());
#else
  static const std::string path = [] {
    const auto link = fuzz::temp_dir() / "input-idx3-ubyte.gz";
    std::filesystem::create_symlink(file.path(), link);
    return link.string();
  }();
  file.set(data, size);
#endif
  std::vector<uint8_t> bytes;
  std::vector<size_t> dims;
  const am_status st = am::oneshot::read_idx_u8(fuzz::context(), path, &bytes, &dims);
  fuzz::expect_message(st);
  if (st == AM_OK) {
    size_t total = 1;
    for (size_t d : dims) total *= d;
    if (dims.empty() || dims.size() > 4 || bytes.size() != total) std::abort();
  }
  return 0;
}
