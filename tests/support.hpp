// What every test file needs: device buffers, a fresh random generator per run, and a
// clean skip where no CUDA device is present.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace ppat_test {

inline bool cuda_device_available() {
  int count = 0;
  const bool available = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  (void)cudaGetLastError();
  return available;
}

// GPU tests report SKIPPED (not passed, not failed) on a machine without a GPU.
#define PPAT_REQUIRE_GPU() \
  if (!::ppat_test::cuda_device_available()) GTEST_SKIP() << "no CUDA device"

#define PPAT_CUDA_OK(call)                                                                     \
  do {                                                                                         \
    const cudaError_t ppat_status_ = (call);                                                   \
    ASSERT_EQ(ppat_status_, cudaSuccess) << #call << ": " << cudaGetErrorString(ppat_status_); \
  } while (0)

// Fails the test on any CUDA error, pending or asynchronous, left by the code under test.
inline void expect_no_cuda_error() {
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// Captures what `record` launches on `stream` into a CUDA graph and replays the graph twice:
// before each replay `prepare(replay)` poisons the outputs (and, in most suites, uploads
// inputs the capture never saw); after it, with the stream synchronized, `check(replay)`
// compares the outputs with the reference. Shows that a call captures (its temporary memory
// and every launch) and that the graph computes what the call does.
template <class Record, class Prepare, class Check>
void capture_and_replay(cudaStream_t stream, Record record, Prepare prepare, Check check,
                        cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal) {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  PPAT_CUDA_OK(cudaStreamBeginCapture(stream, mode));
  record();
  PPAT_CUDA_OK(cudaStreamEndCapture(stream, &graph));
  PPAT_CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 2; ++replay) {
    SCOPED_TRACE("replay " + std::to_string(replay));
    prepare(replay);
    PPAT_CUDA_OK(cudaGraphLaunch(exec, stream));
    PPAT_CUDA_OK(cudaStreamSynchronize(stream));
    check(replay);
  }
  PPAT_CUDA_OK(cudaGraphExecDestroy(exec));
  PPAT_CUDA_OK(cudaGraphDestroy(graph));
}

// Under compute-sanitizer, ten to a hundred times slower, the suite runs with
// PPAT_TEST_MAX_ITEMS set (and the huge tests filtered). One rule for cases with more items:
// they are left out, and the log says so. A test whose body is one such case skips
// (PPAT_SKIP_OVER_ITEM_BUDGET), so that it reports SKIPPED, not passed; a test of many cases
// leaves out those over the budget (`if (over_item_budget(n)) continue;`), and its first one
// writes a line to the log. fits_item_budget alone is for tests that shrink a case instead.
inline bool fits_item_budget(std::size_t items) {
  static const std::size_t budget = [] {
    const char* text = std::getenv("PPAT_TEST_MAX_ITEMS");
    return text != nullptr ? std::size_t(std::strtoull(text, nullptr, 10)) : SIZE_MAX;
  }();
  return items <= budget;
}

inline bool over_item_budget(std::size_t items) {
  if (fits_item_budget(items)) return false;
  static std::mutex mutex;
  static std::string last_test;
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string test =
      info != nullptr ? std::string(info->test_suite_name()) + "." + info->name() : "";
  const std::lock_guard<std::mutex> lock(mutex);
  if (test != last_test) {
    last_test = test;
    std::printf(
        "[ over budget ] %s: cases over PPAT_TEST_MAX_ITEMS left out (the first: %zu "
        "items)\n",
        test.c_str(), items);
    std::fflush(stdout);
  }
  return true;
}

#define PPAT_SKIP_OVER_ITEM_BUDGET(items)    \
  if (!::ppat_test::fits_item_budget(items)) \
  GTEST_SKIP() << (items) << " items, over PPAT_TEST_MAX_ITEMS (the sanitizers' budget)"

// Seconds a test may take before it counts as hung: instrumented runs (PPAT_TEST_MAX_ITEMS
// set, under compute-sanitizer) are ten to a hundred times slower.
inline double time_limit(double seconds) {
  return std::getenv("PPAT_TEST_MAX_ITEMS") != nullptr ? 20 * seconds : seconds;
}

// The body of a test run in a child process of its own (a fresh CUDA context): it returns
// the failures it found (empty when none), and the child exits with 0 only then. A fault
// cannot touch the rest of the suite, and a hang ends after `seconds` with exit code 2.
[[noreturn]] inline void run_in_child(double seconds, const std::function<std::string()>& body) {
  std::thread([seconds] {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    std::fprintf(stderr, "hung: still running after %.0f s\n", seconds);
    std::fflush(stderr);
    std::_Exit(2);
  }).detach();
  std::string failures;
  try {
    failures = body();
  } catch (const std::exception& e) {
    failures = std::string("exception: ") + e.what();
  }
  if (!failures.empty()) std::fprintf(stderr, "%s\n", failures.c_str());
  std::fflush(stderr);
  std::_Exit(failures.empty() ? 0 : 1);
}

// Runs `body` (a std::string() callable) through run_in_child. The child is a new run of the
// test binary (gtest's "threadsafe" death-test style), not a fork of a process that holds
// a CUDA context.
#define PPAT_EXPECT_IN_CHILD(seconds, ...)                                                \
  do {                                                                                    \
    GTEST_FLAG_SET(death_test_style, "threadsafe");                                       \
    EXPECT_EXIT(::ppat_test::run_in_child(::ppat_test::time_limit(seconds), __VA_ARGS__), \
                ::testing::ExitedWithCode(0), "");                                        \
  } while (0)

// A fresh seed every run (PPAT_TEST_SEED replays one); tests print it when they fail.
inline std::uint64_t run_seed() {
  static const std::uint64_t seed = []() -> std::uint64_t {
    if (const char* fixed = std::getenv("PPAT_TEST_SEED")) return std::strtoull(fixed, nullptr, 10);
    return (std::uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
  }();
  return seed;
}

inline std::mt19937_64& rng() {
  static std::mt19937_64 generator(run_seed());
  return generator;
}

#define PPAT_TRACE_SEED() \
  SCOPED_TRACE("replay with PPAT_TEST_SEED=" + std::to_string(::ppat_test::run_seed()))

// Uniform integers in [low, high], whatever the integer type (8-bit ones included).
template <class T>
std::vector<T> random_integers(std::size_t n, long long low, long long high) {
  std::uniform_int_distribution<long long> pick(low, high);
  std::vector<T> values(n);
  for (auto& v : values)
    v = T(pick(rng()));
  return values;
}

// Multiples of 1/8 (floats) or 1/1024 (doubles) of modest size: every partial sum any
// combination order can form is exact, so the result is exact too and any wrong or missing
// term shows.
template <class T>
std::vector<T> exact_fractions(std::size_t n, long long range, double unit) {
  const auto ints = random_integers<long long>(n, -range, range);
  std::vector<T> values(n);
  for (std::size_t i = 0; i < n; ++i)
    values[i] = T(double(ints[i]) * unit);
  return values;
}

// Floats of both signs spread over 2^-20 to 2^20: sums of them round at every step, so any
// change in the order of combination shows in the last bits.
template <class T>
std::vector<T> spread_floats(std::size_t n) {
  std::uniform_real_distribution<T> mantissa(-1, 1);
  std::uniform_int_distribution<int> exponent(-20, 20);
  std::vector<T> values(n);
  for (auto& v : values)
    v = std::ldexp(mantissa(rng()), exponent(rng()));
  return values;
}

// Composition of affine maps x -> a*x + b over 32-bit wraparound integers, with a count:
// associative, not commutative, 12 bytes, and exact, so any misordering shows.
struct affine {
  std::uint32_t a, b, count;
};
struct then {  // then(f, g) = g after f
  __host__ __device__ affine operator()(const affine& f, const affine& g) const {
    return {g.a * f.a, g.a * f.b + g.b, f.count + g.count};
  }
};

inline std::vector<affine> random_affine_maps(std::size_t n) {
  const auto a = random_integers<std::uint32_t>(n, 0, 0xFFFFFFFFll);
  const auto b = random_integers<std::uint32_t>(n, 0, 0xFFFFFFFFll);
  std::vector<affine> maps(n);
  for (std::size_t i = 0; i < n; ++i)
    maps[i] = {a[i] | 1u, b[i], 1u};
  return maps;
}

struct wide {  // a 16-byte value
  std::uint32_t a, b, c, d;
};
struct alignas(16) two_words {  // a 16-byte value of 8-byte words, as complex128 is
  std::uint64_t low, high;
};

// `call()` throws std::invalid_argument whose message names `function` and contains
// `argument` (the argument's name, quoted as the message quotes it where that matters).
template <class Call>
void expect_rejected(const char* function, const char* argument, Call call) {
  try {
    call();
    ADD_FAILURE() << "no exception for " << function << ", " << argument;
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(function), std::string::npos) << message;
    EXPECT_NE(message.find(argument), std::string::npos) << message;
  }
}

// Bytes that a kernel must overwrite: all-ones is NaN for floats and -1 for integers.
constexpr unsigned char poison_byte = 0xFF;

// A device allocation of `count` elements with room for `guard` sentinel elements on each
// side, so that a stray write just outside the buffer is caught.
template <class T>
class device_buffer {
 public:
  explicit device_buffer(std::size_t count, std::size_t guard = 0) : count_(count), guard_(guard) {
    void* raw = nullptr;
    const cudaError_t status = cudaMalloc(&raw, bytes(count + 2 * guard) + 1);
    if (status != cudaSuccess) throw std::runtime_error(cudaGetErrorString(status));
    raw_ = static_cast<T*>(raw);
    fill_bytes(0, count + 2 * guard, guard_byte);
  }
  explicit device_buffer(const std::vector<T>& values, std::size_t guard = 0)
      : device_buffer(values.size(), guard) {
    upload(values);
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  ~device_buffer() { (void)cudaFree(raw_); }

  T* data() const { return raw_ + guard_; }
  std::size_t size() const { return count_; }

  void upload(const std::vector<T>& values) {
    check(cudaMemcpy(data(), values.data(), bytes(values.size()), cudaMemcpyHostToDevice));
  }
  std::vector<T> download() const {
    std::vector<T> values(count_);
    check(cudaMemcpy(values.data(), data(), bytes(count_), cudaMemcpyDeviceToHost));
    return values;
  }
  void poison() { fill_bytes(guard_, count_, poison_byte); }

  // True when no guard byte on either side was touched.
  bool guards_intact() const {
    std::vector<unsigned char> host(bytes(guard_));
    for (std::size_t first : {std::size_t{0}, guard_ + count_}) {
      check(cudaMemcpy(host.data(), raw_ + first, host.size(), cudaMemcpyDeviceToHost));
      for (unsigned char byte : host) {
        if (byte != guard_byte) return false;
      }
    }
    return true;
  }

 private:
  static constexpr unsigned char guard_byte = 0x5A;
  static std::size_t bytes(std::size_t count) { return count * sizeof(T); }
  static void check(cudaError_t status) {
    if (status != cudaSuccess) throw std::runtime_error(cudaGetErrorString(status));
  }
  void fill_bytes(std::size_t first, std::size_t count, unsigned char byte) {
    check(cudaMemset(raw_ + first, byte, bytes(count)));
    // Done before the call under test, whatever stream that call runs on.
    check(cudaDeviceSynchronize());
  }

  T* raw_ = nullptr;
  std::size_t count_;
  std::size_t guard_;
};

// Buffers with 64 guard items a side, holding `items` or poisoned.
template <class T>
std::unique_ptr<device_buffer<T>> on_device(const std::vector<T>& items) {
  return std::make_unique<device_buffer<T>>(items, 64);
}
template <class T>
std::unique_ptr<device_buffer<T>> poisoned(std::size_t n) {
  auto buffer = std::make_unique<device_buffer<T>>(n, 64);
  buffer->poison();
  return buffer;
}

// A key of type K whose bytes are the low bytes of `bits` (little-endian).
template <class K>
K key_with_bits(std::uint64_t bits) {
  K key;
  std::memcpy(static_cast<void*>(&key), &bits, sizeof(K));
  return key;
}

// Index of the first element where `actual` and `expected` differ (bitwise for floats, so
// that a NaN left by the poison never matches), or -1 when all agree.
template <class T>
long long first_mismatch(const std::vector<T>& actual, const std::vector<T>& expected) {
  if (actual.size() != expected.size()) return 0;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    if (std::memcmp(&actual[i], &expected[i], sizeof(T)) != 0) return (long long)i;
  }
  return -1;
}

// `values` placed `shift` items into a buffer's worth of zeros `extra` items longer: to be
// uploaded to a buffer whose data then starts `shift` items past its alignment.
template <class T>
std::vector<T> placed_at(const std::vector<T>& values, std::size_t shift, std::size_t extra) {
  std::vector<T> padded(values.size() + extra, T(0));
  std::copy(values.begin(), values.end(), padded.begin() + std::ptrdiff_t(shift));
  return padded;
}

// Float results whose bits must not depend on where the buffers lie, only on the input:
// `run(placement)` computes them (a host vector) with its buffers placed as `placement` says
// (items past 16-byte alignment, of its choosing), and every placement's results must be the
// first's, bit for bit, none of them NaN (which the poison would leave). `describe` names a
// placement in a failure.
template <class Placement, class Run, class Describe>
void expect_same_bits_wherever(const std::vector<Placement>& placements, Run run,
                               Describe describe) {
  using results = decltype(run(placements.front()));
  results first;
  for (std::size_t p = 0; p < placements.size(); ++p) {
    results got = run(placements[p]);
    if (p == 0) {
      for (std::size_t i = 0; i < got.size(); ++i)
        ASSERT_FALSE(std::isnan(double(got[i]))) << describe(placements[p]) << ", item " << i;
      first = std::move(got);
    } else {
      EXPECT_EQ(first_mismatch(got, first), -1)
          << describe(placements[p]) << ", against " << describe(placements[0]);
    }
  }
}

}  // namespace ppat_test
