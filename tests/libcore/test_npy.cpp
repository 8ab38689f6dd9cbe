// .npy reader/writer: round trips, NumPy-written fixtures, error messages,
// and (when /usr/bin/python3 with NumPy exists) a cross-check in both directions.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "attnmech/attnmech.h"

#ifndef AM_INFRA_DATA
#error "AM_INFRA_DATA must point at tests/data/infra"
#endif

namespace {

std::string fixture(const char *name) { return std::string(AM_INFRA_DATA) + "/" + name; }

struct tmpdir {
  std::string path;
  tmpdir() {
    char t[] = "/tmp/am_infra_npy_XXXXXX";
    REQUIRE(mkdtemp(t) != nullptr);
    path = t;
  }
  ~tmpdir() {
    std::string cmd = "rm -rf '" + path + "'";
    if (std::system(cmd.c_str()) != 0) {
    }
  }
  std::string file(const std::string &n) const { return path + "/" + n; }
};

struct ctx_holder {
  am_context *c = nullptr;
  ctx_holder() { REQUIRE(am_context_create(&c, nullptr) == AM_OK); }
  ~ctx_holder() { am_context_destroy(&c); }
  std::string err() const { return am_context_last_error(c); }
};

std::string slurp(const std::string &p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Value of element with multi-index idx of a view, read through its own storage order.
double elem(const am_array_view &v, const std::vector<size_t> &idx) {
  size_t off = 0, stride = 1;
  if (v.fortran_order) {
    for (uint32_t d = 0; d < v.ndim; ++d) { off += idx[d] * stride; stride *= v.shape[d]; }
  } else {
    for (uint32_t d = v.ndim; d-- > 0;) { off += idx[d] * stride; stride *= v.shape[d]; }
  }
  switch (v.dtype) {
    case AM_F64: return static_cast<const double *>(v.data)[off];
    case AM_F32: return static_cast<const float *>(v.data)[off];
    case AM_I64: return static_cast<double>(static_cast<const int64_t *>(v.data)[off]);
    case AM_I32: return static_cast<const int32_t *>(v.data)[off];
  }
  return 0;
}

// Logical C-order flattening computed by the slow multi-index route.
std::vector<double> logical_c(const am_array_view &v) {
  size_t n = am_array_view_count(&v);
  std::vector<double> out;
  std::vector<size_t> idx(v.ndim, 0);
  for (size_t i = 0; i < n; ++i) {
    out.push_back(elem(v, idx));
    for (uint32_t d = v.ndim; d-- > 0;) {
      if (++idx[d] < v.shape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

std::vector<double> read_c(am_context *ctx, const std::string &path, am_array_view *view_out = nullptr) {
  am_array *a = nullptr;
  REQUIRE(am_npy_read(ctx, path.c_str(), &a) == AM_OK);
  am_array_view v = am_array_get_view(a);
  if (view_out) *view_out = v;
  std::vector<double> out(am_array_view_count(&v));
  REQUIRE(am_array_to_f64_c(ctx, &v, out.data(), out.size()) == AM_OK);
  CHECK(logical_c(v) == out);
  am_array_destroy(&a);
  return out;
}

// Fill an array of the given dtype/shape/order with element value = f(logical C index).
am_array *make(am_dtype t, std::vector<size_t> shape, int fortran) {
  am_array *a = nullptr;
  REQUIRE(am_array_create(nullptr, &a, t, static_cast<uint32_t>(shape.size()), shape.data(), fortran) == AM_OK);
  am_array_view v = am_array_get_view(a);
  size_t n = am_array_view_count(&v);
  std::vector<size_t> idx(shape.size(), 0);
  for (size_t i = 0; i < n; ++i) {
    // storage offset of logical index idx
    size_t off = 0, stride = 1;
    if (v.fortran_order) {
      for (size_t d = 0; d < shape.size(); ++d) { off += idx[d] * stride; stride *= shape[d]; }
    } else {
      for (size_t d = shape.size(); d-- > 0;) { off += idx[d] * stride; stride *= shape[d]; }
    }
    double val = static_cast<double>(i) * 1.5 - 7.0;  // exact in every dtype after rounding below
    void *p = am_array_data(a);
    switch (t) {
      case AM_F64: static_cast<double *>(p)[off] = val + 0.1; break;
      case AM_F32: static_cast<float *>(p)[off] = static_cast<float>(val); break;
      case AM_I64: static_cast<int64_t *>(p)[off] = static_cast<int64_t>(i) * 1000000007LL - 3; break;
      case AM_I32: static_cast<int32_t *>(p)[off] = static_cast<int32_t>(i) - 5; break;
    }
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return a;
}

bool have_numpy() {
  if (access("/usr/bin/python3", X_OK) != 0) return false;
  return std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") == 0;
}

}  // namespace

TEST_CASE("write/read round trip: every dtype, both orders, 0-d, 1-d, 3-d, empty") {
  tmpdir tmp;
  ctx_holder ctx;
  const am_dtype types[] = {AM_F64, AM_F32, AM_I64, AM_I32};
  const std::vector<std::vector<size_t>> shapes = {{}, {5}, {2, 3, 4}, {3, 0}, {1, 1, 1, 1, 1, 1, 1, 2}};
  int k = 0;
  for (am_dtype t : types)
    for (const auto &shape : shapes)
      for (int fortran = 0; fortran < 2; ++fortran) {
        CAPTURE(t);
        CAPTURE(shape.size());
        CAPTURE(fortran);
        am_array *a = make(t, shape, fortran);
        am_array_view v = am_array_get_view(a);
        std::string path = tmp.file("a" + std::to_string(k++) + ".npy");
        REQUIRE(am_npy_write(ctx.c, path.c_str(), &v) == AM_OK);
        // header: version 1.0, data aligned to 64 bytes, header ends in '\n'
        std::string raw = slurp(path);
        REQUIRE(raw.size() >= 10);
        CHECK(raw.compare(0, 6, "\x93NUMPY") == 0);
        CHECK(raw[6] == 1);
        CHECK(raw[7] == 0);
        size_t hlen = static_cast<unsigned char>(raw[8]) | (static_cast<unsigned char>(raw[9]) << 8);
        CHECK((10 + hlen) % 64 == 0);
        CHECK(raw[10 + hlen - 1] == '\n');
        CHECK(raw.size() == 10 + hlen + am_array_view_count(&v) * am_dtype_size(t));
        am_array *b = nullptr;
        REQUIRE(am_npy_read(ctx.c, path.c_str(), &b) == AM_OK);
        am_array_view w = am_array_get_view(b);
        CHECK(w.dtype == t);
        CHECK(w.ndim == v.ndim);
        for (uint32_t d = 0; d < v.ndim; ++d) CHECK(w.shape[d] == v.shape[d]);
        CHECK(w.fortran_order == v.fortran_order);
        CHECK(logical_c(w) == logical_c(v));
        am_array_destroy(&b);
        am_array_destroy(&a);
      }
}

TEST_CASE("reads files written by NumPy (committed fixtures)") {
  ctx_holder ctx;
  const std::vector<double> a23 = {-1, -0.5, 0, 0.5, 1, 1.5};
  am_array_view v{};
  CHECK(read_c(ctx.c, fixture("f8_c_2x3.npy"), &v) == a23);
  CHECK(read_c(ctx.c, fixture("f8_f_2x3.npy"), &v) == a23);
  CHECK(v.fortran_order == 1);
  CHECK(read_c(ctx.c, fixture("f8_v2.npy")) == a23);
  CHECK(read_c(ctx.c, fixture("f8_v3.npy")) == a23);
  CHECK(read_c(ctx.c, fixture("f4_3.npy"), &v) == std::vector<double>{1.5, -2.25, 3});
  CHECK(v.dtype == AM_F32);
  CHECK(read_c(ctx.c, fixture("i8_2x2.npy"), &v) == std::vector<double>{1, -2, 3, 1099511627776.0});
  CHECK(v.dtype == AM_I64);
  std::vector<double> i4 = read_c(ctx.c, fixture("i4_f_2x3x4.npy"), &v);
  CHECK(v.dtype == AM_I32);
  CHECK(v.ndim == 3);
  CHECK(v.fortran_order == 1);
  for (size_t i = 0; i < 24; ++i) CHECK(i4[i] == static_cast<double>(i) - 5);
  CHECK(read_c(ctx.c, fixture("f8_scalar.npy"), &v) == std::vector<double>{3.25});
  CHECK(v.ndim == 0);
  CHECK(read_c(ctx.c, fixture("f8_empty_0x3.npy"), &v).empty());
  CHECK(v.ndim == 2);
  CHECK(v.shape[1] == 3);
}

TEST_CASE("clear errors naming the file and the problem") {
  ctx_holder ctx;
  am_array *a = nullptr;
  struct bad {
    const char *file;
    am_status code;
    const char *words;
  };
  const bad cases[] = {
      {"f8_bigendian.npy", AM_ERR_FORMAT, "big-endian"},
      {"object.npy", AM_ERR_FORMAT, "object arrays"},
      {"u1_3.npy", AM_ERR_FORMAT, "unsupported dtype '|u1'"},
      {"f8_truncated.npy", AM_ERR_FORMAT, "truncated data: expected 48 bytes, found 43"},
      {"bad_magic.npy", AM_ERR_FORMAT, "bad magic"},
      {"bad_header.npy", AM_ERR_FORMAT, "cannot parse .npy header"},
      {"does_not_exist.npy", AM_ERR_IO, "No such file or directory"},
  };
  for (const auto &c : cases) {
    CAPTURE(c.file);
    std::string path = fixture(c.file);
    CHECK(am_npy_read(ctx.c, path.c_str(), &a) == c.code);
    CHECK(a == nullptr);
    CHECK(ctx.err().find(path) == 0);
    CHECK(ctx.err().find(c.words) != std::string::npos);
  }
  CHECK(am_npy_read(nullptr, fixture("f8_bigendian.npy").c_str(), &a) == AM_ERR_FORMAT);
  // a directory is not a file
  CHECK(am_npy_read(ctx.c, AM_INFRA_DATA, &a) != AM_OK);
  double d = 1;
  am_array_view v{};
  v.dtype = AM_F64;
  v.data = &d;
  CHECK(am_npy_write(ctx.c, "/nonexistent-dir/x.npy", &v) == AM_ERR_IO);
  CHECK(ctx.err() == "/nonexistent-dir/x.npy: cannot open for writing: No such file or directory");
}

// Writes a v1.0 .npy header claiming `shape` (f8, C order) followed by `payload` data bytes.
void write_claim(const std::string &path, const std::string &shape, size_t payload) {
  std::string h = "{'descr': '<f8', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + h.size() + 1) % 64 != 0) h += ' ';
  h += '\n';
  std::string out = std::string("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(h.size() & 0xff);
  out += static_cast<char>(h.size() >> 8);
  out += h + std::string(payload, '\0');
  std::ofstream(path, std::ios::binary) << out;
}

TEST_CASE("size claims are checked against the file before anything is allocated") {
  ctx_holder ctx;
  tmpdir d;
  am_array *a = nullptr;
  struct claim {
    const char *shape;
    size_t payload;
    const char *words;
  };
  // 10^13 elements in a 200-byte file must be "truncated" (not "out of memory": nothing is allocated);
  // products that overflow size_t are refused as such.
  const claim cases[] = {
      {"(1000000000000, 10)", 136, "truncated data: expected 80000000000000 bytes, found 136"},
      {"(6, 100000000)", 8, "truncated data: expected 4800000000 bytes, found 8"},
      {"(3, 2)", 47, "truncated data: expected 48 bytes, found 47"},
      {"(16, 1073741824, 1073741824)", 8, "array size overflows"},
  };
  for (const auto &c : cases) {
    CAPTURE(c.shape);
    const std::string p = d.file("claim.npy");
    write_claim(p, c.shape, c.payload);
    CHECK(am_npy_read(ctx.c, p.c_str(), &a) == AM_ERR_FORMAT);
    CHECK(a == nullptr);
    CHECK(ctx.err() == p + ": " + c.words);
  }
  write_claim(d.file("ok.npy"), "(3, 2)", 48);  // exactly enough data: read
  REQUIRE(am_npy_read(ctx.c, d.file("ok.npy").c_str(), &a) == AM_OK);
  am_array_destroy(&a);
}

TEST_CASE("trailing bytes after the data are refused, naming how many (NumPy writes none)") {
  ctx_holder ctx;
  tmpdir d;
  am_array *a = nullptr;
  // a (3, 2) float64 array takes 48 bytes: 1 and 4096 bytes more (a concatenated or damaged file) are errors
  for (size_t extra : {size_t(1), size_t(4096)}) {
    CAPTURE(extra);
    const std::string p = d.file("tail.npy");
    write_claim(p, "(3, 2)", 48 + extra);
    CHECK(am_npy_read(ctx.c, p.c_str(), &a) == AM_ERR_FORMAT);
    CHECK(a == nullptr);
    CHECK(ctx.err() == p + ": " + std::to_string(extra) + (extra == 1 ? " trailing byte" : " trailing bytes") +
                           " after the data (the header's shape and dtype take 48 bytes, the file holds " +
                           std::to_string(48 + extra) + " after the header)");
  }
  write_claim(d.file("empty.npy"), "(0, 2)", 1);  // an empty array with one byte after it
  CHECK(am_npy_read(ctx.c, d.file("empty.npy").c_str(), &a) == AM_ERR_FORMAT);
  CHECK(ctx.err().find("1 trailing byte after the data") != std::string::npos);
  write_claim(d.file("exact.npy"), "(0, 2)", 0);
  REQUIRE(am_npy_read(ctx.c, d.file("exact.npy").c_str(), &a) == AM_OK);
  am_array_destroy(&a);
}

TEST_CASE("a header of deeply nested tuples is refused, not a stack overflow (found by the npy fuzz harness)") {
  ctx_holder ctx;
  tmpdir d;
  am_array *a = nullptr;
  write_claim(d.file("deep.npy"), std::string(5000, '(') + "3," + std::string(5000, ')'), 0);
  CHECK(am_npy_read(ctx.c, d.file("deep.npy").c_str(), &a) == AM_ERR_FORMAT);
  CHECK(ctx.err().find("nested too deeply") != std::string::npos);
}

TEST_CASE("only regular files: a directory, a FIFO, a device say what they are") {
  ctx_holder ctx;
  tmpdir d;
  am_array *a = nullptr;
  REQUIRE(mkdir(d.file("dir.npy").c_str(), 0700) == 0);
  REQUIRE(mkfifo(d.file("fifo.npy").c_str(), 0600) == 0);
  REQUIRE(symlink("/dev/zero", d.file("zero.npy").c_str()) == 0);
  const std::pair<const char *, const char *> cases[] = {
      {"dir.npy", "is a directory, not a .npy file"},
      {"zero.npy", "is a character device, not a .npy file"},
  };
  for (const auto &c : cases) {
    CAPTURE(c.first);
    const std::string p = d.file(c.first);
    CHECK(am_npy_read(ctx.c, p.c_str(), &a) == AM_ERR_FORMAT);
    CHECK(ctx.err() == p + ": " + c.second);
  }
  // A FIFO (no writer): refused before the open, which would block until a writer appears (a FIFO as a
  // problem dir's X_train.npy once hung `attnmech run npy`; this test used to start a writer so that fopen returned).
  const std::string fifo = d.file("fifo.npy");
  CHECK(am_npy_read(ctx.c, fifo.c_str(), &a) == AM_ERR_FORMAT);
  CHECK(ctx.err() == fifo + ": is a FIFO, not a .npy file");
}

TEST_CASE("header parsing: key order, spaces, quotes, trailing commas, shapes") {
  tmpdir tmp;
  ctx_holder ctx;
  const double data[3] = {1, 2, 3};
  struct hcase {
    const char *dict;
    uint32_t ndim;
    size_t n;
    am_status st;
  };
  const hcase cases[] = {
      {"{'shape': (3,), 'fortran_order': False, 'descr': '<f8'}", 1, 3, AM_OK},
      {"{ \"descr\" : \"<f8\" ,'fortran_order':True,'shape':( 3 , ) , }", 1, 3, AM_OK},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (3, 1,), }", 2, 3, AM_OK},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (), }", 0, 1, AM_OK},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (3L,), }", 1, 3, AM_OK},
      {"{'descr': '<f8', 'fortran_order': False}", 0, 0, AM_ERR_FORMAT},                         // no shape
      {"{'descr': '<f8', 'fortran_order': 0, 'shape': (3,)}", 0, 0, AM_ERR_FORMAT},              // not a bool
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (-3,)}", 0, 0, AM_ERR_FORMAT},         // negative
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (3,), 'x': 1}", 0, 0, AM_ERR_FORMAT},  // unknown key
      {"{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (3,)}", 0, 0, AM_ERR_FORMAT}, // structured
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (4,)}", 0, 0, AM_ERR_FORMAT},          // too little data
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (3.0,)}", 0, 0, AM_ERR_FORMAT},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (3,)} extra", 0, 0, AM_ERR_FORMAT},
  };
  int k = 0;
  for (const auto &c : cases) {
    CAPTURE(c.dict);
    std::string h = c.dict;
    h += '\n';
    std::string raw = std::string("\x93NUMPY\x01\x00", 8);
    raw += static_cast<char>(h.size() & 0xff);
    raw += static_cast<char>(h.size() >> 8);
    raw += h;
    // the data the header claims (a 0-d array: one element; no more, since trailing bytes are refused), 3 elsewhere
    raw.append(reinterpret_cast<const char *>(data), sizeof(double) * (c.st == AM_OK ? c.n : 3));
    std::string path = tmp.file("h" + std::to_string(k++) + ".npy");
    std::ofstream(path, std::ios::binary) << raw;
    am_array *a = nullptr;
    am_status st = am_npy_read(ctx.c, path.c_str(), &a);
    CHECK(st == c.st);
    if (st == AM_OK) {
      am_array_view v = am_array_get_view(a);
      CHECK(v.ndim == c.ndim);
      CHECK(am_array_view_count(&v) == c.n);
      CHECK(static_cast<const double *>(v.data)[0] == 1);
    } else {
      CHECK(ctx.err().find(path) == 0);
    }
    am_array_destroy(&a);
  }
}

TEST_CASE("cross-check with NumPy in both directions (skipped without python3+numpy)") {
  if (!have_numpy()) {
    MESSAGE("skipped: /usr/bin/python3 with numpy not available");
    return;
  }
  tmpdir tmp;
  ctx_holder ctx;
  // NumPy writes, we read (including a Fortran-order 3-d float32 and a big array)
  std::string script = "import numpy as np\n"
                       "d='" + tmp.path + "'\n"
                       "x=(np.arange(2*3*5).reshape(2,3,5)*0.25-2).astype('<f4')\n"
                       "np.save(d+'/np_f4.npy', np.asfortranarray(x))\n"
                       "np.save(d+'/np_i8.npy', np.arange(-4,8,dtype='<i8').reshape(3,4))\n"
                       "np.save(d+'/np_big.npy', np.linspace(0,1,100001))\n";
  std::ofstream(tmp.file("w.py")) << script;
  REQUIRE(std::system(("/usr/bin/python3 " + tmp.file("w.py")).c_str()) == 0);
  std::vector<double> f4 = read_c(ctx.c, tmp.file("np_f4.npy"));
  REQUIRE(f4.size() == 30);
  for (size_t i = 0; i < 30; ++i) CHECK(f4[i] == static_cast<double>(i) * 0.25 - 2);
  std::vector<double> i8 = read_c(ctx.c, tmp.file("np_i8.npy"));
  for (size_t i = 0; i < 12; ++i) CHECK(i8[i] == static_cast<double>(i) - 4);
  std::vector<double> big = read_c(ctx.c, tmp.file("np_big.npy"));
  REQUIRE(big.size() == 100001);
  CHECK(big[50000] == 0.5);
  // we write, NumPy reads and checks (values, dtype, order, shape)
  am_array *a = make(AM_F64, {2, 3, 4}, 1);
  am_array_view v = am_array_get_view(a);
  REQUIRE(am_npy_write(ctx.c, tmp.file("ours_f8.npy").c_str(), &v) == AM_OK);
  am_array_destroy(&a);
  a = make(AM_I32, {7}, 0);
  v = am_array_get_view(a);
  REQUIRE(am_npy_write(ctx.c, tmp.file("ours_i4.npy").c_str(), &v) == AM_OK);
  am_array_destroy(&a);
  a = make(AM_F32, {}, 0);
  v = am_array_get_view(a);
  REQUIRE(am_npy_write(ctx.c, tmp.file("ours_f4.npy").c_str(), &v) == AM_OK);
  am_array_destroy(&a);
  std::string check = "import numpy as np, sys\n"
                      "d='" + tmp.path + "'\n"
                      "a=np.load(d+'/ours_f8.npy'); b=np.load(d+'/ours_i4.npy'); c=np.load(d+'/ours_f4.npy')\n"
                      "ok = a.dtype==np.dtype('<f8') and a.shape==(2,3,4) and a.flags.f_contiguous\n"
                      "ok = ok and np.array_equal(a.ravel(order='C'), np.arange(24)*1.5-7+0.1)\n"
                      "ok = ok and b.dtype==np.dtype('<i4') and np.array_equal(b, np.arange(7)-5)\n"
                      "ok = ok and c.shape==() and c.dtype==np.dtype('<f4') and float(c)==-7.0\n"
                      "sys.exit(0 if ok else 1)\n";
  std::ofstream(tmp.file("r.py")) << check;
  CHECK(std::system(("/usr/bin/python3 " + tmp.file("r.py")).c_str()) == 0);
}
