// Temporary device memory: stream-ordered, from a pool that keeps its memory between calls.
//
// A plain cudaMallocAsync on the device's default pool (release threshold 0) hands memory
// back to the driver at every synchronization, so each ppat call would pay for a fresh
// mapping: more than a whole small scan, and for a large sort's temporaries a quarter of the
// sort (docs/patterns.md, "Per-call overhead" and "Radix sort"; `ppat bench --pattern
// overhead`). ppat owns one pool per device whose release threshold keeps up to
// `retained_bytes(device)`, an eighth of the device's memory, mapped: a repeated call pays
// well under a microsecond for it, and the temporaries of sorts up to 2^31 u32/u32 pairs
// (16 GiB) stay mapped on an H200, while seven eighths of the device stay free of ppat for
// the caller. The
// pool is yours to tune: ppat::temporary_memory_pool() returns it (set
// cudaMemPoolAttrReleaseThreshold, or cudaMemPoolTrimTo it).
//
// Under stream capture the allocation and the free become graph nodes, so every ppat call
// is capturable.
//
// Single-pass kernels also need flags and counters that start unset. A stream_scratch lends
// a call such memory from a pool of blocks that keep it between calls, tagged with a
// per-call epoch, so a call needs neither an allocation nor a memset (see stream_scratch).
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "device.cuh"
#include "error.cuh"

namespace ppat {

// The memory ppat's pool on `device` keeps mapped between calls: an eighth of the device's.
inline std::uint64_t retained_bytes(int device) {
  cudaDeviceProp props{};
  detail::check_cuda(cudaGetDeviceProperties(&props, device), "ppat::retained_bytes",
                     "cudaGetDeviceProperties");
  return std::uint64_t(props.totalGlobalMem) / 8;
}

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
  std::uint64_t threshold = retained_bytes(device);
  cudaMemPool_t pool = nullptr;
  detail::check_cuda(cudaMemPoolCreate(&pool, &props), function, "cudaMemPoolCreate");
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

// `count` elements of T, allocated on the call's stream and freed on it by release(). The
// destructor frees too, for the paths where an exception leaves before release().
template <class T>
class temporary_buffer {
 public:
  temporary_buffer(std::size_t count, const call_context& call) : call_(call) {
    if (count == 0) return;
    void* data = nullptr;
    if (call.captured()) {
      // The graph owns a captured allocation, whatever pool is named: no pool is needed, and
      // none is created while capturing (where creating one may be an illegal call).
      call.check(cudaMallocAsync(&data, count * sizeof(T), call.stream()), "cudaMallocAsync");
    } else {
      call.check(cudaMallocFromPoolAsync(&data, count * sizeof(T),
                                         temporary_memory_pool(call.device()), call.stream()),
                 "cudaMallocFromPoolAsync");
    }
    data_ = static_cast<T*>(data);
  }
  temporary_buffer(const temporary_buffer&) = delete;
  temporary_buffer& operator=(const temporary_buffer&) = delete;
  ~temporary_buffer() {
    // Only reached with memory still held when another error is already propagating;
    // that error is the one to report, so a failure here must not linger as pending.
    if (data_ != nullptr && cudaFreeAsync(data_, call_.stream()) != cudaSuccess)
      (void)cudaGetLastError();
  }

  T* data() const { return data_; }

  void release() {
    T* data = data_;
    data_ = nullptr;
    if (data != nullptr) call_.check(cudaFreeAsync(data, call_.stream()), "cudaFreeAsync");
  }

 private:
  T* data_ = nullptr;
  const call_context& call_;
};

// Two temporary arrays from one allocation: `first_count` of A, then `second_count` of B.
// Each allocation and free costs host time (about a microsecond a pair on an H100), which
// small calls feel.
template <class A, class B>
class temporary_pair {
 public:
  temporary_pair(std::size_t first_count, std::size_t second_count, const call_context& call)
      : second_offset_((first_count * sizeof(A) + alignof(B) - 1) / alignof(B) * alignof(B)),
        bytes_(second_offset_ + second_count * sizeof(B), call) {}

  A* first() const { return reinterpret_cast<A*>(bytes_.data()); }
  B* second() const { return reinterpret_cast<B*>(bytes_.data() + second_offset_); }
  void release() { bytes_.release(); }

 private:
  std::size_t second_offset_;
  temporary_buffer<unsigned char> bytes_;
};

// `count` items of device memory from `in` to `out` on the call's stream. Every path that
// copies a buffer whole copies through here (a sort's inputs or unsorted keys, a transpose
// or permute that keeps the layout, a merge's last run, the rank's own part of an exchange),
// so that how a large copy is made is decided in one place.
template <class T>
void copy_items(const T* in, T* out, std::size_t count, const call_context& call) {
  call.check(cudaMemcpyAsync(out, in, count * sizeof(T), cudaMemcpyDeviceToDevice, call.stream()),
             "cudaMemcpyAsync");
}

// The layouts of memory lent by stream_scratch: each has blocks of its own, so that no
// kernel reads another's words as flags. They are named by layout, not by the pattern that
// uses them: a new kernel picks the layout it writes.
enum scratch_purpose : int {
  lookback_status_words,   // 4-byte statuses; the values beside them live elsewhere
  lookback_8_byte_words,   // a status and a value of up to 4 bytes
  lookback_16_byte_words,  // a status and a value of up to 12 bytes
  ticket_and_values,       // a ticket counter, then values no kernel reads as flags
  counter_words,           // counters only: every word reads 0 when lent
  // Counters (0 when lent) and epoch-tagged words at places fixed for every call, then
  // values written before they are read.
  counters_epochs_then_values,
};

// Epochs take 30 bits of a flag word; before they run out, a block's memory starts over.
constexpr unsigned last_epoch = (1u << 30) - 1;

struct scratch_block;
class scratch_pool;

// This thread's stream-capture mode is relaxed while it lives.
class relaxed_capture_mode {
 public:
  explicit relaxed_capture_mode(const call_context& call) {
    call.check(cudaThreadExchangeStreamCaptureMode(&previous_),
               "cudaThreadExchangeStreamCaptureMode");
  }
  relaxed_capture_mode(const relaxed_capture_mode&) = delete;
  relaxed_capture_mode& operator=(const relaxed_capture_mode&) = delete;
  ~relaxed_capture_mode() {
    if (cudaThreadExchangeStreamCaptureMode(&previous_) != cudaSuccess) (void)cudaGetLastError();
  }

 private:
  cudaStreamCaptureMode previous_ = cudaStreamCaptureModeRelaxed;
};
scratch_pool& scratch_pool_for(int device, scratch_purpose purpose);

// Device memory for the flags and counters of one single-pass kernel, lent for one call:
//   - its counters read 0 when lent: each kernel resets those it counted up (the block that
//     takes the last ticket puts the counter back to 0);
//   - every call gets a new epoch(), and tags the flags it writes with it: flags of earlier
//     calls carry older epochs and read as unset;
//   - no two kernels that may run at the same time get the same memory. The pool lends a
//     call the block its stream used last (stream order puts the call after that use), or
//     a block whose last use is done (an event recorded after each use says so), or a new
//     one. Streams are told apart by cudaStreamGetId, unique for the life of the process:
//     not by handle, since cudaStreamPerThread is one handle for every thread's stream and
//     the driver hands a destroyed stream's handle to the next stream created.
// So the pool holds as many blocks as calls were ever in flight at once, each as large as
// the largest call it served; ppat::release_stream_memory(stream) frees those a stream used
// last. Under stream capture, replays of a graph may run concurrently, so the graph gets
// its own allocation, cleared by a memset node on every replay.
class stream_scratch {
 public:
  stream_scratch(std::size_t bytes, scratch_purpose purpose, const call_context& call);
  stream_scratch(const stream_scratch&) = delete;
  stream_scratch& operator=(const stream_scratch&) = delete;
  ~stream_scratch();

  unsigned char* data() const { return data_; }
  unsigned epoch() const { return epoch_; }

  // Once the kernel is queued: hands the block back to the pool, recording its use, and
  // frees a graph's allocation (a graph node).
  void release();

 private:
  const call_context& call_;
  std::optional<temporary_buffer<unsigned char>> captured_;
  scratch_pool* pool_ = nullptr;
  scratch_block* block_ = nullptr;
  unsigned long long stream_id_ = 0;
  unsigned char* data_ = nullptr;
  unsigned epoch_ = 1;
};

struct scratch_block {
  unsigned char* data = nullptr;
  std::size_t bytes = 0;
  unsigned epoch = 0;                // the last call's
  bool used = false;                 // by a call on stream `stream_id`, finished at `last_use`
  unsigned long long stream_id = 0;  // cudaStreamGetId
  cudaEvent_t last_use = nullptr;
  bool lent = false;  // to a call between choosing it and queueing its kernel
};

class scratch_pool {
 public:
  // A block no kernel that may still run uses, other than ones queued earlier on the same
  // stream; marked lent until give_back().
  scratch_block& lend(unsigned long long stream_id, const call_context& call) {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (auto& block : blocks_) {
      if (!block->lent && block->used && block->stream_id == stream_id) return lent(*block);
    }
    // Asking an event is illegal while this thread captures another stream, or any thread
    // captures in global mode, and would invalidate that capture; in relaxed mode it is not.
    const relaxed_capture_mode relaxed(call);
    for (auto& block : blocks_) {
      if (block->lent) continue;
      const cudaError_t done = cudaEventQuery(block->last_use);
      if (done == cudaSuccess) return lent(*block);
      if (done != cudaErrorNotReady) call.check(done, "cudaEventQuery");
    }
    auto block = std::make_unique<scratch_block>();
    call.check(cudaEventCreateWithFlags(&block->last_use, cudaEventDisableTiming),
               "cudaEventCreateWithFlags");
    blocks_.push_back(std::move(block));
    return lent(*blocks_.back());
  }

  // Records the block's use by a call on `stream_id`, after all it queued. Where even that
  // fails, the block's use cannot be known and it is never lent again.
  cudaError_t give_back(scratch_block& block, unsigned long long stream_id, cudaStream_t stream) {
    const cudaError_t recorded = cudaEventRecord(block.last_use, stream);
    const std::lock_guard<std::mutex> lock(mutex_);
    if (recorded == cudaSuccess) {
      block.used = true;
      block.stream_id = stream_id;
      block.lent = false;
    }
    return recorded;
  }

  // Frees, in `stream`'s order, the blocks it used last and no call holds.
  void release(unsigned long long stream_id, const call_context& call) {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (auto block = blocks_.begin(); block != blocks_.end();) {
      scratch_block& b = **block;
      if (b.lent || !b.used || b.stream_id != stream_id) {
        ++block;
        continue;
      }
      if (b.data != nullptr) call.check(cudaFreeAsync(b.data, call.stream()), "cudaFreeAsync");
      call.check(cudaEventDestroy(b.last_use), "cudaEventDestroy");
      block = blocks_.erase(block);
    }
  }

 private:
  static scratch_block& lent(scratch_block& block) {
    block.lent = true;
    return block;
  }

  std::mutex mutex_;
  std::vector<std::unique_ptr<scratch_block>> blocks_;  // node-based: a lent block stays put
};

inline scratch_pool& scratch_pool_for(int device, scratch_purpose purpose) {
  static std::mutex mutex;
  static std::map<std::pair<int, scratch_purpose>, std::unique_ptr<scratch_pool>> pools;
  const std::lock_guard<std::mutex> lock(mutex);
  auto& pool = pools[{device, purpose}];
  if (!pool) pool = std::make_unique<scratch_pool>();
  return *pool;
}

inline stream_scratch::stream_scratch(std::size_t bytes, scratch_purpose purpose,
                                      const call_context& call)
    : call_(call) {
  if (call.captured()) {
    captured_.emplace(bytes, call);
    data_ = captured_->data();
    call.check(cudaMemsetAsync(data_, 0, bytes, call.stream()), "cudaMemsetAsync");
    return;
  }
  call.check(cudaStreamGetId(call.stream(), &stream_id_), "cudaStreamGetId");
  pool_ = &scratch_pool_for(call.device(), purpose);
  scratch_block& block = pool_->lend(stream_id_, call);
  try {
    if (block.bytes < bytes || block.epoch == last_epoch) {
      if (block.bytes < bytes) {
        void* data = nullptr;
        const std::size_t grown = std::max<std::size_t>(bytes, 2 * block.bytes);
        call.check(cudaMallocFromPoolAsync(&data, grown, temporary_memory_pool(call.device()),
                                           call.stream()),
                   "cudaMallocFromPoolAsync");
        if (block.data != nullptr)
          call.check(cudaFreeAsync(block.data, call.stream()), "cudaFreeAsync");
        block.data = static_cast<unsigned char*>(data);
        block.bytes = grown;
      }
      call.check(cudaMemsetAsync(block.data, 0, block.bytes, call.stream()), "cudaMemsetAsync");
      block.epoch = 0;
    }
  } catch (...) {
    if (pool_->give_back(block, stream_id_, call.stream()) != cudaSuccess) (void)cudaGetLastError();
    throw;
  }
  block_ = &block;
  data_ = block.data;
  epoch_ = ++block.epoch;
}

inline void stream_scratch::release() {
  if (captured_) captured_->release();
  if (block_ != nullptr) {
    scratch_block& block = *block_;
    block_ = nullptr;
    call_.check(pool_->give_back(block, stream_id_, call_.stream()), "cudaEventRecord");
  }
}

inline stream_scratch::~stream_scratch() {
  // Only reached with the block still lent when another error is already propagating: the
  // block is handed back all the same (what was queued on it counts as its use).
  if (block_ != nullptr && pool_->give_back(*block_, stream_id_, call_.stream()) != cudaSuccess)
    (void)cudaGetLastError();
}

}  // namespace detail

// Frees the memory ppat keeps for the single-pass kernels of calls on `stream`, in stream
// order. Optional: the memory is lent to calls on any stream once its last use is done, so
// destroying a stream without calling this loses nothing; calling it returns the memory to
// the pool (ppat::temporary_memory_pool) at once.
inline void release_stream_memory(cudaStream_t stream = 0) {
  const detail::call_context call(stream, "ppat::release_stream_memory");
  unsigned long long stream_id = 0;
  call.check(cudaStreamGetId(stream, &stream_id), "cudaStreamGetId");
  for (auto purpose : {detail::lookback_status_words, detail::lookback_8_byte_words,
                       detail::lookback_16_byte_words, detail::ticket_and_values,
                       detail::counter_words, detail::counters_epochs_then_values}) {
    detail::scratch_pool_for(call.device(), purpose).release(stream_id, call);
  }
}

}  // namespace ppat
