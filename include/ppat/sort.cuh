// Radix sort: stable, of keys or key-value pairs, ascending or descending, on any range of
// the key's bits, into outputs that are either the inputs themselves (sorted in place) or
// disjoint from them.
//
//   ppat::sort_keys(in, out, n, order, begin_bit, end_bit, stream)
//   ppat::sort_pairs(keys_in, keys_out, values_in, values_out, n, order, begin_bit, end_bit,
//                    stream)
//
// A key is sorted by its order-preserving unsigned image (sort/radix_key.cuh: NaNs after
// +inf, -0.0 before +0.0), least significant digit first, up to 8 bits a pass.
//
// Onesweep (Adinets & Merrill 2022). One kernel reads every key once and counts the digits
// of all passes at once; its last block turns the counts into where each digit's keys start
// in the output. Then one kernel a pass: a tile ranks its keys by digit (warps find equal
// digits through lane masks in shared memory and count them in warp-private counters),
// publishes its 256 digit counts at once, stages keys and values in shared memory in digit
// order, learns from the tiles before it, one thread a digit walking back through their
// published counts (a look-back with a chain per digit), where each digit's keys go, and
// writes them there.
// Keys move once a pass: read once, written once.
//
// A published count takes 30 bits of a 32-bit word beside its 2-bit status, so a pass
// covers at most 2^29 keys a launch: larger inputs run in portions, each portion's digit
// starts carried to the next by its last tile.
//
// Integer keys of 8 or 16 bits without values, sorted by all their bits, and too many for
// one launch, are counted instead: a histogram, a scan and a fill of the runs.
//
// Inputs of no more tiles than the GPU holds at once (about 2^20 4-byte keys on an H200)
// take one cooperative launch instead: the same tiles, every pass, with the blocks waiting
// for one another between passes. An input of one tile or less is sorted by one block,
// every pass in shared memory.
#pragma once

#include <cooperative_groups.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/arguments.cuh"
#include "core/atomic.cuh"
#include "core/block.cuh"
#include "core/device.cuh"
#include "core/error.cuh"
#include "core/launch.cuh"
#include "core/memory.cuh"
#include "core/shared_storage.cuh"
#include "core/warp.cuh"
#include "histogram.cuh"
#include "scan.cuh"
#include "sort/radix_key.cuh"

namespace ppat {

enum class order { ascending, descending };

namespace detail {
template <class K, class V>
void radix_sort(const K* keys_in, K* keys_out, const V* values_in, V* values_out, std::size_t n,
                order ord, int begin_bit, int end_bit, cudaStream_t stream, const char* function);
}  // namespace detail

template <class K>
void sort_keys(const K* in, K* out, std::size_t n, order ord = order::ascending, int begin_bit = 0,
               int end_bit = 8 * sizeof(K), cudaStream_t stream = 0) {
  detail::radix_sort<K, detail::no_values>(in, out, nullptr, nullptr, n, ord, begin_bit, end_bit,
                                           stream, "ppat::sort_keys");
}

template <class K, class V>
void sort_pairs(const K* keys_in, K* keys_out, const V* values_in, V* values_out, std::size_t n,
                order ord = order::ascending, int begin_bit = 0, int end_bit = 8 * sizeof(K),
                cudaStream_t stream = 0) {
  static_assert(std::is_trivially_copyable_v<V> && sizeof(V) <= 16,
                "ppat::sort_pairs: values are trivially copyable, of 1 to 16 bytes");
  detail::radix_sort(keys_in, keys_out, values_in, values_out, n, ord, begin_bit, end_bit, stream,
                     "ppat::sort_pairs");
}

namespace detail {

// ---- Arguments --------------------------------------------------------------------------

// Checks shared with the textbook sorts: everything that can be checked before a CUDA call.
// `in_place` says whether an output may be its input itself (the textbook sorts' may not).
template <class K, class V>
void require_sort_arguments(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                            std::size_t n, order ord, int begin_bit, int end_bit,
                            const char* function, bool in_place) {
  static_assert(radix_key<K>::supported,
                "ppat sorts keys that are integers (not bool), float, double, __half or "
                "__nv_bfloat16");
  constexpr bool has_values = !std::is_same_v<V, no_values>;
  const char* const in_name = has_values ? "keys_in" : "in";
  const char* const out_name = has_values ? "keys_out" : "out";
  require(begin_bit >= 0 && begin_bit <= int(8 * sizeof(K)), function, "begin_bit",
          "must be in [0, 8 * sizeof(K)]");
  require(end_bit >= begin_bit && end_bit <= int(8 * sizeof(K)), function, "end_bit",
          "must be in [begin_bit, 8 * sizeof(K)]");
  require(ord == order::ascending || ord == order::descending, function, "ord",
          "must be order::ascending or order::descending");
  require_buffer(keys_in, n, function, in_name);
  require_buffer(keys_out, n, function, out_name);
  if (!in_place || keys_in != keys_out)
    require_disjoint(keys_in, n, keys_out, n, function, in_name, out_name);
  if constexpr (has_values) {
    require_buffer(values_in, n, function, "values_in");
    require_buffer(values_out, n, function, "values_out");
    if (!in_place || values_in != values_out)
      require_disjoint(values_in, n, values_out, n, function, "values_in", "values_out");
    require_disjoint(keys_in, n, values_out, n, function, "keys_in", "values_out");
    require_disjoint(values_in, n, keys_out, n, function, "values_in", "keys_out");
    require_disjoint(keys_out, n, values_out, n, function, "keys_out", "values_out");
  }
}

template <class K, class V>
void require_sort_buffers_readable(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                                   std::size_t n, const call_context& call) {
  constexpr bool has_values = !std::is_same_v<V, no_values>;
  require_device_readable(keys_in, n, call, has_values ? "keys_in" : "in");
  require_device_readable(keys_out, n, call, has_values ? "keys_out" : "out");
  if constexpr (has_values) {
    require_device_readable(values_in, n, call, "values_in");
    require_device_readable(values_out, n, call, "values_out");
  }
}

// An empty bit range: the output is the input.
template <class K, class V>
void copy_unsorted(const K* keys_in, K* keys_out, const V* values_in, V* values_out, std::size_t n,
                   const call_context& call) {
  if (keys_in != keys_out) {
    call.check(
        cudaMemcpyAsync(keys_out, keys_in, n * sizeof(K), cudaMemcpyDeviceToDevice, call.stream()),
        "cudaMemcpyAsync");
  }
  if constexpr (!std::is_same_v<V, no_values>) {
    if (values_in == values_out) return;
    call.check(cudaMemcpyAsync(values_out, values_in, n * sizeof(V), cudaMemcpyDeviceToDevice,
                               call.stream()),
               "cudaMemcpyAsync");
  }
}

// ---- The plan ------------------------------------------------------------------------------

constexpr int radix_bits = 8;
constexpr int radix = 1 << radix_bits;

// The bits [begin_bit, end_bit) in passes of equal width, at most radix_bits each.
struct radix_passes {
  int begin_bit;
  int count;
  int width;

  static radix_passes of(int begin_bit, int end_bit) {
    const int bits = end_bit - begin_bit;
    const int count = (bits + radix_bits - 1) / radix_bits;
    return {begin_bit, count, count == 0 ? 0 : (bits + count - 1) / count};
  }
  template <class K>
  __host__ __device__ radix_digit<K> digit(int pass, order ord, int end_bit) const {
    const int shift = begin_bit + pass * width;
    const int bits = end_bit - shift < width ? end_bit - shift : width;
    using image_type = typename radix_key<K>::image_type;
    return {ord == order::descending ? image_type(~image_type(0)) : image_type(0), shift,
            (1u << bits) - 1u};
  }
};

// Where each of `passes` passes reads and writes: pass 0 reads the inputs and never writes
// them, and the passes alternate between the outputs and buffers of their own so that the
// last pass writes the outputs. Sorted in place (an output is its input), an even count of
// passes writes the buffers first anyway; an odd count copies the inputs to the buffers
// first and reads them there.
template <class K, class V>
class pass_buffers {
 public:
  pass_buffers(const K* keys_in, K* keys_out, const V* values_in, V* values_out, std::size_t n,
               int passes, const call_context& call)
      : keys_in_(keys_in),
        keys_out_(keys_out),
        values_in_(values_in),
        values_out_(values_out),
        passes_(passes),
        copy_inputs_first_(passes % 2 == 1 &&
                           (keys_in == keys_out || (has_values && values_in == values_out))),
        keys_between_(passes > 1 || copy_inputs_first_ ? n : 0, call),
        values_between_(has_values && (passes > 1 || copy_inputs_first_) ? n : 0, call) {
    if (!copy_inputs_first_) return;
    call.check(cudaMemcpyAsync(keys_between_.data(), keys_in, n * sizeof(K),
                               cudaMemcpyDeviceToDevice, call.stream()),
               "cudaMemcpyAsync");
    keys_in_ = keys_between_.data();
    if constexpr (has_values) {
      call.check(cudaMemcpyAsync(values_between_.data(), values_in, n * sizeof(V),
                                 cudaMemcpyDeviceToDevice, call.stream()),
                 "cudaMemcpyAsync");
      values_in_ = reinterpret_cast<const V*>(values_between_.data());
    }
  }

  const K* keys_from(int pass) const { return pass == 0 ? keys_in_ : keys_to(pass - 1); }
  K* keys_to(int pass) const { return to_outputs(pass) ? keys_out_ : keys_between_.data(); }
  const V* values_from(int pass) const { return pass == 0 ? values_in_ : values_to(pass - 1); }
  V* values_to(int pass) const {
    if constexpr (has_values) {
      return to_outputs(pass) ? values_out_ : values_between_.data();
    } else {
      return nullptr;
    }
  }
  void release() {
    values_between_.release();
    keys_between_.release();
  }

 private:
  static constexpr bool has_values = !std::is_same_v<V, no_values>;
  bool to_outputs(int pass) const { return (passes_ - 1 - pass) % 2 == 0; }

  const K* keys_in_;
  K* keys_out_;
  const V* values_in_;
  V* values_out_;
  int passes_;
  bool copy_inputs_first_;
  temporary_buffer<K> keys_between_;
  temporary_buffer<value_or_char<V>> values_between_;
};

template <class K, class V>
constexpr int pair_bytes = int(sizeof(K)) +
                           int(sizeof(value_or_char<V>)) * (std::is_same_v<V, no_values> ? 0 : 1);

// A tile: `Tuning`'s threads ranking `items` keys each (a power of two, at most
// `MostItems`), with their values, as many as a thread's bytes hold; the tile is staged in
// shared memory.
template <class K, class V, class Tuning, int MostItems = 16>
struct tile_shape : Tuning {
  static constexpr int items = [] {
    int most = Tuning::groups_per_thread(pair_bytes<K, V>, MostItems);
    int power = 1;
    while (power * 2 <= most)
      power *= 2;
    return power;
  }();
  static constexpr int tile_items = Tuning::threads * items;
};

// Large inputs: 512-thread tiles, two an SM (64 registers). The look-back and the digit-start
// loads are paid per tile, so large tiles pay them for more keys: 4-byte keys 16 a thread
// (u32 keys, 2^28: 5.92 ms against 6.43 ms with 256 threads), larger pairs 128 bytes a
// thread (16 u32/u32 pairs, 8 of 12 or 16 bytes; u32/u32 at 2^28: 8.30 ms, where 256
// threads three an SM took 10.04 and CUB 8.55; u64/u32 at 2^26 5.91 ms against 7.66, CUB
// 5.18). One 512-thread tile an SM with 80 registers took 9.65 ms, 384 threads two an SM
// 8.48.
template <class K, class V>
using onesweep_tuning =
    std::conditional_t<pair_bytes<K, V> <= 4, tuning<512, 64, 2>, tuning<512, 128, 2>>;
template <class K, class V>
using onesweep_shape = tile_shape<K, V, onesweep_tuning<K, V>>;

// Small inputs, sorted in one cooperative launch, two 256-thread tiles an SM: below
// `one_launch_large_tiles_from` items, which gives more blocks (SMs) a tile (u32 keys, 2^16:
// 44.0 us against 49.9 us with 512-thread tiles); the large-input tile above it (2^20: 58.7
// us against 66.0 us).
template <class K, class V>
using one_launch_small_shape = tile_shape<K, V, tuning<256, 128, 2>>;
template <class K, class V>
using one_launch_large_shape =
    tile_shape<K, V,
               std::conditional_t<pair_bytes<K, V> <= 4, tuning<512, 64, 1>, tuning<256, 128, 2>>>;
constexpr std::size_t one_launch_large_tiles_from = std::size_t{1} << 18;

// Digit counting for the large-input passes: 256 threads reading 8 keys each a step, 4
// blocks an SM. Not measured against other shapes: the counting is bound by shared-memory
// atomics (u32 keys, 2^28: 840 us, about an eighth of the sort, under Nsight Compute).
template <class K>
struct digit_count_tuning : tuning<256, 8 * int(sizeof(K)), 4> {
  static constexpr int keys = digit_count_tuning::bytes_per_thread / int(sizeof(K));
};

// Inputs that fit one block, sorted by it alone: up to 1024 keys, four a thread, so that
// each pass's ranking is a chain of four items, not sixteen (u32 keys, 2^10: 12.5 us against
// 22.4 us, CUB 14.8 us); up to 4096, sixteen a thread (512 threads with eight measured no
// faster: 2^12: 19.3 us against 18.0 us); up to 8192, 512 threads with sixteen each, in up to
// 148 KB of shared memory (4097 keys: u32 18.9 us, u32/u32 pairs 20.6 us, u64/u32 35.7 us;
// the cooperative launch took 39, 44 and 59 us, CUB 15.4, 17.8 and 86.9 us).
template <class K, class V>
using one_tile_tiny_shape = tile_shape<K, V, tuning<256, 128, 0>, 4>;
template <class K, class V>
using one_tile_small_shape = tile_shape<K, V, tuning<256, 128, 0>>;
template <class K, class V>
using one_tile_large_shape = tile_shape<K, V, tuning<512, 256, 0>>;

// A published digit count: status in the top 2 bits, the count in the rest. 0: nothing yet.
constexpr unsigned count_aggregate = 1u << 30;
constexpr unsigned count_inclusive = 2u << 30;
constexpr unsigned count_mask = count_aggregate - 1;
// Keys a pass covers in one launch: a multiple of every tile size, below 2^30.
constexpr std::size_t portion_items = std::size_t{1} << 29;
constexpr int lookback_window = 8;

// Memory one sort call needs, zeroed by one memset where marked.
struct onesweep_scratch {
  unsigned long long* counts;  // [pass][digit], zeroed
  unsigned* blocks_done;       // zeroed
  unsigned* tile_counter;      // zeroed; each pass's last tile puts it back to 0
  unsigned long long* starts;  // [pass][2][digit]: where a portion's digits start, ping-pong
  unsigned* published;         // [tile][digit] of a portion, zeroed before every pass
};

template <class K, class V>
struct onesweep_pass {
  const K* keys_in;  // the portion's
  K* keys_out;       // the whole output
  const V* values_in;
  V* values_out;
  std::size_t count;  // keys in the portion
  unsigned tiles;
  radix_digit<K> digit;
  unsigned* tile_counter;
  unsigned* published;
  const unsigned long long* starts;  // the portion's digit starts
  unsigned long long* next_starts;   // the next portion's, or null
};

template <class Tuning, class K>
__global__ void digit_counts_kernel(const K* keys, std::size_t n, radix_passes passes, order ord,
                                    int end_bit, onesweep_scratch scratch);
template <class Shape, class K, class V>
__global__ void onesweep_kernel(onesweep_pass<K, V> pass);
template <class Shape, class K, class V>
struct tile_storage;
template <class Shape, class K, class V>
constexpr std::size_t tile_shared_allowance();
template <class K>
void counting_sort(const K* keys_in, K* keys_out, std::size_t n, order ord,
                   const call_context& call);
template <class Shape, class K, class V>
std::size_t resident_tiles(const call_context& call);
template <class Shape, class K, class V>
void one_launch_sort(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                     std::size_t n, radix_passes passes, order ord, int end_bit,
                     const call_context& call);
template <class Shape, bool FromL2, class K, class V>
__device__ void sort_tile(const onesweep_pass<K, V>& pass, unsigned tile,
                          tile_storage<Shape, K, V>& storage);
template <class Shape, bool FromL2, bool Full, class K, class V>
__device__ void sort_tile_of(const onesweep_pass<K, V>& pass, unsigned tile,
                             tile_storage<Shape, K, V>& storage);
template <class Shape, bool Full, class K, class V>
__device__ __forceinline__ void rank_in_warps(const K (&keys)[Shape::items], unsigned valid,
                                              const radix_digit<K>& digit,
                                              tile_storage<Shape, K, V>& storage,
                                              unsigned (&ranks)[Shape::items]);
template <class Shape, class K, class V>
__device__ __forceinline__ unsigned tile_digit_count(tile_storage<Shape, K, V>& storage,
                                                     unsigned valid, unsigned last_digit);
template <class Shape, class K, class V>
__device__ __forceinline__ unsigned add_tile_starts(tile_storage<Shape, K, V>& storage,
                                                    unsigned tile_count);
template <class Shape, bool Full, class K, class V>
__device__ __forceinline__ void stage_in_digit_order(const K (&keys)[Shape::items], unsigned valid,
                                                     const value_or_char<V> (&values)[Shape::items],
                                                     const unsigned (&ranks)[Shape::items],
                                                     tile_storage<Shape, K, V>& storage);
template <class Shape, class K, class V>
void one_tile_sort(const K* keys_in, K* keys_out, const V* values_in, V* values_out, std::size_t n,
                   radix_passes passes, order ord, int end_bit, const call_context& call);

template <class K, class V>
void radix_sort(const K* keys_in, K* keys_out, const V* values_in, V* values_out, std::size_t n,
                order ord, int begin_bit, int end_bit, cudaStream_t stream, const char* function) {
  require_sort_arguments(keys_in, keys_out, values_in, values_out, n, ord, begin_bit, end_bit,
                         function, true);
  if (n == 0) return;
  const call_context call(stream, function);
  require_sort_buffers_readable(keys_in, keys_out, values_in, values_out, n, call);
  constexpr bool has_values = !std::is_same_v<V, no_values>;
  const radix_passes passes = radix_passes::of(begin_bit, end_bit);
  if (passes.count == 0) {
    copy_unsorted(keys_in, keys_out, values_in, values_out, n, call);
    return;
  }

  using tiny_tile = one_tile_tiny_shape<K, V>;
  using small_tile = one_tile_small_shape<K, V>;
  using large_tile = one_tile_large_shape<K, V>;
  if constexpr (tiny_tile::tile_items < small_tile::tile_items) {
    if (n <= tiny_tile::tile_items) {
      one_tile_sort<tiny_tile>(keys_in, keys_out, values_in, values_out, n, passes, ord, end_bit,
                               call);
      return;
    }
  }
  if (n <= small_tile::tile_items) {
    one_tile_sort<small_tile>(keys_in, keys_out, values_in, values_out, n, passes, ord, end_bit,
                              call);
    return;
  }
  if constexpr (small_tile::tile_items < large_tile::tile_items) {
    if (n <= large_tile::tile_items) {
      one_tile_sort<large_tile>(keys_in, keys_out, values_in, values_out, n, passes, ord, end_bit,
                                call);
      return;
    }
  }
  using small_launch = one_launch_small_shape<K, V>;
  using large_launch = one_launch_large_shape<K, V>;
  if constexpr (!std::is_same_v<small_launch, large_launch>) {
    if (n < one_launch_large_tiles_from &&
        ceil_div(n, small_launch::tile_items) <= resident_tiles<small_launch, K, V>(call)) {
      one_launch_sort<small_launch>(keys_in, keys_out, values_in, values_out, n, passes, ord,
                                    end_bit, call);
      return;
    }
  }
  if (ceil_div(n, large_launch::tile_items) <= resident_tiles<large_launch, K, V>(call)) {
    one_launch_sort<large_launch>(keys_in, keys_out, values_in, values_out, n, passes, ord, end_bit,
                                  call);
    return;
  }
  if constexpr (std::is_same_v<V, no_values> && std::is_integral_v<K> && sizeof(K) <= 2) {
    if (begin_bit == 0 && end_bit == int(8 * sizeof(K))) {
      counting_sort(keys_in, keys_out, n, ord, call);
      return;
    }
  }
  using shape = onesweep_shape<K, V>;
  static_assert(portion_items % shape::tile_items == 0, "portions hold whole tiles");
  const std::size_t portion_tiles = ceil_div(std::min(n, portion_items), shape::tile_items);
  // The zeroed head: counts, blocks_done and tile_counter (16 bytes for the two), then the
  // published counts; the digit starts last.
  const std::size_t counts_bytes = std::size_t(passes.count) * radix * sizeof(unsigned long long);
  const std::size_t published_bytes = portion_tiles * radix * sizeof(unsigned);
  const std::size_t starts_bytes = 2 * counts_bytes;
  temporary_buffer<unsigned char> scratch_memory(counts_bytes + 16 + published_bytes + starts_bytes,
                                                 call);
  unsigned char* const head = scratch_memory.data();
  const onesweep_scratch scratch{
      reinterpret_cast<unsigned long long*>(head), reinterpret_cast<unsigned*>(head + counts_bytes),
      reinterpret_cast<unsigned*>(head + counts_bytes + 4),
      reinterpret_cast<unsigned long long*>(head + counts_bytes + 16 + published_bytes),
      reinterpret_cast<unsigned*>(head + counts_bytes + 16)};
  call.check(cudaMemsetAsync(head, 0, counts_bytes + 16 + published_bytes, call.stream()),
             "cudaMemsetAsync");

  using counting = digit_count_tuning<K>;
  digit_counts_kernel<counting>
      <<<grid_stride_blocks(n, counting::threads * counting::keys, call.limits(),
                            counting::blocks_per_sm),
         counting::threads, 0, call.stream()>>>(keys_in, n, passes, ord, end_bit, scratch);
  check_launch(function, "digit_counts_kernel");

  pass_buffers<K, V> buffers(keys_in, keys_out, values_in, values_out, n, passes.count, call);
  allow_dynamic_shared_bytes(onesweep_kernel<shape, K, V>, tile_shared_allowance<shape, K, V>(),
                             call);
  for (int pass = 0; pass < passes.count; ++pass) {
    unsigned long long* const starts = scratch.starts + std::size_t(pass) * 2 * radix;
    std::size_t portion = 0;
    for (std::size_t first = 0; first < n; first += portion_items, ++portion) {
      if (pass > 0 || portion > 0) {
        call.check(cudaMemsetAsync(scratch.published, 0, published_bytes, call.stream()),
                   "cudaMemsetAsync");
      }
      const std::size_t count = std::min(n - first, portion_items);
      const unsigned tiles = unsigned(ceil_div(count, shape::tile_items));
      const onesweep_pass<K, V> launch{
          buffers.keys_from(pass) + first,
          buffers.keys_to(pass),
          has_values ? buffers.values_from(pass) + first : nullptr,
          buffers.values_to(pass),
          count,
          tiles,
          passes.digit<K>(pass, ord, end_bit),
          scratch.tile_counter,
          scratch.published,
          starts + (portion % 2) * radix,
          first + count < n ? starts + ((portion + 1) % 2) * radix : nullptr};
      onesweep_kernel<shape>
          <<<tiles, shape::threads, sizeof(tile_storage<shape, K, V>), call.stream()>>>(launch);
      check_launch(function, "onesweep_kernel");
    }
  }
  buffers.release();
  scratch_memory.release();
}

// ---- Digit counts --------------------------------------------------------------------------

// Exclusive prefix sums of 256 values, one a thread of the block's first 256 threads.
// Every thread of the block calls it.
template <class T>
__device__ T exclusive_digit_sum(T value) {
  __shared__ T warp_sums[radix / 32];
  const int warp = int(threadIdx.x / 32);
  const T through = warp_inclusive_scan(value, [](T a, T b) { return a + b; });
  if (threadIdx.x < radix && lane_id() == 31) warp_sums[warp] = through;
  __syncthreads();
  T before = 0;
  for (int w = 0; w < warp && w < radix / 32; ++w)
    before += warp_sums[w];
  __syncthreads();
  return before + through - value;
}

// Every pass's digit counts, from one read of the keys. Each block counts in shared memory,
// in 4 copies (by lane) so that equal digits in a warp collide at most 8 ways; the last block
// to finish turns the totals into each digit's first output position, for every pass.
template <class Tuning, class K>
__global__ void __launch_bounds__(Tuning::threads, Tuning::blocks_per_sm)
    digit_counts_kernel(const K* keys, std::size_t n, radix_passes passes, order ord, int end_bit,
                        onesweep_scratch scratch) {
  constexpr int threads = Tuning::threads;
  constexpr int copies = 4;
  constexpr int most_passes = int(sizeof(K));
  constexpr int per_thread = Tuning::keys;
  __shared__ unsigned counts[copies][most_passes][radix];
  __shared__ bool last_block;
  for (int i = int(threadIdx.x); i < copies * most_passes * radix; i += threads)
    (&counts[0][0][0])[i] = 0;
  __syncthreads();

  radix_digit<K> digits[most_passes];
#pragma unroll
  for (int p = 0; p < most_passes; ++p)
    if (p < passes.count) digits[p] = passes.digit<K>(p, ord, end_bit);
  unsigned(&mine)[most_passes][radix] = counts[threadIdx.x % copies];
  const std::size_t chunk = std::size_t(threads) * per_thread;
  for (std::size_t first = std::size_t(blockIdx.x) * chunk; first < n;
       first += std::size_t(gridDim.x) * chunk) {
    K held[per_thread];
#pragma unroll
    for (int j = 0; j < per_thread; ++j) {
      const std::size_t i = first + std::size_t(j) * threads + threadIdx.x;
      if (i < n) held[j] = keys[i];
    }
#pragma unroll
    for (int j = 0; j < per_thread; ++j) {
      if (first + std::size_t(j) * threads + threadIdx.x >= n) continue;
#pragma unroll
      for (int p = 0; p < most_passes; ++p)
        if (p < passes.count) atomicAdd(&mine[p][digits[p](held[j])], 1u);
    }
  }
  __syncthreads();
  for (int i = int(threadIdx.x); i < passes.count * radix; i += threads) {
    unsigned total = 0;
#pragma unroll
    for (int c = 0; c < copies; ++c)
      total += (&counts[c][0][0])[i];
    if (total != 0) atomicAdd(&scratch.counts[i], static_cast<unsigned long long>(total));
  }
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last_block = atomicAdd(scratch.blocks_done, 1u) == gridDim.x - 1;
  __syncthreads();
  if (!last_block) return;
  __threadfence();
  for (int p = 0; p < passes.count; ++p) {
    const unsigned long long total =
        threadIdx.x < radix ? load_published(&scratch.counts[p * radix + threadIdx.x]) : 0;
    const unsigned long long start = exclusive_digit_sum(total);
    if (threadIdx.x < radix) scratch.starts[std::size_t(p) * 2 * radix + threadIdx.x] = start;
  }
}

// ---- One pass ------------------------------------------------------------------------------

// Shared memory of one tile. While the tile ranks its keys, each warp finds the lanes that
// share a digit through masks of lanes, one a digit, in two sets that items alternate
// between; the keys are staged in the same bytes afterwards.
template <class Shape, class K, class V>
struct tile_storage {
  unsigned warp_digit_counts[Shape::warps][radix];
  // Where the staged key (and value) at r of digit d goes: the address of r = 0 were the
  // digit's places to run on down, as an integer (it can lie below the output), so that a
  // place costs one multiply-add.
  unsigned long long digit_keys_to[radix];
  unsigned long long digit_values_to[std::is_same_v<V, no_values> ? 1 : radix];
  struct staging {
    uninitialized_array<K, Shape::tile_items> keys;
    uninitialized_array<value_or_char<V>, std::is_same_v<V, no_values> ? 1 : Shape::tile_items>
        values;
  };
  union {
    unsigned lanes_of_digit[2][Shape::warps][radix];
    staging staged;
  };
};

// The tile's storage, in dynamic shared memory: it can exceed the 48 KB a kernel may declare
// statically.
template <class Shape, class K, class V>
__device__ tile_storage<Shape, K, V>& shared_tile_storage() {
  extern __shared__ __align__(16) unsigned char tile_bytes[];
  return *reinterpret_cast<tile_storage<Shape, K, V>*>(tile_bytes);
}

// What the tile kernels are allowed of dynamic shared memory: the tile's storage, and room
// for the few static bytes they declare besides (under 4 KB), which count toward the 48 KB a
// launch may take without asking.
template <class Shape, class K, class V>
constexpr std::size_t tile_shared_allowance() {
  return sizeof(tile_storage<Shape, K, V>) + 4096;
}

// Zeroes the warps' digit counters and lane masks; a barrier must follow before sort_tile.
template <class Shape, class K, class V>
__device__ void clear_tile_storage(tile_storage<Shape, K, V>& storage) {
  for (int i = int(threadIdx.x); i < Shape::warps * radix; i += Shape::threads)
    (&storage.warp_digit_counts[0][0])[i] = 0;
  for (int i = int(threadIdx.x); i < 2 * Shape::warps * radix; i += Shape::threads)
    (&storage.lanes_of_digit[0][0][0])[i] = 0;
}

template <class Shape, class K, class V>
__global__ void __launch_bounds__(Shape::threads, Shape::blocks_per_sm)
    onesweep_kernel(onesweep_pass<K, V> pass) {
  __shared__ unsigned tile_slot;
  auto& storage = shared_tile_storage<Shape, K, V>();
  if (threadIdx.x == 0) {
    const unsigned tile = atomicAdd(pass.tile_counter, 1u);
    if (tile == pass.tiles - 1) atomicExch(pass.tile_counter, 0u);
    tile_slot = tile;
  }
  clear_tile_storage(storage);  // while thread 0 waits for its tile
  __syncthreads();
  sort_tile<Shape, false>(pass, tile_slot, storage);
}

// One tile of a pass, by the whole block. A tile's keys are warp-striped: warp w holds
// items w x 32 x items + i x 32 + lane, so that the order (warp, i, lane) is input order and
// ranking in it keeps the sort stable. `FromL2`: the keys and values were written by other
// blocks of the same kernel, which this SM's L1 may hold older copies of.
template <class Shape, bool FromL2, class K, class V>
__device__ void sort_tile(const onesweep_pass<K, V>& pass, unsigned tile,
                          tile_storage<Shape, K, V>& storage) {
  // Every tile but the last is full, and sorts without a bound check a key.
  if ((std::size_t(tile) + 1) * Shape::tile_items <= pass.count) {
    sort_tile_of<Shape, FromL2, true>(pass, tile, storage);
  } else {
    sort_tile_of<Shape, FromL2, false>(pass, tile, storage);
  }
}

template <class Shape, bool FromL2, bool Full, class K, class V>
__device__ void sort_tile_of(const onesweep_pass<K, V>& pass, unsigned tile,
                             tile_storage<Shape, K, V>& storage) {
  constexpr int threads = Shape::threads;
  constexpr int items = Shape::items;
  constexpr int tile_items = Shape::tile_items;
  constexpr bool has_values = !std::is_same_v<V, no_values>;
  using value = value_or_char<V>;
  static_assert(threads >= radix, "a thread a digit");
  static_assert(tile_items <= 65536, "a rank and its digit share a register");
  auto& staged_keys = storage.staged.keys;
  auto& staged_values = storage.staged.values;
  const std::size_t tile_first = std::size_t(tile) * tile_items;
  const unsigned valid =
      Full ? unsigned(tile_items) : unsigned(min(pass.count - tile_first, std::size_t(tile_items)));
  const int warp = int(threadIdx.x / 32);
  const int lane = lane_id();
  const unsigned warp_first = unsigned(warp * 32 * items);

  // Keys and values in registers; past the end of the input, padding of the last digit,
  // which ranks after every real key of the tile and is never written.
  K keys[items];
  value values[items];
#pragma unroll
  for (int i = 0; i < items; ++i) {
    const unsigned at = warp_first + unsigned(i * 32 + lane);
    if (Full || at < valid) {
      if constexpr (FromL2) {
        keys[i] = load_published(pass.keys_in + tile_first + at);
        if constexpr (has_values) values[i] = load_published(pass.values_in + tile_first + at);
      } else {
        keys[i] = pass.keys_in[tile_first + at];
        if constexpr (has_values) values[i] = pass.values_in[tile_first + at];
      }
    }
  }
  unsigned ranks[items];
  rank_in_warps<Shape, Full>(keys, valid, pass.digit, storage, ranks);
  __syncthreads();

  // Thread d: the tile's count of digit d, published at once.
  const unsigned d = threadIdx.x;
  const unsigned tile_count = tile_digit_count(storage, valid, pass.digit.mask);
  if (d < radix) {
    atomicExch(&pass.published[std::size_t(tile) * radix + d],
               (tile == 0 ? count_inclusive : count_aggregate) | tile_count);
  }
  const unsigned tile_start = add_tile_starts(storage, tile_count);
  __syncthreads();
  stage_in_digit_order<Shape, Full>(keys, valid, values, ranks, storage);

  // Thread d: how many keys of digit d the tiles before this one hold, from the newest
  // inclusive count back, reading `lookback_window` tiles at a time (one at a time, the walk
  // back through tiles that have published only their own counts held each tile for
  // microseconds); then this tile's inclusive count for the tiles after it.
  if (d < radix) {
    unsigned before = 0;  // a portion holds fewer than 2^30 keys
    if (tile > 0) {
      int newest = int(tile) - 1;
      for (;;) {
        unsigned words[lookback_window];
#pragma unroll
        for (int w = 0; w < lookback_window; ++w) {
          words[w] = newest >= w
                         ? device_atomic<unsigned>(pass.published[unsigned(newest - w) * radix + d])
                               .load(cuda::memory_order_relaxed)
                         : count_inclusive;
        }
        // Up to the newest inclusive count: all published, or the window is read again.
        bool ready = true, inclusive = false;
        unsigned sum = 0;
#pragma unroll
        for (int w = 0; w < lookback_window; ++w) {
          if (inclusive) continue;
          ready = ready && words[w] != 0;
          sum += words[w] & count_mask;
          inclusive = (words[w] & count_inclusive) != 0;
        }
        if (!ready) {
          __nanosleep(32);  // a spinning thread takes issue slots from the tiles still ranking
          continue;
        }
        before += sum;
        if (inclusive) break;
        newest -= lookback_window;
      }
      atomicExch(&pass.published[std::size_t(tile) * radix + d],
                 count_inclusive | (before + tile_count));
    }
    const unsigned long long start = pass.starts[d] + before;
    const unsigned long long first_place = start - tile_start;
    storage.digit_keys_to[d] =
        reinterpret_cast<unsigned long long>(pass.keys_out) + first_place * sizeof(K);
    if constexpr (has_values) {
      storage.digit_values_to[d] =
          reinterpret_cast<unsigned long long>(pass.values_out) + first_place * sizeof(value);
    }
    if (pass.next_starts != nullptr && tile == pass.tiles - 1)
      pass.next_starts[d] = start + tile_count;
  }
  __syncthreads();

  // Consecutive staged keys of one digit go to consecutive places.
#pragma unroll
  for (int k = 0; k < items; ++k) {
    const unsigned r = threadIdx.x + unsigned(k * threads);
    if (Full || r < valid) {
      const K key = staged_keys[int(r)];
      const unsigned digit = pass.digit(key);
      *reinterpret_cast<K*>(storage.digit_keys_to[digit] + r * sizeof(K)) = key;
      if constexpr (has_values) {
        *reinterpret_cast<value*>(storage.digit_values_to[digit] + r * sizeof(value)) =
            staged_values[int(r)];
      }
    }
  }
  __syncthreads();  // before the block's next tile reuses the storage
}

// Each key's rank among the warp's keys of its digit, counted in the warp's own counters,
// and the digit above it (ranks stay below 2^16): one register a key holds both. Items at
// or past `valid` are padding of the last digit, which ranks after every real key; a warp's
// rows of 32 items wholly past it are left out (only the row that `valid` cuts is ranked
// with padding), so that a part-filled tile ranks few more items than it holds.
template <class Shape, bool Full, class K, class V>
__device__ void rank_in_warps(const K (&keys)[Shape::items], unsigned valid,
                              const radix_digit<K>& digit, tile_storage<Shape, K, V>& storage,
                              unsigned (&ranks)[Shape::items]) {
  const int warp = int(threadIdx.x / 32);
  const int lane = lane_id();
  const unsigned warp_first = unsigned(warp * 32 * Shape::items);
  unsigned* const counts = storage.warp_digit_counts[warp];
#pragma unroll
  for (int i = 0; i < Shape::items; ++i) {
    const unsigned row_first = warp_first + unsigned(i * 32);
    if (!Full && row_first >= valid) break;
    const unsigned d = Full || row_first + unsigned(lane) < valid ? digit(keys[i]) : digit.mask;
    // The lanes with this digit: each sets its bit in its digit's mask, reads the mask when
    // all have, and clears it before the set comes round again (two items on). Shared
    // memory atomics take fewer issue slots than eight ballots, which the integer pipe
    // bounds. The lanes read the warp's count of the digit together and the lowest one
    // moves it on: the next item reads it only after the next __syncwarp.
    unsigned* const masks = storage.lanes_of_digit[i % 2][warp];
    atomicOr(&masks[d], 1u << lane);
    __syncwarp();
    const unsigned peers = masks[d];
    const unsigned before = counts[d];
    __syncwarp();
    masks[d] = 0;
    const unsigned below = unsigned(__popc(int(peers & ((1u << lane) - 1u))));
    if (below == 0) counts[d] = before + unsigned(__popc(int(peers)));  // the lowest lane
    ranks[i] = (before + below) | d << 16;
  }
}

// Thread d < radix: the tile's count of digit d, the padding ranked in the row that `valid`
// cuts left out; the warps' counts become their first positions among the tile's keys of
// digit d.
template <class Shape, class K, class V>
__device__ unsigned tile_digit_count(tile_storage<Shape, K, V>& storage, unsigned valid,
                                     unsigned last_digit) {
  const unsigned d = threadIdx.x;
  unsigned tile_count = 0;
  if (d < radix) {
    for (int w = 0; w < Shape::warps; ++w) {
      const unsigned c = storage.warp_digit_counts[w][d];
      storage.warp_digit_counts[w][d] = tile_count;
      tile_count += c;
    }
    if (d == last_digit) tile_count -= (32u - valid % 32u) % 32u;
  }
  return tile_count;
}

// The tile's digit starts (thread d's returned) added to the warps' first positions: each
// warp's first position of each digit in the tile's digit order.
template <class Shape, class K, class V>
__device__ unsigned add_tile_starts(tile_storage<Shape, K, V>& storage, unsigned tile_count) {
  const unsigned d = threadIdx.x;
  const unsigned tile_start = exclusive_digit_sum(d < radix ? tile_count : 0u);
  if (d < radix) {
    for (int w = 0; w < Shape::warps; ++w)
      storage.warp_digit_counts[w][d] += tile_start;
  }
  return tile_start;
}

// Keys (and values) staged in the tile's digit order; rows wholly past `valid` were not
// ranked and are not staged.
template <class Shape, bool Full, class K, class V>
__device__ void stage_in_digit_order(const K (&keys)[Shape::items], unsigned valid,
                                     const value_or_char<V> (&values)[Shape::items],
                                     const unsigned (&ranks)[Shape::items],
                                     tile_storage<Shape, K, V>& storage) {
  const int warp = int(threadIdx.x / 32);
  const unsigned warp_first = unsigned(warp * 32 * Shape::items);
#pragma unroll
  for (int i = 0; i < Shape::items; ++i) {
    if (!Full && warp_first + unsigned(i * 32) >= valid) break;
    const unsigned rank = (ranks[i] & 0xFFFFu) + storage.warp_digit_counts[warp][ranks[i] >> 16];
    storage.staged.keys[int(rank)] = keys[i];
    if constexpr (!std::is_same_v<V, no_values>) storage.staged.values[int(rank)] = values[i];
  }
}

// ---- 8- and 16-bit keys alone: counting -----------------------------------------------------

// Integer keys of 8 or 16 bits without values, sorted by every bit: a key is its image, so
// the output is every key value, in order, repeated as often as it occurs. A histogram of
// the keys (histogram.cuh), an exclusive scan of its counts, and a fill of the runs: one read
// and one write of the keys, and no ranking.
template <class K>
__global__ void fill_runs_kernel(const unsigned long long* starts, K* out, std::size_t n,
                                 bool descending);

// 256 threads writing 128 bytes each: 32 KB of output a block (not measured against others).
using fill_tuning = tuning<256, 128, 0>;
constexpr std::size_t fill_block_bytes = fill_tuning::threads * fill_tuning::bytes_per_thread;

template <class K>
void counting_sort(const K* keys_in, K* keys_out, std::size_t n, order ord,
                   const call_context& call) {
  constexpr int bins = 1 << (8 * sizeof(K));
  constexpr int lowest = std::is_signed_v<K> ? -bins / 2 : 0;
  temporary_buffer<unsigned long long> counts(2 * bins, call);
  unsigned long long* const hist = counts.data();
  unsigned long long* const starts = hist + bins;
  count_even<1, 1>(keys_in, static_cast<const unweighted*>(nullptr), n,
                   std::array<unsigned long long*, 1>{hist}, std::array<int, 1>{bins},
                   std::array<int, 1>{lowest}, std::array<int, 1>{lowest + bins}, call);
  plain_scan(plain_source<true, unsigned long long, plus, 2, true>{hist, starts, plus{}},
             std::size_t(bins), partial<unsigned long long>{0, true}, call);
  const std::size_t blocks = std::max<std::size_t>(1, ceil_div(n * sizeof(K), fill_block_bytes));
  fill_runs_kernel<<<unsigned(blocks), fill_tuning::threads, 0, call.stream()>>>(
      starts, keys_out, n, ord == order::descending);
  check_launch(call.function(), "fill_runs_kernel");
  counts.release();
}

// Run j of the output holds key value lowest + j ascending (lowest + bins - 1 - j
// descending) at positions [first(j), first(j + 1)). The output is written in aligned
// 16-byte vectors, the keys before the first and after the last one singly by block 0.
// Block b writes vectors [b x block_vectors, ...): it finds the runs at both ends of its
// range once, and each vector's run within them by a binary search, whatever the lengths
// and empty runs between (8 or 16 steps at most; none inside one long run). A vector that
// one run covers is stored as is; one that meets several is assembled key by key.
template <class K>
__global__ void __launch_bounds__(fill_tuning::threads, fill_tuning::blocks_per_sm)
    fill_runs_kernel(const unsigned long long* starts, K* out, std::size_t n, bool descending) {
  constexpr int bins = 1 << (8 * sizeof(K));
  constexpr int lowest = std::is_signed_v<K> ? -bins / 2 : 0;
  constexpr int per_vector = int(16 / sizeof(K));
  constexpr std::size_t block_vectors = fill_block_bytes / 16;
  // Where ascending run v starts (v == bins: n); descending run j is ascending run
  // bins - 1 - j, counted from the end.
  const auto start_of = [&](int v) -> std::size_t { return v < bins ? starts[v] : n; };
  const auto first = [&](int j) -> std::size_t {
    return descending ? n - start_of(bins - j) : start_of(j);
  };
  const auto key_of = [&](int j) { return K(lowest + (descending ? bins - 1 - j : j)); };
  // The run at position p, given runs low <= it <= high: the last one that starts at or
  // before p (an empty run starts where the next one does, and loses to it).
  const auto run_at = [&](std::size_t p, int low, int high) {
    while (low < high) {
      const int middle = (low + high + 1) / 2;
      if (first(middle) <= p) {
        low = middle;
      } else {
        high = middle - 1;
      }
    }
    return low;
  };

  const std::size_t head =
      min(n, (16 - reinterpret_cast<std::uintptr_t>(out) % 16) % 16 / sizeof(K));
  const std::size_t vectors = (n - head) / per_vector;
  const std::size_t tail = head + vectors * per_vector;
  if (blockIdx.x == 0) {
    for (std::size_t p = threadIdx.x; p < head; p += fill_tuning::threads)
      out[p] = key_of(run_at(p, 0, bins - 1));
    for (std::size_t p = tail + threadIdx.x; p < n; p += fill_tuning::threads)
      out[p] = key_of(run_at(p, 0, bins - 1));
  }
  const std::size_t lo = std::size_t(blockIdx.x) * block_vectors;
  const std::size_t hi = min(vectors, lo + block_vectors);
  if (lo >= hi) return;
  __shared__ int end_runs[2];
  if (threadIdx.x == 0) end_runs[0] = run_at(head + lo * per_vector, 0, bins - 1);
  if (threadIdx.x == 32) end_runs[1] = run_at(head + hi * per_vector - 1, 0, bins - 1);
  __syncthreads();
  const int low_run = end_runs[0];
  const int high_run = end_runs[1];
  uint4* const vector_out = reinterpret_cast<uint4*>(out + head);
  for (std::size_t v = lo + threadIdx.x; v < hi; v += fill_tuning::threads) {
    const std::size_t p = head + v * per_vector;
    const int j = run_at(p, low_run, high_run);
    K keys[per_vector];
    if (j == high_run || first(j + 1) >= p + per_vector) {
#pragma unroll
      for (int k = 0; k < per_vector; ++k)
        keys[k] = key_of(j);
    } else {
      for (int k = 0; k < per_vector; ++k)
        keys[k] = key_of(run_at(p + k, j, high_run));
    }
    uint4 word;
    std::memcpy(&word, keys, 16);
    vector_out[v] = word;
  }
}

// ---- Small inputs: every pass in one launch -------------------------------------------------

// Up to as many tiles as the GPU holds at once, one cooperative launch does the whole sort,
// saving the launches and memsets between passes: each block counts its tile's digits for
// every pass, then the blocks sort their tiles pass after pass, with a grid-wide sync
// between passes. The tile code is the onesweep kernel's. (At 2^16 u32 keys it takes 53 us
// against 56 us for the separate launches: each pass is still a chain of latencies within
// a tile, about 12 us.)
template <class K, class V>
struct one_launch_sort_args {
  static constexpr int most_passes = 8;  // 64-bit keys
  const K* keys_from[most_passes];
  K* keys_to[most_passes];
  const V* values_from[most_passes];
  V* values_to[most_passes];
  std::size_t n;
  radix_passes passes;
  order ord;
  int end_bit;
  unsigned* counts;     // [pass][digit], zeroed
  unsigned* published;  // [pass][tile][digit], zeroed
};

template <class Shape, class K, class V>
__global__ void one_launch_sort_kernel(one_launch_sort_args<K, V> sort);

// Blocks of the one-launch kernel that fit on the GPU at once, queried once per device.
template <class Shape, class K, class V>
std::size_t resident_tiles(const call_context& call) {
  constexpr int most_devices = 64;
  static std::atomic<int> per_sm[most_devices] = {};
  if (call.device() >= most_devices) return 0;
  int blocks = per_sm[call.device()].load(std::memory_order_relaxed);
  if (blocks == 0) {
    allow_dynamic_shared_bytes(one_launch_sort_kernel<Shape, K, V>,
                               tile_shared_allowance<Shape, K, V>(), call);
    call.check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                   &blocks, one_launch_sort_kernel<Shape, K, V>, Shape::threads,
                   sizeof(tile_storage<Shape, K, V>)),
               "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
    per_sm[call.device()].store(blocks, std::memory_order_relaxed);
  }
  return std::size_t(blocks) * std::size_t(call.limits().sm_count);
}

template <class Shape, class K, class V>
void one_launch_sort(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                     std::size_t n, radix_passes passes, order ord, int end_bit,
                     const call_context& call) {
  const unsigned tiles = unsigned(ceil_div(n, Shape::tile_items));
  const std::size_t counts_bytes = std::size_t(passes.count) * radix * sizeof(unsigned);
  const std::size_t scratch_bytes =
      counts_bytes + std::size_t(passes.count) * tiles * radix * sizeof(unsigned);
  temporary_buffer<unsigned char> scratch(scratch_bytes, call);
  call.check(cudaMemsetAsync(scratch.data(), 0, scratch_bytes, call.stream()), "cudaMemsetAsync");
  pass_buffers<K, V> buffers(keys_in, keys_out, values_in, values_out, n, passes.count, call);
  one_launch_sort_args<K, V> sort{};
  for (int pass = 0; pass < std::min(passes.count, sort.most_passes); ++pass) {
    sort.keys_from[pass] = buffers.keys_from(pass);
    sort.keys_to[pass] = buffers.keys_to(pass);
    sort.values_from[pass] = buffers.values_from(pass);
    sort.values_to[pass] = buffers.values_to(pass);
  }
  sort.n = n;
  sort.passes = passes;
  sort.ord = ord;
  sort.end_bit = end_bit;
  sort.counts = reinterpret_cast<unsigned*>(scratch.data());
  sort.published = reinterpret_cast<unsigned*>(scratch.data() + counts_bytes);
  void* arguments[] = {&sort};
  call.check(cudaLaunchCooperativeKernel(
                 reinterpret_cast<const void*>(&one_launch_sort_kernel<Shape, K, V>), dim3(tiles),
                 dim3(Shape::threads), arguments, sizeof(tile_storage<Shape, K, V>), call.stream()),
             "cudaLaunchCooperativeKernel");
  buffers.release();
  scratch.release();
}

template <class Shape, class K, class V>
__global__ void __launch_bounds__(Shape::threads, Shape::blocks_per_sm)
    one_launch_sort_kernel(one_launch_sort_args<K, V> sort) {
  constexpr int most_passes = one_launch_sort_args<K, V>::most_passes;
  auto& storage = shared_tile_storage<Shape, K, V>();
  __shared__ unsigned long long digit_starts[radix];
  // Until the first tile is ranked, the warps' digit counters hold the tile's counts.
  static_assert(Shape::warps >= most_passes, "every pass's counts fit the warps' counters");
  auto& tile_counts = reinterpret_cast<unsigned(&)[most_passes][radix]>(storage.warp_digit_counts);
  const unsigned tile = blockIdx.x;
  const radix_passes passes = sort.passes;

  // The tile's digits, every pass's, added to the totals.
  for (int i = int(threadIdx.x); i < passes.count * radix; i += Shape::threads)
    (&tile_counts[0][0])[i] = 0;
  __syncthreads();
  const std::size_t first = std::size_t(tile) * Shape::tile_items;
  const std::size_t end = min(sort.n, first + Shape::tile_items);
  for (std::size_t i = first + threadIdx.x; i < end; i += Shape::threads) {
    const K key = sort.keys_from[0][i];
    for (int p = 0; p < passes.count; ++p)
      atomicAdd(&tile_counts[p][passes.digit<K>(p, sort.ord, sort.end_bit)(key)], 1u);
  }
  __syncthreads();
  for (int i = int(threadIdx.x); i < passes.count * radix; i += Shape::threads) {
    const unsigned count = (&tile_counts[0][0])[i];
    if (count != 0) atomicAdd(&sort.counts[i], count);
  }
  cooperative_groups::this_grid().sync();

  for (int p = 0; p < passes.count; ++p) {
    const unsigned long long total =
        threadIdx.x < radix ? load_published(&sort.counts[p * radix + threadIdx.x]) : 0;
    const unsigned long long start = exclusive_digit_sum(total);
    if (threadIdx.x < radix) digit_starts[threadIdx.x] = start;
    clear_tile_storage(storage);
    __syncthreads();
    const onesweep_pass<K, V> pass{sort.keys_from[p],
                                   sort.keys_to[p],
                                   sort.values_from[p],
                                   sort.values_to[p],
                                   sort.n,
                                   gridDim.x,
                                   passes.digit<K>(p, sort.ord, sort.end_bit),
                                   nullptr,
                                   sort.published + std::size_t(p) * gridDim.x * radix,
                                   digit_starts,
                                   nullptr};
    sort_tile<Shape, true>(pass, tile, storage);
    if (p + 1 < passes.count) cooperative_groups::this_grid().sync();
  }
}

// ---- One tile: every pass in shared memory --------------------------------------------------

// An input that fits one tile is sorted by one block, the keys in registers between passes
// and each pass staged in shared memory: no temporary memory, no memset, no grid-wide
// syncs, and a single pass through global memory each way.
template <class Shape, class K, class V>
__global__ void one_tile_sort_kernel(const K* keys_in, K* keys_out, const V* values_in,
                                     V* values_out, unsigned n, radix_passes passes, order ord,
                                     int end_bit);

template <class Shape, class K, class V>
void one_tile_sort(const K* keys_in, K* keys_out, const V* values_in, V* values_out, std::size_t n,
                   radix_passes passes, order ord, int end_bit, const call_context& call) {
  constexpr std::size_t shared_bytes = sizeof(tile_storage<Shape, K, V>);
  allow_dynamic_shared_bytes(one_tile_sort_kernel<Shape, K, V>, shared_bytes, call);
  one_tile_sort_kernel<Shape><<<1, Shape::threads, shared_bytes, call.stream()>>>(
      keys_in, keys_out, values_in, values_out, unsigned(n), passes, ord, end_bit);
  check_launch(call.function(), "one_tile_sort_kernel");
}

// Keys warp-striped as in sort_tile_of; after each pass a thread takes back the keys (and
// values) at its positions of the staged digit order, which keeps the next pass stable.
template <class Shape, class K, class V>
__global__ void __launch_bounds__(Shape::threads, Shape::blocks_per_sm)
    one_tile_sort_kernel(const K* keys_in, K* keys_out, const V* values_in, V* values_out,
                         unsigned n, radix_passes passes, order ord, int end_bit) {
  constexpr int items = Shape::items;
  constexpr bool has_values = !std::is_same_v<V, no_values>;
  auto& storage = shared_tile_storage<Shape, K, V>();
  const unsigned warp_first = unsigned(threadIdx.x / 32 * 32 * items);
  const unsigned lane = unsigned(lane_id());
  K keys[items];
  value_or_char<V> values[items];
#pragma unroll
  for (int i = 0; i < items; ++i) {
    const unsigned at = warp_first + unsigned(i * 32) + lane;
    if (at < n) {
      keys[i] = keys_in[at];
      if constexpr (has_values) values[i] = values_in[at];
    }
  }
  for (int p = 0; p < passes.count; ++p) {
    const radix_digit<K> digit = passes.digit<K>(p, ord, end_bit);
    clear_tile_storage(storage);
    __syncthreads();
    unsigned ranks[items];
    rank_in_warps<Shape, false>(keys, n, digit, storage, ranks);
    __syncthreads();
    add_tile_starts(storage, tile_digit_count(storage, n, digit.mask));
    __syncthreads();
    stage_in_digit_order<Shape, false>(keys, n, values, ranks, storage);
    __syncthreads();
#pragma unroll
    for (int i = 0; i < items; ++i) {
      const unsigned at = warp_first + unsigned(i * 32) + lane;
      if (at < n) {
        keys[i] = storage.staged.keys[int(at)];
        if constexpr (has_values) values[i] = storage.staged.values[int(at)];
      }
    }
    __syncthreads();  // the next pass clears the lane masks, which share the staged bytes
  }
#pragma unroll
  for (int i = 0; i < items; ++i) {
    const unsigned at = warp_first + unsigned(i * 32) + lane;
    if (at < n) {
      keys_out[at] = keys[i];
      if constexpr (has_values) values_out[at] = values[i];
    }
  }
}

}  // namespace detail
}  // namespace ppat
