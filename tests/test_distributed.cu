// ppat::distributed on one and two GPUs, one rank each: each call against the host
// reference on the concatenation of the shards, with shards of uneven sizes, an empty one,
// every item on one rank; selections kept and rebalanced, also into outputs sized to what
// each rank receives; sorts of tied, equal, already sorted and reversed keys, apart and in
// place; bad arguments on one rank only; NCCL failures; both launch styles (a host thread a
// rank under ncclCommInitAll, and a process a rank under ncclCommInitRank, this binary
// starting itself once a rank); and 2^34 keys a GPU sorted in place, checked on the device.
#include <ppat/distributed.cuh>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iterator>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "support.hpp"

extern char** environ;  // the process environment, passed on to the ranks it starts

namespace {

int gpu_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

// One communicator over the first `ranks` GPUs, and a thread a rank running `body(rank)` on
// that rank's device and stream. Every thread runs to its end even when a check fails.
class ranks_on_gpus {
 public:
  explicit ranks_on_gpus(int ranks) : comms_(std::size_t(ranks)) {
    std::vector<int> devices(static_cast<std::size_t>(ranks));
    std::iota(devices.begin(), devices.end(), 0);
    status_ = ncclCommInitAll(comms_.data(), ranks, devices.data());
  }
  ~ranks_on_gpus() {
    for (ncclComm_t comm : comms_)
      if (comm != nullptr) (void)ncclCommDestroy(comm);
  }
  bool ready() const { return status_ == ncclSuccess; }
  const char* why() const { return ncclGetErrorString(status_); }
  int size() const { return int(comms_.size()); }

  void run(const std::function<void(int rank, ncclComm_t comm, cudaStream_t stream)>& body) {
    std::vector<std::thread> threads;
    for (int rank = 0; rank < size(); ++rank) {
      threads.emplace_back([&, rank] {
        EXPECT_EQ(cudaSetDevice(rank), cudaSuccess);
        cudaStream_t stream = nullptr;
        EXPECT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
        body(rank, comms_[std::size_t(rank)], stream);
        EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
        EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
      });
    }
    for (auto& thread : threads)
      thread.join();
  }

 private:
  std::vector<ncclComm_t> comms_;
  ncclResult_t status_ = ncclSuccess;
};

// How `total` items are spread over the ranks.
enum class layout {
  uneven,      // uneven shards, the second one empty where there are two or more ranks
  all_on_last  // every item on the last rank, the others empty
};

std::vector<std::size_t> shard_sizes(int ranks, std::size_t total, layout shards) {
  std::vector<std::size_t> sizes(std::size_t(ranks), 0);
  if (shards == layout::all_on_last) {
    sizes.back() = total;
    return sizes;
  }
  std::size_t left = total;
  for (int r = 0; r < ranks; ++r) {
    if (r == 1) continue;
    const std::size_t share = r == ranks - 1 ? left : left / 3 + 17;
    sizes[std::size_t(r)] = std::min(share, left);
    left -= sizes[std::size_t(r)];
  }
  sizes.back() += left;
  return sizes;
}

std::vector<std::size_t> offsets_of(const std::vector<std::size_t>& sizes) {
  std::vector<std::size_t> first(sizes.size() + 1, 0);
  std::partial_sum(sizes.begin(), sizes.end(), first.begin() + 1);
  return first;
}

void reduce_on(int ranks, std::size_t total, layout shards = layout::uneven) {
  ranks_on_gpus group(ranks);
  ASSERT_TRUE(group.ready()) << "ncclCommInitAll: " << group.why();
  const auto all = ppat_test::random_integers<long long>(total, -1000000, 1000000);
  const auto sizes = shard_sizes(ranks, total, shards);
  const auto first = offsets_of(sizes);
  const long long init = 12345;
  const long long expected = std::accumulate(all.begin(), all.end(), init);
  long long lowest = init;
  for (long long v : all)
    lowest = std::min(lowest, v);
  group.run([&](int rank, ncclComm_t comm, cudaStream_t stream) {
    const std::vector<long long> shard(all.begin() + first[rank], all.begin() + first[rank + 1]);
    ppat_test::device_buffer<long long> in(shard), out(1, 4);
    out.poison();
    ppat::distributed::reduce(comm, in.data(), out.data(), shard.size(), init, ppat::plus{},
                              stream);
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    EXPECT_EQ(out.download()[0], expected) << "rank " << rank << " of " << ranks;
    ppat::distributed::reduce(comm, in.data(), out.data(), shard.size(), init, ppat::minimum{},
                              stream);
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    EXPECT_EQ(out.download()[0], lowest) << "minimum, rank " << rank;
    EXPECT_TRUE(out.guards_intact());
  });
}

template <bool Exclusive>
void scan_on(int ranks, std::size_t total, layout shards = layout::uneven) {
  ranks_on_gpus group(ranks);
  ASSERT_TRUE(group.ready()) << "ncclCommInitAll: " << group.why();
  const auto all = ppat_test::random_integers<int>(total, -1000, 1000);
  const auto sizes = shard_sizes(ranks, total, shards);
  const auto first = offsets_of(sizes);
  const int init = 77;
  std::vector<int> expected(total);
  int through = Exclusive ? init : 0;
  for (std::size_t i = 0; i < total; ++i) {
    if (Exclusive) {
      expected[i] = through;
      through += all[i];
    } else {
      through += all[i];
      expected[i] = through;
    }
  }
  group.run([&](int rank, ncclComm_t comm, cudaStream_t stream) {
    const std::vector<int> shard(all.begin() + first[rank], all.begin() + first[rank + 1]);
    ppat_test::device_buffer<int> in(shard), out(shard.size(), 16);
    out.poison();
    if (Exclusive) {
      ppat::distributed::exclusive_scan(comm, in.data(), out.data(), shard.size(), init,
                                        ppat::plus{}, stream);
    } else {
      ppat::distributed::inclusive_scan(comm, in.data(), out.data(), shard.size(), ppat::plus{},
                                        stream);
    }
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    const std::vector<int> want(expected.begin() + first[rank], expected.begin() + first[rank + 1]);
    EXPECT_EQ(ppat_test::first_mismatch(out.download(), want), -1) << "rank " << rank;
    EXPECT_TRUE(out.guards_intact());
  });
}

void histogram_on(int ranks, std::size_t total, layout shards = layout::uneven) {
  ranks_on_gpus group(ranks);
  ASSERT_TRUE(group.ready()) << "ncclCommInitAll: " << group.why();
  const int bins = 1000;
  const auto all = ppat_test::random_integers<int>(total, -50, 1100);  // some outside [0, 1000)
  const auto sizes = shard_sizes(ranks, total, shards);
  const auto first = offsets_of(sizes);
  std::vector<unsigned> expected(bins, 0);
  for (int v : all)
    if (v >= 0 && v < bins) ++expected[std::size_t(v)];
  group.run([&](int rank, ncclComm_t comm, cudaStream_t stream) {
    const std::vector<int> shard(all.begin() + first[rank], all.begin() + first[rank + 1]);
    ppat_test::device_buffer<int> samples(shard);
    ppat_test::device_buffer<unsigned> hist(bins, 4);
    hist.poison();
    ppat::distributed::histogram_even(comm, samples.data(), shard.size(), hist.data(), bins, 0,
                                      bins, stream);
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    EXPECT_EQ(ppat_test::first_mismatch(hist.download(), expected), -1) << "rank " << rank;
    EXPECT_TRUE(hist.guards_intact());
  });
}

// How a sort case's keys are drawn.
enum class keys_kind {
  ties,            // 0..999: equal keys straddle the boundaries between ranks
  all_equal,       // one key: the boundaries fall inside one run of ties
  sorted_across,   // the concatenation already in the sort's order: nothing needs to move
  reversed_across  // the concatenation in the opposite order: nearly everything moves
};

struct sort_case {
  layout shards = layout::uneven;
  keys_kind keys = keys_kind::ties;
  bool balanced = false;  // balanced_share's output sizes, or the input sizes kept
  ppat::order ord = ppat::order::ascending;
  bool in_place = false;  // out == in, values_out == values_in

  std::string name() const {
    const char* kinds[] = {"ties", "all equal", "sorted across ranks", "reversed across ranks"};
    return std::string(kinds[int(keys)]) +
           (shards == layout::all_on_last ? ", all on the last rank" : ", uneven shards") +
           (balanced ? ", balanced" : ", sizes kept") +
           (ord == ppat::order::ascending ? ", ascending" : ", descending") +
           (in_place ? ", in place" : "");
  }
};

std::vector<std::uint32_t> draw_sort_keys(std::size_t total, keys_kind kind, ppat::order ord) {
  if (kind == keys_kind::all_equal) return std::vector<std::uint32_t>(total, 4242u);
  auto keys = ppat_test::random_integers<std::uint32_t>(total, 0, 999);
  if (kind == keys_kind::ties) return keys;
  const bool ascending = (ord == ppat::order::ascending) == (kind == keys_kind::sorted_across);
  std::sort(keys.begin(), keys.end());
  if (!ascending) std::reverse(keys.begin(), keys.end());
  return keys;
}

// Values are the global input index: the expected output is a stable sort of the
// concatenation, cut into the output shards.
template <class Group>
void sort_on(Group& group, std::size_t total, const sort_case& c) {
  const int ranks = group.size();
  SCOPED_TRACE(std::to_string(ranks) + " ranks, n = " + std::to_string(total) + ", " + c.name());
  const auto keys = draw_sort_keys(total, c.keys, c.ord);
  const auto sizes = shard_sizes(ranks, total, c.shards);
  const auto first = offsets_of(sizes);
  std::vector<std::size_t> order_of(total);
  std::iota(order_of.begin(), order_of.end(), std::size_t{0});
  std::stable_sort(order_of.begin(), order_of.end(), [&](std::size_t a, std::size_t b) {
    return c.ord == ppat::order::ascending ? keys[a] < keys[b] : keys[a] > keys[b];
  });
  std::vector<std::size_t> out_sizes(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    out_sizes[std::size_t(r)] =
        c.balanced
            ? total / std::size_t(ranks) + (std::size_t(r) < total % std::size_t(ranks) ? 1 : 0)
            : sizes[std::size_t(r)];
  }
  const auto out_first = offsets_of(out_sizes);
  group.run([&](int rank, ncclComm_t comm, cudaStream_t stream) {
    const std::size_t n = sizes[std::size_t(rank)];
    std::vector<std::uint32_t> shard_keys(keys.begin() + first[rank],
                                          keys.begin() + first[rank + 1]);
    std::vector<std::uint64_t> shard_values(n);
    std::iota(shard_values.begin(), shard_values.end(), std::uint64_t(first[rank]));
    std::size_t n_out = n;
    if (c.balanced) {
      n_out = ppat::distributed::balanced_share(comm, n, stream);
      EXPECT_EQ(n_out, out_sizes[std::size_t(rank)]);
    }
    // In place, one buffer each holds the shard and then the output: max(n, n_out) items.
    const std::size_t in_size = c.in_place ? std::max(n, n_out) : n;
    ppat_test::device_buffer<std::uint32_t> keys_in(in_size, 16), keys_apart(n_out, 16);
    ppat_test::device_buffer<std::uint64_t> values_in(in_size, 16), values_apart(n_out, 16);
    keys_in.poison();
    values_in.poison();
    keys_apart.poison();
    values_apart.poison();
    PPAT_CUDA_OK(cudaMemcpy(keys_in.data(), shard_keys.data(), n * sizeof(std::uint32_t),
                            cudaMemcpyHostToDevice));
    PPAT_CUDA_OK(cudaMemcpy(values_in.data(), shard_values.data(), n * sizeof(std::uint64_t),
                            cudaMemcpyHostToDevice));
    auto& keys_out = c.in_place ? keys_in : keys_apart;
    auto& values_out = c.in_place ? values_in : values_apart;
    ppat::distributed::sort_pairs(comm, keys_in.data(), keys_out.data(), values_in.data(),
                                  values_out.data(), n, n_out, c.ord, stream);
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    std::vector<std::uint32_t> want_keys(n_out);
    std::vector<std::uint64_t> want_values(n_out);
    for (std::size_t i = 0; i < n_out; ++i) {
      want_values[i] = order_of[out_first[rank] + i];
      want_keys[i] = keys[want_values[i]];
    }
    auto got_keys = keys_out.download();
    auto got_values = values_out.download();
    got_keys.resize(n_out);
    got_values.resize(n_out);
    EXPECT_EQ(ppat_test::first_mismatch(got_keys, want_keys), -1) << "rank " << rank;
    EXPECT_EQ(ppat_test::first_mismatch(got_values, want_values), -1) << "values, rank " << rank;
    if (!c.in_place) {
      auto input = keys_in.download();
      EXPECT_EQ(ppat_test::first_mismatch(input, shard_keys), -1)
          << "keys_in changed, rank " << rank;
    }
    EXPECT_TRUE(keys_in.guards_intact() && values_in.guards_intact() &&
                keys_apart.guards_intact() && values_apart.guards_intact());
  });
}

// Every kind of keys and layout, both orders, kept and balanced sizes, apart and in place;
// above 100000 keys (or the sanitizers' budget) a few cases stand for the rest.
void sorts_on(int ranks, std::size_t total) {
  ranks_on_gpus group(ranks);
  ASSERT_TRUE(group.ready()) << "ncclCommInitAll: " << group.why();
  const bool large = total > 100000;
  for (layout shards : {layout::uneven, layout::all_on_last}) {
    for (keys_kind kind : {keys_kind::ties, keys_kind::all_equal, keys_kind::sorted_across,
                           keys_kind::reversed_across}) {
      for (bool balanced : {false, true}) {
        for (ppat::order ord : {ppat::order::ascending, ppat::order::descending}) {
          for (bool in_place : {false, true}) {
            const bool typical = shards == layout::uneven && kind == keys_kind::ties;
            if (large && !typical && (ord == ppat::order::descending || !balanced)) continue;
            if (!(typical && balanced) && ppat_test::over_item_budget(total)) continue;
            sort_on(group, total, sort_case{shards, kind, balanced, ord, in_place});
          }
        }
      }
    }
  }
}

// A rows x cols matrix of distinct values sharded by uneven row blocks (one empty), its
// transpose by uneven blocks of output rows.
void transpose_on(int ranks, std::size_t rows, std::size_t cols, layout shards = layout::uneven) {
  ranks_on_gpus group(ranks);
  ASSERT_TRUE(group.ready()) << "ncclCommInitAll: " << group.why();
  std::vector<std::uint32_t> matrix(rows * cols);
  std::iota(matrix.begin(), matrix.end(), 1u);
  const auto row_sizes = shard_sizes(ranks, rows, shards);
  const auto row_first = offsets_of(row_sizes);
  std::vector<std::size_t> out_sizes(static_cast<std::size_t>(ranks), cols / std::size_t(ranks));
  out_sizes[0] += cols % std::size_t(ranks);
  const auto out_first = offsets_of(out_sizes);
  group.run([&](int rank, ncclComm_t comm, cudaStream_t stream) {
    const std::size_t my_rows = row_sizes[std::size_t(rank)];
    const std::size_t my_out_rows = out_sizes[std::size_t(rank)];
    const std::vector<std::uint32_t> block(matrix.begin() + row_first[rank] * cols,
                                           matrix.begin() + row_first[rank + 1] * cols);
    ppat_test::device_buffer<std::uint32_t> in(block), out(my_out_rows * rows, 16);
    out.poison();
    ppat::distributed::transpose(comm, in.data(), out.data(), my_rows, cols, my_out_rows, stream);
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    std::vector<std::uint32_t> want(my_out_rows * rows);
    for (std::size_t c = 0; c < my_out_rows; ++c)
      for (std::size_t r = 0; r < rows; ++r)
        want[c * rows + r] = matrix[r * cols + out_first[rank] + c];
    EXPECT_EQ(ppat_test::first_mismatch(out.download(), want), -1) << "rank " << rank;
    EXPECT_TRUE(out.guards_intact());
  });
}

struct odd {
  __host__ __device__ bool operator()(int x) const { return (x & 1) != 0; }
};

void select_on(int ranks, std::size_t total, layout shards = layout::uneven) {
  ranks_on_gpus group(ranks);
  ASSERT_TRUE(group.ready()) << "ncclCommInitAll: " << group.why();
  const auto all = ppat_test::random_integers<int>(total, -1000000, 1000000);
  const auto sizes = shard_sizes(ranks, total, shards);
  const auto first = offsets_of(sizes);
  std::vector<std::size_t> kept_before(std::size_t(ranks) + 1, 0);
  for (int r = 0; r < ranks; ++r) {
    kept_before[std::size_t(r) + 1] =
        kept_before[std::size_t(r)] +
        std::size_t(std::count_if(all.begin() + first[r], all.begin() + first[r + 1], odd{}));
  }
  group.run([&](int rank, ncclComm_t comm, cudaStream_t stream) {
    const std::vector<int> shard(all.begin() + first[rank], all.begin() + first[rank + 1]);
    std::vector<int> want;
    std::copy_if(shard.begin(), shard.end(), std::back_inserter(want), odd{});
    ppat_test::device_buffer<int> in(shard), out(shard.size(), 16);
    ppat_test::device_buffer<std::size_t> counts(2, 4);
    out.poison();
    counts.poison();
    ppat::distributed::select_if(comm, in.data(), out.data(), counts.data(), counts.data() + 1,
                                 shard.size(), odd{}, stream);
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    const auto got_counts = counts.download();
    ASSERT_EQ(got_counts[0], want.size()) << "rank " << rank;
    EXPECT_EQ(got_counts[1], kept_before[std::size_t(rank)]) << "rank " << rank;
    auto got = out.download();
    got.resize(want.size());
    EXPECT_EQ(ppat_test::first_mismatch(got, want), -1) << "rank " << rank;
    EXPECT_TRUE(out.guards_intact() && counts.guards_intact());
  });
}

// The global selection cut into balanced shares: rank r gets selected items
// [placed_before[r], placed_before[r + 1]) of it, whichever ranks selected them.
void select_balanced_on(int ranks, std::size_t total, layout shards = layout::uneven) {
  ranks_on_gpus group(ranks);
  ASSERT_TRUE(group.ready()) << "ncclCommInitAll: " << group.why();
  const auto all = ppat_test::random_integers<int>(total, -1000000, 1000000);
  const auto sizes = shard_sizes(ranks, total, shards);
  const auto first = offsets_of(sizes);
  std::vector<int> selected;
  std::copy_if(all.begin(), all.end(), std::back_inserter(selected), odd{});
  std::vector<std::size_t> placed(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    placed[std::size_t(r)] = selected.size() / std::size_t(ranks) +
                             (std::size_t(r) < selected.size() % std::size_t(ranks) ? 1 : 0);
  }
  const auto placed_before = offsets_of(placed);
  group.run([&](int rank, ncclComm_t comm, cudaStream_t stream) {
    const std::vector<int> shard(all.begin() + first[rank], all.begin() + first[rank + 1]);
    const std::size_t capacity = ppat::distributed::balanced_share(comm, shard.size(), stream);
    ppat_test::device_buffer<int> in(shard), out(capacity, 16);
    ppat_test::device_buffer<std::size_t> counts(2, 4);
    out.poison();
    counts.poison();
    ppat::distributed::select_if_balanced(comm, in.data(), out.data(), counts.data(),
                                          counts.data() + 1, shard.size(), odd{}, stream);
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    const auto got_counts = counts.download();
    ASSERT_EQ(got_counts[0], placed[std::size_t(rank)]) << "rank " << rank;
    EXPECT_EQ(got_counts[1], placed_before[std::size_t(rank)]) << "rank " << rank;
    auto got = out.download();
    got.resize(placed[std::size_t(rank)]);
    const std::vector<int> want(selected.begin() + placed_before[rank],
                                selected.begin() + placed_before[rank + 1]);
    EXPECT_EQ(ppat_test::first_mismatch(got, want), -1) << "rank " << rank;
    EXPECT_TRUE(out.guards_intact() && counts.guards_intact());
  });
}

// Bytes from `offset` rounded up to a 16-byte boundary.
std::size_t aligned_16(std::size_t offset) {
  return (offset + 15) / 16 * 16;
}

// Both selections with `out` sized to what the rank receives and sitting directly below its
// input in one allocation, the two counts between them: a check that took `out` for n items
// (or for balanced_share's) would find it overlapping the counts and the input.
void result_sized_selections_on(int ranks, std::size_t total) {
  ranks_on_gpus group(ranks);
  ASSERT_TRUE(group.ready()) << "ncclCommInitAll: " << group.why();
  const auto all = ppat_test::random_integers<int>(total, -1000000, 1000000);
  const auto first = offsets_of(shard_sizes(ranks, total, layout::uneven));
  std::vector<int> selected;
  std::copy_if(all.begin(), all.end(), std::back_inserter(selected), odd{});
  group.run([&](int rank, ncclComm_t comm, cudaStream_t stream) {
    const std::vector<int> shard(all.begin() + first[rank], all.begin() + first[rank + 1]);
    const std::size_t n = shard.size();
    std::size_t kept_before = 0;
    for (int r = 0; r < rank; ++r)
      kept_before +=
          std::size_t(std::count_if(all.begin() + first[r], all.begin() + first[r + 1], odd{}));
    for (bool balanced : {false, true}) {
      SCOPED_TRACE(std::string(balanced ? "select_if_balanced" : "select_if") + ", rank " +
                   std::to_string(rank));
      std::vector<int> want;
      std::size_t before = kept_before;
      if (balanced) {
        const std::size_t ranks_count = std::size_t(ranks), r = std::size_t(rank);
        const std::size_t share = selected.size() / ranks_count;
        const std::size_t extra = selected.size() % ranks_count;
        before = r * share + std::min(r, extra);
        want.assign(selected.begin() + std::ptrdiff_t(before),
                    selected.begin() + std::ptrdiff_t(before + share + (r < extra ? 1 : 0)));
      } else {
        std::copy_if(shard.begin(), shard.end(), std::back_inserter(want), odd{});
      }
      const std::size_t counts_at = aligned_16(std::max<std::size_t>(want.size(), 1) * sizeof(int));
      const std::size_t in_at = counts_at + 2 * sizeof(std::size_t);
      ppat_test::device_buffer<unsigned char> memory(in_at + n * sizeof(int), 16);
      memory.poison();
      PPAT_CUDA_OK(
          cudaMemcpy(memory.data() + in_at, shard.data(), n * sizeof(int), cudaMemcpyHostToDevice));
      auto* const out = reinterpret_cast<int*>(memory.data());
      auto* const counts = reinterpret_cast<std::size_t*>(memory.data() + counts_at);
      const auto* const in = reinterpret_cast<const int*>(memory.data() + in_at);
      if (balanced) {
        ppat::distributed::select_if_balanced(comm, in, out, counts, counts + 1, n, odd{}, stream);
      } else {
        ppat::distributed::select_if(comm, in, out, counts, counts + 1, n, odd{}, stream);
      }
      EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
      const auto bytes = memory.download();
      std::vector<int> got(want.size());
      std::memcpy(got.data(), bytes.data(), got.size() * sizeof(int));
      std::size_t got_counts[2];
      std::memcpy(got_counts, bytes.data() + counts_at, sizeof(got_counts));
      EXPECT_EQ(got_counts[0], want.size());
      EXPECT_EQ(got_counts[1], before);
      EXPECT_EQ(ppat_test::first_mismatch(got, want), -1);
      EXPECT_TRUE(std::all_of(bytes.begin() + std::ptrdiff_t(want.size() * sizeof(int)),
                              bytes.begin() + std::ptrdiff_t(counts_at),
                              [](unsigned char b) { return b == ppat_test::poison_byte; }))
          << "written past the last item received";
      EXPECT_EQ(std::memcmp(bytes.data() + in_at, shard.data(), n * sizeof(int)), 0)
          << "the input changed";
      EXPECT_TRUE(memory.guards_intact());
    }
  });
}

// A sort whose keys_out and values_out hold exactly n_out items each, side by side in one
// allocation, on a rank where n_out < n: only an in-place sort's buffers hold max(n, n_out).
void sort_outputs_side_by_side_on_two_ranks() {
  ranks_on_gpus group(2);
  ASSERT_TRUE(group.ready()) << "ncclCommInitAll: " << group.why();
  const std::size_t sizes[] = {30011, 10007};
  const std::size_t total = sizes[0] + sizes[1];
  const auto keys = ppat_test::random_integers<std::uint32_t>(total, 0, 999);
  std::vector<std::size_t> order_of(total);
  std::iota(order_of.begin(), order_of.end(), std::size_t{0});
  std::stable_sort(order_of.begin(), order_of.end(),
                   [&](std::size_t a, std::size_t b) { return keys[a] < keys[b]; });
  group.run([&](int rank, ncclComm_t comm, cudaStream_t stream) {
    const std::size_t n = sizes[rank], first = rank == 0 ? 0 : sizes[0];
    const std::size_t n_out = ppat::distributed::balanced_share(comm, n, stream);
    const std::size_t out_first = rank == 0 ? 0 : total - n_out;
    const std::vector<std::uint32_t> shard_keys(keys.begin() + std::ptrdiff_t(first),
                                                keys.begin() + std::ptrdiff_t(first + n));
    std::vector<std::uint64_t> shard_values(n);
    std::iota(shard_values.begin(), shard_values.end(), std::uint64_t(first));
    ppat_test::device_buffer<std::uint32_t> keys_in(shard_keys);
    ppat_test::device_buffer<std::uint64_t> values_in(shard_values);
    const std::size_t values_at = aligned_16(n_out * sizeof(std::uint32_t));
    ppat_test::device_buffer<unsigned char> outputs(values_at + n_out * sizeof(std::uint64_t), 16);
    outputs.poison();
    auto* const keys_out = reinterpret_cast<std::uint32_t*>(outputs.data());
    auto* const values_out = reinterpret_cast<std::uint64_t*>(outputs.data() + values_at);
    ppat::distributed::sort_pairs(comm, keys_in.data(), keys_out, values_in.data(), values_out, n,
                                  n_out, ppat::order::ascending, stream);
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    const auto bytes = outputs.download();
    std::vector<std::uint32_t> got_keys(n_out), want_keys(n_out);
    std::vector<std::uint64_t> got_values(n_out), want_values(n_out);
    std::memcpy(got_keys.data(), bytes.data(), n_out * sizeof(std::uint32_t));
    std::memcpy(got_values.data(), bytes.data() + values_at, n_out * sizeof(std::uint64_t));
    for (std::size_t i = 0; i < n_out; ++i) {
      want_values[i] = order_of[out_first + i];
      want_keys[i] = keys[want_values[i]];
    }
    EXPECT_EQ(ppat_test::first_mismatch(got_keys, want_keys), -1) << "rank " << rank;
    EXPECT_EQ(ppat_test::first_mismatch(got_values, want_values), -1) << "rank " << rank;
    EXPECT_TRUE(outputs.guards_intact()) << "rank " << rank;
  });
}

TEST(distributed, one_rank_is_the_single_gpu_call) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{1000003}}) {
    reduce_on(1, n);
    scan_on<false>(1, n);
    scan_on<true>(1, n);
    histogram_on(1, n);
    sorts_on(1, n);
  }
  transpose_on(1, 1000, 777);
  transpose_on(1, 1, 5000);
  select_on(1, 1000003);
  select_balanced_on(1, 1000003);
  select_balanced_on(1, 0);
  result_sized_selections_on(1, 1000003);
}

TEST(distributed, two_ranks_with_uneven_and_empty_shards) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  if (gpu_count() < 2) GTEST_SKIP() << "2 GPUs needed, " << gpu_count() << " seen";
  for (std::size_t n : {std::size_t{1}, std::size_t{5000}, std::size_t{3000017}}) {
    reduce_on(2, n);
    scan_on<false>(2, n);
    scan_on<true>(2, n);
    histogram_on(2, n);
    sorts_on(2, n);
  }
  transpose_on(2, 1000, 777);
  transpose_on(2, 3, 5000);
  transpose_on(2, 4099, 1);
  select_on(2, 1000003);
  select_on(2, 5);
  select_balanced_on(2, 1000003);
  select_balanced_on(2, 5);
  result_sized_selections_on(2, 1000003);
  sort_outputs_side_by_side_on_two_ranks();
}

TEST(distributed, two_ranks_with_every_item_on_one_rank) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  if (gpu_count() < 2) GTEST_SKIP() << "2 GPUs needed, " << gpu_count() << " seen";
  const std::size_t n = 200003;
  reduce_on(2, n, layout::all_on_last);
  scan_on<false>(2, n, layout::all_on_last);
  scan_on<true>(2, n, layout::all_on_last);
  histogram_on(2, n, layout::all_on_last);
  select_on(2, n, layout::all_on_last);
  select_balanced_on(2, n, layout::all_on_last);
  transpose_on(2, 700, 333, layout::all_on_last);
}

TEST(distributed, bad_arguments_on_one_rank_throw_on_every_rank) {
  PPAT_REQUIRE_GPU();
  const int ranks = std::min(gpu_count(), 2);
  ranks_on_gpus group(ranks);
  ASSERT_TRUE(group.ready()) << "ncclCommInitAll: " << group.why();
  group.run([&](int rank, ncclComm_t comm, cudaStream_t stream) {
    ppat_test::device_buffer<int> in(std::vector<int>(100, 1)), out(1);
    // The last rank passes a null input with items to read.
    const int* input = rank == ranks - 1 ? nullptr : in.data();
    EXPECT_THROW(ppat::distributed::reduce(comm, input, out.data(), 100, 0, ppat::plus{}, stream),
                 std::invalid_argument)
        << "rank " << rank;
  });
}

// A 16-byte value: an item's index and three words made from it, so that a value torn apart or
// taken from the wrong slot shows.
struct index_and_checks {
  std::uint32_t index, inverted, hashed, mixed;
};

template <class V>
V value_of_index(std::uint32_t i) {
  if constexpr (std::is_same_v<V, index_and_checks>)
    return {i, ~i, i * 2654435761u, i ^ 0x5bd1e995u};
  else
    return V(i);
}

// merge_runs alone (one GPU is enough), on runs of uneven sizes that are each sorted (one
// empty), with many ties across runs: the output must be the stable sort of their
// concatenation. Values are the items' indices.
// The types choose the tile: 17 items a thread up to 4 bytes an item (u32 keys), 11 up to 8
// (f32/u32), 7 up to 16 (u64/u64), 5 for 17 bytes (i8 with a 16-byte value), 3 for 24.
template <class K, class V>
void check_received_runs_merge(const char* what, long long low, long long high) {
  constexpr bool has_values = !std::is_same_v<V, ppat::detail::no_values>;
  for (int runs : {2, 3, 5, 8}) {
    for (ppat::order ord : {ppat::order::ascending, ppat::order::descending}) {
      const auto before = [&](const K& a, const K& b) {
        return ord == ppat::order::ascending ? a < b : a > b;
      };
      std::vector<std::size_t> run_first(1, 0);
      std::vector<K> keys;
      for (int r = 0; r < runs; ++r) {
        const std::size_t size = r == 1 ? 0 : std::size_t(100000 + 7919 * r);
        auto run = ppat_test::random_integers<K>(size, low, high);
        std::stable_sort(run.begin(), run.end(), before);
        keys.insert(keys.end(), run.begin(), run.end());
        run_first.push_back(keys.size());
      }
      std::vector<std::uint32_t> order_of(keys.size());
      std::iota(order_of.begin(), order_of.end(), 0u);
      std::stable_sort(order_of.begin(), order_of.end(),
                       [&](std::uint32_t a, std::uint32_t b) { return before(keys[a], keys[b]); });
      std::vector<K> want_keys(keys.size());
      for (std::size_t i = 0; i < keys.size(); ++i)
        want_keys[i] = keys[order_of[i]];
      ppat_test::device_buffer<K> keys_in(keys), keys_out(keys.size(), 16);
      keys_out.poison();
      std::vector<V> values, want_values;
      if constexpr (has_values) {
        for (std::size_t i = 0; i < keys.size(); ++i) {
          values.push_back(value_of_index<V>(std::uint32_t(i)));
          want_values.push_back(value_of_index<V>(order_of[i]));
        }
      }
      ppat_test::device_buffer<V> values_in(values), values_out(values.size(), 16);
      values_out.poison();
      {
        const ppat::detail::call_context call(0, "merge_runs");
        ppat::distributed::detail::merge_runs(
            keys_in.data(), has_values ? values_in.data() : nullptr, run_first, keys_out.data(),
            has_values ? values_out.data() : nullptr, ord, call);
      }
      ppat_test::expect_no_cuda_error();
      EXPECT_EQ(ppat_test::first_mismatch(keys_out.download(), want_keys), -1)
          << what << ", " << runs << " runs";
      EXPECT_EQ(ppat_test::first_mismatch(values_out.download(), want_values), -1)
          << what << ", " << runs << " runs";
      EXPECT_TRUE(keys_out.guards_intact() && values_out.guards_intact()) << what;
    }
  }
}

TEST(distributed, received_runs_merge_stably) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  check_received_runs_merge<float, std::uint32_t>("f32 / u32", -300, 300);
  check_received_runs_merge<std::uint32_t, ppat::detail::no_values>("u32 keys", 0, 1000);
  check_received_runs_merge<std::uint64_t, std::uint64_t>("u64 / u64", 0, 3000);
  check_received_runs_merge<double, index_and_checks>("f64 / 16-byte struct", -2000, 2000);
  check_received_runs_merge<std::int8_t, index_and_checks>("i8 / 16-byte struct", -100, 100);
}

TEST(distributed, bin_counts_that_differ_between_ranks_throw_on_every_rank) {
  PPAT_REQUIRE_GPU();
  if (gpu_count() < 2) GTEST_SKIP() << "2 GPUs needed, " << gpu_count() << " seen";
  ranks_on_gpus group(2);
  ASSERT_TRUE(group.ready()) << "ncclCommInitAll: " << group.why();
  group.run([&](int rank, ncclComm_t comm, cudaStream_t stream) {
    ppat_test::device_buffer<int> samples(std::vector<int>(100, 1));
    ppat_test::device_buffer<unsigned> hist(20);
    const int bins = rank == 0 ? 10 : 20;
    EXPECT_THROW(ppat::distributed::histogram_even(comm, samples.data(), 100, hist.data(), bins, 0,
                                                   20, stream),
                 std::invalid_argument)
        << "rank " << rank;
  });
}

// The certain overlaps of a balanced selection, whose own selection runs on temporaries:
// a count inside the input, the global position on the output's first item.
TEST(distributed, a_balanced_selections_counts_must_lie_apart) {
  PPAT_REQUIRE_GPU();
  ranks_on_gpus group(1);
  ASSERT_TRUE(group.ready()) << "ncclCommInitAll: " << group.why();
  group.run([&](int, ncclComm_t comm, cudaStream_t stream) {
    ppat_test::device_buffer<int> in(ppat_test::random_integers<int>(100, -1000, 1000)), out(100);
    ppat_test::device_buffer<std::size_t> counts(2);
    auto* const count_in_input = reinterpret_cast<std::size_t*>(in.data() + 10);
    auto* const on_first_output = reinterpret_cast<std::size_t*>(out.data());
    EXPECT_THROW(ppat::distributed::select_if_balanced(comm, in.data(), out.data(), count_in_input,
                                                       counts.data(), 100, odd{}, stream),
                 std::invalid_argument);
    EXPECT_THROW(ppat::distributed::select_if_balanced(comm, in.data(), out.data(), counts.data(),
                                                       on_first_output, 100, odd{}, stream),
                 std::invalid_argument);
  });
}

TEST(distributed, a_null_communicator_is_rejected) {
  int value = 0;
  EXPECT_THROW(ppat::distributed::reduce(nullptr, &value, &value, 1), std::invalid_argument);
}

TEST(distributed, an_in_place_sort_moves_values_in_place_too) {
  PPAT_REQUIRE_GPU();
  ranks_on_gpus group(1);
  ASSERT_TRUE(group.ready()) << "ncclCommInitAll: " << group.why();
  group.run([&](int, ncclComm_t comm, cudaStream_t stream) {
    ppat_test::device_buffer<int> keys(100), values(100), other(100);
    EXPECT_THROW(
        ppat::distributed::sort_pairs(comm, keys.data(), keys.data(), values.data(), other.data(),
                                      100, 100, ppat::order::ascending, stream),
        std::invalid_argument);
    EXPECT_THROW(ppat::distributed::sort_keys(comm, keys.data(), keys.data() + 1, 100, 100,
                                              ppat::order::ascending, stream),
                 std::invalid_argument);
  });
}

// What an NCCL failure becomes: ppat::nccl_error with NCCL's code, naming the ppat function,
// the NCCL call and NCCL's message.
TEST(distributed, nccl_errors_name_the_call) {
  try {
    ppat::distributed::detail::check_nccl(ncclSystemError, nullptr, "ppat::distributed::reduce",
                                          "ncclAllReduce");
    ADD_FAILURE() << "no exception";
  } catch (const ppat::nccl_error& error) {
    const std::string message = error.what();
    EXPECT_EQ(error.code(), ncclSystemError);
    EXPECT_NE(message.find("ppat::distributed::reduce"), std::string::npos) << message;
    EXPECT_NE(message.find("ncclAllReduce"), std::string::npos) << message;
    EXPECT_NE(message.find(ncclGetErrorString(ncclSystemError)), std::string::npos) << message;
  }
  EXPECT_NO_THROW(ppat::distributed::detail::check_nccl(ncclSuccess, nullptr, "f", "g"));
}

// A real one: a revoked communicator takes no more work, and a ppat call on it throws.
TEST(distributed, a_call_on_a_revoked_communicator_throws_nccl_error) {
  PPAT_REQUIRE_GPU();
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
  ranks_on_gpus group(1);
  ASSERT_TRUE(group.ready()) << "ncclCommInitAll: " << group.why();
  group.run([&](int, ncclComm_t comm, cudaStream_t stream) {
    const ncclResult_t revoked = ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT);
    ASSERT_TRUE(revoked == ncclSuccess || revoked == ncclInProgress) << ncclGetErrorString(revoked);
    ncclResult_t state = ncclInProgress;
    while (state == ncclInProgress)
      ASSERT_EQ(ncclCommGetAsyncError(comm, &state), ncclSuccess);
    ppat_test::device_buffer<long long> in(std::vector<long long>(1000, 3)), out(1);
    try {
      ppat::distributed::reduce(comm, in.data(), out.data(), 1000, 0ll, ppat::plus{}, stream);
      ADD_FAILURE() << "no exception";
    } catch (const ppat::nccl_error& error) {
      EXPECT_NE(std::string(error.what()).find("ppat::distributed::reduce"), std::string::npos)
          << error.what();
    }
  });
#else
  GTEST_SKIP() << "ncclCommRevoke needs NCCL 2.28";
#endif
}

// ---- One process a rank --------------------------------------------------------------------

// This process's rank of a communicator made by ncclCommInitRank, with ranks_on_gpus's
// run(): `body` runs for this rank only.
class rank_of_this_process {
 public:
  rank_of_this_process(int ranks, int rank, const ncclUniqueId& id) : ranks_(ranks), rank_(rank) {
    if (cudaSetDevice(rank) != cudaSuccess) return;
    status_ = ncclCommInitRank(&comm_, ranks, id, rank);
  }
  ~rank_of_this_process() {
    if (comm_ != nullptr) (void)ncclCommDestroy(comm_);
  }
  bool ready() const { return comm_ != nullptr && status_ == ncclSuccess; }
  const char* why() const { return ncclGetErrorString(status_); }
  int size() const { return ranks_; }

  void run(const std::function<void(int rank, ncclComm_t comm, cudaStream_t stream)>& body) {
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    body(rank_, comm_, stream);
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
  }

 private:
  int ranks_;
  int rank_;
  ncclComm_t comm_ = nullptr;
  ncclResult_t status_ = ncclInternalError;
};

std::string hex_of(const ncclUniqueId& id) {
  std::string text;
  char byte[3];
  for (char c : id.internal) {
    std::snprintf(byte, sizeof(byte), "%02x", unsigned(static_cast<unsigned char>(c)));
    text += byte;
  }
  return text;
}

ncclUniqueId id_of_hex(const std::string& text) {
  ncclUniqueId id{};
  for (std::size_t i = 0; i < sizeof(id.internal) && 2 * i + 1 < text.size(); ++i)
    id.internal[i] = char(std::stoi(text.substr(2 * i, 2), nullptr, 16));
  return id;
}

// A rank started by one_process_per_gpu below (skipped when run any other way): the same
// sorts as the threads' ranks run, on data every rank draws alike from the shared seed.
TEST(distributed_process, one_rank) {
  const char* rank_text = std::getenv("PPAT_TEST_RANK");
  const char* ranks_text = std::getenv("PPAT_TEST_RANKS");
  const char* id_text = std::getenv("PPAT_TEST_NCCL_ID");
  if (rank_text == nullptr || ranks_text == nullptr || id_text == nullptr)
    GTEST_SKIP() << "a rank of distributed.one_process_per_gpu, started by it";
  PPAT_TRACE_SEED();
  rank_of_this_process group(std::atoi(ranks_text), std::atoi(rank_text), id_of_hex(id_text));
  ASSERT_TRUE(group.ready()) << "ncclCommInitRank: " << group.why();
  for (bool in_place : {false, true}) {
    sort_on(group, 300007,
            sort_case{layout::uneven, keys_kind::ties, true, ppat::order::ascending, in_place});
  }
}

// One process a GPU: this binary started once a rank with the unique id, the rank and the
// seed in its environment, each running distributed_process.one_rank.
TEST(distributed, one_process_per_gpu) {
  PPAT_REQUIRE_GPU();
  const int ranks = std::min(gpu_count(), 2);
  ncclUniqueId id{};
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  char self[4096] = {};
  ASSERT_GT(readlink("/proc/self/exe", self, sizeof(self) - 1), 0);
  std::vector<pid_t> children;
  for (int rank = 0; rank < ranks; ++rank) {
    std::vector<std::string> environment;
    for (char** entry = environ; *entry != nullptr; ++entry)
      environment.emplace_back(*entry);
    environment.push_back("PPAT_TEST_RANK=" + std::to_string(rank));
    environment.push_back("PPAT_TEST_RANKS=" + std::to_string(ranks));
    environment.push_back("PPAT_TEST_NCCL_ID=" + hex_of(id));
    environment.push_back("PPAT_TEST_SEED=" + std::to_string(ppat_test::run_seed()));
    std::vector<char*> envp;
    for (auto& entry : environment)
      envp.push_back(entry.data());
    envp.push_back(nullptr);
    std::string filter = "--gtest_filter=distributed_process.one_rank";
    char* argv[] = {self, filter.data(), nullptr};
    pid_t child = 0;
    ASSERT_EQ(posix_spawn(&child, self, nullptr, nullptr, argv, envp.data()), 0);
    children.push_back(child);
  }
  for (std::size_t rank = 0; rank < children.size(); ++rank) {
    int status = 0;
    ASSERT_EQ(waitpid(children[rank], &status, 0), children[rank]);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "rank " << rank << "'s process: status " << status;
  }
}

// ---- More keys than one GPU can sort ---------------------------------------------------------

__host__ __device__ inline std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

__global__ void draw_huge_keys(std::uint32_t* keys, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    keys[i] = std::uint32_t(mix(seed + i));
}

// sums[0], sums[1]: two hashes of every key, added (the same for any order of the same
// keys, and changed by a lost or duplicated key); sums[2]: keys out of ascending order.
__global__ void fingerprint_keys(const std::uint32_t* keys, std::size_t n,
                                 unsigned long long* sums) {
  unsigned long long first = 0, second = 0, descents = 0;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    first += mix(keys[i]);
    second += mix(std::uint64_t(keys[i]) * 0x9e3779b97f4a7c15ull + 1);
    if (i > 0 && keys[i - 1] > keys[i]) ++descents;
  }
  atomicAdd(&sums[0], first);
  atomicAdd(&sums[1], second);
  atomicAdd(&sums[2], descents);
}

// 2^34 u32 keys a GPU, sorted in place: 64 GiB of keys and a temporary as large, about all an
// H200 holds (twice that total is more than one GPU can sort). On the device: the same
// fingerprint of all ranks' keys before and after, every shard ascending, and each shard's
// first key no lower than the last key of the rank before.
TEST(distributed, huge_in_place_sort_of_2_pow_34_keys_a_gpu) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  const std::size_t n = std::size_t{1} << 34;
  const int ranks = std::min(gpu_count(), 2);
  for (int rank = 0; rank < ranks; ++rank) {
    std::size_t free_bytes = 0, total_bytes = 0;
    PPAT_CUDA_OK(cudaSetDevice(rank));
    PPAT_CUDA_OK(cudaMemGetInfo(&free_bytes, &total_bytes));
    if (free_bytes < 2 * n * sizeof(std::uint32_t) + (std::size_t{3} << 30))
      GTEST_SKIP() << "GPU " << rank << " has " << (free_bytes >> 30) << " GiB free";
  }
  PPAT_CUDA_OK(cudaSetDevice(0));
  ranks_on_gpus group(ranks);
  ASSERT_TRUE(group.ready()) << "ncclCommInitAll: " << group.why();
  std::vector<std::vector<unsigned long long>> before(static_cast<std::size_t>(ranks)),
      after(before);
  std::vector<std::uint32_t> lowest(static_cast<std::size_t>(ranks)),
      highest(static_cast<std::size_t>(ranks));
  group.run([&](int rank, ncclComm_t comm, cudaStream_t stream) {
    ppat_test::device_buffer<std::uint32_t> keys(n);
    ppat_test::device_buffer<unsigned long long> sums(6);
    PPAT_CUDA_OK(cudaMemsetAsync(sums.data(), 0, 6 * sizeof(unsigned long long), stream));
    draw_huge_keys<<<4096, 256, 0, stream>>>(keys.data(), n,
                                             ppat_test::run_seed() + std::uint64_t(rank) * n);
    fingerprint_keys<<<4096, 256, 0, stream>>>(keys.data(), n, sums.data());
    ppat::distributed::sort_keys(comm, keys.data(), keys.data(), n, n, ppat::order::ascending,
                                 stream);
    fingerprint_keys<<<4096, 256, 0, stream>>>(keys.data(), n, sums.data() + 3);
    PPAT_CUDA_OK(cudaMemcpyAsync(&lowest[std::size_t(rank)], keys.data(), sizeof(std::uint32_t),
                                 cudaMemcpyDeviceToHost, stream));
    PPAT_CUDA_OK(cudaMemcpyAsync(&highest[std::size_t(rank)], keys.data() + n - 1,
                                 sizeof(std::uint32_t), cudaMemcpyDeviceToHost, stream));
    PPAT_CUDA_OK(cudaStreamSynchronize(stream));
    const auto all = sums.download();
    before[std::size_t(rank)].assign(all.begin(), all.begin() + 3);
    after[std::size_t(rank)].assign(all.begin() + 3, all.end());
  });
  unsigned long long sum_before[2] = {}, sum_after[2] = {};
  for (int rank = 0; rank < ranks; ++rank) {
    for (int h = 0; h < 2; ++h) {
      sum_before[h] += before[std::size_t(rank)][std::size_t(h)];
      sum_after[h] += after[std::size_t(rank)][std::size_t(h)];
    }
    EXPECT_EQ(after[std::size_t(rank)][2], 0u) << "keys out of order on rank " << rank;
    if (rank > 0) {
      EXPECT_LE(highest[std::size_t(rank) - 1], lowest[std::size_t(rank)])
          << "rank " << rank << " starts below the end of rank " << rank - 1;
    }
  }
  EXPECT_EQ(sum_before[0], sum_after[0]) << "the keys changed";
  EXPECT_EQ(sum_before[1], sum_after[1]) << "the keys changed";
  EXPECT_GT(before[0][2], 0u) << "the drawn keys were sorted already";
}

}  // namespace
