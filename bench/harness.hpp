// The benchmark harness: every case times its variants side by side in one process with
// CUDA events (warm-up, median of many runs), against a device copy of the same bytes and
// the CUB/cuBLAS baseline, rotating buffers so that no variant is timed out of L2 beyond
// what its size allows.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace ppat_bench {

struct options {
  std::vector<std::string> patterns;  // empty: all
  std::vector<int> log2_sizes;        // empty: each pattern's default
  std::vector<std::string> types;     // empty: each pattern's default
  bool quick = false;
  // Only the public calls beside their peers, over every type and sizes 2^10-2^30 with an
  // odd size beside each power of two; every cell below 1.00x is listed at the end.
  bool sweep = false;
  std::string json_path;
  std::string csv_path;
};

struct device_facts {
  std::string name;
  int sm_count = 0;
  std::size_t l2_bytes = 0;
  std::size_t memory_bytes = 0;
};

// Throws std::runtime_error naming `what` when a CUDA call of the bench itself fails.
void check(cudaError_t status, const char* what);

// Device memory owned by the bench.
template <class T>
class device_array {
 public:
  device_array() = default;
  explicit device_array(std::size_t count) : count_(count) {
    void* raw = nullptr;
    check(cudaMalloc(&raw, count * sizeof(T) + 1), "cudaMalloc");
    data_ = static_cast<T*>(raw);
  }
  device_array(device_array&& other) noexcept : data_(other.data_), count_(other.count_) {
    other.data_ = nullptr;
  }
  device_array& operator=(device_array&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
    return *this;
  }
  ~device_array() { (void)cudaFree(data_); }

  T* data() const { return data_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }

 private:
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

// Fills with values drawn uniformly from [low, high] (integers) or [low, high) (floats),
// from a counter-based hash of (seed, index): the same seed always gives the same data.
// Returns once the data is on the device.
template <class T>
void fill_uniform(T* data, std::size_t n, double low, double high, std::uint64_t seed);
// The same in runs of `run_length` equal values, each run's drawn from (seed, run index).
template <class T>
void fill_uniform_runs(T* data, std::size_t n, std::size_t run_length, double low, double high,
                       std::uint64_t seed);

// Every bit pattern equally likely: integer keys over their whole range.
template <class T>
void fill_random_bits(T* data, std::size_t n, std::uint64_t seed);

// Keys in runs of `run_length` equal values, each run's key drawn from (seed, run index).
void fill_runs(std::int32_t* keys, std::size_t n, std::size_t run_length, std::uint64_t seed);

// Copies host values to `to` and returns once they are on the device. A cudaMemcpy from
// pageable memory may return while its last bytes are still on their way, which the
// legacy stream orders but the non-blocking stream every case runs on does not.
void copy_to_device(void* to, const void* from, std::size_t bytes);

// Offsets of `segments` segments of `length` items each, back to back from 0: one array of
// segments + 1 for both ends.
device_array<int> fixed_length_offsets(std::size_t segments, std::size_t length);

// Number of positions where the two arrays differ bitwise.
std::size_t count_differences(const void* a, const void* b, std::size_t bytes);

// A variant named "ppat::call" times that public call on the case's input ("ppat::call,
// note": on a variation of it); a sweep runs the former and the baseline only.
struct variant {
  std::string name;
  std::function<void(int set)> run;
  // Optional: after a run on set 0, true when the output is right (compared with the
  // baseline's or another variant's output, bitwise).
  std::function<bool()> check;
  int calls = 1;  // calls per run: the time reported is per call
};

struct bench_case {
  std::string pattern;  // "scan", "select", "sort", "histogram", "transpose", "overhead"
  std::string label;    // what is computed, e.g. "inclusive i32"
  std::string type;
  std::size_t n = 0;             // items
  std::string shape;             // "rows x cols" for transposes
  double bytes = 0;              // that must move per call: inputs read once, outputs written once
  bool keys_per_second = false;  // also print n / time (sorts: Gkeys/s)
  int sets = 1;                  // rotating buffer sets the runs cycle through
  // The bytes a device copy reads (and writes) to stand for this case's bandwidth ceiling:
  // the harness times cudaMemcpyAsync of them between buffers of its own, `sets` pairs in
  // the same rotation as the case. 0 where no copy applies.
  double copy_bytes = 0;
  std::string baseline;  // the variant the others are compared with; none: the copy is the peer
  std::vector<variant> variants;
};

class session {
 public:
  session(options opts, device_facts device);
  ~session();

  const options& opts() const { return opts_; }
  const device_facts& device() const { return device_; }
  cudaStream_t stream() const { return stream_; }  // every case runs on it
  bool wants_pattern(const std::string& pattern) const;
  bool wants_type(const std::string& type, const std::vector<std::string>& defaults) const;
  // The item counts to run: `--sizes` if given, else the pattern's `full` or `quick` list
  // (log2), or in a sweep 2^10, 2^12, ..., 2^30; a sweep adds an odd count (3/4 of each
  // power of two, plus one) after each power.
  std::vector<std::size_t> sizes(const std::vector<int>& full, const std::vector<int>& quick) const;
  bool sweep() const { return opts_.sweep; }

  // How many buffer sets of `bytes_per_set` keep each run's data out of L2 (bounded so the
  // rotation never takes more than a fraction of device memory).
  int rotation_sets(double bytes_per_set) const;

  // Median time of `run` in microseconds, with CUDA events around every call.
  double median_us(const std::function<void(int set)>& run, int sets);

  // Times every variant of the case, prints its table, and records it for JSON/CSV.
  void run(const bench_case& c);

  // Writes the rows so far as JSON/CSV if asked: after each pattern, so that a run cut short
  // keeps what it measured.
  void write_outputs() const;
  // Writes JSON/CSV if asked, lists a sweep's losses; returns false when any check failed.
  bool finish();

 private:
  struct row;
  struct loss;
  void print(const bench_case& c, const std::vector<row>& rows) const;
  double copy_median_us(std::size_t bytes, int sets);
  void print_losses() const;

  options opts_;
  device_facts device_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
  std::vector<std::string> json_rows_;
  std::vector<std::string> csv_rows_;
  std::vector<loss> losses_;
  bool all_checks_passed_ = true;
};

// Each pattern's cases.
void bench_scan(session& s);
void bench_reduce(session& s);
void bench_select(session& s);
void bench_sort(session& s);
void bench_histogram(session& s);
void bench_transpose(session& s);
void bench_overhead(session& s);
// Where NCCL is found: every visible GPU a rank, each distributed call against one GPU.
void bench_distributed(session& s);

}  // namespace ppat_bench
