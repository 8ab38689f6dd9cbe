// msa_core — the alignment file's bytes as a stream: a bounded read of a regular file (a FIFO or a device is named,
// never read forever) and gunzip by gzip's magic bytes (every member), with the same bound on what it inflates to.
// The bytes go to a sink in chunks of 64 KB: the reader never holds the file or its text whole.
#include "source.hpp"

#include <attnmech/plugin.hpp>
#include <common/read_input.hpp>  // open_regular_file, read_some: the one rule for reading inputs

#include <cerrno>
#include <cstring>
#include <vector>

#if AM_MSA_ZLIB
#include <zlib.h>
#endif

namespace am::msa {

namespace {

using am::sdk::Error;

constexpr size_t kChunk = size_t(1) << 16;

Error too_large(const std::string &path, const char *what) {
  return Error(AM_ERR_FORMAT, "msa: " + path + ": " + what + " more than " + std::to_string(kMaxFileBytes >> 30) +
                                  " GB, too large for an alignment");
}

// The file opened by the one rule for inputs (include/common/read_input.hpp: the kind checked before a non-blocking
// open, and again by fstat), its messages prefixed with "msa: ".
using File = am::input::RegularFile;

void open_regular(const std::string &path, File &f, SourceInfo &info) {
  try {
    am::input::open_regular_file(path, "an alignment file", &f);
  } catch (const am::input::Error &e) {
    throw Error(e.code, std::string("msa: ") + e.what());
  }
  if (f.size > kMaxFileBytes) throw too_large(path, "holds");
  info.file_bytes = static_cast<uint64_t>(f.size);
}

// Up to `cap` bytes of the file into buf; 0 at its end. The bound holds for a file that grows while it is read.
size_t read_some(const File &f, SourceInfo &info, char *buf, size_t cap) {
  size_t n = 0;
  try {
    n = am::input::read_some(f, info.path, buf, cap);
  } catch (const am::input::Error &e) {
    throw Error(e.code, std::string("msa: ") + e.what());
  }
  info.read_bytes += n;
  if (info.read_bytes > kMaxFileBytes) throw too_large(info.path, "holds");
  return n;
}

void emit(SourceInfo &info, const Sink &sink, const char *p, size_t n) {
  if (n == 0) return;
  info.text_bytes += n;
  if (info.text_bytes > kMaxFileBytes) throw too_large(info.path, info.gzip ? "decompresses to" : "holds");
  sink(p, n);
}

bool gzip_magic(const unsigned char *p) { return p[0] == 0x1f && p[1] == 0x8b; }

#if AM_MSA_ZLIB
// Inflates every gzip member (`cat a.gz b.gz` makes several) from the file, `in` holding the first `have` bytes
// read; bytes after the last member that start no other member are ignored, as gzip(1) does.
void gunzip(const File &f, SourceInfo &info, std::vector<char> &in, size_t have, const Sink &sink) {
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 16) != Z_OK) throw Error(AM_ERR_NO_MEMORY, "msa: " + info.path + ": cannot start gunzip");
  struct End {
    z_stream *z;
    ~End() { inflateEnd(z); }
  } end{&zs};
  std::vector<char> out(kChunk);
  zs.next_in = reinterpret_cast<Bytef *>(in.data());
  zs.avail_in = static_cast<uInt>(have);
  bool eof = false;
  const auto refill = [&] {  // moves what is left to the front and reads more behind it
    std::memmove(in.data(), zs.next_in, zs.avail_in);
    const size_t got = read_some(f, info, in.data() + zs.avail_in, in.size() - zs.avail_in);
    eof = got == 0;
    zs.next_in = reinterpret_cast<Bytef *>(in.data());
    zs.avail_in += static_cast<uInt>(got);
  };
  for (;;) {
    if (zs.avail_in == 0 && !eof) refill();
    zs.next_out = reinterpret_cast<Bytef *>(out.data());
    zs.avail_out = static_cast<uInt>(out.size());
    const int rc = inflate(&zs, Z_NO_FLUSH);
    emit(info, sink, out.data(), out.size() - zs.avail_out);
    if (rc == Z_STREAM_END) {
      while (zs.avail_in < 2 && !eof) refill();
      if (zs.avail_in < 2 || !gzip_magic(zs.next_in)) return;
      inflateReset(&zs);
    } else if (rc == Z_BUF_ERROR || (rc == Z_OK && zs.avail_in == 0 && eof && zs.avail_out != 0)) {
      if (zs.avail_in == 0 && !eof) continue;  // needs more input: read it
      throw Error(AM_ERR_FORMAT, "msa: " + info.path + ": truncated gzip file (it ends inside the compressed data)");
    } else if (rc != Z_OK) {
      throw Error(AM_ERR_FORMAT,
                  "msa: " + info.path + ": corrupt gzip data" + (zs.msg ? std::string(" (") + zs.msg + ")" : ""));
    }
  }
}
#endif

}  // namespace

bool gzip_supported() { return AM_MSA_ZLIB != 0; }

void check_budget(double bytes, const std::string &what) {
  am_context *c = nullptr;  // a context of its own for am_memory_check's message (the reader has no host)
  am_context_create(&c, nullptr);
  const am_status st = am_memory_check(c, bytes, what.c_str(), nullptr);
  const std::string msg = st == AM_OK ? "" : c ? am_context_last_error(c) : what + " does not fit the memory budget";
  am_context_destroy(&c);
  if (st != AM_OK) throw Error(st, msg);
}

void stream_file(const std::string &path, SourceInfo &info, const Sink &sink) {
  if (path.empty()) throw Error(AM_ERR_USAGE, "msa: parameter 'file' is required (e.g. --set file=family.a2m)");
  info.path = path;
  File f;
  open_regular(path, f, info);
  std::vector<char> buf(kChunk);
  size_t have = 0;
  while (have < 2) {  // the magic bytes decide
    const size_t got = read_some(f, info, buf.data() + have, buf.size() - have);
    if (got == 0) break;
    have += got;
  }
  info.gzip = have >= 2 && gzip_magic(reinterpret_cast<const unsigned char *>(buf.data()));
  if (!info.gzip) {
    for (size_t n = have; n > 0; n = read_some(f, info, buf.data(), buf.size())) emit(info, sink, buf.data(), n);
    return;
  }
#if AM_MSA_ZLIB
  gunzip(f, info, buf, have, sink);
#else
  throw Error(AM_ERR_FORMAT, "msa: " + path +
                                 ": is gzip-compressed, but this build has no zlib (install zlib1g-dev and rebuild, "
                                 "or gunzip the file first)");
#endif
}

std::string read_alignment_file(const std::string &path) {
  Tally tally;
  SourceInfo info;
  tally.describe = [&](double) { return "msa: " + path + ": the text (" + std::to_string(info.text_bytes) + " bytes so far)"; };
  std::string text;
  stream_file(path, info, [&](const char *p, size_t n) {
    if (text.size() + n > text.capacity()) tally.grow(double(std::max(text.capacity(), n)));
    text.append(p, n);
  });
  return text;
}

}  // namespace am::msa
