// Records: ordered keys, replacement, deep clones, typed lookups, get_vector conversions.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "attnmech/attnmech.h"

namespace {
struct root {
  am_record *r = nullptr;
  root() { REQUIRE(am_record_create(&r) == AM_OK); }
  ~root() { am_record_destroy(&r); }
};
std::vector<std::string> keys_of(const am_record *o) {
  std::vector<std::string> k;
  for (size_t i = 0; i < am_record_size(o); ++i) k.push_back(am_record_key(o, i));
  return k;
}
}  // namespace

TEST_CASE("keys keep insertion order; set replaces in place") {
  root t;
  CHECK(am_record_type_of(t.r) == AM_REC_OBJECT);
  CHECK(am_record_set_number(t.r, "b", 2) == AM_OK);
  CHECK(am_record_set_string(t.r, "a", "x") == AM_OK);
  CHECK(am_record_set_bool(t.r, "c", 5) == AM_OK);
  CHECK(am_record_set_null(t.r, "d") == AM_OK);
  CHECK(keys_of(t.r) == std::vector<std::string>{"b", "a", "c", "d"});
  const am_record *a_node = am_record_get(t.r, "a");
  CHECK(am_record_set_number(t.r, "b", 7) == AM_OK);  // replace: same position, other nodes stay valid
  CHECK(keys_of(t.r) == std::vector<std::string>{"b", "a", "c", "d"});
  CHECK(am_record_get(t.r, "a") == a_node);
  CHECK(am_record_number(am_record_get(t.r, "b")) == 7);
  CHECK(am_record_set_string(t.r, "b", "now a string") == AM_OK);
  CHECK(am_record_type_of(am_record_get(t.r, "b")) == AM_REC_STRING);
  CHECK(am_record_bool(am_record_get(t.r, "c")) == 1);
  CHECK(am_record_number(am_record_get(t.r, "c")) == 1.0);
  CHECK(std::isnan(am_record_number(am_record_get(t.r, "a"))));
  CHECK(am_record_string(am_record_get(t.r, "c")) == nullptr);
  CHECK(am_record_type_of(am_record_get(t.r, "d")) == AM_REC_NULL);
  CHECK(am_record_get(t.r, "zz") == nullptr);
  CHECK(am_record_remove(t.r, "a") == AM_OK);
  CHECK(am_record_remove(t.r, "a") == AM_ERR_NOT_FOUND);
  CHECK(keys_of(t.r) == std::vector<std::string>{"b", "c", "d"});
  // many keys: earlier node pointers stay valid
  const am_record *c_node = am_record_get(t.r, "c");
  for (int i = 0; i < 200; ++i) am_record_set_number(t.r, ("k" + std::to_string(i)).c_str(), i);
  CHECK(am_record_get(t.r, "c") == c_node);
  CHECK(am_record_number(am_record_get(t.r, "k150")) == 150);
}

TEST_CASE("objects, lists and type errors") {
  root t;
  am_record *o = am_record_object(t.r, "obj");
  REQUIRE(o != nullptr);
  CHECK(am_record_object(t.r, "obj") == o);  // existing object returned
  CHECK(am_record_list(t.r, "obj") == nullptr);  // holds another type
  am_record *l = am_record_list(t.r, "list");
  REQUIRE(l != nullptr);
  CHECK(am_record_append_number(l, 1.5) == AM_OK);
  CHECK(am_record_append_string(l, "s") == AM_OK);
  am_record *lo = am_record_append_object(l);
  REQUIRE(lo != nullptr);
  CHECK(am_record_set_number(lo, "x", 3) == AM_OK);
  double arr[2] = {4, 5};
  am_array_view v{};
  v.dtype = AM_F64;
  v.ndim = 1;
  v.shape[0] = 2;
  v.data = arr;
  CHECK(am_record_append_array(l, &v) == AM_OK);
  CHECK(am_record_size(l) == 4);
  CHECK(am_record_key(l, 0) == nullptr);
  CHECK(am_record_number(am_record_at(l, 0)) == 1.5);
  CHECK(std::string(am_record_string(am_record_at(l, 1))) == "s");
  CHECK(am_record_number(am_record_get(am_record_at(l, 2), "x")) == 3);
  am_array_view got{};
  CHECK(am_record_array(am_record_at(l, 3), &got) == AM_OK);
  CHECK(static_cast<const double *>(got.data)[1] == 5);
  CHECK(am_record_at(l, 4) == nullptr);
  // setters on a list / appends on an object are invalid
  CHECK(am_record_set_number(l, "x", 1) == AM_ERR_INVALID_ARGUMENT);
  CHECK(am_record_append_number(o, 1) == AM_ERR_INVALID_ARGUMENT);
  CHECK(am_record_append_object(o) == nullptr);
  CHECK(am_record_set_number(t.r, nullptr, 1) == AM_ERR_INVALID_ARGUMENT);
  CHECK(am_record_set_string(t.r, "s", nullptr) == AM_ERR_INVALID_ARGUMENT);
  // typed lookups
  double x = 0;
  const char *s = nullptr;
  CHECK(am_record_get_number(t.r, "missing", &x) == AM_ERR_NOT_FOUND);
  CHECK(am_record_get_number(t.r, "obj", &x) == AM_ERR_FORMAT);
  CHECK(am_record_get_string(t.r, "obj", &s) == AM_ERR_FORMAT);
  CHECK(am_record_get_array(t.r, "obj", &got) == AM_ERR_FORMAT);
  CHECK(am_record_get_array(t.r, "missing", &got) == AM_ERR_NOT_FOUND);
  am_record_set_bool(t.r, "flag", 0);
  CHECK(am_record_get_number(t.r, "flag", &x) == AM_OK);
  CHECK(x == 0);
  am_record_set_string(t.r, "name", "abc");
  CHECK(am_record_get_string(t.r, "name", &s) == AM_OK);
  CHECK(std::string(s) == "abc");
  // a child pointer passed to destroy is not freed (the root owns it)
  am_record *child = o;
  am_record_destroy(&child);
  CHECK(child == nullptr);
  CHECK(am_record_object(t.r, "obj") == o);
}

TEST_CASE("arrays are copied; set_matrix stores [rows, cols] with element (i,j) = m[i + j ld]") {
  root t;
  double m[3 * 2 + 1] = {1, 2, 3, -99, 4, 5, 6};  // rows = 3, cols = 2, ld = 4 (padding row -99 at m[3])
  double col[] = {1, 2, 3, 4, 5, 6};
  (void)col;
  CHECK(am_record_set_matrix(t.r, "M", m, 3, 2, 4) == AM_OK);
  m[0] = 100;  // the record holds a copy
  am_array_view v{};
  REQUIRE(am_record_get_array(t.r, "M", &v) == AM_OK);
  CHECK(v.dtype == AM_F64);
  CHECK(v.ndim == 2);
  CHECK(v.shape[0] == 3);
  CHECK(v.shape[1] == 2);
  std::vector<double> f(6);
  REQUIRE(am_array_to_f64_fortran(nullptr, &v, f.data(), f.size()) == AM_OK);
  CHECK(f == std::vector<double>{1, 2, 3, 4, 5, 6});
  std::vector<double> c(6);
  REQUIRE(am_array_to_f64_c(nullptr, &v, c.data(), c.size()) == AM_OK);
  CHECK(c == std::vector<double>{1, 4, 2, 5, 3, 6});
  CHECK(am_record_set_matrix(t.r, "bad", m, 3, 2, 2) == AM_ERR_INVALID_ARGUMENT);  // ld < rows
  double vec[3] = {7, 8, 9};
  CHECK(am_record_set_vector(t.r, "v", vec, 3) == AM_OK);
  CHECK(am_record_set_vector(t.r, "empty", nullptr, 0) == AM_OK);
  size_t n = 99;
  CHECK(am_record_get_vector(t.r, "empty", nullptr, 0, &n) == AM_OK);
  CHECK(n == 0);
}

TEST_CASE("get_vector: any numeric dtype, list of numbers, single number") {
  root t;
  int32_t iv[2][3] = {{1, 2, 3}, {4, 5, 6}};
  am_array_view v{};
  v.dtype = AM_I32;
  v.ndim = 2;
  v.shape[0] = 2;
  v.shape[1] = 3;
  v.data = iv;
  REQUIRE(am_record_set_array(t.r, "i32", &v) == AM_OK);
  // the same logical [2, 3] array stored in Fortran order: get_vector returns C (row-major) order
  int64_t fv[6] = {1, 4, 2, 5, 3, 6};
  v.dtype = AM_I64;
  v.fortran_order = 1;
  v.data = fv;
  REQUIRE(am_record_set_array(t.r, "i64f", &v) == AM_OK);
  float f32[3] = {0.5f, -1.25f, 3.0f};
  v = am_array_view{};
  v.dtype = AM_F32;
  v.ndim = 1;
  v.shape[0] = 3;
  v.data = f32;
  REQUIRE(am_record_set_array(t.r, "f32", &v) == AM_OK);
  am_record *l = am_record_list(t.r, "list");
  am_record_append_number(l, 10);
  am_record_append_number(l, 20);
  am_record_set_number(t.r, "one", 3.5);
  am_record_set_string(t.r, "str", "x");
  am_record *bad = am_record_list(t.r, "badlist");
  am_record_append_number(bad, 1);
  am_record_append_string(bad, "no");

  std::vector<double> out(6);
  size_t n = 0;
  CHECK(am_record_get_vector(t.r, "i32", nullptr, 0, &n) == AM_OK);
  CHECK(n == 6);
  CHECK(am_record_get_vector(t.r, "i32", out.data(), 6, &n) == AM_OK);
  CHECK(out == std::vector<double>{1, 2, 3, 4, 5, 6});
  CHECK(am_record_get_vector(t.r, "i64f", out.data(), 6, &n) == AM_OK);
  CHECK(out == std::vector<double>{1, 2, 3, 4, 5, 6});
  CHECK(am_record_get_vector(t.r, "f32", out.data(), 6, &n) == AM_OK);
  CHECK(n == 3);
  CHECK(out[1] == -1.25);
  CHECK(am_record_get_vector(t.r, "list", out.data(), 6, &n) == AM_OK);
  CHECK(n == 2);
  CHECK(out[1] == 20);
  CHECK(am_record_get_vector(t.r, "one", out.data(), 6, &n) == AM_OK);
  CHECK(n == 1);
  CHECK(out[0] == 3.5);
  CHECK(am_record_get_vector(t.r, "i32", out.data(), 5, &n) == AM_ERR_BUFFER_TOO_SMALL);
  CHECK(n == 6);
  CHECK(am_record_get_vector(t.r, "str", out.data(), 6, &n) == AM_ERR_FORMAT);
  CHECK(am_record_get_vector(t.r, "badlist", out.data(), 6, &n) == AM_ERR_FORMAT);
  CHECK(am_record_get_vector(t.r, "nope", out.data(), 6, &n) == AM_ERR_NOT_FOUND);
}

TEST_CASE("clone and set_copy are deep") {
  root t;
  am_record *o = am_record_object(t.r, "o");
  am_record_set_number(o, "x", 1);
  double d[2] = {1, 2};
  am_record_set_vector(o, "v", d, 2);
  am_record_append_string(am_record_list(o, "l"), "a");
  am_record *c = nullptr;
  REQUIRE(am_record_clone(t.r, &c) == AM_OK);
  am_record_set_number(o, "x", 2);
  am_array_view v{};
  am_record_get_array(o, "v", &v);
  static_cast<double *>(const_cast<void *>(v.data))[0] = 50;  // mutate the original's storage
  const am_record *co = am_record_get(c, "o");
  REQUIRE(co != nullptr);
  CHECK(am_record_number(am_record_get(co, "x")) == 1);
  am_array_view cv{};
  REQUIRE(am_record_get_array(co, "v", &cv) == AM_OK);
  CHECK(cv.data != v.data);
  CHECK(static_cast<const double *>(cv.data)[0] == 1);
  CHECK(std::string(am_record_string(am_record_at(am_record_get(co, "l"), 0))) == "a");
  CHECK(keys_of(co) == std::vector<std::string>{"x", "v", "l"});
  // copy a subtree into itself under another key, and over its own key
  CHECK(am_record_set_copy(t.r, "o2", o) == AM_OK);
  CHECK(am_record_set_copy(o, "self", o) == AM_OK);
  CHECK(am_record_number(am_record_get(am_record_get(o, "self"), "x")) == 2);
  CHECK(am_record_set_copy(t.r, "o", am_record_get(t.r, "o")) == AM_OK);
  CHECK(am_record_number(am_record_get(am_record_get(t.r, "o"), "x")) == 2);
  // clone of a non-object node is a root of that type
  am_record *cl = nullptr;
  REQUIRE(am_record_clone(am_record_get(co, "l"), &cl) == AM_OK);
  CHECK(am_record_type_of(cl) == AM_REC_LIST);
  CHECK(am_record_size(cl) == 1);
  am_record_destroy(&cl);
  am_record_destroy(&c);
  CHECK(c == nullptr);
  am_record_destroy(&c);
}

TEST_CASE("record errors carry a message on the tree (not on a context)") {
  am_record *root = nullptr;
  REQUIRE(am_record_create(&root) == AM_OK);
  CHECK(std::string(am_record_last_error(root)).empty());
  double v = 0;
  CHECK(am_record_get_number(root, "U", &v) == AM_ERR_NOT_FOUND);
  CHECK(std::string(am_record_last_error(root)) == "no key 'U'");
  REQUIRE(am_record_set_number(root, "test", 1.0) == AM_OK);
  // a type clash and out of memory are told apart by the message (am_record_object returns NULL for both)
  CHECK(am_record_object(root, "test") == nullptr);
  CHECK(std::string(am_record_last_error(root)) == "'test' is a number, not an object");
  am_record *obj = am_record_object(root, "child");
  REQUIRE(obj != nullptr);
  const char *s = nullptr;
  CHECK(am_record_get_string(obj, "x", &s) == AM_ERR_NOT_FOUND);
  CHECK(std::string(am_record_last_error(obj)) == "no key 'x'");
  CHECK(std::string(am_record_last_error(root)) == "no key 'x'");  // one message per tree, read from any node
  CHECK(am_record_append_number(obj, 1.0) == AM_ERR_INVALID_ARGUMENT);
  CHECK(std::string(am_record_last_error(root)) == "append: the node is an object, not a list");
  am_record_destroy(&root);
}

TEST_CASE("record errors are per thread: threads probing one const tree each read their own message") {
  // A shared dataset is read by several estimators at once (a scan's threads, Python threads): lookups on a const
  // tree must write nothing to it. Each thread probes its own missing key and a present one, and must always read
  // its own outcome back (with the outcome in the tree, a thread read another's "no key" message; under TSan the
  // write itself was the race).
  root t;
  REQUIRE(am_record_set_number(t.r, "present", 2.5) == AM_OK);
  const am_record *shared = t.r;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k)
    threads.emplace_back([&, k] {
      const std::string key = "missing" + std::to_string(k), want = "no key '" + key + "'";
      for (int i = 0; i < 2000; ++i) {
        double v = 0;
        if (am_record_get_number(shared, key.c_str(), &v) != AM_ERR_NOT_FOUND) ++wrong;
        if (am_record_last_status(shared) != AM_ERR_NOT_FOUND || want != am_record_last_error(shared)) ++wrong;
        if (am_record_get_number(shared, "present", &v) != AM_OK || v != 2.5) ++wrong;
        if (am_record_last_status(shared) != AM_OK || *am_record_last_error(shared) != '\0') ++wrong;
      }
    });
  for (auto &th : threads) th.join();
  CHECK(wrong.load() == 0);
  // The outcome belongs to the thread's last call: a call on another tree leaves this one's at AM_OK / "".
  double v = 0;
  CHECK(am_record_get_number(t.r, "nope", &v) == AM_ERR_NOT_FOUND);
  root other;
  CHECK(am_record_get_number(other.r, "also-nope", &v) == AM_ERR_NOT_FOUND);
  CHECK(std::string(am_record_last_error(other.r)) == "no key 'also-nope'");
  CHECK(std::string(am_record_last_error(t.r)).empty());
}

TEST_CASE("record status: NULL from object/list/append_object is told apart, and no stale message survives") {
  am_record *root = nullptr;
  REQUIRE(am_record_create(&root) == AM_OK);
  CHECK(am_record_last_status(root) == AM_OK);
  CHECK(am_record_last_status(nullptr) == AM_ERR_INVALID_ARGUMENT);
  REQUIRE(am_record_set_number(root, "n", 2.0) == AM_OK);
  // a type clash: NULL with AM_ERR_FORMAT (out of memory would be AM_ERR_NO_MEMORY)
  CHECK(am_record_object(root, "n") == nullptr);
  CHECK(am_record_last_status(root) == AM_ERR_FORMAT);
  CHECK(std::string(am_record_last_error(root)) == "'n' is a number, not an object");
  // the next successful call clears both
  am_record *list = am_record_list(root, "l");
  REQUIRE(list != nullptr);
  CHECK(am_record_last_status(list) == AM_OK);
  CHECK(std::string(am_record_last_error(root)).empty());
  CHECK(am_record_list(root, "n") == nullptr);
  CHECK(am_record_last_status(root) == AM_ERR_FORMAT);
  CHECK(std::string(am_record_last_error(root)) == "'n' is a number, not a list");
  am_record *o = am_record_append_object(list);
  REQUIRE(o != nullptr);
  CHECK(am_record_last_status(o) == AM_OK);
  CHECK(std::string(am_record_last_error(o)).empty());
  // append_object on an object: NULL, invalid argument (the node is of the wrong kind), with a message
  CHECK(am_record_append_object(o) == nullptr);
  CHECK(am_record_last_status(root) == AM_ERR_INVALID_ARGUMENT);
  CHECK(std::string(am_record_last_error(root)) == "append: the node is an object, not a list");
  // a failed lookup then a successful one: the status and message are those of the last call
  double v = 0;
  CHECK(am_record_get_number(root, "missing", &v) == AM_ERR_NOT_FOUND);
  CHECK(am_record_last_status(root) == AM_ERR_NOT_FOUND);
  CHECK(am_record_get_number(root, "n", &v) == AM_OK);
  CHECK(v == 2.0);
  CHECK(am_record_last_status(root) == AM_OK);
  CHECK(std::string(am_record_last_error(root)).empty());
  // calls that used to fail without a message now leave one
  am_array_view av;
  CHECK(am_record_array(am_record_get(root, "n"), &av) == AM_ERR_FORMAT);
  CHECK(std::string(am_record_last_error(root)) == "the node is a number, not an array");
  CHECK(am_record_set_string(root, "s", nullptr) == AM_ERR_INVALID_ARGUMENT);
  CHECK(am_record_last_status(root) == AM_ERR_INVALID_ARGUMENT);
  CHECK(std::string(am_record_last_error(root)) == "setting 's': NULL string");
  CHECK(am_record_remove(root, "n") == AM_OK);
  CHECK(am_record_last_status(root) == AM_OK);
  am_record_destroy(&root);
}
