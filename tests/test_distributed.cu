// ppat::distributed on every visible GPU, one rank each, one host thread a rank
// (ncclCommInitAll): each call against the single-GPU reference on the concatenation of the
// shards, with shards of uneven sizes, an empty one, and bad arguments on one rank only.
#include <ppat/distributed.cuh>

#include <algorithm>
#include <functional>
#include <iterator>
#include <numeric>
#include <thread>
#include <vector>

#include "support.hpp"

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

// Shard sizes for `ranks` ranks over `total` items: uneven, and the second shard empty
// where there are two or more.
std::vector<std::size_t> uneven_shards(int ranks, std::size_t total) {
  std::vector<std::size_t> sizes(std::size_t(ranks), 0);
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

void reduce_on(int ranks, std::size_t total) {
  ranks_on_gpus group(ranks);
  ASSERT_TRUE(group.ready()) << "ncclCommInitAll: " << group.why();
  const auto all = ppat_test::random_integers<long long>(total, -1000000, 1000000);
  const auto sizes = uneven_shards(ranks, total);
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
void scan_on(int ranks, std::size_t total) {
  ranks_on_gpus group(ranks);
  ASSERT_TRUE(group.ready()) << "ncclCommInitAll: " << group.why();
  const auto all = ppat_test::random_integers<int>(total, -1000, 1000);
  const auto sizes = uneven_shards(ranks, total);
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

void histogram_on(int ranks, std::size_t total) {
  ranks_on_gpus group(ranks);
  ASSERT_TRUE(group.ready()) << "ncclCommInitAll: " << group.why();
  const int bins = 1000;
  const auto all = ppat_test::random_integers<int>(total, -50, 1100);  // some outside [0, 1000)
  const auto sizes = uneven_shards(ranks, total);
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

// Keys with many ties (so that equal keys straddle the boundaries between ranks), values the
// global input index: the expected output is a stable sort of the concatenation, cut into
// the output shards.
void sort_on(int ranks, std::size_t total, bool balanced, ppat::order ord) {
  ranks_on_gpus group(ranks);
  ASSERT_TRUE(group.ready()) << "ncclCommInitAll: " << group.why();
  const auto keys = ppat_test::random_integers<std::uint32_t>(total, 0, 999);
  const auto sizes = uneven_shards(ranks, total);
  const auto first = offsets_of(sizes);
  std::vector<std::size_t> order_of(total);
  std::iota(order_of.begin(), order_of.end(), std::size_t{0});
  std::stable_sort(order_of.begin(), order_of.end(), [&](std::size_t a, std::size_t b) {
    return ord == ppat::order::ascending ? keys[a] < keys[b] : keys[a] > keys[b];
  });
  std::vector<std::size_t> out_sizes(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    out_sizes[std::size_t(r)] = balanced ? total / std::size_t(ranks) +
                                               (std::size_t(r) < total % std::size_t(ranks) ? 1 : 0)
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
    if (balanced) {
      n_out = ppat::distributed::balanced_share(comm, n, stream);
      EXPECT_EQ(n_out, out_sizes[std::size_t(rank)]);
    }
    ppat_test::device_buffer<std::uint32_t> keys_in(shard_keys), keys_out(n_out, 16);
    ppat_test::device_buffer<std::uint64_t> values_in(shard_values), values_out(n_out, 16);
    keys_out.poison();
    values_out.poison();
    ppat::distributed::sort_pairs(comm, keys_in.data(), keys_out.data(), values_in.data(),
                                  values_out.data(), n, n_out, ord, stream);
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    std::vector<std::uint32_t> want_keys(n_out);
    std::vector<std::uint64_t> want_values(n_out);
    for (std::size_t i = 0; i < n_out; ++i) {
      want_values[i] = order_of[out_first[rank] + i];
      want_keys[i] = keys[want_values[i]];
    }
    EXPECT_EQ(ppat_test::first_mismatch(keys_out.download(), want_keys), -1) << "rank " << rank;
    EXPECT_EQ(ppat_test::first_mismatch(values_out.download(), want_values), -1)
        << "values, rank " << rank;
    EXPECT_TRUE(keys_out.guards_intact() && values_out.guards_intact());
  });
}

// A rows x cols matrix of distinct values sharded by uneven row blocks (one empty), its
// transpose by uneven blocks of output rows.
void transpose_on(int ranks, std::size_t rows, std::size_t cols) {
  ranks_on_gpus group(ranks);
  ASSERT_TRUE(group.ready()) << "ncclCommInitAll: " << group.why();
  std::vector<std::uint32_t> matrix(rows * cols);
  std::iota(matrix.begin(), matrix.end(), 1u);
  const auto row_sizes = uneven_shards(ranks, rows);
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

void select_on(int ranks, std::size_t total) {
  ranks_on_gpus group(ranks);
  ASSERT_TRUE(group.ready()) << "ncclCommInitAll: " << group.why();
  const auto all = ppat_test::random_integers<int>(total, -1000000, 1000000);
  const auto sizes = uneven_shards(ranks, total);
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

TEST(distributed, one_rank_is_the_single_gpu_call) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{1000003}}) {
    reduce_on(1, n);
    scan_on<false>(1, n);
    scan_on<true>(1, n);
    histogram_on(1, n);
    sort_on(1, n, false, ppat::order::ascending);
    sort_on(1, n, true, ppat::order::descending);
  }
  transpose_on(1, 1000, 777);
  transpose_on(1, 1, 5000);
  select_on(1, 1000003);
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
    for (bool balanced : {false, true}) {
      sort_on(2, n, balanced, ppat::order::ascending);
      sort_on(2, n, balanced, ppat::order::descending);
    }
  }
  transpose_on(2, 1000, 777);
  transpose_on(2, 3, 5000);
  transpose_on(2, 4099, 1);
  select_on(2, 1000003);
  select_on(2, 5);
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

// The merge of the received runs, alone (one GPU is enough): runs of uneven sizes, some
// empty, keys with many ties, values the position in the concatenation.
TEST(distributed, received_runs_merge_stably) {
  PPAT_REQUIRE_GPU();
  PPAT_TRACE_SEED();
  for (int runs : {2, 3, 5, 8}) {
    for (ppat::order ord : {ppat::order::ascending, ppat::order::descending}) {
      std::vector<std::size_t> run_first(1, 0);
      std::vector<float> keys;
      for (int r = 0; r < runs; ++r) {
        const std::size_t size = r == 1 ? 0 : std::size_t(100000 + 7919 * r);
        auto run = ppat_test::random_integers<float>(size, -300, 300);
        std::stable_sort(run.begin(), run.end(), [&](float a, float b) {
          return ord == ppat::order::ascending ? a < b : a > b;
        });
        keys.insert(keys.end(), run.begin(), run.end());
        run_first.push_back(keys.size());
      }
      std::vector<std::uint32_t> values(keys.size());
      std::iota(values.begin(), values.end(), 0u);
      std::vector<std::uint32_t> order_of = values;
      std::stable_sort(order_of.begin(), order_of.end(), [&](std::uint32_t a, std::uint32_t b) {
        return ord == ppat::order::ascending ? keys[a] < keys[b] : keys[a] > keys[b];
      });
      std::vector<float> want_keys(keys.size());
      for (std::size_t i = 0; i < keys.size(); ++i)
        want_keys[i] = keys[order_of[i]];
      ppat_test::device_buffer<float> keys_in(keys), keys_out(keys.size(), 16);
      ppat_test::device_buffer<std::uint32_t> values_in(values), values_out(keys.size(), 16);
      keys_out.poison();
      values_out.poison();
      {
        const ppat::detail::call_context call(0, "merge_runs");
        ppat::distributed::detail::merge_runs(keys_in.data(), values_in.data(), run_first,
                                              keys_out.data(), values_out.data(), ord, call);
      }
      ppat_test::expect_no_cuda_error();
      EXPECT_EQ(ppat_test::first_mismatch(keys_out.download(), want_keys), -1) << runs << " runs";
      EXPECT_EQ(ppat_test::first_mismatch(values_out.download(), order_of), -1) << runs << " runs";
      EXPECT_TRUE(keys_out.guards_intact() && values_out.guards_intact());
    }
  }
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

TEST(distributed, a_null_communicator_is_rejected) {
  int value = 0;
  EXPECT_THROW(ppat::distributed::reduce(nullptr, &value, &value, 1), std::invalid_argument);
}

}  // namespace
