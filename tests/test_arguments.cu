// Checks every public call shares: sizes whose byte counts overflow the address space are
// rejected before any CUDA call (these run without a GPU), and pointers the device cannot
// read are rejected before any launch (each case in a child process of its own, so that a
// call that faults instead cannot take the rest of the suite with it).
#include <ppat/ppat.cuh>
#include <ppat/textbook.cuh>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "reference.hpp"
#include "support.hpp"

namespace {

using ppat_test::device_buffer;

// A count of T whose byte count overflows size_t, or, for 1-byte T, runs past the end of
// the address space from `at`.
template <class T>
std::size_t overflowing_count(const T* at) {
  constexpr std::size_t max = std::numeric_limits<std::size_t>::max();
  if constexpr (sizeof(T) > 1) return max / sizeof(T) + 1;
  return max - reinterpret_cast<std::uintptr_t>(at) + 1;
}

template <class T>
T* fake(std::uintptr_t address) {
  return reinterpret_cast<T*>(address);  // never dereferenced: the call throws first
}

// Every public call that takes a count, with one that overflows: std::invalid_argument
// naming the call, and no CUDA call made (there may be no GPU).
TEST(arguments, sizes_whose_bytes_overflow_are_rejected_by_every_call) {
  namespace tb = ppat::textbook;
  const auto* i32 = fake<const int>(std::uintptr_t{1} << 40);
  auto* out32 = fake<int>(std::uintptr_t{1} << 41);
  const auto* u8 = fake<const std::uint8_t>(std::uintptr_t{1} << 62);
  auto* out8 = fake<std::uint8_t>(std::uintptr_t{1} << 61);
  auto* hist = fake<std::uint32_t>(std::uintptr_t{1} << 42);
  const auto* levels = fake<const int>(std::uintptr_t{1} << 43);
  const auto* weights = fake<const float>(std::uintptr_t{1} << 44);
  auto* sums = fake<float>(std::uintptr_t{1} << 45);
  const std::size_t n32 = overflowing_count(i32);
  const std::size_t n8 = overflowing_count(u8);
  const std::vector<std::pair<std::string, std::function<void()>>> calls = {
      {"ppat::inclusive_scan", [&] { ppat::inclusive_scan(i32, out32, n32); }},
      {"ppat::exclusive_scan", [&] { ppat::exclusive_scan(i32, out32, n32); }},
      {"ppat::inclusive_scan", [&] { ppat::inclusive_scan(u8, out8, n8); }},
      {"ppat::inclusive_scan_by_key", [&] { ppat::inclusive_scan_by_key(i32, i32, out32, n32); }},
      {"ppat::exclusive_scan_by_key", [&] { ppat::exclusive_scan_by_key(u8, i32, out32, n32); }},
      {"ppat::reduce", [&] { ppat::reduce(i32, out32, n32); }},
      {"ppat::reduce", [&] { ppat::reduce(u8, out8, n8); }},
      {"ppat::histogram_even", [&] { ppat::histogram_even(i32, n32, hist, 10, 0, 10); }},
      {"ppat::histogram_even", [&] { ppat::histogram_even(u8, n8, hist, 10, 0, 10); }},
      {"ppat::histogram_range", [&] { ppat::histogram_range(i32, n32, hist, 10, levels); }},
      {"ppat::histogram_even_weighted",
       [&] { ppat::histogram_even_weighted(i32, weights, n32, sums, 10, 0, 10); }},
      {"ppat::multi_histogram_even",
       [&] {
         ppat::multi_histogram_even<4, 3>(
             u8, n8 / 2, std::array<std::uint32_t*, 3>{hist, hist + 10, hist + 20},
             std::array<int, 3>{10, 10, 10}, std::array<int, 3>{0, 0, 0},
             std::array<int, 3>{10, 10, 10});
       }},
      {"ppat::transpose", [&] { ppat::transpose(i32, out32, n32, 1); }},
      {"ppat::transpose", [&] { ppat::transpose(i32, 1, out32, n32, n32, 1); }},
      {"ppat::transpose_batched", [&] { ppat::transpose_batched(i32, out32, n32, 1, 1); }},
      {"ppat::transpose_inplace", [&] { ppat::transpose_inplace(out32, std::size_t{1} << 31); }},
      {"ppat::permute",
       [&] {
         ppat::permute(i32, out32, {n32, 1}, {1, 0});
       }},
      {"ppat::textbook::hillis_steele_inclusive_scan",
       [&] { tb::hillis_steele_inclusive_scan(i32, out32, n32); }},
      {"ppat::textbook::hillis_steele_exclusive_scan",
       [&] { tb::hillis_steele_exclusive_scan(u8, out8, n8); }},
      {"ppat::textbook::blelloch_inclusive_scan",
       [&] { tb::blelloch_inclusive_scan(i32, out32, n32); }},
      {"ppat::textbook::blelloch_exclusive_scan",
       [&] { tb::blelloch_exclusive_scan(i32, out32, n32); }},
      {"ppat::textbook::histogram_even_global_atomics",
       [&] { tb::histogram_even_global_atomics(i32, n32, hist, 10, 0, 10); }},
      {"ppat::textbook::histogram_even_shared_atomics",
       [&] { tb::histogram_even_shared_atomics(u8, n8, hist, 10, 0, 10); }},
      {"ppat::textbook::transpose_naive", [&] { tb::transpose_naive(i32, out32, 1, n32); }},
      {"ppat::textbook::transpose_tiled", [&] { tb::transpose_tiled(i32, out32, n32, 1); }},
  };
  for (const auto& [function, call] : calls) {
    try {
      call();
      ADD_FAILURE() << function << ": no exception";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()).rfind(function + ":", 0), 0u) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << function << ": not std::invalid_argument: " << e.what();
    }
  }
}

// What a rejected pointer must look like: std::invalid_argument naming the call and the
// argument, thrown before anything was launched. Returns the failures.
std::string expect_rejected(const std::string& function, const std::string& argument,
                            const std::function<void()>& call) {
  try {
    call();
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    if (message.rfind(function + ": argument '" + argument + "'", 0) != 0)
      return "wrong message: " + message;
    const cudaError_t pending = cudaDeviceSynchronize();
    return pending == cudaSuccess ? ""
                                  : std::string("an error after all: ") + cudaGetErrorName(pending);
  } catch (const std::exception& e) {
    return std::string("not std::invalid_argument: ") + e.what();
  }
  const cudaError_t status = cudaDeviceSynchronize();
  return "accepted; the device then reported " + std::string(cudaGetErrorName(status));
}

bool device_reads_pageable_memory() {
  int device = 0, pageable = 0;
  (void)cudaGetDevice(&device);
  (void)cudaDeviceGetAttribute(&pageable, cudaDevAttrPageableMemoryAccess, device);
  return pageable != 0;
}

// Host memory from malloc, which this device cannot read: each call throws, naming the
// argument, where it used to launch and lose the CUDA context.
TEST(pointers, host_memory_is_rejected_before_any_launch) {
  PPAT_REQUIRE_GPU();
  if (device_reads_pageable_memory()) GTEST_SKIP() << "this device reads pageable host memory";
  constexpr std::size_t n = 100000;
  const auto in_host = [&](const std::function<std::string(int*, int*, std::uint32_t*)>& body) {
    return [=] {
      std::vector<int> host(n, 1);
      device_buffer<int> device(n);
      device_buffer<std::uint32_t> hist(256);
      return body(host.data(), device.data(), hist.data());
    };
  };
  PPAT_EXPECT_IN_CHILD(30, in_host([](int* host, int* device, std::uint32_t*) {
                         return expect_rejected("ppat::inclusive_scan", "in",
                                                [&] { ppat::inclusive_scan(host, device, n); });
                       }));
  PPAT_EXPECT_IN_CHILD(30, in_host([](int* host, int* device, std::uint32_t*) {
                         return expect_rejected("ppat::reduce", "out",
                                                [&] { ppat::reduce(device, host, n); });
                       }));
  PPAT_EXPECT_IN_CHILD(30, in_host([](int* host, int* device, std::uint32_t*) {
                         return expect_rejected("ppat::transpose", "out",
                                                [&] { ppat::transpose(device, host, 200, 500); });
                       }));
  PPAT_EXPECT_IN_CHILD(30, in_host([](int* host, int*, std::uint32_t* hist) {
                         return expect_rejected("ppat::histogram_even", "samples", [&] {
                           ppat::histogram_even(host, n, hist, 256, 0, 256);
                         });
                       }));
}

// A device pointer after cudaFree: rejected once the driver has unmapped its memory. (Memory
// the driver keeps mapped after the free, as a pool does, cannot be told from live memory.)
TEST(pointers, freed_device_memory_is_rejected_once_unmapped) {
  PPAT_REQUIRE_GPU();
  const auto with_freed = [](const std::function<std::string(int*)>& body) {
    return [=]() -> std::string {
      constexpr std::size_t bytes = std::size_t{256} << 20;
      void* freed = nullptr;
      if (cudaMalloc(&freed, bytes) != cudaSuccess || cudaFree(freed) != cudaSuccess)
        return "cudaMalloc or cudaFree failed";
      cudaPointerAttributes attributes{};
      if (cudaPointerGetAttributes(&attributes, freed) != cudaSuccess ||
          attributes.type != cudaMemoryTypeUnregistered) {
        (void)cudaGetLastError();
        std::fprintf(stderr, "the driver still maps freed memory here: nothing to check\n");
        return "";
      }
      return body(static_cast<int*>(freed));
    };
  };
  PPAT_EXPECT_IN_CHILD(30, with_freed([](int* freed) {
                         device_buffer<int> out(1000);
                         return expect_rejected("ppat::inclusive_scan", "in", [&] {
                           ppat::inclusive_scan(freed, out.data(), 1000);
                         });
                       }));
  PPAT_EXPECT_IN_CHILD(30, with_freed([](int* freed) {
                         device_buffer<std::uint32_t> hist(64);
                         return expect_rejected("ppat::histogram_even", "samples", [&] {
                           ppat::histogram_even(freed, 1000, hist.data(), 64, 0, 64);
                         });
                       }));
}

// Memory the device can read is accepted wherever it came from: managed memory, mapped
// pinned host memory, and memory from the stream-ordered allocator.
TEST(pointers, managed_pinned_and_pool_memory_are_accepted) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  struct memory_kind {
    const char* name;
    std::function<cudaError_t(int**, std::size_t)> allocate;
    std::function<cudaError_t(int*)> free;
  };
  const memory_kind kinds[] = {
      {"managed", [](int** p, std::size_t bytes) { return cudaMallocManaged(p, bytes); },
       [](int* p) { return cudaFree(p); }},
      {"mapped pinned",
       [](int** p, std::size_t bytes) { return cudaHostAlloc(p, bytes, cudaHostAllocMapped); },
       [](int* p) { return cudaFreeHost(p); }},
      {"stream-ordered pool",
       [](int** p, std::size_t bytes) {
         const cudaError_t status = cudaMallocAsync(p, bytes, 0);
         return status == cudaSuccess ? cudaStreamSynchronize(0) : status;
       },
       [](int* p) { return cudaFree(p); }},
  };
  constexpr std::size_t n = 300007;
  const auto values = ppat_test::random_integers<int>(n, -1000, 1000);
  for (const auto& kind : kinds) {
    SCOPED_TRACE(kind.name);
    int *in = nullptr, *out = nullptr, *sum = nullptr;
    PPAT_CUDA_OK(kind.allocate(&in, n * sizeof(int)));
    PPAT_CUDA_OK(kind.allocate(&out, n * sizeof(int)));
    PPAT_CUDA_OK(kind.allocate(&sum, sizeof(int)));
    PPAT_CUDA_OK(cudaMemcpy(in, values.data(), n * sizeof(int), cudaMemcpyDefault));
    PPAT_CUDA_OK(cudaMemset(out, ppat_test::poison_byte, n * sizeof(int)));
    ppat::inclusive_scan(in, out, n);
    ppat::reduce(in, sum, n, 4);
    ppat_test::expect_no_cuda_error();
    std::vector<int> scanned(n);
    int total = 0;
    PPAT_CUDA_OK(cudaMemcpy(scanned.data(), out, n * sizeof(int), cudaMemcpyDefault));
    PPAT_CUDA_OK(cudaMemcpy(&total, sum, sizeof(int), cudaMemcpyDefault));
    EXPECT_EQ(
        ppat_test::first_mismatch(scanned, ppat_reference::inclusive_scan(values, ppat::plus{})),
        -1);
    EXPECT_EQ(total, ppat_reference::reduce(values, 4, ppat::plus{}));
    for (int* p : {in, out, sum})
      PPAT_CUDA_OK(kind.free(p));
  }
}

}  // namespace
