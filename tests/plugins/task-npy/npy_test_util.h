// Helpers of the npy task tests: temp dirs, writing .npy files, the spec §8.0 toy problem.
#ifndef ATTNMECH_TESTS_NPY_UTIL_H
#define ATTNMECH_TESTS_NPY_UTIL_H

#include "npy_core.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

namespace npy_test {

namespace fs = std::filesystem;

struct Ctx {
  am_context *ctx = nullptr;
  std::vector<std::string> warnings;
  static void on_log(void *user, am_log_level level, const char *msg) {
    if (level >= AM_LOG_WARN) static_cast<Ctx *>(user)->warnings.emplace_back(msg);
  }
  Ctx() {
    am_context_settings s;
    am_context_default_settings(&s);
    s.log = &Ctx::on_log;
    s.log_user = this;
    am_context_create(&ctx, &s);
  }
  ~Ctx() { am_context_destroy(&ctx); }
  Ctx(const Ctx &) = delete;
  Ctx &operator=(const Ctx &) = delete;
  operator am_context *() const { return ctx; }
  std::string err() const { return am_context_last_error(ctx); }
};

struct Rec {
  am_record *r = nullptr;
  Rec() { am_record_create(&r); }
  ~Rec() { am_record_destroy(&r); }
  operator am_record *() const { return r; }
};

struct TempDir {
  fs::path path;
  explicit TempDir(const char *tag) {
    static std::atomic<int> counter{0};
    path = fs::temp_directory_path() /
           ("attnmech-npy-" + std::string(tag) + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const char *name) const { return (path / name).string(); }
};

// Writes C-order data of the given shape as .npy (f64, or converted to f32).
inline am_status write_npy(const fs::path &file, std::vector<size_t> shape, const std::vector<double> &c,
                           am_dtype dtype = AM_F64) {
  am_array_view v;
  std::memset(&v, 0, sizeof v);
  v.dtype = dtype;
  v.ndim = static_cast<uint32_t>(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) v.shape[i] = shape[i];
  v.fortran_order = 0;
  std::vector<float> f(c.begin(), c.end());
  v.data = dtype == AM_F32 ? static_cast<const void *>(f.data()) : static_cast<const void *>(c.data());
  return am_npy_write(nullptr, file.string().c_str(), &v);
}

inline void write_text(const fs::path &file, const std::string &s) {
  std::ofstream out(file);
  out << s;
}

// ---- spec §8.0: P = 8, N0 = 5, S = 4, L = 2, H = (2, 2), bilinear heads
constexpr size_t kP = 8, kN0 = 5, kS = 4;

inline std::vector<double> toy_X(const std::vector<double> &mus) {
  std::vector<double> X(mus.size() * kS * kN0);
  for (size_t m = 0; m < mus.size(); ++m)
    for (size_t s = 0; s < kS; ++s)
      for (size_t i = 0; i < kN0; ++i)  // C order [μ, s, i]
        X[(m * kS + s) * kN0 + i] = std::sin(1 + 0.7 * mus[m] + 0.3 * double(i) + 0.2 * double(s)) + 0.1 * double(i);
  return X;
}

// W as C-order [i][j] (i = key side): head (l, h) of §8.0
inline std::vector<double> toy_W(int l, int h) {
  std::vector<double> W(kN0 * kN0, 0.0);
  for (size_t i = 0; i < kN0; ++i)
    for (size_t j = 0; j < kN0; ++j) {
      const double di = double(i), dj = double(j);
      double v = 0;
      if (l == 1 && h == 1) v = i == j ? 0.5 : 0.0;
      if (l == 1 && h == 2) v = std::cos(di + 2 * dj);
      if (l == 2 && h == 1) v = 0.0;
      if (l == 2 && h == 2) v = std::cos(0.5 * di - 1.5 * dj);
      W[i * kN0 + j] = v;
    }
  return W;
}

inline const char *toy_model_json() {
  return R"({"readout": "last", "heads": [2, 2], "widths": [3, 4, 5],
  "variances": [1.0, 0.8, 1.2, 1.5], "temperature": 0.1})";
}

inline void write_toy(const fs::path &dir) {
  std::vector<double> mus(kP), y(kP);
  for (size_t m = 0; m < kP; ++m) {
    mus[m] = double(m);
    y[m] = m % 2 == 0 ? 1.0 : -1.0;
  }
  write_npy(dir / "X_train.npy", {kP, kS, kN0}, toy_X(mus));
  write_npy(dir / "y_train.npy", {kP}, y);
  write_npy(dir / "X_test.npy", {2, kS, kN0}, toy_X({8.5, 9.5}));
  write_npy(dir / "y_test.npy", {2}, {1.0, -1.0});
  for (int l = 1; l <= 2; ++l)
    for (int h = 1; h <= 2; ++h)
      write_npy(dir / ("W_l" + std::to_string(l) + "_h" + std::to_string(h) + ".npy"), {kN0, kN0}, toy_W(l, h));
  write_text(dir / "model.json", toy_model_json());
}

}  // namespace npy_test

#endif
