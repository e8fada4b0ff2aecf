// Per-call overhead at n = 2^16: what a launch costs, what ppat's temporary memory costs
// (its own pool, which keeps memory between calls), and what the same allocation costs
// from the default pool, which returns memory to the driver at every synchronization.
#include <ppat/ppat.cuh>
#include <ppat/textbook.cuh>

#include <cub/device/device_scan.cuh>

#include <functional>
#include <string>

#include "harness.hpp"

namespace ppat_bench {
namespace {

__global__ void empty_kernel() {}

}  // namespace

void bench_overhead(session& s) {
  if (!s.wants_pattern("overhead")) return;
  const std::size_t n = std::size_t{1} << 16;
  const cudaStream_t stream = s.stream();
  // What a three-phase scan of n items asks for: one total per 1024-item tile.
  const std::size_t temp_bytes_per_call = n / 1024 * sizeof(int);
  device_array<int> in(n), out(n);
  fill_uniform(in.data(), n, -100, 100, 4000);

  std::size_t cub_temp_bytes = 0;
  check(cub::DeviceScan::InclusiveSum(nullptr, cub_temp_bytes, in.data(), out.data(), n, stream),
        "cub::DeviceScan (size query)");
  device_array<unsigned char> cub_temp(cub_temp_bytes);

  // What ppat's calls on `stream` build first; the pieces below are timed on it.
  const ppat::detail::call_context call(stream, "bench");
  const cudaMemPool_t ppat_pool = ppat::temporary_memory_pool(call.device());

  const auto launch_empty = [&] {
    empty_kernel<<<1, 32, 0, stream>>>();
    check(cudaGetLastError(), "empty_kernel");
  };

  // Synchronized after every call, as the timing does: the default pool hands its memory
  // back at each synchronization, so its next allocation maps memory again.
  const auto alloc_launch_free = [&](auto&& allocate) {
    void* p = nullptr;
    allocate(&p);
    launch_empty();
    check(cudaFreeAsync(p, stream), "cudaFreeAsync");
  };
  constexpr int back_to_back = 100;

  bench_case c;
  c.pattern = "overhead";
  c.label = "per call at 2^16";
  c.type = "i32";
  c.n = n;
  c.variants.push_back({"empty kernel launch", [&](int) { launch_empty(); }, nullptr});
  c.variants.push_back({"ppat pool: alloc + empty kernel + free",
                        [&](int) {
                          alloc_launch_free([&](void** p) {
                            check(
                                cudaMallocFromPoolAsync(p, temp_bytes_per_call, ppat_pool, stream),
                                "cudaMallocFromPoolAsync");
                          });
                        },
                        nullptr});
  c.variants.push_back({"default pool: alloc + empty kernel + free",
                        [&](int) {
                          alloc_launch_free([&](void** p) {
                            check(cudaMallocAsync(p, temp_bytes_per_call, stream),
                                  "cudaMallocAsync");
                          });
                        },
                        nullptr});
  // What each piece of a call's setup costs the host once calls follow each other: a
  // variant of `back_to_back` calls of it, timed per call.
  const auto host_cost = [&](const std::string& name, const std::function<void()>& piece) {
    variant v{name,
              [piece](int) {
                for (int i = 0; i < back_to_back; ++i)
                  piece();
              },
              nullptr};
    v.calls = back_to_back;
    c.variants.push_back(v);
  };
  host_cost("ppat call_context: the stream's device and limits",
            [&] { const ppat::detail::call_context call(stream, "bench"); });
  host_cost("ppat require_device_readable: one pointer",
            [&] { ppat::detail::require_device_readable(in.data(), n, call, "in"); });
  host_cost("ppat temporary_buffer: allocate + release", [&] {
    ppat::detail::temporary_buffer<int> buffer(n / 1024, call);
    buffer.release();
  });
  host_cost("ppat stream_scratch: lend + give back", [&] {
    ppat::detail::stream_scratch scratch(n / 1024, ppat::detail::lookback_8_byte_words, call);
    scratch.release();
  });
  c.variants.push_back({"cub::DeviceScan::InclusiveSum i32",
                        [&](int) {
                          std::size_t bytes = cub_temp_bytes;
                          check(cub::DeviceScan::InclusiveSum(cub_temp.data(), bytes, in.data(),
                                                              out.data(), n, stream),
                                "cub::DeviceScan::InclusiveSum");
                        },
                        nullptr});
  c.variants.push_back(
      {"ppat::inclusive_scan i32",
       [&](int) { ppat::inclusive_scan(in.data(), out.data(), n, ppat::plus{}, stream); },
       nullptr});
  c.variants.push_back({"textbook::blelloch_inclusive_scan i32",
                        [&](int) {
                          ppat::textbook::blelloch_inclusive_scan(in.data(), out.data(), n,
                                                                  ppat::plus{}, stream);
                        },
                        nullptr});
  s.run(c);
}

}  // namespace ppat_bench
