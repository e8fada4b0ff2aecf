// ppat::distributed::sort_keys with one process driving every visible GPU, a host thread a
// GPU, over communicators from ncclCommInitAll:
//
//   build/release/examples/sort_one_thread_per_gpu [log2 n]
//
// Each rank sorts 2^log2_n random 32-bit keys (default 2^24); afterwards the ranks' outputs,
// in rank order, are one sorted sequence, balanced to within one key. A distributed call is
// collective: every rank's thread makes it, and a single thread could not make them one
// after another, since each waits for the others.
#include <ppat/distributed.cuh>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

namespace {

bool ok(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return true;
  std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(status));
  return false;
}

// Sorts this rank's share; `ends` gets its first and last output key.
bool sort_on_rank(ncclComm_t comm, int rank, std::size_t n, std::array<std::uint32_t, 2>& ends) {
  if (!ok(cudaSetDevice(rank), "cudaSetDevice")) return false;
  cudaStream_t stream = nullptr;
  if (!ok(cudaStreamCreate(&stream), "cudaStreamCreate")) return false;
  std::vector<std::uint32_t> keys(n);
  std::mt19937 random(1234u + unsigned(rank));
  for (auto& key : keys)
    key = random();
  const std::size_t n_out = ppat::distributed::balanced_share(comm, n, stream);
  std::uint32_t *in = nullptr, *out = nullptr;
  bool good = ok(cudaMalloc(&in, n * sizeof(std::uint32_t)), "cudaMalloc") &&
              ok(cudaMalloc(&out, n_out * sizeof(std::uint32_t)), "cudaMalloc") &&
              ok(cudaMemcpy(in, keys.data(), n * sizeof(std::uint32_t), cudaMemcpyHostToDevice),
                 "cudaMemcpy");
  // Every rank makes the call, even one whose setup failed, so that no other rank waits on
  // it forever; its bad arguments (a null buffer) make every rank throw.
  try {
    ppat::distributed::sort_keys(comm, good ? in : nullptr, out, n, n_out, ppat::order::ascending,
                                 stream);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "rank %d: %s\n", rank, error.what());
    good = false;
  }
  std::vector<std::uint32_t> sorted(n_out);
  good = good &&
         ok(cudaMemcpyAsync(sorted.data(), out, n_out * sizeof(std::uint32_t),
                            cudaMemcpyDeviceToHost, stream),
            "cudaMemcpyAsync") &&
         ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  for (std::size_t i = 1; good && i < n_out; ++i)
    good = sorted[i - 1] <= sorted[i];
  if (n_out > 0) {
    ends[0] = sorted.front();
    ends[1] = sorted.back();
  }
  std::printf("rank %d: %zu keys in, %zu out, %s\n", rank, n, n_out, good ? "sorted" : "FAILED");
  (void)cudaFree(in);
  (void)cudaFree(out);
  (void)cudaStreamDestroy(stream);
  return good;
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t n = std::size_t(1) << (argc > 1 ? std::atoi(argv[1]) : 24);
  int ranks = 0;
  if (!ok(cudaGetDeviceCount(&ranks), "cudaGetDeviceCount")) return 1;
  std::vector<ncclComm_t> comms(static_cast<std::size_t>(ranks));
  std::vector<int> devices(static_cast<std::size_t>(ranks));
  std::iota(devices.begin(), devices.end(), 0);
  if (ncclCommInitAll(comms.data(), ranks, devices.data()) != ncclSuccess) {
    std::fprintf(stderr, "ncclCommInitAll failed\n");
    return 1;
  }
  std::vector<char> good(static_cast<std::size_t>(ranks), 0);
  std::vector<std::array<std::uint32_t, 2>> ends(static_cast<std::size_t>(ranks));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < ranks; ++rank) {
    threads.emplace_back([&, rank] {
      good[std::size_t(rank)] =
          sort_on_rank(comms[std::size_t(rank)], rank, n, ends[std::size_t(rank)]) ? 1 : 0;
    });
  }
  for (auto& thread : threads)
    thread.join();
  for (ncclComm_t comm : comms)
    (void)ncclCommDestroy(comm);
  bool all_good = std::all_of(good.begin(), good.end(), [](char g) { return g != 0; });
  for (std::size_t r = 1; all_good && r < ends.size(); ++r)
    all_good = ends[r - 1][1] <= ends[r][0];  // each rank's keys follow the rank before's
  std::printf("%d ranks: %s\n", ranks, all_good ? "one sorted sequence" : "FAILED");
  return all_good ? 0 : 1;
}
