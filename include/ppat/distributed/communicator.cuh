// The plumbing every distributed call shares: NCCL errors as exceptions, the communicator's
// ranks, the ranks' agreement on their argument checks, small gathers to the host, and the
// exchange of variable-sized runs between ranks.
#pragma once

#include <nccl.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "../core/device.cuh"
#include "../core/error.cuh"
#include "../core/memory.cuh"

namespace ppat {

// An NCCL call made by `function` failed with `code()`.
class nccl_error : public std::runtime_error {
 public:
  nccl_error(ncclResult_t code, const std::string& function, const std::string& what_failed,
             const std::string& detail)
      : std::runtime_error(function + ": " + what_failed + " failed: " + ncclGetErrorString(code) +
                           (detail.empty() ? "" : " (" + detail + ")")),
        code_(code) {}

  ncclResult_t code() const noexcept { return code_; }

 private:
  ncclResult_t code_;
};

namespace distributed {
namespace detail {

using namespace ppat::detail;

// The communicator's size and this rank's place in it.
struct ranks {
  int count;
  int mine;
};
ranks ranks_of(ncclComm_t comm, const char* function);
void check_nccl(ncclResult_t code, ncclComm_t comm, const char* function, const char* what_failed);
template <class Check>
void agree_on_arguments(ncclComm_t comm, const call_context& call, Check check_mine,
                        long long same_on_every_rank = 0);
std::vector<unsigned long long> gather_on_host(ncclComm_t comm,
                                               const std::vector<unsigned long long>& mine,
                                               const call_context& call);
struct peer_transfers;
void exchange(ncclComm_t comm, const ranks& group, const peer_transfers& moves,
              const call_context& call);

// The NCCL type of a histogram's counters.
template <class Counter>
constexpr ncclDataType_t nccl_type_of() {
  if constexpr (std::is_same_v<Counter, std::int32_t>) return ncclInt32;
  if constexpr (std::is_same_v<Counter, std::uint32_t>) return ncclUint32;
  if constexpr (std::is_same_v<Counter, std::int64_t> || std::is_same_v<Counter, long long>)
    return ncclInt64;
  if constexpr (std::is_same_v<Counter, std::uint64_t> ||
                std::is_same_v<Counter, unsigned long long>)
    return ncclUint64;
  if constexpr (std::is_same_v<Counter, float>) return ncclFloat32;
  if constexpr (std::is_same_v<Counter, double>) return ncclFloat64;
  static_assert(std::is_integral_v<Counter>
                    ? sizeof(Counter) == 4 || sizeof(Counter) == 8
                    : std::is_same_v<Counter, float> || std::is_same_v<Counter, double>,
                "distributed histograms count in 32- or 64-bit integers, float or double");
}

inline ranks ranks_of(ncclComm_t comm, const char* function) {
  require(comm != nullptr, function, "comm", "must be an NCCL communicator");
  ranks group{};
  check_nccl(ncclCommCount(comm, &group.count), comm, function, "ncclCommCount");
  check_nccl(ncclCommUserRank(comm, &group.mine), comm, function, "ncclCommUserRank");
  return group;
}

inline void check_nccl(ncclResult_t code, ncclComm_t comm, const char* function,
                       const char* what_failed) {
  if (code == ncclSuccess || code == ncclInProgress) return;
  const char* last = comm != nullptr ? ncclGetLastError(comm) : nullptr;
  throw nccl_error(code, function, what_failed, last != nullptr ? last : "");
}

// Runs this rank's checks, then learns whether every rank's passed: a rank whose arguments
// are bad throws its own message, the others say that another rank's were rejected, and
// none of them reaches a collective that the failing rank would never join. `same_on_every_rank`
// (num_bins, say) must be equal on all ranks: one all-reduce of (rejected, v, -v) by maximum
// tells both.
template <class Check>
void agree_on_arguments(ncclComm_t comm, const call_context& call, Check check_mine,
                        long long same_on_every_rank) {
  if (call.captured()) {
    check_mine();
    return;
  }
  std::string rejected;
  try {
    check_mine();
  } catch (const std::invalid_argument& error) {
    rejected = error.what();
  }
  temporary_buffer<long long> words(3, call);
  long long agreed[3] = {rejected.empty() ? 0 : 1, same_on_every_rank, -same_on_every_rank};
  call.check(
      cudaMemcpyAsync(words.data(), agreed, sizeof(agreed), cudaMemcpyHostToDevice, call.stream()),
      "cudaMemcpyAsync");
  check_nccl(ncclAllReduce(words.data(), words.data(), 3, ncclInt64, ncclMax, comm, call.stream()),
             comm, call.function(), "ncclAllReduce");
  call.check(
      cudaMemcpyAsync(agreed, words.data(), sizeof(agreed), cudaMemcpyDeviceToHost, call.stream()),
      "cudaMemcpyAsync");
  call.check(cudaStreamSynchronize(call.stream()), "cudaStreamSynchronize");
  words.release();
  if (!rejected.empty()) throw std::invalid_argument(rejected);
  if (agreed[0] != 0) {
    throw std::invalid_argument(std::string(call.function()) +
                                ": another rank's arguments were rejected");
  }
  if (agreed[1] != -agreed[2]) {
    throw std::invalid_argument(std::string(call.function()) +
                                ": an argument that must be the same on every rank differs");
  }
}

// Every rank's `mine` (the same count of values on each), in rank order, on the host: rank
// r's at [r * mine.size(), (r + 1) * mine.size()). Waits for the stream.
inline std::vector<unsigned long long> gather_on_host(ncclComm_t comm,
                                                      const std::vector<unsigned long long>& mine,
                                                      const call_context& call) {
  int count = 0;
  check_nccl(ncclCommCount(comm, &count), comm, call.function(), "ncclCommCount");
  const std::size_t all = mine.size() * std::size_t(count);
  temporary_buffer<unsigned long long> values(all + mine.size(), call);
  call.check(
      cudaMemcpyAsync(values.data() + all, mine.data(), mine.size() * sizeof(unsigned long long),
                      cudaMemcpyHostToDevice, call.stream()),
      "cudaMemcpyAsync");
  check_nccl(ncclAllGather(values.data() + all, values.data(), mine.size(), ncclUint64, comm,
                           call.stream()),
             comm, call.function(), "ncclAllGather");
  std::vector<unsigned long long> host(all);
  call.check(cudaMemcpyAsync(host.data(), values.data(), all * sizeof(unsigned long long),
                             cudaMemcpyDeviceToHost, call.stream()),
             "cudaMemcpyAsync");
  call.check(cudaStreamSynchronize(call.stream()), "cudaStreamSynchronize");
  values.release();
  return host;
}

// What a rank sends to and receives from each rank, indexed by rank: send_bytes[p] bytes from
// send_from[p] go to rank p, and receive_bytes[p] bytes from rank p arrive at receive_to[p].
// The rank's own entry is a copy on its device of send_bytes[mine] bytes.
struct peer_transfers {
  explicit peer_transfers(int ranks)
      : send_from(std::size_t(ranks), nullptr),
        send_bytes(std::size_t(ranks), 0),
        receive_to(std::size_t(ranks), nullptr),
        receive_bytes(std::size_t(ranks), 0) {}

  std::vector<const void*> send_from;
  std::vector<std::size_t> send_bytes;
  std::vector<void*> receive_to;
  std::vector<std::size_t> receive_bytes;
};

// Every transfer of `moves` in one NCCL group of sends and receives (the variable-sized
// all-to-all), and the rank's own part by a device copy; empty transfers are left out.
inline void exchange(ncclComm_t comm, const ranks& group, const peer_transfers& moves,
                     const call_context& call) {
  const auto me = std::size_t(group.mine);
  if (moves.send_bytes[me] != 0) {
    copy_items(static_cast<const unsigned char*>(moves.send_from[me]),
               static_cast<unsigned char*>(moves.receive_to[me]), moves.send_bytes[me], call);
  }
  check_nccl(ncclGroupStart(), comm, call.function(), "ncclGroupStart");
  for (int peer = 0; peer < group.count; ++peer) {
    const auto p = std::size_t(peer);
    if (p == me) continue;
    if (moves.send_bytes[p] != 0) {
      check_nccl(
          ncclSend(moves.send_from[p], moves.send_bytes[p], ncclUint8, peer, comm, call.stream()),
          comm, call.function(), "ncclSend");
    }
    if (moves.receive_bytes[p] != 0) {
      check_nccl(ncclRecv(moves.receive_to[p], moves.receive_bytes[p], ncclUint8, peer, comm,
                          call.stream()),
                 comm, call.function(), "ncclRecv");
    }
  }
  check_nccl(ncclGroupEnd(), comm, call.function(), "ncclGroupEnd");
}

}  // namespace detail
}  // namespace distributed
}  // namespace ppat
