// The sorts, a file a key type: each key type's sorts (keys alone, and pairs with values of
// every size) take minutes to compile, and the files build side by side.
#pragma once

#include <ppat/sort.cuh>

#include "common.hpp"

namespace ppat_python {

struct sort_request {
  std::uintptr_t keys_in, keys_out, values_in, values_out;
  std::size_t n;
  std::size_t value_bytes;  // 0: keys alone
  ppat::order ord;
  int begin_bit, end_bit;
  cudaStream_t stream;
};

template <class K>
void sort_with_key(const sort_request& r) {
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

}  // namespace ppat_python
