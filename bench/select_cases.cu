// Stream compaction and its relatives beside CUB: select_if (50% and 5% kept),
// select_flagged, partition, partition_copy, unique, unique_by_key, reduce_by_key and
// run_length_encode, and the textbook rungs of select_if. Bytes that must move: every input
// read once, and what is kept written once (the count's 8 bytes aside); for the partitions,
// every item written. CUB gets its own operators (cuda::std::plus), which it has fast paths
// for.
#include <ppat/ppat.cuh>
#include <ppat/textbook.cuh>

#include <cub/device/device_partition.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_select.cuh>
#include <cuda/std/functional>

#include <functional>
#include <string>

#include "harness.hpp"
#include "type_names.hpp"

namespace ppat_bench {
namespace {

// Items below `threshold` of values drawn from [0, 99].
struct below {
  int threshold;
  template <class T>
  __host__ __device__ bool operator()(const T& x) const {
    return x < T(threshold);
  }
};

// What one call moves, measured from CUB's output: `kept` items of `kept_bytes` each written
// after `read_bytes` were read.
struct traffic {
  double read_bytes;
  double kept_bytes;
};

// CUB's two-phase call as one: the size query once, the temporary storage kept for the case.
// `call(temp, bytes, set, count)`.
class cub_call {
 public:
  using signature = cudaError_t(void*, std::size_t&, int, std::size_t*);
  explicit cub_call(std::function<signature> call) : call_(std::move(call)) {
    check(call_(nullptr, bytes_, 0, nullptr), "CUB size query");
    storage_ = device_array<unsigned char>(bytes_);
  }
  void operator()(int set, std::size_t* count) {
    std::size_t bytes = bytes_;
    check(call_(storage_.data(), bytes, set, count), "CUB call");
  }

 private:
  std::function<signature> call_;
  std::size_t bytes_ = 0;
  device_array<unsigned char> storage_;
};

std::size_t read_count(const device_array<std::size_t>& count) {
  std::size_t host = 0;
  check(cudaMemcpy(&host, count.data(), sizeof host, cudaMemcpyDeviceToHost), "cudaMemcpy");
  return host;
}

// One case: CUB's call (the baseline) and ppat's, on buffer set `set`, each writing a count
// and outputs; set 0 is CUB's own outputs for CUB, ppat's for ppat, compared bitwise up to
// the count (partition's rejected items, which CUB reverses, are not compared).
struct select_case_spec {
  std::string label;
  std::string type;
  std::size_t n = 0;
  double read_bytes_per_item = 0;
  double kept_bytes_per_item = 0;  // all outputs together
  bool writes_every_item = false;
  std::string baseline;
  std::function<void(int set, std::size_t* count)> cub;
  std::string ppat_name;
  std::function<void(int set, std::size_t* count)> ppat;
  // (ppat's output, CUB's, bytes an item) for each output.
  std::vector<std::tuple<const void*, const void*, std::size_t>> outputs;
  std::vector<variant> extra;   // textbook rungs, timed after ppat
  std::size_t* kept = nullptr;  // where to tell the extras' checks how many CUB kept
};

void run_select_case(session& s, select_case_spec spec, int sets) {
  device_array<std::size_t> cub_count(1), ppat_count(1);
  spec.cub(0, cub_count.data());
  check(cudaStreamSynchronize(s.stream()), "CUB call");
  const std::size_t kept = read_count(cub_count);
  if (spec.kept != nullptr) *spec.kept = kept;
  const double bytes = spec.read_bytes_per_item * spec.n +
                       spec.kept_bytes_per_item * (spec.writes_every_item ? spec.n : kept);
  bench_case c;
  c.pattern = "select";
  c.label = spec.label + " (" + std::to_string(100.0 * kept / spec.n).substr(0, 4) + "% kept)";
  c.type = spec.type;
  c.n = spec.n;
  c.bytes = bytes;
  c.sets = sets;
  c.copy_bytes = bytes / 2;  // read, then written: as many bytes as the selection moves
  c.baseline = spec.baseline;
  c.variants.push_back({spec.baseline, [&](int k) { spec.cub(k, cub_count.data()); }, nullptr});
  c.variants.push_back({spec.ppat_name, [&](int k) { spec.ppat(k, ppat_count.data()); },
                        [&] {
                          if (read_count(ppat_count) != kept) return false;
                          for (const auto& [mine, theirs, item_bytes] : spec.outputs) {
                            if (count_differences(mine, theirs, kept * item_bytes) != 0)
                              return false;
                          }
                          return true;
                        }});
  for (variant& v : spec.extra)
    c.variants.push_back(v);
  s.run(c);
}

// Each call on `sets` rotating buffer sets of T: inputs in[k] (values in [0, 99]), keys[k]
// in runs of 4, flags[k] (half set), outputs out[k] and out2[k]; CUB writes set 0's outputs
// to its own buffers.
template <class T>
void select_cases(session& s, std::size_t n) {
  const cudaStream_t stream = s.stream();
  const std::string type = type_name<T>();
  const int sets = s.rotation_sets(4.0 * n * sizeof(T));
  std::vector<device_array<T>> in(sets), keys(sets), out(sets), out2(sets);
  std::vector<device_array<std::uint8_t>> flags(sets);
  std::vector<device_array<std::uint32_t>> run_counts(sets);
  for (int k = 0; k < sets; ++k) {
    in[k] = device_array<T>(n);
    keys[k] = device_array<T>(n);
    out[k] = device_array<T>(n);
    out2[k] = device_array<T>(n);
    flags[k] = device_array<std::uint8_t>(n);
    run_counts[k] = device_array<std::uint32_t>(n);
    fill_uniform(in[k].data(), n, 0, 99, 7000 + k);
    fill_uniform(flags[k].data(), n, 0, 1, 7100 + k);
    // Runs of 4 equal keys, each run's key from [0, 99]: neighbouring runs are equal 1% of
    // the time.
    fill_uniform_runs(keys[k].data(), n, 4, 0, 99, 7200 + k);
  }
  device_array<T> cub_out(n), cub_out2(n);
  device_array<std::uint32_t> cub_run_counts(n);
  const auto output = [&](int k) { return k == 0 ? cub_out.data() : out[k].data(); };
  const auto output2 = [&](int k) { return k == 0 ? cub_out2.data() : out2[k].data(); };
  const std::int64_t items = std::int64_t(n);
  const auto base_spec = [&](const std::string& call, const std::string& baseline) {
    select_case_spec spec;
    spec.label = call + " " + type;
    spec.type = type;
    spec.n = n;
    spec.read_bytes_per_item = sizeof(T);
    spec.kept_bytes_per_item = sizeof(T);
    spec.baseline = baseline;
    spec.ppat_name = "ppat::" + call;
    spec.outputs = {{out[0].data(), cub_out.data(), sizeof(T)}};
    return spec;
  };

  device_array<std::size_t> textbook_count(1);
  std::size_t kept = 0;
  const auto textbook_matches_cub = [&] {
    return read_count(textbook_count) == kept &&
           count_differences(out[0].data(), cub_out.data(), kept * sizeof(T)) == 0;
  };
  for (int percent : {50, 5}) {
    const below pred{percent};
    cub_call cub_select([&, pred](void* temp, std::size_t& bytes, int k, std::size_t* count) {
      return cub::DeviceSelect::If(temp, bytes, in[k].data(), output(k), count, items, pred,
                                   stream);
    });
    select_case_spec spec = base_spec("select_if", "cub::DeviceSelect::If");
    spec.cub = std::ref(cub_select);
    spec.ppat = [&, pred](int k, std::size_t* count) {
      ppat::select_if(in[k].data(), out[k].data(), count, n, pred, stream);
    };
    if (percent == 50) {
      spec.extra.push_back({"textbook::scan_then_scatter_select_if",
                            [&, pred](int k) {
                              ppat::textbook::scan_then_scatter_select_if(
                                  in[k].data(), out[k].data(), textbook_count.data(), n, pred,
                                  stream);
                            },
                            textbook_matches_cub});
      spec.extra.push_back({"textbook::warp_atomic_select_if, unordered",
                            [&, pred](int k) {
                              ppat::textbook::warp_atomic_select_if(in[k].data(), out[k].data(),
                                                                    textbook_count.data(), n, pred,
                                                                    stream);
                            },
                            nullptr});
      spec.kept = &kept;
    }
    run_select_case(s, spec, sets);
  }

  {
    cub_call cub_flagged([&](void* temp, std::size_t& bytes, int k, std::size_t* count) {
      return cub::DeviceSelect::Flagged(temp, bytes, in[k].data(), flags[k].data(), output(k),
                                        count, items, stream);
    });
    select_case_spec spec = base_spec("select_flagged", "cub::DeviceSelect::Flagged");
    spec.label += ", u8 flags";
    spec.read_bytes_per_item += 1;
    spec.cub = std::ref(cub_flagged);
    spec.ppat = [&](int k, std::size_t* count) {
      ppat::select_flagged(in[k].data(), flags[k].data(), out[k].data(), count, n, stream);
    };
    run_select_case(s, spec, sets);
  }

  {
    const below pred{50};
    cub_call cub_partition([&, pred](void* temp, std::size_t& bytes, int k, std::size_t* count) {
      return cub::DevicePartition::If(temp, bytes, in[k].data(), output(k), count, items, pred,
                                      stream);
    });
    select_case_spec spec = base_spec("partition", "cub::DevicePartition::If");
    spec.writes_every_item = true;
    spec.cub = std::ref(cub_partition);
    spec.ppat = [&, pred](int k, std::size_t* count) {
      ppat::partition(in[k].data(), out[k].data(), count, n, pred, stream);
    };
    run_select_case(s, spec, sets);

    // The two parts in outputs of their own, against the same CUB call: what a caller who
    // needs them apart would otherwise run. The kept items are compared.
    select_case_spec copy_spec = base_spec("partition_copy", "cub::DevicePartition::If");
    copy_spec.label += ", two outputs";
    copy_spec.writes_every_item = true;
    copy_spec.cub = std::ref(cub_partition);
    copy_spec.ppat = [&, pred](int k, std::size_t* count) {
      ppat::partition_copy(in[k].data(), out[k].data(), out2[k].data(), count, n, pred, stream);
    };
    run_select_case(s, copy_spec, sets);
  }

  {
    cub_call cub_unique([&](void* temp, std::size_t& bytes, int k, std::size_t* count) {
      return cub::DeviceSelect::Unique(temp, bytes, keys[k].data(), output(k), count, items,
                                       stream);
    });
    select_case_spec spec = base_spec("unique", "cub::DeviceSelect::Unique");
    spec.label += ", runs of 4";
    spec.cub = std::ref(cub_unique);
    spec.ppat = [&](int k, std::size_t* count) {
      ppat::unique(keys[k].data(), out[k].data(), count, n, stream);
    };
    run_select_case(s, spec, sets);
  }

  {
    cub_call cub_unique_by_key([&](void* temp, std::size_t& bytes, int k, std::size_t* count) {
      return cub::DeviceSelect::UniqueByKey(temp, bytes, keys[k].data(), in[k].data(), output(k),
                                            output2(k), count, items, stream);
    });
    select_case_spec spec = base_spec("unique_by_key", "cub::DeviceSelect::UniqueByKey");
    spec.label += " / " + type + " values, runs of 4";
    spec.read_bytes_per_item = spec.kept_bytes_per_item = 2 * sizeof(T);
    spec.cub = std::ref(cub_unique_by_key);
    spec.ppat = [&](int k, std::size_t* count) {
      ppat::unique_by_key(keys[k].data(), in[k].data(), out[k].data(), out2[k].data(), count, n,
                          stream);
    };
    spec.outputs.emplace_back(out2[0].data(), cub_out2.data(), sizeof(T));
    run_select_case(s, spec, sets);
  }

  {
    cub_call cub_reduce_by_key([&](void* temp, std::size_t& bytes, int k, std::size_t* count) {
      return cub::DeviceReduce::ReduceByKey(temp, bytes, keys[k].data(), output(k), in[k].data(),
                                            output2(k), count, cuda::std::plus<>{}, items, stream);
    });
    select_case_spec spec = base_spec("reduce_by_key", "cub::DeviceReduce::ReduceByKey");
    spec.label += " / " + type + " values, sum, runs of 4";
    spec.read_bytes_per_item = spec.kept_bytes_per_item = 2 * sizeof(T);
    spec.cub = std::ref(cub_reduce_by_key);
    spec.ppat = [&](int k, std::size_t* count) {
      ppat::reduce_by_key(keys[k].data(), in[k].data(), out[k].data(), out2[k].data(), count, n,
                          ppat::plus{}, stream);
    };
    spec.outputs.emplace_back(out2[0].data(), cub_out2.data(), sizeof(T));
    run_select_case(s, spec, sets);
  }

  {
    cub_call cub_encode([&](void* temp, std::size_t& bytes, int k, std::size_t* count) {
      return cub::DeviceRunLengthEncode::Encode(
          temp, bytes, keys[k].data(), output(k),
          k == 0 ? cub_run_counts.data() : run_counts[k].data(), count, items, stream);
    });
    select_case_spec spec = base_spec("run_length_encode", "cub::DeviceRunLengthEncode::Encode");
    spec.label += ", u32 counts, runs of 4";
    spec.kept_bytes_per_item = sizeof(T) + sizeof(std::uint32_t);
    spec.cub = std::ref(cub_encode);
    spec.ppat = [&](int k, std::size_t* count) {
      ppat::run_length_encode(keys[k].data(), out[k].data(), run_counts[k].data(), count, n,
                              stream);
    };
    spec.outputs.emplace_back(run_counts[0].data(), cub_run_counts.data(), sizeof(std::uint32_t));
    run_select_case(s, spec, sets);
  }
}

}  // namespace

void bench_select(session& s) {
  if (!s.wants_pattern("select")) return;
  const std::vector<std::string> default_types = s.opts().quick
                                                     ? std::vector<std::string>{"i32"}
                                                     : std::vector<std::string>{"i32", "u8", "i64"};
  for (std::size_t n : s.sizes({16, 18, 20, 22, 24, 26, 28, 30}, {16, 20, 24, 28})) {
    if (s.wants_type("i32", default_types)) select_cases<std::int32_t>(s, n);
    if (s.wants_type("u8", default_types)) select_cases<std::uint8_t>(s, n);
    if (s.wants_type("i64", default_types)) select_cases<std::int64_t>(s, n);
    if (s.wants_type("u16", default_types)) select_cases<std::uint16_t>(s, n);
  }
}

}  // namespace ppat_bench
