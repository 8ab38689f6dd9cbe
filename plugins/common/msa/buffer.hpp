// msa_core — the reader's memory: every array the reader grows is a Buffer<T> of plain values (one byte per residue,
// one uint32_t per offset; no object per record), and every growth goes through the reader's Tally, which checks
// the reader's whole footprint against the memory budget (am_memory_check: the physical memory, AM_MEMORY_LIMIT,
// ulimit -v) before the buffer grows. Buffers grow by half their size; from 64 KiB on they are mappings of their own
// that grow by mremap (the pages move, nothing is copied: no second copy resident while a buffer grows, whatever
// the allocator's thresholds) and go back to the system when freed.
#ifndef ATTNMECH_MSA_BUFFER_HPP
#define ATTNMECH_MSA_BUFFER_HPP

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <new>
#include <string>
#include <type_traits>

#include <sys/mman.h>

namespace am::msa {

// Throws am::sdk::Error(AM_ERR_NO_MEMORY, am_memory_check's message for `what`) when `bytes` exceed the memory budget.
void check_budget(double bytes, const std::string &what);

// The bytes the reader holds (buffer capacities) and the check before they grow. `describe(bytes)` names the sizes
// read so far for the message ("<file>: reading the alignment (…)"), given the bytes that do not fit.
class Tally {
 public:
  std::function<std::string(double bytes)> describe;
  double bytes() const { return bytes_; }
  double peak() const { return peak_; }  // the most held at once (tests, fuzzing: the reader's memory bound)
  // Before `delta` more bytes are allocated: checked against the budget (throws), then counted.
  void grow(double delta) {
    if (bytes_ + delta > checked_) {
      check_budget(bytes_ + delta, describe ? describe(bytes_ + delta) : std::string("msa: reading the alignment"));
      checked_ = (bytes_ + delta) * 1.0625;  // the next check after 1/16 more: a few dozen checks in all
    }
    bytes_ += delta;
    if (bytes_ > peak_) peak_ = bytes_;
  }
  void release(double delta) { bytes_ -= delta; }

 private:
  double bytes_ = 0, checked_ = 0, peak_ = 0;
};

// A growable array of trivially copyable T, counted by a Tally (none: uncounted). Move-only.
template <class T>
class Buffer {
  static_assert(std::is_trivially_copyable_v<T>, "Buffer holds plain values");

 public:
  explicit Buffer(Tally *t = nullptr) : tally_(t) {}
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  Buffer(Buffer &&o) noexcept : p_(o.p_), n_(o.n_), cap_(o.cap_), tally_(o.tally_) { o.p_ = nullptr, o.n_ = o.cap_ = 0; }
  Buffer &operator=(Buffer &&o) noexcept {
    if (this != &o) {
      clear_storage();
      p_ = o.p_, n_ = o.n_, cap_ = o.cap_, tally_ = o.tally_;
      o.p_ = nullptr, o.n_ = o.cap_ = 0;
    }
    return *this;
  }
  ~Buffer() { clear_storage(); }

  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  size_t capacity_bytes() const { return cap_ * sizeof(T); }
  T *data() { return p_; }
  const T *data() const { return p_; }
  T &operator[](size_t i) { return p_[i]; }
  const T &operator[](size_t i) const { return p_[i]; }
  T &back() { return p_[n_ - 1]; }

  void push_back(T v) {
    if (n_ == cap_) grow_to(n_ + 1);
    p_[n_++] = v;
  }
  void append(const T *src, size_t k) {
    if (k == 0) return;
    if (n_ + k > cap_) grow_to(n_ + k);
    std::memcpy(p_ + n_, src, k * sizeof(T));
    n_ += k;
  }
  // Shrinks the count (never the storage); growing is push_back/append/reserve.
  void truncate(size_t k) {
    if (k < n_) n_ = k;
  }
  // Exactly `k` elements of storage (at least the current count); counted first.
  void reserve_exact(size_t k) {
    if (k > cap_) set_capacity(k);
  }
  // Sets the count to k (≤ capacity after reserve_exact), leaving new elements unwritten.
  void set_size(size_t k) {
    if (k > cap_) set_capacity(k);
    n_ = k;
  }
  void free_storage() { clear_storage(); }

 private:
  void grow_to(size_t need) {
    size_t c = cap_ + cap_ / 2;
    if (c < need) c = need;
    if (c < 1024 / sizeof(T) + 1) c = 1024 / sizeof(T) + 1;
    set_capacity(c);
  }
  static constexpr size_t kMapped = size_t(1) << 16;  // bytes from which a buffer is a mapping of its own
  static bool mapped(size_t cap) { return cap * sizeof(T) >= kMapped; }

  void set_capacity(size_t c) {
    if (c > SIZE_MAX / sizeof(T) / 2) throw std::bad_alloc();
    if (tally_) tally_->grow(double(c - cap_) * sizeof(T));
    void *q = nullptr;
    if (!mapped(c)) {
      q = std::realloc(p_, c * sizeof(T));
    } else if (mapped(cap_)) {
      q = mremap(p_, cap_ * sizeof(T), c * sizeof(T), MREMAP_MAYMOVE);
      if (q == MAP_FAILED) q = nullptr;
    } else {  // from the heap to a mapping: the (small) contents copied once
      q = mmap(nullptr, c * sizeof(T), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (q == MAP_FAILED) q = nullptr;
      if (q && n_) std::memcpy(q, p_, n_ * sizeof(T));
      if (q) std::free(p_);
    }
    if (!q) {
      if (tally_) tally_->release(double(c - cap_) * sizeof(T));
      throw std::bad_alloc();
    }
    p_ = static_cast<T *>(q);
    cap_ = c;
  }
  void clear_storage() {
    if (tally_ && cap_) tally_->release(double(cap_) * sizeof(T));
    if (mapped(cap_)) munmap(p_, cap_ * sizeof(T));
    else std::free(p_);
    p_ = nullptr;
    n_ = cap_ = 0;
  }
  T *p_ = nullptr;
  size_t n_ = 0, cap_ = 0;
  Tally *tally_ = nullptr;
};

}  // namespace am::msa

#endif
