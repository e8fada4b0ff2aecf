// `ppat bench --pattern distributed`: every visible GPU a rank (ncclCommInitAll, a host
// thread a rank), each distributed call against the single-GPU call on the same total on
// GPU 0, and the NCCL all-to-all bandwidth of the same run as the exchange's ceiling.
//
// A distributed run's time is the slowest rank's, between events on its stream, the ranks
// released together by a host barrier; the median of the runs is reported.
#include <ppat/distributed.cuh>

#include <cub/device/device_merge.cuh>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <numeric>
#include <thread>
#include <vector>

#include "harness.hpp"

namespace ppat_bench {
namespace {

// The ranks' threads meet here between runs.
class barrier {
 public:
  explicit barrier(int parties) : parties_(parties) {}
  void arrive_and_wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    const long long generation = generation_;
    if (++arrived_ == parties_) {
      arrived_ = 0;
      ++generation_;
      released_.notify_all();
      return;
    }
    released_.wait(lock, [&] { return generation_ != generation; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable released_;
  const int parties_;
  int arrived_ = 0;
  long long generation_ = 0;
};

void check_nccl(ncclResult_t status, const char* what) {
  if (status != ncclSuccess) {
    throw std::runtime_error(std::string(what) + ": " + ncclGetErrorString(status));
  }
}

// One rank: its GPU's stream and events, and the setup and runs of the case being timed.
struct rank_state {
  int rank = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
};

class ranks_on_gpus {
 public:
  explicit ranks_on_gpus(int count) : ranks_(std::size_t(count)), meeting_(count) {
    std::vector<ncclComm_t> comms(static_cast<std::size_t>(count));
    std::vector<int> devices(static_cast<std::size_t>(count));
    std::iota(devices.begin(), devices.end(), 0);
    check_nccl(ncclCommInitAll(comms.data(), count, devices.data()), "ncclCommInitAll");
    for (int r = 0; r < count; ++r) {
      rank_state& state = ranks_[std::size_t(r)];
      state.rank = r;
      state.comm = comms[std::size_t(r)];
      check(cudaSetDevice(r), "cudaSetDevice");
      check(cudaStreamCreateWithFlags(&state.stream, cudaStreamNonBlocking), "cudaStreamCreate");
      check(cudaEventCreate(&state.start), "cudaEventCreate");
      check(cudaEventCreate(&state.stop), "cudaEventCreate");
    }
    check(cudaSetDevice(0), "cudaSetDevice");
  }
  ~ranks_on_gpus() {
    for (rank_state& state : ranks_) {
      (void)cudaSetDevice(state.rank);
      (void)cudaEventDestroy(state.start);
      (void)cudaEventDestroy(state.stop);
      (void)cudaStreamDestroy(state.stream);
      (void)ncclCommDestroy(state.comm);
    }
    (void)cudaSetDevice(0);
  }

  // `prepare(rank)` on each rank's thread, then `runs` timed calls of `call(rank)`; returns
  // the median over the runs of the slowest rank's milliseconds.
  double median_ms(const std::function<void(const rank_state&)>& prepare,
                   const std::function<void(const rank_state&)>& call, int runs) {
    std::vector<std::vector<float>> ms(ranks_.size());
    std::vector<std::thread> threads;
    std::mutex failure_mutex;
    std::string failure;
    for (rank_state& state : ranks_) {
      threads.emplace_back([&, r = state.rank] {
        const rank_state& mine = ranks_[std::size_t(r)];
        try {
          check(cudaSetDevice(r), "cudaSetDevice");
          prepare(mine);
          call(mine);  // warm-up: the pool, NCCL's buffers
          check(cudaStreamSynchronize(mine.stream), "warm-up");
          for (int run = 0; run < runs; ++run) {
            meeting_.arrive_and_wait();
            check(cudaEventRecord(mine.start, mine.stream), "cudaEventRecord");
            call(mine);
            check(cudaEventRecord(mine.stop, mine.stream), "cudaEventRecord");
            check(cudaEventSynchronize(mine.stop), "cudaEventSynchronize");
            float elapsed = 0;
            check(cudaEventElapsedTime(&elapsed, mine.start, mine.stop), "cudaEventElapsedTime");
            ms[std::size_t(r)].push_back(elapsed);
          }
        } catch (const std::exception& error) {
          const std::lock_guard<std::mutex> lock(failure_mutex);
          failure = error.what();
        }
      });
    }
    for (auto& thread : threads)
      thread.join();
    check(cudaSetDevice(0), "cudaSetDevice");
    if (!failure.empty()) throw std::runtime_error(failure);
    std::vector<float> slowest(std::size_t(runs), 0);
    for (const auto& rank_ms : ms)
      for (int run = 0; run < runs; ++run)
        slowest[std::size_t(run)] = std::max(slowest[std::size_t(run)], rank_ms[std::size_t(run)]);
    std::sort(slowest.begin(), slowest.end());
    return slowest[slowest.size() / 2];
  }

 private:
  std::vector<rank_state> ranks_;
  barrier meeting_;
};

// The single-GPU call on GPU 0: the median of `runs` timed calls after a warm-up.
double single_gpu_median_ms(const std::function<void(cudaStream_t)>& call, int runs) {
  check(cudaSetDevice(0), "cudaSetDevice");
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  call(stream);
  std::vector<float> ms;
  for (int run = 0; run < runs; ++run) {
    check(cudaEventRecord(start, stream), "cudaEventRecord");
    call(stream);
    check(cudaEventRecord(stop, stream), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float elapsed = 0;
    check(cudaEventElapsedTime(&elapsed, start, stop), "cudaEventElapsedTime");
    ms.push_back(elapsed);
  }
  (void)cudaEventDestroy(start);
  (void)cudaEventDestroy(stop);
  (void)cudaStreamDestroy(stream);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

void print_row(const char* what, std::size_t per_rank, int ranks, double dist_ms, double single_ms,
               double bytes_per_rank) {
  std::printf("  %-34s %5d x 2^%-4.1f %10.3f ms %10.3f ms  %5.2fx  %8.1f GB/s a GPU\n", what, ranks,
              std::log2(double(per_rank)), dist_ms, single_ms, single_ms / dist_ms,
              bytes_per_rank / (dist_ms * 1e-3) / 1e9);
}

}  // namespace

void bench_distributed(session& s) {
  // Only when named: it takes every GPU, and a full bench is one GPU's.
  const auto& named = s.opts().patterns;
  if (std::find(named.begin(), named.end(), "distributed") == named.end()) return;
  int gpus = 0;
  check(cudaGetDeviceCount(&gpus), "cudaGetDeviceCount");
  ranks_on_gpus group(gpus);
  const int runs = s.opts().quick ? 3 : 7;
  const std::size_t per_rank = s.opts().log2_sizes.empty()
                                   ? (std::size_t(1) << (s.opts().quick ? 26 : 30))
                                   : (std::size_t(1) << s.opts().log2_sizes.front());
  const std::size_t total = per_rank * std::size_t(gpus);
  // A (ranks x rows) x cols-word matrix for the transpose, row blocks of per_rank words; a
  // rank's output rows may take one more row of the transpose than an even share.
  const std::size_t cols = s.opts().quick ? 8192 : 65536;
  const std::size_t rows_per_rank = std::max<std::size_t>(per_rank / cols, 1);
  const std::size_t out_capacity =
      (cols / std::size_t(gpus) + 1) * rows_per_rank * std::size_t(gpus);
  std::printf("\ndistributed: %d GPUs (NCCL %d.%d.%d), per GPU against GPU 0 alone on the total\n",
              gpus, NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);
  std::printf("  %-34s %13s %13s %13s %7s %20s\n", "call", "ranks x n", "distributed", "one GPU",
              "speedup", "");

  // Per-rank buffers, allocated on each rank's thread.
  struct buffers {
    device_array<std::uint32_t> a, b, c, d;
    device_array<unsigned> hist;
  };
  std::vector<std::unique_ptr<buffers>> mine(static_cast<std::size_t>(gpus));
  const auto allocate = [&](const rank_state& rank) {
    auto& b = mine[std::size_t(rank.rank)];
    if (b) return;
    b = std::make_unique<buffers>();
    b->a = device_array<std::uint32_t>(per_rank);
    b->b = device_array<std::uint32_t>(std::max(per_rank, out_capacity));
    b->c = device_array<std::uint32_t>(per_rank);
    b->d = device_array<std::uint32_t>(per_rank + 1);
    b->hist = device_array<unsigned>(1024);
    fill_random_bits(b->a.data(), per_rank, 1000 + std::uint64_t(rank.rank));
    fill_random_bits(b->c.data(), per_rank, 2000 + std::uint64_t(rank.rank));
  };

  // The exchange's ceiling: all-to-all of the keys' bytes a GPU.
  {
    const std::size_t per_peer = per_rank / std::size_t(gpus);
    const double ms = group.median_ms(
        allocate,
        [&](const rank_state& rank) {
          auto& b = *mine[std::size_t(rank.rank)];
          check_nccl(
              ncclAlltoAll(b.a.data(), b.b.data(), per_peer, ncclUint32, rank.comm, rank.stream),
              "ncclAlltoAll");
        },
        runs);
    const double sent = double(per_peer) * 4 * double(gpus - 1);
    std::printf("  %-34s %5d x 2^%-4.1f %10.3f ms %13s %7s  %8.1f GB/s sent a GPU\n",
                "ncclAlltoAll u32", gpus, std::log2(double(per_rank)), ms, "-", "-",
                sent / (ms * 1e-3) / 1e9);
  }

  // The sort's last step alone, on GPU 0: the two received runs of a two-rank sort (half a
  // shard each) merged, against a device copy of the same bytes.
  {
    const std::size_t half = per_rank / 2;
    device_array<std::uint32_t> sorted(per_rank), merged(per_rank), values(per_rank),
        merged_values(per_rank);
    fill_random_bits(sorted.data(), per_rank, 5000);
    fill_random_bits(values.data(), per_rank, 6000);
    ppat::sort_keys(sorted.data(), sorted.data(), half);
    ppat::sort_keys(sorted.data() + half, sorted.data() + half, per_rank - half);
    const std::vector<std::size_t> run_first{0, half, per_rank};
    using ppat::detail::no_values;
    // In quarters: on this stream (non-blocking) one cudaMemcpyAsync of 4 GiB took 4.60 ms on
    // an H200, quarters 2.04 ms; on the legacy default stream one call took 2.01 ms.
    const double copy_ms = single_gpu_median_ms(
        [&](cudaStream_t stream) {
          const std::size_t quarter = (per_rank + 3) / 4;
          for (std::size_t first = 0; first < per_rank; first += quarter) {
            check(cudaMemcpyAsync(merged.data() + first, sorted.data() + first,
                                  std::min(quarter, per_rank - first) * 4, cudaMemcpyDeviceToDevice,
                                  stream),
                  "cudaMemcpyAsync");
          }
        },
        runs);
    const double keys_ms = single_gpu_median_ms(
        [&](cudaStream_t stream) {
          const ppat::detail::call_context call(stream, "merge_runs");
          ppat::distributed::detail::merge_runs(
              sorted.data(), static_cast<no_values*>(nullptr), run_first, merged.data(),
              static_cast<no_values*>(nullptr), ppat::order::ascending, call);
        },
        runs);
    const double pairs_ms = single_gpu_median_ms(
        [&](cudaStream_t stream) {
          const ppat::detail::call_context call(stream, "merge_runs");
          ppat::distributed::detail::merge_runs(sorted.data(), values.data(), run_first,
                                                merged.data(), merged_values.data(),
                                                ppat::order::ascending, call);
        },
        runs);
    // CUB's merge (cub::DeviceMerge, not stable for pairs) on the same runs, as the peer.
    std::size_t keys_temp_bytes = 0, pairs_temp_bytes = 0;
    check(cub::DeviceMerge::MergeKeys(nullptr, keys_temp_bytes, sorted.data(), half,
                                      sorted.data() + half, per_rank - half, merged.data()),
          "cub::DeviceMerge::MergeKeys (size query)");
    check(cub::DeviceMerge::MergePairs(nullptr, pairs_temp_bytes, sorted.data(), values.data(),
                                       half, sorted.data() + half, values.data() + half,
                                       per_rank - half, merged.data(), merged_values.data()),
          "cub::DeviceMerge::MergePairs (size query)");
    device_array<unsigned char> cub_temp(std::max(keys_temp_bytes, pairs_temp_bytes));
    const double cub_keys_ms = single_gpu_median_ms(
        [&](cudaStream_t stream) {
          std::size_t bytes = keys_temp_bytes;
          check(cub::DeviceMerge::MergeKeys(cub_temp.data(), bytes, sorted.data(), half,
                                            sorted.data() + half, per_rank - half, merged.data(),
                                            {}, stream),
                "cub::DeviceMerge::MergeKeys");
        },
        runs);
    const double cub_pairs_ms = single_gpu_median_ms(
        [&](cudaStream_t stream) {
          std::size_t bytes = pairs_temp_bytes;
          check(cub::DeviceMerge::MergePairs(cub_temp.data(), bytes, sorted.data(), values.data(),
                                             half, sorted.data() + half, values.data() + half,
                                             per_rank - half, merged.data(), merged_values.data(),
                                             {}, stream),
                "cub::DeviceMerge::MergePairs");
        },
        runs);
    const double bytes = 2.0 * double(per_rank) * 4;  // read once, written once
    std::printf("  %-34s %13s %13s %13s %7s\n", "the merge alone, on GPU 0", "n", "ppat", "CUB",
                "vs CUB");
    const auto merge_row = [&](const char* what, double ms, double cub_ms, double scale) {
      std::printf(
          "  %-34s %5d x 2^%-4.1f %10.3f ms %10.3f ms  %5.2fx  %8.1f GB/s, %5.1f%% of copy\n", what,
          1, std::log2(double(per_rank)), ms, cub_ms, cub_ms / ms,
          scale * bytes / (ms * 1e-3) / 1e9, 100.0 * scale * copy_ms / ms);
    };
    std::printf("  %-34s %5d x 2^%-4.1f %10.3f ms %13s %7s  %8.1f GB/s\n",
                "copy (cudaMemcpyAsync D2D) u32", 1, std::log2(double(per_rank)), copy_ms, "-", "-",
                bytes / (copy_ms * 1e-3) / 1e9);
    merge_row("merge of 2 runs, u32 keys", keys_ms, cub_keys_ms, 1);
    merge_row("merge of 2 runs, u32/u32", pairs_ms, cub_pairs_ms, 2);
  }

  // Single-GPU baselines on GPU 0, over the total.
  device_array<std::uint32_t> all_in(total), all_out(total), all_values(total),
      all_values_out(total);
  device_array<unsigned> all_hist(1024);
  fill_random_bits(all_in.data(), total, 3000);
  fill_random_bits(all_values.data(), total, 4000);

  const auto row = [&](const char* what, double bytes_per_rank,
                       const std::function<void(const rank_state&)>& call,
                       const std::function<void(cudaStream_t)>& single) {
    const double dist_ms = group.median_ms(allocate, call, runs);
    const double single_ms = single_gpu_median_ms(single, runs);
    print_row(what, per_rank, gpus, dist_ms, single_ms, bytes_per_rank);
  };
  const double word_bytes = double(per_rank) * 4;
  row(
      "sort_keys u32 (balanced)", 2 * word_bytes,
      [&](const rank_state& rank) {
        auto& b = *mine[std::size_t(rank.rank)];
        ppat::distributed::sort_keys(rank.comm, b.a.data(), b.b.data(), per_rank, per_rank,
                                     ppat::order::ascending, rank.stream);
      },
      [&](cudaStream_t stream) {
        ppat::sort_keys(all_in.data(), all_out.data(), total, ppat::order::ascending, 0, 32,
                        stream);
      });
  row(
      "sort_pairs u32/u32 (balanced)", 4 * word_bytes,
      [&](const rank_state& rank) {
        auto& b = *mine[std::size_t(rank.rank)];
        ppat::distributed::sort_pairs(rank.comm, b.a.data(), b.b.data(), b.c.data(), b.d.data(),
                                      per_rank, per_rank, ppat::order::ascending, rank.stream);
      },
      [&](cudaStream_t stream) {
        ppat::sort_pairs(all_in.data(), all_out.data(), all_values.data(), all_values_out.data(),
                         total, ppat::order::ascending, 0, 32, stream);
      });
  row(
      "inclusive_scan u32", 2 * word_bytes,
      [&](const rank_state& rank) {
        auto& b = *mine[std::size_t(rank.rank)];
        ppat::distributed::inclusive_scan(rank.comm, b.a.data(), b.b.data(), per_rank, ppat::plus{},
                                          rank.stream);
      },
      [&](cudaStream_t stream) {
        ppat::inclusive_scan(all_in.data(), all_out.data(), total, ppat::plus{}, stream);
      });
  row(
      "reduce u32", word_bytes,
      [&](const rank_state& rank) {
        auto& b = *mine[std::size_t(rank.rank)];
        ppat::distributed::reduce(rank.comm, b.a.data(), b.b.data(), per_rank, 0u, ppat::plus{},
                                  rank.stream);
      },
      [&](cudaStream_t stream) {
        ppat::reduce(all_in.data(), all_out.data(), total, 0u, ppat::plus{}, stream);
      });
  row(
      "histogram_even u32, 1024 bins", word_bytes,
      [&](const rank_state& rank) {
        auto& b = *mine[std::size_t(rank.rank)];
        ppat::distributed::histogram_even(rank.comm, b.a.data(), per_rank, b.hist.data(), 1024, 0u,
                                          0xFFFFFFFFu, rank.stream);
      },
      [&](cudaStream_t stream) {
        ppat::histogram_even(all_in.data(), total, all_hist.data(), 1024, 0u, 0xFFFFFFFFu, stream);
      });
  row(
      "transpose u32, row blocks", 2 * word_bytes,
      [&](const rank_state& rank) {
        auto& b = *mine[std::size_t(rank.rank)];
        const std::size_t out_rows =
            cols / std::size_t(gpus) + (std::size_t(rank.rank) < cols % std::size_t(gpus) ? 1 : 0);
        ppat::distributed::transpose(rank.comm, b.a.data(), b.b.data(), rows_per_rank, cols,
                                     out_rows, rank.stream);
      },
      [&](cudaStream_t stream) {
        ppat::transpose(all_in.data(), all_out.data(), rows_per_rank * std::size_t(gpus), cols,
                        stream);
      });
}

}  // namespace ppat_bench
