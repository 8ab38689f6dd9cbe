// attnmech — the NumPy .npy format (versions 1.0, 2.0, 3.0), little-endian f8/f4/i8/i4, C or Fortran order.
//
// File layout: "\x93NUMPY", major, minor, header length (uint16 LE for 1.x, uint32 LE for 2.x/3.x), then
// the header: a Python dict literal {'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), } padded
// with spaces and ended by '\n' so that the data starts at a multiple of 64 bytes; then the raw data.
#include "internal.hpp"
#include <common/read_input.hpp>  // file_kind: the words for what a path that is not a regular file is

#include <cctype>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__)
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the .npy code assumes a little-endian host");
#endif

namespace {

// A tiny parser for the Python literals a .npy header uses: strings, integers, True/False/None,
// tuples/lists and one dict.
struct pyval {
  enum kind_t { STR, INT, BOOL, NONE, SEQ, OTHER } kind = NONE;
  std::string s;
  long long i = 0;
  bool neg = false;
  std::vector<pyval> items;
};

struct parser {
  const std::string &t;
  size_t p = 0;
  size_t depth = 0;  // open tuples/lists: bounded so a header of 10^6 '(' cannot exhaust the stack
  std::string err;

  explicit parser(const std::string &text) : t(text) {}

  void ws() {
    while (p < t.size() && (t[p] == ' ' || t[p] == '\t' || t[p] == '\n' || t[p] == '\r')) ++p;
  }
  bool eat(char c) {
    ws();
    if (p < t.size() && t[p] == c) { ++p; return true; }
    return false;
  }
  bool fail(const std::string &m) {
    if (err.empty()) err = m + " at offset " + std::to_string(p);
    return false;
  }
  bool value(pyval &v) {
    ws();
    if (p >= t.size()) return fail("unexpected end of header");
    char c = t[p];
    if (c == '\'' || c == '"') {
      ++p;
      v.kind = pyval::STR;
      while (p < t.size() && t[p] != c) {
        if (t[p] == '\\' && p + 1 < t.size()) ++p;
        v.s += t[p++];
      }
      if (p >= t.size()) return fail("unterminated string");
      ++p;
      return true;
    }
    if (c == '(' || c == '[') {
      char close = c == '(' ? ')' : ']';
      if (depth >= 16) return fail("tuples nested too deeply");
      ++p;
      ++depth;
      v.kind = pyval::SEQ;
      for (;;) {
        if (eat(close)) break;
        pyval item;
        if (!value(item)) return false;
        v.items.push_back(std::move(item));
        if (eat(',')) continue;
        if (eat(close)) break;
        return fail(std::string("expected ',' or '") + close + "'");
      }
      --depth;
      return true;
    }
    if (c == '-' || c == '+' || (c >= '0' && c <= '9')) {
      v.kind = pyval::INT;
      if (c == '-' || c == '+') { v.neg = c == '-'; ++p; }
      size_t start = p;
      unsigned long long x = 0;
      while (p < t.size() && ((t[p] >= '0' && t[p] <= '9') || t[p] == '_')) {
        if (t[p] != '_') {
          if (x > (9223372036854775807ULL - 9) / 10) return fail("integer too large");
          x = x * 10 + static_cast<unsigned>(t[p] - '0');
        }
        ++p;
      }
      if (p == start) return fail("expected a number");
      if (p < t.size() && t[p] == 'L') ++p;  // Python 2 long suffix (old numpy headers)
      v.i = static_cast<long long>(x);
      if (p < t.size() && (t[p] == '.' || t[p] == 'e' || t[p] == 'E')) return fail("expected an integer");
      return true;
    }
    if (c == '{') {
      // A nested dict is not valid in a .npy header; parse it as OTHER so the caller can complain.
      return fail("unexpected '{'");
    }
    size_t start = p;
    while (p < t.size() && (std::isalnum(static_cast<unsigned char>(t[p])) || t[p] == '_')) ++p;
    std::string word = t.substr(start, p - start);
    if (word == "True" || word == "False") {
      v.kind = pyval::BOOL;
      v.i = word == "True";
      return true;
    }
    if (word == "None") {
      v.kind = pyval::NONE;
      return true;
    }
    if (word.empty()) return fail(std::string("unexpected character '") + c + "'");
    return fail("unexpected word '" + word + "'");
  }
  // {key: value, ...} with string keys, any order, optional trailing comma.
  bool dict(std::vector<std::pair<std::string, pyval>> &out) {
    if (!eat('{')) return fail("header is not a dict (expected '{')");
    for (;;) {
      if (eat('}')) break;
      pyval key;
      if (!value(key)) return false;
      if (key.kind != pyval::STR) return fail("dict key is not a string");
      if (!eat(':')) return fail("expected ':'");
      pyval val;
      if (!value(val)) return false;
      out.emplace_back(key.s, std::move(val));
      if (eat(',')) continue;
      if (eat('}')) break;
      return fail("expected ',' or '}'");
    }
    ws();
    if (p != t.size()) return fail("trailing characters after the dict");
    return true;
  }
};

struct file_closer {
  FILE *f;
  ~file_closer() {
    if (f) std::fclose(f);
  }
};

const char *descr_of(am_dtype t) {
  switch (t) {
    case AM_F64: return "<f8";
    case AM_F32: return "<f4";
    case AM_I64: return "<i8";
    case AM_I32: return "<i4";
  }
  return nullptr;
}

am_status parse_descr(am_context *ctx, const char *path, const pyval &d, am_dtype *t) {
  if (d.kind != pyval::STR)
    return am::fail(ctx, AM_ERR_FORMAT, "%s: structured or non-string dtype descriptor is not supported "
                    "(only little-endian float64, float32, int64, int32)", path);
  const std::string &s = d.s;
  if (s == "<f8") *t = AM_F64;
  else if (s == "<f4") *t = AM_F32;
  else if (s == "<i8") *t = AM_I64;
  else if (s == "<i4") *t = AM_I32;
  else if (s.size() >= 2 && s[0] == '>' && s != ">f1" && s != ">i1" && s != ">u1")
    return am::fail(ctx, AM_ERR_FORMAT, "%s: big-endian data (dtype '%s') is not supported; "
                    "convert it with a.astype('<%s')", path, s.c_str(), s.c_str() + 1);
  else if (!s.empty() && (s.back() == 'O' || s == "|O"))
    return am::fail(ctx, AM_ERR_FORMAT, "%s: object arrays (dtype '%s') are not supported", path, s.c_str());
  else
    return am::fail(ctx, AM_ERR_FORMAT, "%s: unsupported dtype '%s' (supported: <f8, <f4, <i8, <i4)", path,
                    s.c_str());
  return AM_OK;
}

// `path` opened for reading when it is a regular file (*sb its stat): its size bounds every claim the header makes
// (a FIFO or /dev/zero has none). The kind is checked before the open too: opening a FIFO for reading blocks until
// a writer appears (the fstat still sees one swapped in between, once a writer lets the open return).
am_status open_regular(am_context *ctx, const char *path, FILE **out, struct stat *sb) {
  struct stat kind;
  if (stat(path, &kind) == 0 && !S_ISREG(kind.st_mode))
    return am::fail(ctx, AM_ERR_FORMAT, "%s: is %s, not a .npy file", path, am::input::file_kind(kind.st_mode));
  FILE *f = std::fopen(path, "rb");
  if (!f) return am::fail(ctx, AM_ERR_IO, "%s: cannot open: %s", path, std::strerror(errno));
  *out = f;
  if (fstat(fileno(f), sb) != 0) return am::fail(ctx, AM_ERR_IO, "%s: cannot stat: %s", path, std::strerror(errno));
  if (!S_ISREG(sb->st_mode))
    return am::fail(ctx, AM_ERR_FORMAT, "%s: is %s, not a .npy file", path, am::input::file_kind(sb->st_mode));
  return AM_OK;
}

// The preamble (magic, version, header length) and the header text; *data_at = where the data starts.
am_status read_header_text(am_context *ctx, const char *path, FILE *f, std::string *header, size_t *data_at) {
  unsigned char pre[12];  // magic 6 + version 2 + header length 2 (v1) or 4 (v2, v3)
  size_t got = std::fread(pre, 1, 8, f);
  if (got < 6 || std::memcmp(pre, "\x93NUMPY", 6) != 0) {
    if (std::ferror(f)) return am::fail(ctx, AM_ERR_IO, "%s: read error: %s", path, std::strerror(errno));
    return am::fail(ctx, AM_ERR_FORMAT, "%s: not a .npy file (bad magic)", path);
  }
  if (got < 8) return am::fail(ctx, AM_ERR_FORMAT, "%s: truncated .npy header", path);
  const unsigned major = pre[6], minor = pre[7];
  if (major < 1 || major > 3 || minor != 0)
    return am::fail(ctx, AM_ERR_FORMAT, "%s: unsupported .npy format version %u.%u (supported: 1.0, 2.0, 3.0)", path,
                    major, minor);
  size_t hlen = 0;
  const size_t lenbytes = major == 1 ? 2 : 4;
  if (std::fread(pre + 8, 1, lenbytes, f) != lenbytes)
    return am::fail(ctx, AM_ERR_FORMAT, "%s: truncated .npy header", path);
  for (size_t k = 0; k < lenbytes; ++k) hlen |= static_cast<size_t>(pre[8 + k]) << (8 * k);
  if (hlen > (64u << 20)) return am::fail(ctx, AM_ERR_FORMAT, "%s: implausible header length %zu", path, hlen);
  header->assign(hlen, '\0');
  if (hlen > 0 && std::fread(&(*header)[0], 1, hlen, f) != hlen)
    return am::fail(ctx, AM_ERR_FORMAT, "%s: truncated .npy header (expected %zu bytes)", path, hlen);
  *data_at = (major == 1 ? 10 : 12) + hlen;
  return AM_OK;
}

// What a header says: dtype, order and shape.
struct header_info {
  am_dtype dtype = AM_F64;
  bool fortran = false;
  uint32_t ndim = 0;
  size_t dims[AM_MAX_DIMS] = {0};
};

am_status parse_header(am_context *ctx, const char *path, const std::string &header, header_info *h) {
  parser ps(header);
  std::vector<std::pair<std::string, pyval>> dict;
  if (!ps.dict(dict)) return am::fail(ctx, AM_ERR_FORMAT, "%s: cannot parse .npy header: %s", path, ps.err.c_str());
  const pyval *descr = nullptr, *fortran = nullptr, *shape = nullptr;
  for (const auto &kv : dict) {
    const pyval **slot = kv.first == "descr" ? &descr : kv.first == "fortran_order" ? &fortran
                         : kv.first == "shape" ? &shape : nullptr;
    if (!slot) return am::fail(ctx, AM_ERR_FORMAT, "%s: unexpected key '%s' in .npy header", path, kv.first.c_str());
    if (*slot) return am::fail(ctx, AM_ERR_FORMAT, "%s: duplicate key '%s' in .npy header", path, kv.first.c_str());
    *slot = &kv.second;
  }
  if (!descr || !fortran || !shape)
    return am::fail(ctx, AM_ERR_FORMAT, "%s: .npy header lacks '%s'", path,
                    !descr ? "descr" : !fortran ? "fortran_order" : "shape");
  AM_TRY(parse_descr(ctx, path, *descr, &h->dtype));
  if (fortran->kind != pyval::BOOL)
    return am::fail(ctx, AM_ERR_FORMAT, "%s: 'fortran_order' must be True or False", path);
  if (shape->kind != pyval::SEQ)
    return am::fail(ctx, AM_ERR_FORMAT, "%s: 'shape' must be a tuple of integers", path);
  if (shape->items.size() > AM_MAX_DIMS)
    return am::fail(ctx, AM_ERR_FORMAT, "%s: %zu dimensions (at most %d supported)", path, shape->items.size(),
                    AM_MAX_DIMS);
  for (size_t d = 0; d < shape->items.size(); ++d) {
    const pyval &x = shape->items[d];
    if (x.kind != pyval::INT || x.neg)
      return am::fail(ctx, AM_ERR_FORMAT, "%s: 'shape' entry %zu is not a non-negative integer", path, d);
    h->dims[d] = static_cast<size_t>(x.i);
  }
  h->fortran = fortran->i != 0;
  h->ndim = static_cast<uint32_t>(shape->items.size());
  return AM_OK;
}

am_status read_impl(am_context *ctx, const char *path, am_array **out) {
  FILE *f = nullptr;
  struct stat sb;
  const am_status opened = open_regular(ctx, path, &f, &sb);
  file_closer fc{f};
  AM_TRY(opened);
  std::string header;
  size_t data_at = 0;
  AM_TRY(read_header_text(ctx, path, f, &header, &data_at));
  header_info h;
  AM_TRY(parse_header(ctx, path, header, &h));
  size_t count = 0;
  if (!am::shape_count(h.ndim, h.dims, am_dtype_size(h.dtype), &count))
    return am::fail(ctx, AM_ERR_FORMAT, "%s: array size overflows", path);
  // The claim is checked against the bytes the file holds before anything is allocated.
  const size_t bytes = count * am_dtype_size(h.dtype);
  const size_t present = static_cast<size_t>(sb.st_size) > data_at ? static_cast<size_t>(sb.st_size) - data_at : 0;
  if (bytes > present)
    return am::fail(ctx, AM_ERR_FORMAT, "%s: truncated data: expected %zu bytes, found %zu", path, bytes, present);
  // NumPy writes the data and nothing after it: bytes beyond the array are a damaged or concatenated file.
  if (present > bytes)
    return am::fail(ctx, AM_ERR_FORMAT,
                    "%s: %zu trailing byte%s after the data (the header's shape and dtype take %zu bytes, the file "
                    "holds %zu after the header)",
                    path, present - bytes, present - bytes == 1 ? "" : "s", bytes, present);
  am_array *a = nullptr;
  AM_TRY(am_array_create(ctx, &a, h.dtype, h.ndim, h.dims, h.fortran));
  if (bytes > 0) {
    size_t r = std::fread(am_array_data(a), 1, bytes, f);
    if (r != bytes) {
      const bool ioerr = std::ferror(f) != 0;
      const int e = errno;
      am_array_destroy(&a);
      if (ioerr) return am::fail(ctx, AM_ERR_IO, "%s: read error: %s", path, std::strerror(e));
      return am::fail(ctx, AM_ERR_FORMAT, "%s: truncated data: expected %zu bytes, found %zu", path, bytes, r);
    }
  }
  *out = a;
  return AM_OK;
}

std::string shape_text(const am_array_view *v) {
  std::string s = "(";
  for (uint32_t d = 0; d < v->ndim; ++d) {
    s += std::to_string(v->shape[d]);
    if (v->ndim == 1 || d + 1 < v->ndim) s += ",";
    if (d + 1 < v->ndim) s += " ";
  }
  return s + ")";
}

am_status write_impl(am_context *ctx, const char *path, const am_array_view *v) {
  if (!am::valid_dtype(v->dtype)) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "%s: bad dtype %d", path, (int)v->dtype);
  if (v->ndim > AM_MAX_DIMS) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "%s: too many dimensions", path);
  size_t count = 0;
  if (!am::shape_count(v->ndim, v->shape, am_dtype_size(v->dtype), &count))
    return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "%s: array size overflows", path);
  if (count > 0 && !v->data) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "%s: NULL data", path);
  const bool fortran = v->fortran_order != 0 && v->ndim > 1;
  std::string dict = std::string("{'descr': '") + descr_of(v->dtype) + "', 'fortran_order': " +
                     (fortran ? "True" : "False") + ", 'shape': " + shape_text(v) + ", }";
  // Version 1.0 unless the header does not fit a uint16 length.
  unsigned major = 1;
  size_t prefix = 10;
  size_t total = prefix + dict.size() + 1;
  size_t padded = (total + 63) / 64 * 64;
  if (padded - prefix > 65535) {
    major = 2;
    prefix = 12;
    total = prefix + dict.size() + 1;
    padded = (total + 63) / 64 * 64;
  }
  const size_t hlen = padded - prefix;
  std::string head = "\x93NUMPY";
  head += static_cast<char>(major);
  head += '\0';
  for (size_t k = 0; k < (major == 1 ? 2u : 4u); ++k) head += static_cast<char>((hlen >> (8 * k)) & 0xff);
  head += dict;
  head.append(padded - total, ' ');
  head += '\n';

  FILE *f = std::fopen(path, "wb");
  if (!f) return am::fail(ctx, AM_ERR_IO, "%s: cannot open for writing: %s", path, std::strerror(errno));
  bool ok = std::fwrite(head.data(), 1, head.size(), f) == head.size();
  const size_t bytes = count * am_dtype_size(v->dtype);
  if (ok && bytes > 0) ok = std::fwrite(v->data, 1, bytes, f) == bytes;
  int e = ok ? 0 : errno;
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    e = errno;
  }
  if (!ok) {
    std::remove(path);
    return am::fail(ctx, AM_ERR_IO, "%s: write error: %s", path, std::strerror(e));
  }
  return AM_OK;
}

}  // namespace

extern "C" {

am_status am_npy_read(am_context *ctx, const char *path, am_array **out) {
  if (!out) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "am_npy_read: NULL output");
  *out = nullptr;
  if (!path) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "am_npy_read: NULL path");
  AM_GUARD(ctx, { return read_impl(ctx, path, out); });
}

am_status am_npy_write(am_context *ctx, const char *path, const am_array_view *v) {
  if (!path || !v) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "am_npy_write: NULL argument");
  AM_GUARD(ctx, { return write_impl(ctx, path, v); });
}

}  // extern "C"
