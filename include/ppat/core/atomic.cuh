// Atomic additions. atomic_add: atomicAdd for every counter type ppat accepts (CUDA
// overloads atomicAdd for int, unsigned, unsigned long long, float and double only;
// std::uint64_t is `unsigned long` on Linux and std::int64_t `long`, which add identically
// as unsigned long long bits). shared_add and shared_fetch_add: additions to shared memory
// at a 32-bit shared-window address, which a kernel computes once per thread and offsets,
// where a generic pointer would be converted again at every addition.
//
// Also what blocks use to hand each other values: device-scope atomic references, reads
// that bypass L1, the tickets that give tiles out in the order blocks start, the one that
// tells a kernel's last block to finish it is the last, and a clock for waits that give up.
#pragma once

#include <cuda/atomic>

#include <cstring>
#include <type_traits>

namespace ppat::detail {

template <class Counter>
__device__ void atomic_add(Counter* address, Counter value) {
  if constexpr (std::is_integral_v<Counter> && sizeof(Counter) == 8) {
    atomicAdd(reinterpret_cast<unsigned long long*>(address),
              static_cast<unsigned long long>(value));
  } else {
    static_assert(std::is_same_v<Counter, int> || std::is_same_v<Counter, unsigned> ||
                      std::is_same_v<Counter, float> || std::is_same_v<Counter, double>,
                  "counters are 32-bit or 64-bit integers, float or double");
    atomicAdd(address, value);
  }
}

template <class Counter>
__device__ void shared_add(unsigned address, Counter value) {
  if constexpr (std::is_same_v<Counter, unsigned>) {
    asm volatile("red.shared.add.u32 [%0], %1;" ::"r"(address), "r"(value) : "memory");
  } else if constexpr (std::is_same_v<Counter, float>) {
    asm volatile("red.shared.add.f32 [%0], %1;" ::"r"(address), "f"(value) : "memory");
  } else {
    static_assert(std::is_same_v<Counter, double>, "shared counters are unsigned, float or double");
    asm volatile("red.shared.add.f64 [%0], %1;" ::"r"(address), "d"(value) : "memory");
  }
}

// The value before the addition.
__device__ inline unsigned shared_fetch_add(unsigned address, unsigned value) {
  unsigned old;
  asm volatile("atom.shared.add.u32 %0, [%1], %2;"
               : "=r"(old)
               : "r"(address), "r"(value)
               : "memory");
  return old;
}

template <class Word>
using device_atomic = cuda::atomic_ref<Word, cuda::thread_scope_device>;

// A value another block published: read from L2, never from a line this SM's L1 may hold
// from before the value was written.
template <class T>
__device__ T load_published(const T* from) {
  T value;
  if constexpr (sizeof(T) % 4 == 0 && alignof(T) >= 4) {
    unsigned words[sizeof(T) / 4];
    for (unsigned w = 0; w < sizeof(T) / 4; ++w) {
      words[w] = __ldcg(reinterpret_cast<const unsigned*>(from) + w);
    }
    std::memcpy(&value, words, sizeof(T));
  } else {
    unsigned char bytes[sizeof(T)];
    for (unsigned b = 0; b < sizeof(T); ++b) {
      bytes[b] = __ldcg(reinterpret_cast<const unsigned char*>(from) + b);
    }
    std::memcpy(&value, bytes, sizeof(T));
  }
  return value;
}

// Called by one thread of each block of a kernel of `tickets` blocks: the block's ticket, in
// the order the blocks started (not blockIdx: a block that waits on lower tickets then waits
// only on blocks already running). The block that takes the last one puts the counter back
// to 0 for the next launch.
__device__ inline unsigned take_ticket(unsigned* counter, unsigned tickets) {
  const unsigned ticket = atomicAdd(counter, 1u);
  if (ticket == tickets - 1) atomicExch(counter, 0u);
  return ticket;
}

// Called by one thread of each block of a kernel of `blocks` blocks, once the block is done
// with what the others read: whether it was the last to finish. The last one puts the
// counter back to 0 for the next call. The release orders the block's reads and writes
// before its ticket, and the last block's acquire sees them all done.
__device__ inline bool last_to_finish(unsigned* counter, unsigned blocks) {
  device_atomic<unsigned> tickets(*counter);
  if (tickets.fetch_add(1, cuda::memory_order_acq_rel) != blocks - 1) return false;
  tickets.store(0, cuda::memory_order_relaxed);
  return true;
}

// The GPU's global timer in nanoseconds, for a wait that gives up.
__device__ inline unsigned long long global_time_ns() {
  unsigned long long now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

}  // namespace ppat::detail
