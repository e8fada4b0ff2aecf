// Outputs sized to the result: the calls whose output lengths the data decides (select_if,
// select_flagged, partition_copy, unique, unique_by_key, reduce_by_key, run_length_encode, the
// textbook selections) with every buffer carved from one cudaMalloc, each output exactly as long as
// what the call writes, placed directly below the inputs or directly above them, where a
// check that took each output for n items would find an overlap. Every call must succeed,
// exactly, leaving its inputs and the gap after every buffer untouched. Then the overlaps
// that are certain whatever the data: rejected before any launch, naming the argument. And
// reduce_by_key and run_length_encode over more than 2^32 u8 items with outputs of a few
// dozen items, as a user with a known segment count allocates them.
#include <ppat/ppat.cuh>
#include <ppat/textbook.cuh>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "reference.hpp"
#include "support.hpp"

namespace {

using ppat_test::device_buffer;

// ---- One allocation for all of a call's buffers ----------------------------------------------

// Bytes after every buffer that nothing may write: a write past an output's result lands
// there. At least this many, up to the next 16-byte boundary.
constexpr std::size_t gap_bytes = 32;
constexpr unsigned char gap_byte = 0xA7;

enum class placement { outputs_below_inputs, outputs_above_inputs };

const char* name(placement where) {
  return where == placement::outputs_below_inputs ? "outputs below the inputs"
                                                  : "outputs above the inputs";
}

template <class T>
std::vector<unsigned char> bytes_of(const std::vector<T>& items) {
  std::vector<unsigned char> bytes(items.size() * sizeof(T));
  if (!items.empty()) std::memcpy(bytes.data(), items.data(), bytes.size());
  return bytes;
}

// A call's inputs (uploaded), its outputs (poisoned) and its count (poisoned, the last
// output) in one cudaMalloc, in the order `where` says, each 16-byte aligned and followed
// by a gap of gap_byte.
class one_allocation {
 public:
  one_allocation(const std::vector<std::vector<unsigned char>>& inputs,
                 const std::vector<std::size_t>& output_bytes, placement where)
      : inputs_(inputs) {
    std::vector<std::size_t> outputs = output_bytes;
    outputs.push_back(sizeof(std::size_t));
    std::size_t end = 0;
    const auto place = [&](std::size_t bytes, std::vector<piece>& into) {
      into.push_back({end, bytes});
      end = (end + bytes + gap_bytes + 15) / 16 * 16;
    };
    const auto place_inputs = [&] {
      for (const auto& input : inputs)
        place(input.size(), input_pieces_);
    };
    const auto place_outputs = [&] {
      for (std::size_t bytes : outputs)
        place(bytes, output_pieces_);
    };
    if (where == placement::outputs_below_inputs) {
      place_outputs();
      place_inputs();
    } else {
      place_inputs();
      place_outputs();
    }
    memory_ = std::make_unique<device_buffer<unsigned char>>(end);
    check(cudaMemset(memory_->data(), gap_byte, end));
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      check(cudaMemcpy(at(input_pieces_[i]), inputs[i].data(), inputs[i].size(),
                       cudaMemcpyHostToDevice));
    }
    for (const piece& output : output_pieces_)
      check(cudaMemset(at(output), ppat_test::poison_byte, output.bytes));
    check(cudaDeviceSynchronize());
  }

  template <class T>
  const T* input(std::size_t i) const {
    return reinterpret_cast<const T*>(at(input_pieces_[i]));
  }
  template <class T>
  T* output(std::size_t i) const {
    return reinterpret_cast<T*>(at(output_pieces_[i]));
  }
  std::size_t* count() const { return output<std::size_t>(output_pieces_.size() - 1); }

  template <class T>
  std::vector<T> download_output(std::size_t i) const {
    std::vector<T> items(output_pieces_[i].bytes / sizeof(T));
    check(cudaMemcpy(items.data(), output<T>(i), items.size() * sizeof(T), cudaMemcpyDeviceToHost));
    return items;
  }
  std::size_t download_count() const {
    return download_output<std::size_t>(output_pieces_.size() - 1)[0];
  }

  // True when a check that took output `i` for `bytes` long would find it overlapping
  // another of the call's buffers: what makes the placement a test of the checks.
  bool would_overlap(std::size_t i, std::size_t bytes) const {
    const piece assumed{output_pieces_[i].offset, bytes};
    const auto overlap = [&](const piece& other) {
      return other.offset != assumed.offset && other.bytes > 0 &&
             assumed.offset < other.offset + other.bytes &&
             other.offset < assumed.offset + assumed.bytes;
    };
    return std::any_of(input_pieces_.begin(), input_pieces_.end(), overlap) ||
           std::any_of(output_pieces_.begin(), output_pieces_.end(), overlap);
  }

  // Every input as uploaded and every gap byte as set: nothing written outside the outputs'
  // results and the count.
  bool untouched_outside_outputs() const {
    std::vector<unsigned char> all(memory_->size());
    check(cudaMemcpy(all.data(), memory_->data(), all.size(), cudaMemcpyDeviceToHost));
    std::vector<bool> written(all.size(), false);
    for (std::size_t i = 0; i < inputs_.size(); ++i) {
      const piece& p = input_pieces_[i];
      if (!std::equal(inputs_[i].begin(), inputs_[i].end(), all.begin() + std::ptrdiff_t(p.offset)))
        return false;
      std::fill_n(written.begin() + std::ptrdiff_t(p.offset), p.bytes, true);
    }
    for (const piece& p : output_pieces_)
      std::fill_n(written.begin() + std::ptrdiff_t(p.offset), p.bytes, true);
    for (std::size_t b = 0; b < all.size(); ++b) {
      if (!written[b] && all[b] != gap_byte) return false;
    }
    return true;
  }

 private:
  struct piece {
    std::size_t offset, bytes;
  };
  static void check(cudaError_t status) {
    if (status != cudaSuccess) throw std::runtime_error(cudaGetErrorString(status));
  }
  unsigned char* at(const piece& p) const { return memory_->data() + p.offset; }

  std::vector<std::vector<unsigned char>> inputs_;
  std::vector<piece> input_pieces_, output_pieces_;
  std::unique_ptr<device_buffer<unsigned char>> memory_;
};

// ---- The calls, each against the host reference ---------------------------------------------

struct odd {
  template <class T>
  __host__ __device__ bool operator()(T x) const {
    return (x & 1) != 0;
  }
};

// `expected` outputs (as bytes, in the call's order) and count; `call(memory)` runs the call
// on the allocation's buffers. An output sized to the result but empty is one item long, as
// a user's allocation of a possible result would be.
template <class Call>
void expect_result_sized(const char* what, const std::vector<std::vector<unsigned char>>& inputs,
                         const std::vector<std::vector<unsigned char>>& expected,
                         const std::vector<std::size_t>& item_bytes, std::size_t n,
                         std::size_t expected_count, placement where, Call call) {
  SCOPED_TRACE(std::string(what) + ", " + name(where) + ", n = " + std::to_string(n));
  std::vector<std::size_t> output_bytes;
  for (std::size_t i = 0; i < expected.size(); ++i)
    output_bytes.push_back(std::max(expected[i].size(), item_bytes[i]));
  const one_allocation memory(inputs, output_bytes, where);
  bool result_sized = false, overlaps_at_n = false;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    result_sized = result_sized || output_bytes[i] < n * item_bytes[i];
    overlaps_at_n = overlaps_at_n || memory.would_overlap(i, n * item_bytes[i]);
  }
  if (result_sized) EXPECT_TRUE(overlaps_at_n) << "the placement does not test the checks";
  call(memory);
  ppat_test::expect_no_cuda_error();
  EXPECT_EQ(memory.download_count(), expected_count);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    auto got = memory.download_output<unsigned char>(i);
    got.resize(expected[i].size());
    EXPECT_TRUE(got == expected[i]) << "output " << i << " differs from the reference";
  }
  EXPECT_TRUE(memory.untouched_outside_outputs()) << "written outside the outputs' results";
}

// Items in runs of random length (1 to 2 * mean - 1) of random values, each unlike the one
// before.
template <class T>
std::vector<T> items_in_runs(std::size_t n, std::size_t mean, long long high) {
  std::vector<T> items;
  std::uniform_int_distribution<std::size_t> length(1, 2 * mean - 1);
  std::uniform_int_distribution<long long> value(0, high);
  T current{};
  while (items.size() < n) {
    T next;
    do {
      next = T(value(ppat_test::rng()));
    } while (!items.empty() && next == current);
    current = next;
    items.insert(items.end(), std::min(length(ppat_test::rng()), n - items.size()), current);
  }
  return items;
}

template <class T>
std::vector<T> run_heads(const std::vector<T>& in) {
  const auto starts = ppat_reference::run_starts(in);
  return ppat_reference::select(in, [&](std::size_t i) { return bool(starts[i]); });
}

void check_every_call(std::size_t n, placement where) {
  const auto items = ppat_test::random_integers<std::int32_t>(n, -1000000, 1000000);
  const auto kept = ppat_reference::select(items, [&](std::size_t i) { return odd{}(items[i]); });
  expect_result_sized("select_if", {bytes_of(items)}, {bytes_of(kept)}, {4}, n, kept.size(), where,
                      [&](const one_allocation& m) {
                        ppat::select_if(m.input<std::int32_t>(0), m.output<std::int32_t>(0),
                                        m.count(), n, odd{});
                      });
  expect_result_sized("scan_then_scatter_select_if", {bytes_of(items)}, {bytes_of(kept)}, {4}, n,
                      kept.size(), where, [&](const one_allocation& m) {
                        ppat::textbook::scan_then_scatter_select_if(m.input<std::int32_t>(0),
                                                                    m.output<std::int32_t>(0),
                                                                    m.count(), n, odd{});
                      });
  {
    // Its order changes from run to run: the items kept, compared as a multiset.
    SCOPED_TRACE("warp_atomic_select_if");
    const one_allocation m({bytes_of(items)}, {std::max<std::size_t>(kept.size(), 1) * 4}, where);
    ppat::textbook::warp_atomic_select_if(m.input<std::int32_t>(0), m.output<std::int32_t>(0),
                                          m.count(), n, odd{});
    ppat_test::expect_no_cuda_error();
    ASSERT_EQ(m.download_count(), kept.size());
    auto got = m.download_output<std::int32_t>(0);
    got.resize(kept.size());
    auto want = kept;
    std::sort(got.begin(), got.end());
    std::sort(want.begin(), want.end());
    EXPECT_TRUE(got == want);
    EXPECT_TRUE(m.untouched_outside_outputs());
  }

  const auto flags = ppat_test::random_integers<std::uint8_t>(n, 0, 3);
  const auto flagged = ppat_reference::select(items, [&](std::size_t i) { return flags[i] != 0; });
  expect_result_sized("select_flagged", {bytes_of(items), bytes_of(flags)}, {bytes_of(flagged)},
                      {4}, n, flagged.size(), where, [&](const one_allocation& m) {
                        ppat::select_flagged(m.input<std::int32_t>(0), m.input<std::uint8_t>(1),
                                             m.output<std::int32_t>(0), m.count(), n);
                      });

  // partition's output holds all n items: beside the input, never in it.
  expect_result_sized(
      "partition", {bytes_of(items)}, {bytes_of(ppat_reference::stable_partition(items, odd{}))},
      {4}, n, kept.size(), where, [&](const one_allocation& m) {
        ppat::partition(m.input<std::int32_t>(0), m.output<std::int32_t>(0), m.count(), n, odd{});
      });

  // partition_copy's two outputs hold the kept and the rejected items, each exactly.
  const auto rejected =
      ppat_reference::select(items, [&](std::size_t i) { return !odd{}(items[i]); });
  expect_result_sized("partition_copy", {bytes_of(items)}, {bytes_of(kept), bytes_of(rejected)},
                      {4, 4}, n, kept.size(), where, [&](const one_allocation& m) {
                        ppat::partition_copy(m.input<std::int32_t>(0), m.output<std::int32_t>(0),
                                             m.output<std::int32_t>(1), m.count(), n, odd{});
                      });

  const auto keys = items_in_runs<std::uint8_t>(n, 5, 255);
  const auto heads = run_heads(keys);
  const auto starts = ppat_reference::run_starts(keys);
  expect_result_sized("unique", {bytes_of(keys)}, {bytes_of(heads)}, {1}, n, heads.size(), where,
                      [&](const one_allocation& m) {
                        ppat::unique(m.input<std::uint8_t>(0), m.output<std::uint8_t>(0), m.count(),
                                     n);
                      });
  const auto values = ppat_test::random_integers<std::uint64_t>(n, 0, 1ll << 62);
  expect_result_sized(
      "unique_by_key", {bytes_of(keys), bytes_of(values)},
      {bytes_of(heads),
       bytes_of(ppat_reference::select(values, [&](std::size_t i) { return bool(starts[i]); }))},
      {1, 8}, n, heads.size(), where, [&](const one_allocation& m) {
        ppat::unique_by_key(m.input<std::uint8_t>(0), m.input<std::uint64_t>(1),
                            m.output<std::uint8_t>(0), m.output<std::uint64_t>(1), m.count(), n);
      });
  const auto words = ppat_test::random_integers<std::uint32_t>(n, 0, 0xFFFFFFFFll);
  expect_result_sized(
      "reduce_by_key", {bytes_of(keys), bytes_of(words)},
      {bytes_of(heads), bytes_of(ppat_reference::reduce_by_key(keys, words, ppat::plus{}))}, {1, 4},
      n, heads.size(), where, [&](const one_allocation& m) {
        ppat::reduce_by_key(m.input<std::uint8_t>(0), m.input<std::uint32_t>(1),
                            m.output<std::uint8_t>(0), m.output<std::uint32_t>(1), m.count(), n);
      });
  expect_result_sized(
      "run_length_encode", {bytes_of(keys)},
      {bytes_of(heads), bytes_of(ppat_reference::run_lengths<std::uint8_t, std::uint32_t>(keys))},
      {1, 4}, n, heads.size(), where, [&](const one_allocation& m) {
        ppat::run_length_encode(m.input<std::uint8_t>(0), m.output<std::uint8_t>(0),
                                m.output<std::uint32_t>(1), m.count(), n);
      });
}

TEST(result_sized_outputs, every_call_succeeds_wherever_they_lie) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for (std::size_t n : {std::size_t{1000}, std::size_t{100003}, std::size_t{1048593}}) {
    if (ppat_test::over_item_budget(n)) continue;
    for (placement where : {placement::outputs_below_inputs, placement::outputs_above_inputs})
      check_every_call(n, where);
  }
}

// ---- Certain overlaps ---------------------------------------------------------------------

// `call()` throws std::invalid_argument naming `function` and `argument`, and launches
// nothing: the device buffer `watched` (poisoned before) is still all poison after it.
template <class Call>
void expect_rejected(const char* function, const char* argument,
                     const device_buffer<std::int32_t>& watched, Call call) {
  SCOPED_TRACE(std::string(function) + ", '" + argument + "'");
  try {
    call();
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(function), std::string::npos) << message;
    EXPECT_NE(message.find(std::string("argument '") + argument + "'"), std::string::npos)
        << message;
  }
  ppat_test::expect_no_cuda_error();
  const auto after = watched.download();
  EXPECT_TRUE(std::all_of(after.begin(), after.end(), [](std::int32_t x) { return x == -1; }))
      << "something was launched";
}

TEST(result_sized_outputs, certain_overlaps_are_rejected_before_any_launch) {
  PPAT_REQUIRE_GPU();
  constexpr std::size_t n = 64;
  device_buffer<std::int32_t> b(1024);
  b.poison();  // every item -1: inputs that select and run, counts and outputs to watch
  std::int32_t* const p = b.data();
  const auto count_at = [&](std::size_t item) { return reinterpret_cast<std::size_t*>(p + item); };
  const auto* const bytes = reinterpret_cast<const std::uint8_t*>(p);
  auto* const byte_out = reinterpret_cast<std::uint8_t*>(p);

  // The output's first item inside the input: in place, or shifted into it.
  expect_rejected("ppat::select_if", "out", b,
                  [&] { ppat::select_if(p, p, count_at(512), n, odd{}); });
  expect_rejected("ppat::select_if", "out", b,
                  [&] { ppat::select_if(p + 100, p + 163, count_at(512), n, odd{}); });
  expect_rejected("ppat::unique", "out", b, [&] { ppat::unique(p, p + 5, count_at(512), n); });
  expect_rejected("ppat::textbook::scan_then_scatter_select_if", "out", b, [&] {
    ppat::textbook::scan_then_scatter_select_if(p, p + 1, count_at(512), n, odd{});
  });
  expect_rejected("ppat::textbook::warp_atomic_select_if", "out", b, [&] {
    ppat::textbook::warp_atomic_select_if(p, p + n - 1, count_at(512), n, odd{});
  });
  // The count inside an input, or on an output's first item.
  expect_rejected("ppat::select_if", "num_selected", b,
                  [&] { ppat::select_if(p, p + 200, count_at(30), n, odd{}); });
  expect_rejected("ppat::select_if", "num_selected", b,
                  [&] { ppat::select_if(p, p + 200, count_at(200), n, odd{}); });
  // Flags are an input of n items.
  expect_rejected("ppat::select_flagged", "out", b, [&] {
    ppat::select_flagged(p, bytes + 4 * 300, p + 310, count_at(512), n);  // 64 flags: 16 items
  });
  expect_rejected("ppat::select_flagged", "num_selected", b,
                  [&] { ppat::select_flagged(p, bytes + 4 * 300, p + 400, count_at(308), n); });
  // partition's output holds n items: anywhere in the input is an overlap.
  expect_rejected("ppat::partition", "out", b,
                  [&] { ppat::partition(p + 100, p + 100 - n + 1, count_at(512), n, odd{}); });
  // partition_copy's rejected output: its first item inside the input, on the selected
  // output's first item, or under the count.
  expect_rejected("ppat::partition_copy", "out_rejected", b,
                  [&] { ppat::partition_copy(p, p + 200, p + 10, count_at(512), n, odd{}); });
  expect_rejected("ppat::partition_copy", "out_rejected", b,
                  [&] { ppat::partition_copy(p, p + 200, p + 200, count_at(512), n, odd{}); });
  expect_rejected("ppat::partition_copy", "num_selected", b,
                  [&] { ppat::partition_copy(p, p + 200, p + 300, count_at(300), n, odd{}); });
  // By key: values are an input of n items too; two outputs that start together.
  expect_rejected("ppat::unique_by_key", "keys_out", b,
                  [&] { ppat::unique_by_key(p, p + 100, p + 120, p + 300, count_at(512), n); });
  expect_rejected("ppat::unique_by_key", "values_out", b,
                  [&] { ppat::unique_by_key(p, p + 100, p + 300, p + 300, count_at(512), n); });
  expect_rejected("ppat::reduce_by_key", "aggregates_out", b,
                  [&] { ppat::reduce_by_key(p, p + 100, p + 300, p + 130, count_at(512), n); });
  expect_rejected("ppat::reduce_by_key", "aggregates_out", b,
                  [&] { ppat::reduce_by_key(p, p + 100, p + 300, p + 300, count_at(512), n); });
  expect_rejected("ppat::reduce_by_key", "num_segments", b,
                  [&] { ppat::reduce_by_key(p, p + 100, p + 300, p + 400, count_at(120), n); });
  expect_rejected("ppat::reduce_by_key", "num_segments", b,
                  [&] { ppat::reduce_by_key(p, p + 100, p + 300, p + 400, count_at(400), n); });
  expect_rejected("ppat::run_length_encode", "counts_out", b, [&] {
    ppat::run_length_encode(bytes, byte_out + 4 * 300, p + 300, count_at(512), n);
  });
  expect_rejected("ppat::run_length_encode", "num_runs", b, [&] {
    ppat::run_length_encode(bytes, byte_out + 4 * 300, p + 400, count_at(4), n);
  });
}

// ---- More than 2^32 items, outputs of one item a segment -----------------------------------

// 2^32 + 9 u8 keys in 26 segments at random places, u32 values drawn by a cheap generator
// (both made and uploaded in chunks, so the host holds no copy of either), reduced by key and
// run-length encoded into outputs of exactly 26 items sitting directly below the input.
TEST(result_sized_outputs, huge_u8_keys_in_26_segments_above_2_pow_32) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = (std::size_t{1} << 32) + 9;
  constexpr std::size_t segments = 26;
  std::vector<std::size_t> segment_first = {0};
  {
    std::uniform_int_distribution<std::size_t> cut(1, n - 1);
    while (segment_first.size() < segments) {
      segment_first.push_back(cut(ppat_test::rng()));
      std::sort(segment_first.begin(), segment_first.end());
      segment_first.erase(std::unique(segment_first.begin(), segment_first.end()),
                          segment_first.end());
    }
    segment_first.push_back(n);
  }
  std::vector<std::uint8_t> segment_key(segments);
  std::uniform_int_distribution<int> step(1, 255);  // a key distinct from the one before
  for (std::size_t s = 0; s < segments; ++s)
    segment_key[s] = std::uint8_t((s == 0 ? 0 : segment_key[s - 1]) + step(ppat_test::rng()));
  std::vector<std::uint64_t> lengths(segments);
  for (std::size_t s = 0; s < segments; ++s)
    lengths[s] = segment_first[s + 1] - segment_first[s];

  // Below the inputs: both calls' outputs and counts; then the keys and the values.
  struct layout {
    std::size_t offset = 0;
    std::size_t take(std::size_t bytes) {
      const std::size_t at = offset;
      offset = (offset + bytes + gap_bytes + 15) / 16 * 16;
      return at;
    }
  } l;
  const std::size_t rle_heads = l.take(segments), rle_lengths = l.take(segments * 8),
                    rle_count = l.take(8), rbk_heads = l.take(segments),
                    rbk_sums = l.take(segments * 4), rbk_count = l.take(8), keys_at = l.take(n),
                    values_at = l.take(n * 4);
  std::size_t free_bytes = 0, total_bytes = 0;
  PPAT_CUDA_OK(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (free_bytes < l.offset + (std::size_t{4} << 30))
    GTEST_SKIP() << (l.offset >> 30) << " GiB and room to work needed, " << (free_bytes >> 30)
                 << " GiB free";
  device_buffer<unsigned char> memory(l.offset);
  unsigned char* const base = memory.data();
  PPAT_CUDA_OK(cudaMemset(base, gap_byte, values_at));

  std::vector<std::uint32_t> sums(segments, 0);
  {
    constexpr std::size_t chunk = std::size_t{1} << 26;
    std::vector<std::uint8_t> key_chunk(chunk);
    std::vector<std::uint32_t> value_chunk(chunk);
    std::minstd_rand cheap(std::uint32_t(ppat_test::run_seed()));
    std::size_t s = 0;
    for (std::size_t first = 0; first < n; first += chunk) {
      const std::size_t count = std::min(chunk, n - first);
      for (std::size_t i = 0; i < count; ++i) {
        while (first + i >= segment_first[s + 1])
          ++s;
        key_chunk[i] = segment_key[s];
        value_chunk[i] = std::uint32_t(cheap()) * 2654435761u;
        sums[s] += value_chunk[i];
      }
      PPAT_CUDA_OK(
          cudaMemcpy(base + keys_at + first, key_chunk.data(), count, cudaMemcpyHostToDevice));
      PPAT_CUDA_OK(cudaMemcpy(base + values_at + first * 4, value_chunk.data(), count * 4,
                              cudaMemcpyHostToDevice));
    }
  }
  const auto* const keys = reinterpret_cast<const std::uint8_t*>(base + keys_at);
  ppat::run_length_encode(keys, reinterpret_cast<std::uint8_t*>(base + rle_heads),
                          reinterpret_cast<std::uint64_t*>(base + rle_lengths),
                          reinterpret_cast<std::size_t*>(base + rle_count), n);
  ppat::reduce_by_key(keys, reinterpret_cast<const std::uint32_t*>(base + values_at),
                      reinterpret_cast<std::uint8_t*>(base + rbk_heads),
                      reinterpret_cast<std::uint32_t*>(base + rbk_sums),
                      reinterpret_cast<std::size_t*>(base + rbk_count), n);
  ppat_test::expect_no_cuda_error();

  // Everything below the keys: the outputs exact, every gap byte as set.
  std::vector<unsigned char> below(keys_at);
  PPAT_CUDA_OK(cudaMemcpy(below.data(), base, keys_at, cudaMemcpyDeviceToHost));
  const auto read = [&](std::size_t at, auto* into, std::size_t count) {
    std::memcpy(into, below.data() + at, count * sizeof(*into));
  };
  std::size_t rle_runs = 0, rbk_segments = 0;
  read(rle_count, &rle_runs, 1);
  read(rbk_count, &rbk_segments, 1);
  EXPECT_EQ(rle_runs, segments);
  EXPECT_EQ(rbk_segments, segments);
  std::vector<std::uint8_t> got_rle_heads(segments), got_rbk_heads(segments);
  std::vector<std::uint64_t> got_lengths(segments);
  std::vector<std::uint32_t> got_sums(segments);
  read(rle_heads, got_rle_heads.data(), segments);
  read(rle_lengths, got_lengths.data(), segments);
  read(rbk_heads, got_rbk_heads.data(), segments);
  read(rbk_sums, got_sums.data(), segments);
  EXPECT_TRUE(got_rle_heads == segment_key);
  EXPECT_TRUE(got_lengths == lengths);
  EXPECT_TRUE(got_rbk_heads == segment_key);
  EXPECT_TRUE(got_sums == sums);
  const std::pair<std::size_t, std::size_t> written[] = {
      {rle_heads, segments}, {rle_lengths, segments * 8}, {rle_count, 8},
      {rbk_heads, segments}, {rbk_sums, segments * 4},    {rbk_count, 8}};
  for (const auto& [at, bytes] : written)
    std::fill_n(below.begin() + std::ptrdiff_t(at), bytes, gap_byte);
  EXPECT_TRUE(std::all_of(below.begin(), below.end(), [](unsigned char b) {
    return b == gap_byte;
  })) << "written past an output's last item";
}

}  // namespace
