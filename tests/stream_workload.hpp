// Scans and reductions called from many host threads at once, every result checked: the
// workload of the stream tests, shared by the suite built with the legacy default stream and
// the one built with --default-stream per-thread.
#pragma once

#include <ppat/ppat.cuh>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "reference.hpp"
#include "support.hpp"

namespace ppat_test {

inline void cuda_or_throw(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

namespace {

// Holds its stream until the gate reads at least `opening`, or `timeout` nanoseconds pass.
__global__ void wait_at_gate(const volatile unsigned* gate, unsigned opening,
                             unsigned long long timeout) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (*gate < opening && now - start < timeout);
}

}  // namespace

// A gate in mapped host memory: what streams queue behind hold() waits until the host calls
// open(), so that calls queued on many streams start at once and run side by side. A held
// stream goes on by itself after 200 ms: a host call that waits on the device (a full
// command queue, a pageable copy) must not wait on the gate too. Under compute-sanitizer
// (PPAT_TEST_MAX_ITEMS set) kernels run one at a time, and a held kernel would only stall
// the others: the gate is then always open.
class gate {
 public:
  gate() {
    cuda_or_throw(cudaHostAlloc(&value_, sizeof(unsigned), cudaHostAllocMapped), "cudaHostAlloc");
    *value_ = 0;
  }
  gate(const gate&) = delete;
  gate& operator=(const gate&) = delete;
  ~gate() { (void)cudaFreeHost(const_cast<unsigned*>(value_)); }

  void hold(cudaStream_t stream, unsigned opening) const {
    const bool instrumented = std::getenv("PPAT_TEST_MAX_ITEMS") != nullptr;
    wait_at_gate<<<1, 1, 0, stream>>>(value_, opening, instrumented ? 0 : 200000000ull);
    cuda_or_throw(cudaGetLastError(), "wait_at_gate");
  }
  void open(unsigned opening) { *value_ = opening; }

 private:
  volatile unsigned* value_ = nullptr;
};

// `threads` host threads make `rounds` rounds of calls each on `stream`, which must name a
// different stream in each thread (cudaStreamPerThread, or 0 in a translation unit built
// with per-thread default streams). In a round each thread queues, behind a gate, an
// inclusive i32 scan, an exclusive u64 scan and a u64 reduce of one fresh random size; the
// last thread to queue its calls opens the gate, so that the calls of all threads run at
// once; then each checks every element against the host. Returns the failures, empty when
// there are none.
inline std::string scan_and_reduce_from_threads(cudaStream_t stream, int threads, int rounds) {
  // Up to 2^20 items: 128 look-back tiles of i32 and the reduce's multi-block path.
  const std::size_t max_n =
      fits_item_budget(std::size_t{1} << 20) ? std::size_t{1} << 20 : std::size_t{1} << 17;
  std::mutex mutex;
  std::string failures;
  const auto fail = [&](const std::string& what) {
    const std::lock_guard<std::mutex> lock(mutex);
    if (failures.size() < 4000) failures += what + "\n";
  };
  gate start;
  int queued = 0;  // threads that queued their calls of the round not yet opened
  unsigned opened = 0;
  const auto queued_round = [&] {
    const std::lock_guard<std::mutex> lock(mutex);
    if (++queued == threads) {
      queued = 0;
      start.open(++opened);
    }
  };
  const auto worker = [&](int thread) {
    const auto cuda = cuda_or_throw;
    std::mt19937_64 generator(run_seed() + std::uint64_t(thread));
    int* in32 = nullptr;
    int* out32 = nullptr;
    std::uint64_t* in64 = nullptr;
    std::uint64_t* out64 = nullptr;
    std::uint64_t* sum = nullptr;
    // Copies from and to pinned memory, which never wait on the device: a pageable copy
    // waits on its stream, behind the gate, and holds back the other threads' copies.
    int* host32 = nullptr;
    std::uint64_t* host64 = nullptr;
    try {
      cuda(cudaMalloc(&in32, max_n * sizeof(int)), "cudaMalloc");
      cuda(cudaMalloc(&out32, max_n * sizeof(int)), "cudaMalloc");
      cuda(cudaMalloc(&in64, max_n * sizeof(std::uint64_t)), "cudaMalloc");
      cuda(cudaMalloc(&out64, max_n * sizeof(std::uint64_t)), "cudaMalloc");
      cuda(cudaMalloc(&sum, sizeof(std::uint64_t)), "cudaMalloc");
      cuda(cudaMallocHost(&host32, max_n * sizeof(int)), "cudaMallocHost");
      cuda(cudaMallocHost(&host64, (max_n + 1) * sizeof(std::uint64_t)), "cudaMallocHost");
      std::uniform_real_distribution<double> log2_size(0.0, std::log2(double(max_n)));
      std::uniform_int_distribution<int> small(-1000, 1000);
      std::uniform_int_distribution<std::uint64_t> any64;
      for (int round = 0; round < rounds; ++round) {
        const std::size_t n =
            std::max<std::size_t>(1, std::size_t(std::exp2(log2_size(generator))));
        std::vector<int> a(n);
        std::vector<std::uint64_t> b(n);
        for (auto& v : a)
          v = small(generator);
        for (auto& v : b)
          v = any64(generator);
        std::copy(a.begin(), a.end(), host32);
        std::copy(b.begin(), b.end(), host64);
        cuda(cudaMemcpyAsync(in32, host32, n * sizeof(int), cudaMemcpyHostToDevice, stream),
             "cudaMemcpyAsync");
        cuda(cudaMemcpyAsync(in64, host64, n * sizeof(std::uint64_t), cudaMemcpyHostToDevice,
                             stream),
             "cudaMemcpyAsync");
        cuda(cudaMemsetAsync(out32, poison_byte, n * sizeof(int), stream), "cudaMemsetAsync");
        cuda(cudaMemsetAsync(out64, poison_byte, n * sizeof(std::uint64_t), stream),
             "cudaMemsetAsync");
        cuda(cudaMemsetAsync(sum, poison_byte, sizeof(std::uint64_t), stream), "cudaMemsetAsync");
        start.hold(stream, unsigned(round) + 1);
        ppat::inclusive_scan(in32, out32, n, ppat::plus{}, stream);
        ppat::exclusive_scan(in64, out64, n, std::uint64_t{7}, ppat::plus{}, stream);
        ppat::reduce(in64, sum, n, std::uint64_t{3}, ppat::plus{}, stream);
        queued_round();
        cuda(cudaMemcpyAsync(host32, out32, n * sizeof(int), cudaMemcpyDeviceToHost, stream),
             "cudaMemcpyAsync");
        cuda(cudaMemcpyAsync(host64, out64, n * sizeof(std::uint64_t), cudaMemcpyDeviceToHost,
                             stream),
             "cudaMemcpyAsync");
        cuda(cudaMemcpyAsync(host64 + max_n, sum, sizeof(std::uint64_t), cudaMemcpyDeviceToHost,
                             stream),
             "cudaMemcpyAsync");
        cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
        const std::vector<int> got32(host32, host32 + n);
        const std::vector<std::uint64_t> got64(host64, host64 + n);
        const std::string where = "thread " + std::to_string(thread) + " round " +
                                  std::to_string(round) + " n=" + std::to_string(n) + ": ";
        const long long bad32 =
            first_mismatch(got32, ppat_reference::inclusive_scan(a, ppat::plus{}));
        if (bad32 >= 0) fail(where + "inclusive_scan i32 wrong from " + std::to_string(bad32));
        const long long bad64 = first_mismatch(
            got64, ppat_reference::exclusive_scan(b, std::uint64_t{7}, ppat::plus{}));
        if (bad64 >= 0) fail(where + "exclusive_scan u64 wrong from " + std::to_string(bad64));
        if (host64[max_n] != ppat_reference::reduce(b, std::uint64_t{3}, ppat::plus{}))
          fail(where + "reduce u64 wrong");
      }
    } catch (const std::exception& e) {
      fail("thread " + std::to_string(thread) + ": " + e.what());
    }
    for (void* p : {static_cast<void*>(in32), static_cast<void*>(out32), static_cast<void*>(in64),
                    static_cast<void*>(out64), static_cast<void*>(sum)})
      (void)cudaFree(p);
    (void)cudaFreeHost(host32);
    (void)cudaFreeHost(host64);
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back(worker, t);
  for (auto& t : pool)
    t.join();
  return failures;
}

}  // namespace ppat_test
