// msa_core — the alignment file's bytes: a bounded read of a regular file (a FIFO or a device is named, never
// read forever) and gunzip by gzip's magic bytes, with the same bound on what it inflates to.
#include "alignment.hpp"

#include <attnmech/plugin.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#if AM_MSA_ZLIB
#include <zlib.h>
#endif

namespace am::msa {

namespace {

using am::sdk::Error;

const char *kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

Error not_regular(const std::string &path, mode_t m) {
  return Error(AM_ERR_FORMAT, "msa: " + path + ": is " + kind_of(m) + ", not an alignment file");
}

Error too_large(const std::string &path, const char *what) {
  return Error(AM_ERR_FORMAT, "msa: " + path + ": " + what + " more than " + std::to_string(kMaxFileBytes >> 30) +
                                  " GB, too large for an alignment");
}

// The whole regular file: the kind is checked before the open (which does not block), and again by fstat.
std::string read_regular(const std::string &path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw Error(AM_ERR_IO, "msa: " + path + ": cannot open: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw not_regular(path, st.st_mode);
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw Error(AM_ERR_IO, "msa: " + path + ": cannot open: " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  if (::fstat(fd, &st) != 0) throw Error(AM_ERR_IO, "msa: " + path + ": cannot stat: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw not_regular(path, st.st_mode);
  if (static_cast<unsigned long long>(st.st_size) > kMaxFileBytes) throw too_large(path, "holds");
  std::string text;
  text.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {  // to the end, not to st_size: a file may grow while it is read (the bound still holds)
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(AM_ERR_IO, "msa: " + path + ": read error: " + std::strerror(errno));
    if (n == 0) break;
    if (text.size() + static_cast<size_t>(n) > kMaxFileBytes) throw too_large(path, "holds");
    text.append(buf, static_cast<size_t>(n));
  }
  return text;
}

bool is_gzip(const std::string &bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

#if AM_MSA_ZLIB
// Inflates every gzip member of `gz` (`cat a.gz b.gz` makes several), at most kMaxFileBytes; bytes after the
// last member that start no other member are ignored, as gzip(1) does.
std::string gunzip(const std::string &gz, const std::string &path) {
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 16) != Z_OK) throw Error(AM_ERR_NO_MEMORY, "msa: " + path + ": cannot start gunzip");
  struct End {
    z_stream *z;
    ~End() { inflateEnd(z); }
  } end{&zs};
  zs.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(gz.data()));
  zs.avail_in = static_cast<uInt>(gz.size());  // ≤ kMaxFileBytes < 4 GB
  std::string out;
  char buf[1 << 16];
  for (;;) {
    zs.next_out = reinterpret_cast<Bytef *>(buf);
    zs.avail_out = sizeof buf;
    const int rc = inflate(&zs, Z_NO_FLUSH);
    const size_t got = sizeof buf - zs.avail_out;
    if (out.size() + got > kMaxFileBytes) throw too_large(path, "decompresses to");
    out.append(buf, got);
    if (rc == Z_STREAM_END) {
      const size_t pos = gz.size() - zs.avail_in;
      if (!is_gzip(gz.substr(pos, 2))) return out;
      inflateReset(&zs);
    } else if (rc == Z_BUF_ERROR) {  // no progress possible: the input ended inside a member
      throw Error(AM_ERR_FORMAT, "msa: " + path + ": truncated gzip file (it ends inside the compressed data)");
    } else if (rc != Z_OK) {
      throw Error(AM_ERR_FORMAT, "msa: " + path + ": corrupt gzip data" + (zs.msg ? std::string(" (") + zs.msg + ")" : ""));
    }
  }
}
#endif

}  // namespace

bool gzip_supported() { return AM_MSA_ZLIB != 0; }

std::string read_alignment_file(const std::string &path) {
  if (path.empty()) throw Error(AM_ERR_USAGE, "msa: parameter 'file' is required (e.g. --set file=family.a2m)");
  std::string bytes = read_regular(path);
  if (!is_gzip(bytes)) return bytes;
#if AM_MSA_ZLIB
  return gunzip(bytes, path);
#else
  throw Error(AM_ERR_FORMAT, "msa: " + path +
                                 ": is gzip-compressed, but this build has no zlib (install zlib1g-dev and rebuild, "
                                 "or gunzip the file first)");
#endif
}

}  // namespace am::msa
