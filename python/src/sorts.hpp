// The sorts and top-k, a file a key type: each key type's sorts (keys alone, pairs with values
// of every size, rows of a matrix) and top-k take minutes to compile, and the files build side
// by side.
#pragma once

#include <ppat/segmented.cuh>
#include <ppat/sort.cuh>
#include <ppat/top_k.cuh>

#include "common.hpp"

namespace ppat_python {

struct sort_request {
  std::uintptr_t keys_in, keys_out, values_in, values_out;
  std::size_t n;
  std::size_t cols;         // keys a row: n for one array, fewer for each row of a matrix
  std::size_t value_bytes;  // 0: keys alone; rows carry 8-byte values (argsort's positions)
  ppat::order ord;
  int begin_bit, end_bit;
  cudaStream_t stream;
};

template <class K>
void sort_with_key(const sort_request& r) {
  if (r.cols < r.n) {
    const std::size_t rows = r.n / r.cols;
    if (r.value_bytes == 0) {
      ppat::sort_keys_batched(address<const K>(r.keys_in), address<K>(r.keys_out), rows, r.cols,
                              r.ord, r.stream);
    } else if (r.value_bytes == 8) {
      ppat::sort_pairs_batched(address<const K>(r.keys_in), address<K>(r.keys_out),
                               address<const std::uint64_t>(r.values_in),
                               address<std::uint64_t>(r.values_out), rows, r.cols, r.ord, r.stream);
    } else {
      throw nb::value_error("ppat.sort: the rows of a matrix carry 8-byte values only");
    }
    return;
  }
  if (r.value_bytes == 0) {
    ppat::sort_keys(address<const K>(r.keys_in), address<K>(r.keys_out), r.n, r.ord, r.begin_bit,
                    r.end_bit, r.stream);
    return;
  }
  with_item_size(r.value_bytes, "ppat.sort_pairs", [&](auto tag) {
    using V = typename decltype(tag)::type;
    ppat::sort_pairs(address<const K>(r.keys_in), address<K>(r.keys_out),
                     address<const V>(r.values_in), address<V>(r.values_out), r.n, r.ord,
                     r.begin_bit, r.end_bit, r.stream);
  });
}

// The k first keys of each of `rows` rows of `cols`, with their positions in the row as
// 8-byte integers (int64 to Python: positions are far below 2^63).
struct top_k_request {
  std::uintptr_t in, keys_out, indices_out;
  std::size_t rows, cols, k;
  ppat::order ord;
  cudaStream_t stream;
};

template <class K>
void top_k_with_key(const top_k_request& r) {
  if (r.rows == 1) {
    ppat::top_k(address<const K>(r.in), r.cols, r.k, address<K>(r.keys_out),
                address<std::uint64_t>(r.indices_out), r.ord, r.stream);
    return;
  }
  ppat::top_k_batched(address<const K>(r.in), r.rows, r.cols, r.k, address<K>(r.keys_out),
                      address<std::uint64_t>(r.indices_out), r.ord, r.stream);
}

}  // namespace ppat_python
