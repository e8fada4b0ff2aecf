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
//
// Single-pass kernels also need flags and counters that start unset: stream_scratch keeps
// them with the stream between calls, tagged with a per-call epoch, so a call needs neither
// an allocation nor a memset.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>
#include <utility>

#include "atomic.cuh"
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

// The layouts of memory kept with a stream: each keeps its own (see stream_scratch).
enum scratch_purpose : int {
  lookback_status_words,   // 4-byte statuses; the values beside them live elsewhere
  lookback_8_byte_words,   // a status and a value of up to 4 bytes
  lookback_16_byte_words,  // a status and a value of up to 12 bytes
  reduce_block_results,    // a ticket counter, then values no kernel reads as flags
};

// Device memory kept with a stream for the flags and counters of single-pass kernels, so
// that a call needs neither an allocation nor a memset:
//   - every call gets a new epoch(), and tags the flags it writes with it: flags from
//     earlier calls carry older epochs and read as unset;
//   - counters keep counting across calls, from ticket_base(): the tickets earlier calls
//     took, `tickets` a call (each kernel takes exactly that many);
//   - calls on a stream run one after another, so they never use the memory at once;
//   - each `purpose` (a layout of flags) keeps its own memory, so that no kernel reads
//     another's words as flags.
// The stream keeps the largest size asked of it until ppat::release_stream_memory(stream).
// Under stream capture, replays of a graph may run concurrently, so the graph gets its own
// allocation, cleared by a memset node on every replay.
class stream_scratch {
 public:
  stream_scratch(std::size_t bytes, scratch_purpose purpose, unsigned tickets, cudaStream_t stream,
                 const char* function)
      : tickets_(tickets) {
    const cudaStreamCaptureStatus capture = capture_status(stream, function);
    if (capture == cudaStreamCaptureStatusActive) {
      captured_.emplace(bytes, stream, function);
      data_ = captured_->data();
      check_cuda(cudaMemsetAsync(data_, 0, bytes, stream), function, "cudaMemsetAsync");
      return;
    }
    const int device = device_of(stream, capture, function);
    kept_ = &kept_for(device, stream, purpose);
    // Held until the call has queued its kernel: no other host thread may use or replace
    // the memory in between.
    lock_ = std::unique_lock<std::mutex>(kept_->in_use);
    // Epochs take 30 bits of a flag word; before they run out, the memory starts over.
    constexpr unsigned last_epoch = (1u << 30) - 1;
    if (kept_->bytes < bytes || kept_->epoch == last_epoch) {
      if (kept_->bytes < bytes) {
        void* data = nullptr;
        const std::size_t grown = std::max<std::size_t>(bytes, 2 * kept_->bytes);
        check_cuda(cudaMallocFromPoolAsync(&data, grown, temporary_memory_pool(device), stream),
                   function, "cudaMallocFromPoolAsync");
        if (kept_->data != nullptr) {
          check_cuda(cudaFreeAsync(kept_->data, stream), function, "cudaFreeAsync");
        }
        kept_->data = static_cast<unsigned char*>(data);
        kept_->bytes = grown;
      }
      check_cuda(cudaMemsetAsync(kept_->data, 0, kept_->bytes, stream), function,
                 "cudaMemsetAsync");
      kept_->epoch = 0;
      kept_->tickets = 0;
    }
    data_ = kept_->data;
    epoch_ = ++kept_->epoch;
    ticket_base_ = kept_->tickets;
  }

  unsigned char* data() const { return data_; }
  unsigned epoch() const { return epoch_; }
  unsigned ticket_base() const { return ticket_base_; }

  // Once the kernel is queued: counts its tickets as taken, and frees a graph's allocation
  // (a graph node). Without it (a failed launch) the kept memory stays as it was.
  void release() {
    if (captured_) captured_->release();
    if (kept_ != nullptr) kept_->tickets += tickets_;
    if (lock_.owns_lock()) lock_.unlock();
  }

  struct kept_memory {
    std::mutex in_use;
    unsigned char* data = nullptr;
    std::size_t bytes = 0;
    unsigned epoch = 0;    // the last call's
    unsigned tickets = 0;  // taken so far, modulo 2^32
  };
  struct kept_key {
    int device;
    cudaStream_t stream;
    scratch_purpose purpose;
    bool operator<(const kept_key& other) const {
      return std::tie(device, stream, purpose) <
             std::tie(other.device, other.stream, other.purpose);
    }
  };

  static std::mutex& registry_mutex() {
    static std::mutex mutex;
    return mutex;
  }
  // Node-based: an entry stays put while a call holds it.
  static std::map<kept_key, std::unique_ptr<kept_memory>>& registry() {
    static std::map<kept_key, std::unique_ptr<kept_memory>> kept;
    return kept;
  }

 private:
  static kept_memory& kept_for(int device, cudaStream_t stream, scratch_purpose purpose) {
    const std::lock_guard<std::mutex> lock(registry_mutex());
    auto& entry = registry()[{device, stream, purpose}];
    if (!entry) entry = std::make_unique<kept_memory>();
    return *entry;
  }

  unsigned tickets_;
  std::optional<temporary_buffer<unsigned char>> captured_;
  kept_memory* kept_ = nullptr;
  std::unique_lock<std::mutex> lock_;
  unsigned char* data_ = nullptr;
  unsigned epoch_ = 1;
  unsigned ticket_base_ = 0;
};

// Called by one thread of each block of a kernel that takes one ticket a block from
// `counter` (in a stream_scratch, counting from `ticket_base`), once the block is done with
// what the others read: whether it was the last of `blocks`. The release orders the block's
// reads and writes before its ticket, and the last block's acquire sees them all done.
__device__ inline bool last_to_finish(unsigned* counter, unsigned ticket_base, unsigned blocks) {
  return device_atomic<unsigned>(*counter).fetch_add(1, cuda::memory_order_acq_rel) - ticket_base ==
         blocks - 1;
}

}  // namespace detail

// Frees the memory ppat keeps with `stream` (see detail::stream_scratch), in stream order.
// Call it before destroying a stream that ran ppat scans or reductions, and not while
// another host thread is calling ppat on the same stream.
inline void release_stream_memory(cudaStream_t stream = 0) {
  constexpr const char* function = "ppat::release_stream_memory";
  using scratch = detail::stream_scratch;
  const int device = detail::device_of(stream, function);
  const std::lock_guard<std::mutex> lock(scratch::registry_mutex());
  auto& registry = scratch::registry();
  for (auto kept = registry.begin(); kept != registry.end();) {
    if (kept->first.device != device || kept->first.stream != stream) {
      ++kept;
      continue;
    }
    {
      const std::lock_guard<std::mutex> in_use(kept->second->in_use);
      if (kept->second->data != nullptr) {
        detail::check_cuda(cudaFreeAsync(kept->second->data, stream), function, "cudaFreeAsync");
      }
    }
    kept = registry.erase(kept);
  }
}

}  // namespace ppat
