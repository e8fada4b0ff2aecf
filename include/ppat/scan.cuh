// Production scans: one pass over memory, one launch, deterministic.
//
//   ppat::inclusive_scan(in, out, n, op, stream)        out[i] = in[0] op ... op in[i]
//   ppat::exclusive_scan(in, out, n, init, op, stream)  out[i] = init op in[0] op ... op in[i-1]
//   ppat::inclusive_scan_by_key(keys, in, out, n, op, stream)
//   ppat::exclusive_scan_by_key(keys, in, out, n, init, op, stream)
//       the same within each segment, a maximal run of equal consecutive keys
//
// Any associative `op`, commutative or not; any trivially copyable T; in == out allowed.
// Each block reads one tile (256 threads x up to 128 bytes) into registers with 16-byte
// accesses coalesced across the warp (item-sized ones where a buffer is not 16-byte
// aligned), scans it, and learns the tile's prefix from the tiles before it through the
// deterministic decoupled look-back of core/lookback.cuh. Every combination happens in an
// order fixed by n alone, whatever the buffers' alignment, so floating-point results are the
// same bits on every run on the same GPU.
//
// The kernel is scan/single_pass.cuh's; a scan by key (scan/by_key.cuh, beside
// reduce_by_key) is the same kernel over (value, number of segment starts) pairs, in place
// too (`keys` must not overlap `out`).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "core/arguments.cuh"
#include "core/device.cuh"
#include "core/error.cuh"
#include "core/operators.cuh"
#include "core/partial.cuh"
#include "core/staged_run.cuh"
#include "core/vector_io.cuh"
#include "scan/by_key.cuh"
#include "scan/single_pass.cuh"

namespace ppat {
namespace detail {

template <bool Exclusive, class T, class Op>
void scan(const T* in, T* out, std::size_t n, T init, Op op, cudaStream_t stream,
          const char* function);

}  // namespace detail

template <class T, class Op = plus>
void inclusive_scan(const T* in, T* out, std::size_t n, Op op = {}, cudaStream_t stream = 0) {
  detail::scan<false>(in, out, n, T{}, op, stream, "ppat::inclusive_scan");
}

template <class T, class Op = plus>
void exclusive_scan(const T* in, T* out, std::size_t n, T init = T{}, Op op = {},
                    cudaStream_t stream = 0) {
  detail::scan<true>(in, out, n, init, op, stream, "ppat::exclusive_scan");
}

template <class K, class T, class Op = plus>
void inclusive_scan_by_key(const K* keys, const T* in, T* out, std::size_t n, Op op = {},
                           cudaStream_t stream = 0) {
  detail::scan_by_key<false>(keys, in, out, n, T{}, op, stream, "ppat::inclusive_scan_by_key");
}

template <class K, class T, class Op = plus>
void exclusive_scan_by_key(const K* keys, const T* in, T* out, std::size_t n, T init = T{},
                           Op op = {}, cudaStream_t stream = 0) {
  detail::scan_by_key<true>(keys, in, out, n, init, op, stream, "ppat::exclusive_scan_by_key");
}

namespace detail {

// What the single-pass kernel scans. A source loads the items to combine (`item`, combined
// by `op`), from `vec` consecutive positions at a time, and writes each position's result
// from the combination of everything before it and everything through it.
template <bool Exclusive, class T, class Op, int Vec, bool Aligned>
struct plain_source {
  using item = T;
  using held = register_items<T, Vec>;
  using combiner = Op;
  using result_type = T;
  static constexpr int vec = Vec;
  const T* in;
  T* out;
  Op op;

  __device__ void load(std::size_t first, held& to) const { to.template load<Aligned>(in + first); }
  __device__ T load_one(std::size_t i) const { return in[i]; }
  // An exclusive scan always has a prefix: `start` at the very least.
  __device__ static T result(const partial<T>& before, const T& through) {
    return Exclusive ? before.value : through;
  }
  __device__ void store(std::size_t first, const T (&results)[Vec]) const {
    store_items<Aligned>(out + first, results);
  }
  __device__ void store_one(std::size_t i, const T& result) const { out[i] = result; }
  // Off 16-byte boundaries, a warp's row of results from `first` leaves as whole vectors
  // where items are of up to 4 bytes (a lane's 4 to 16 stores become one); 8-byte items keep
  // their two stores a vector, faster for i64 (docs/patterns.md, "Scan").
  static constexpr bool stores_rows = !Aligned && one_access<T, Vec> && sizeof(T) <= 4;
  __device__ void store_row(std::size_t first, const T (&results)[Vec]) const {
    store_warp_row(out + first, results);
  }
};

template <class Source>
void plain_scan(const Source& source, std::size_t n, scan_start<typename Source::item> start,
                const call_context& call);

template <bool Exclusive, class T, class Op>
void scan(const T* in, T* out, std::size_t n, T init, Op op, cudaStream_t stream,
          const char* function) {
  require_buffer(in, n, function, "in");
  require_buffer(out, n, function, "out");
  require_same_or_disjoint(in, out, n, function);
  if (n == 0) return;
  const call_context call(stream, function);
  require_device_readable(in, n, call, "in");
  require_device_readable(out, n, call, "out");
  // 16-byte accesses need both buffers 16-byte aligned; anything else takes T-sized ones,
  // with the same tiles.
  constexpr int vec = items_per_vector<T>;
  const partial<T> start{init, Exclusive};
  if (vec == 1 || (aligned_to(in, 16) && aligned_to(out, 16))) {
    plain_scan(plain_source<Exclusive, T, Op, vec, true>{in, out, op}, n, start, call);
  } else if constexpr (vec != 1) {
    plain_scan(plain_source<Exclusive, T, Op, vec, false>{in, out, op}, n, start, call);
  }
}

// 1- and 2-byte items too few to give every SM one production tile take smaller tiles.
template <class Source>
void plain_scan(const Source& source, std::size_t n, scan_start<typename Source::item> start,
                const call_context& call) {
  using T = typename Source::item;
  using production_shape = scan_tile_of<scan_tuning<T>, T, Source::vec>;
  if constexpr (sizeof(T) < 4) {
    if (ceil_div(n, production_shape::tile_items) < std::size_t(call.limits().sm_count)) {
      using small_shape = scan_tile_of<scan_small_input_tuning, T, Source::vec>;
      launch_single_pass_scan<small_shape>(source, n, start, call);
      return;
    }
  }
  launch_single_pass_scan<production_shape>(source, n, start, call);
}

}  // namespace detail
}  // namespace ppat
