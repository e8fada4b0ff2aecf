// ppat::distributed::sort_keys with one process per GPU, started by mpirun (or any launcher
// that tells each process its rank):
//
//   mpirun -np 2 build/release/examples/sort_one_process_per_gpu /tmp/ppat-nccl-id [log2 n]
//
// Rank 0 creates the NCCL unique id and writes it to the file named on the command line, a
// path that must not exist yet (a stale id would send the other ranks to an old run); the
// other ranks read it from there (any way of sharing those 128 bytes will do: MPI_Bcast, a
// key-value store, a shared file). The rank and the number of ranks come from the launcher's
// environment: Open MPI's OMPI_COMM_WORLD_RANK and OMPI_COMM_WORLD_SIZE, or PMI_RANK and
// PMI_SIZE. Each rank sorts 2^log2_n random 32-bit keys (default 2^24); afterwards the ranks'
// outputs, in rank order, are one sorted sequence, balanced to within one key.
#include <ppat/distributed.cuh>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

int environment_int(const char* first, const char* second) {
  for (const char* name : {first, second}) {
    if (const char* text = std::getenv(name)) return std::atoi(text);
  }
  return -1;
}

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(status));
    std::exit(1);
  }
}

void check(ncclResult_t status, const char* what) {
  if (status != ncclSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, ncclGetErrorString(status));
    std::exit(1);
  }
}

// Rank 0 writes the id (to a temporary name, then renamed, so that no rank reads half of it);
// the others wait for the file.
ncclUniqueId share_id(int rank, const std::string& path) {
  ncclUniqueId id{};
  if (rank == 0) {
    if (std::ifstream(path)) {
      std::fprintf(stderr, "%s exists already: name a new file for this run's id\n", path.c_str());
      std::exit(2);
    }
    check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    const std::string partial = path + ".partial";
    std::ofstream(partial, std::ios::binary).write(id.internal, sizeof(id.internal));
    std::rename(partial.c_str(), path.c_str());
    return id;
  }
  for (;;) {
    std::ifstream file(path, std::ios::binary);
    if (file && file.read(id.internal, sizeof(id.internal))) return id;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int rank = environment_int("OMPI_COMM_WORLD_RANK", "PMI_RANK");
  const int ranks = environment_int("OMPI_COMM_WORLD_SIZE", "PMI_SIZE");
  if (argc < 2 || rank < 0 || ranks < 1) {
    std::fprintf(stderr, "usage: mpirun -np RANKS %s ID_FILE [LOG2_N]\n", argv[0]);
    return 2;
  }
  const std::size_t n = std::size_t(1) << (argc > 2 ? std::atoi(argv[2]) : 24);
  int devices = 0;
  check(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  check(cudaSetDevice(rank % devices), "cudaSetDevice");
  const ncclUniqueId id = share_id(rank, argv[1]);
  ncclComm_t comm = nullptr;
  check(ncclCommInitRank(&comm, ranks, id, rank), "ncclCommInitRank");
  cudaStream_t stream = nullptr;
  check(cudaStreamCreate(&stream), "cudaStreamCreate");

  std::vector<std::uint32_t> keys(n);
  std::mt19937 random(1234u + unsigned(rank));
  for (auto& key : keys)
    key = random();
  std::uint32_t *in = nullptr, *out = nullptr;
  const std::size_t n_out = ppat::distributed::balanced_share(comm, n, stream);
  check(cudaMalloc(&in, n * sizeof(std::uint32_t)), "cudaMalloc");
  check(cudaMalloc(&out, n_out * sizeof(std::uint32_t)), "cudaMalloc");
  check(cudaMemcpy(in, keys.data(), n * sizeof(std::uint32_t), cudaMemcpyHostToDevice),
        "cudaMemcpy");

  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  check(cudaEventRecord(start, stream), "cudaEventRecord");
  ppat::distributed::sort_keys(comm, in, out, n, n_out, ppat::order::ascending, stream);
  check(cudaEventRecord(stop, stream), "cudaEventRecord");
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");

  std::vector<std::uint32_t> sorted(n_out);
  check(cudaMemcpy(sorted.data(), out, n_out * sizeof(std::uint32_t), cudaMemcpyDeviceToHost),
        "cudaMemcpy");
  bool in_order = true;
  for (std::size_t i = 1; i < n_out; ++i)
    in_order = in_order && sorted[i - 1] <= sorted[i];
  std::printf("rank %d of %d: %zu keys in, %zu out, %s, %.2f ms (first call, with setup)\n", rank,
              ranks, n, n_out, in_order ? "sorted" : "NOT SORTED", ms);
  check(cudaFree(in), "cudaFree");
  check(cudaFree(out), "cudaFree");
  check(ncclCommDestroy(comm), "ncclCommDestroy");
  return in_order ? 0 : 1;
}
