// Launch policy and arithmetic shared by every kernel: the tuning form, and grid sizes for
// 64-bit element counts.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "device.cuh"
#include "error.cuh"

namespace ppat::detail {

// Every kernel's launch policy, in one form, one meaning a knob:
//   Threads            threads a block
//   BytesPerThread     bytes of input a thread holds in flight (in registers, or staged for
//                      it in shared memory); each kernel's shape derives its rows, items or
//                      tile sides from it
//   MinBlocksPerSM     blocks an SM must fit, asked of the compiler by __launch_bounds__
//                      (0: the compiler's choice)
//   GridBlocksPerSM    for a kernel whose blocks loop over the input (a grid-stride loop):
//                      the blocks an SM its grid holds, at most; 0 for a kernel with a block
//                      a tile
// Retuning a kernel is editing the one line that names its policy, where the measurement
// that chose it sits.
template <int Threads, int BytesPerThread, int MinBlocksPerSM, int GridBlocksPerSM = 0>
struct tuning {
  static_assert(Threads % 32 == 0 && Threads <= 1024, "whole warps, within a block's limit");
  static_assert(BytesPerThread > 0, "a thread holds something");
  static_assert(MinBlocksPerSM >= 0 && GridBlocksPerSM >= 0, "counts of blocks");
  static constexpr int threads = Threads;
  static constexpr int warps = Threads / 32;
  static constexpr int bytes_per_thread = BytesPerThread;
  static constexpr int min_blocks_per_sm = MinBlocksPerSM;
  static constexpr int grid_blocks_per_sm = GridBlocksPerSM;

  // Groups of `group_bytes` (a vector of items, a key with its value) that a thread's bytes
  // hold: at least one, at most `most`.
  static constexpr int groups_per_thread(int group_bytes, int most) {
    return std::clamp(BytesPerThread / group_bytes, 1, most);
  }
};

__host__ __device__ constexpr std::size_t ceil_div(std::size_t a, std::size_t b) {
  return (a + b - 1) / b;
}

// Blocks for a grid-stride loop over `items`, `items_per_block` a block a step: enough for
// `blocks_per_sm` resident blocks on every SM, never more than the items need. Always at
// least one.
inline unsigned grid_stride_blocks(std::size_t items, std::size_t items_per_block,
                                   const device_limits& limits, int blocks_per_sm) {
  const std::size_t wanted = ceil_div(std::max<std::size_t>(items, 1), items_per_block);
  const std::size_t resident = std::size_t(limits.sm_count) * blocks_per_sm;
  return unsigned(std::min(wanted, resident));
}

// The same, for a kernel whose tuning names its grid.
template <class Tuning>
unsigned grid_stride_blocks(std::size_t items, std::size_t items_per_block,
                            const device_limits& limits) {
  static_assert(Tuning::grid_blocks_per_sm > 0, "a grid-stride kernel's tuning names its grid");
  return grid_stride_blocks(items, items_per_block, limits, Tuning::grid_blocks_per_sm);
}

// Blocks of `block` threads covering cols along x and rows along y, capped at the launch
// limits (2^31 - 1 along x, 65535 along y); kernels grid-stride past the caps.
inline dim3 grid_2d(std::size_t rows, std::size_t cols, dim3 block) {
  return dim3(unsigned(std::min<std::size_t>(ceil_div(cols, block.x), 0x7FFFFFFF)),
              unsigned(std::min<std::size_t>(ceil_div(rows, block.y), 65535)));
}

// A kernel asking for more than 48 KB of dynamic shared memory must say so first, on the
// device it runs on (the call's, current while the call runs). `Kernel` may take as much as
// a block may have beside its static shared memory, said once per device: set per call to
// what the call asks, the limit cost host time on every call (0.35-0.46 us, a twentieth of a
// small call), and a smaller limit set by a concurrent call could fail a larger launch.
// set_most_dynamic_shared_bytes says it; allow_dynamic_shared_bytes, once per device.
template <auto Kernel>
void set_most_dynamic_shared_bytes(const call_context& call) {
  cudaFuncAttributes attributes{};
  call.check(cudaFuncGetAttributes(&attributes, Kernel), "cudaFuncGetAttributes");
  const int most = call.limits().shared_bytes_per_block_optin - int(attributes.sharedSizeBytes);
  call.check(cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, most),
             "cudaFuncSetAttribute");
}
// `say()`, the first time a call on its device asks for attribute `Attribute` of `Kernel`;
// later calls there skip it (devices past the 64th say it every time).
template <auto Kernel, cudaFuncAttribute Attribute, class Say>
void once_per_device(const call_context& call, Say say) {
  constexpr int most_devices = 64;
  static std::atomic<bool> said[most_devices] = {};
  const bool remembered = call.device() < most_devices;
  if (remembered && said[call.device()].load(std::memory_order_acquire)) return;
  say();
  if (remembered) said[call.device()].store(true, std::memory_order_release);
}
template <auto Kernel>
void allow_dynamic_shared_bytes(const call_context& call) {
  once_per_device<Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize>(
      call, [&] { set_most_dynamic_shared_bytes<Kernel>(call); });
}

// Clusters of more than 8 blocks are a size `Kernel` must allow, said once per device.
template <auto Kernel>
void allow_large_clusters(const call_context& call) {
  once_per_device<Kernel, cudaFuncAttributeNonPortableClusterSizeAllowed>(call, [&] {
    call.check(cudaFuncSetAttribute(Kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1),
               "cudaFuncSetAttribute");
  });
}

// A kernel launched after another of the same call may be scheduled while that one drains
// (programmatic dependent launch, sm_90 on), where the stream would otherwise start it only
// after the one before has finished and been retired: a call of many launches, most of them
// with nothing to do (a segmented sort's paths for lengths no segment has), pays that gap at
// every launch (docs/patterns.md, "Segmented sorts"). Such a kernel calls
// wait_for_earlier_kernels before it touches memory, which returns once every kernel before
// it in the stream has finished and its writes are visible (at once where it was launched
// without the attribute), so the order of the stream holds as for any launch.
__device__ __forceinline__ void wait_for_earlier_kernels() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
template <class... Parameters, class... Arguments>
void launch_dependent(void (*kernel)(Parameters...), dim3 grid, dim3 block,
                      std::size_t shared_bytes, const call_context& call, const char* kernel_name,
                      Arguments&&... arguments) {
  cudaLaunchAttribute dependent{};
  dependent.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  dependent.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared_bytes;
  config.stream = call.stream();
  config.attrs = &dependent;
  config.numAttrs = call.limits().has_clusters ? 1 : 0;  // sm_90 on, as clusters
  check_cuda(cudaLaunchKernelEx(&config, kernel, std::forward<Arguments>(arguments)...),
             call.function(), kernel_name);
}

// A cooperative launch of `Kernel`, whose grid the occupancy query (resident_blocks) says
// fits on the GPU at once. The driver may still refuse such a grid as too large: it did in
// the bench's process for the sort's one-launch kernel of f32 keys at 2^18, although a fresh
// process ran the same call and the query said one block an SM fits; the cause is not found
// (docs/patterns.md, "Radix sort"). Refused, the kernel's shared-memory limit is set again
// with a carveout of all the shared memory, and the launch tried once more; refused again, it
// returns false and the caller takes its path of separate launches. Other failures throw.
template <auto Kernel>
bool launch_cooperative(dim3 grid, dim3 block, void** arguments, std::size_t shared_bytes,
                        const call_context& call) {
  const auto launch = [&] {
    return cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(Kernel), grid, block,
                                       arguments, shared_bytes, call.stream());
  };
  cudaError_t launched = launch();
  if (launched == cudaErrorCooperativeLaunchTooLarge) {
    (void)cudaGetLastError();
    set_most_dynamic_shared_bytes<Kernel>(call);
    call.check(cudaFuncSetAttribute(Kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                    int(cudaSharedmemCarveoutMaxShared)),
               "cudaFuncSetAttribute");
    launched = launch();
  }
  if (launched == cudaErrorCooperativeLaunchTooLarge) {
    (void)cudaGetLastError();
    return false;
  }
  call.check(launched, "cudaLaunchCooperativeKernel");
  return true;
}

// Blocks of `Kernel` (of `threads` threads and `shared_bytes` of dynamic shared memory) that
// fit on the call's GPU at once, asked of the runtime once per device for the shared memory
// last asked about (a histogram's varies with its bins).
template <auto Kernel>
std::size_t resident_blocks(int threads, std::size_t shared_bytes, const call_context& call) {
  constexpr int most_devices = 64;
  // One plus (shared_bytes << 16 | blocks an SM), as last asked; 0 before the first question.
  static std::atomic<std::uint64_t> last_asked[most_devices] = {};
  if (call.device() >= most_devices) return 0;
  std::atomic<std::uint64_t>& known = last_asked[call.device()];
  const std::uint64_t entry = known.load(std::memory_order_relaxed);
  int blocks = 0;
  if (entry != 0 && (entry - 1) >> 16 == shared_bytes) {
    blocks = int((entry - 1) & 0xFFFF);
  } else {
    allow_dynamic_shared_bytes<Kernel>(call);
    call.check(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, Kernel, threads, shared_bytes),
        "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
    known.store(1 + ((std::uint64_t(shared_bytes) << 16) | std::uint64_t(blocks)),
                std::memory_order_relaxed);
  }
  return std::size_t(blocks) * std::size_t(call.limits().sm_count);
}

// Clusters of `Kernel` launched as `config` says (its cluster dimension the attribute's, of
// `blocks` blocks) that fit on the call's GPU at once, asked of the runtime once per device
// for the cluster and shared memory last asked about: the query took host time on every
// call of a top-k of few short rows.
template <auto Kernel>
std::size_t resident_clusters(const cudaLaunchConfig_t& config, unsigned blocks,
                              const call_context& call) {
  constexpr int most_devices = 64;
  // One plus (shared bytes << 24 | blocks << 16 | clusters), as last asked; 0 before.
  static std::atomic<std::uint64_t> last_asked[most_devices] = {};
  const std::uint64_t shape =
      (std::uint64_t(config.dynamicSmemBytes) << 24) | (std::uint64_t(blocks & 0xFF) << 16);
  std::atomic<std::uint64_t>* known =
      call.device() < most_devices ? &last_asked[call.device()] : nullptr;
  const std::uint64_t entry = known != nullptr ? known->load(std::memory_order_relaxed) : 0;
  if (entry != 0 && ((entry - 1) & ~std::uint64_t(0xFFFF)) == shape)
    return std::size_t((entry - 1) & 0xFFFF);
  int clusters = 0;
  call.check(cudaOccupancyMaxActiveClusters(&clusters, Kernel, &config),
             "cudaOccupancyMaxActiveClusters");
  if (known != nullptr)
    known->store(1 + (shape | std::uint64_t(clusters & 0xFFFF)), std::memory_order_relaxed);
  return std::size_t(clusters);
}

}  // namespace ppat::detail
