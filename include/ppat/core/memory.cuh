// Temporary device memory: stream-ordered, from a pool that keeps its memory between calls.
//
// A plain cudaMallocAsync on the device's default pool (release threshold 0) hands memory
// back to the driver at every synchronization, so each ppat call would pay for a fresh
// mapping: about 40 us on an H200, more than a whole small scan. ppat owns one pool per
// device whose release threshold keeps up to `retained_bytes` mapped, so a repeated call
// pays well under a microsecond. The pool is yours to tune: ppat::temporary_memory_pool()
// returns it (set cudaMemPoolAttrReleaseThreshold, or cudaMemPoolTrimTo it).
//
// Under stream capture the allocation and the free become graph nodes, so every ppat call
// is capturable.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

#include "device.cuh"
#include "error.cuh"

namespace ppat {

inline constexpr std::uint64_t retained_bytes = std::uint64_t{256} << 20;

// The pool ppat draws temporary memory from on `device`, created on first use.
inline cudaMemPool_t temporary_memory_pool(int device) {
  constexpr const char* function = "ppat::temporary_memory_pool";
  static std::mutex mutex;
  static std::map<int, cudaMemPool_t> pools;  // never destroyed: calls may run until exit
  const std::lock_guard<std::mutex> lock(mutex);
  auto found = pools.find(device);
  if (found != pools.end()) return found->second;
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t pool = nullptr;
  detail::check_cuda(cudaMemPoolCreate(&pool, &props), function, "cudaMemPoolCreate");
  std::uint64_t threshold = retained_bytes;
  const cudaError_t set =
      cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold);
  if (set != cudaSuccess) {
    (void)cudaMemPoolDestroy(pool);
    detail::check_cuda(set, function, "cudaMemPoolSetAttribute");
  }
  pools.emplace(device, pool);
  return pool;
}

namespace detail {

// `count` elements of T, allocated on `stream` and freed on it by release(). The
// destructor frees too, for the paths where an exception leaves before release().
template <class T>
class temporary_buffer {
 public:
  temporary_buffer(std::size_t count, cudaStream_t stream, const char* function)
      : stream_(stream), function_(function) {
    if (count == 0) return;
    void* data = nullptr;
    const cudaStreamCaptureStatus capture = capture_status(stream, function);
    if (capture == cudaStreamCaptureStatusActive) {
      // The graph owns a captured allocation, whatever pool is named: no pool is needed, and
      // none is created while capturing (where creating one may be an illegal call).
      check_cuda(cudaMallocAsync(&data, count * sizeof(T), stream), function, "cudaMallocAsync");
    } else {
      const cudaMemPool_t pool = temporary_memory_pool(device_of(stream, capture, function));
      check_cuda(cudaMallocFromPoolAsync(&data, count * sizeof(T), pool, stream), function,
                 "cudaMallocFromPoolAsync");
    }
    data_ = static_cast<T*>(data);
  }
  temporary_buffer(const temporary_buffer&) = delete;
  temporary_buffer& operator=(const temporary_buffer&) = delete;
  ~temporary_buffer() {
    // Only reached with memory still held when another error is already propagating;
    // that error is the one to report, so a failure here must not linger as pending.
    if (data_ != nullptr && cudaFreeAsync(data_, stream_) != cudaSuccess) (void)cudaGetLastError();
  }

  T* data() const { return data_; }

  void release() {
    T* data = data_;
    data_ = nullptr;
    if (data != nullptr) check_cuda(cudaFreeAsync(data, stream_), function_, "cudaFreeAsync");
  }

 private:
  T* data_ = nullptr;
  cudaStream_t stream_;
  const char* function_;
};

}  // namespace detail
}  // namespace ppat
