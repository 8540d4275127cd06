// strata_gpu_replay_bench: the what-if replay's speed on a 1-million-record
// device trace (issue 37's goal: at most 5 s on the 2-CPU development machine).
//
//   strata_gpu_replay_bench [TRACE]
//
// Builds a trace of 500,000 allocations and their frees on two streams
// (random lifetimes, most blocks small, a quarter up to 64 MiB, at most ~2,000
// live), writes it to TRACE when given (for strata-replay --gpu), and prints
// the best of three replays' seconds under two configurations.
#include <strata/gpu/caching/replay.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

namespace {

using strata::trace::device_op;
using strata::trace::device_record;

// The synthetic trace: addresses are unique numbers, as a replay needs no more.
std::vector<device_record> make_trace(std::size_t records) {
  std::mt19937_64 random(37);
  std::vector<device_record> out;
  out.reserve(records);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> live;  // address, stream
  std::uint64_t next_address = 0x10000;
  while (out.size() < records) {
    device_record r{};
    r.sequence = out.size();
    const bool free_one = !live.empty() && (live.size() > 2000 || random() % 2 == 0 ||
                                            out.size() + live.size() >= records);
    if (free_one) {
      const std::size_t victim = random() % live.size();
      r.kind = device_op::free_requested;
      r.address = live[victim].first;
      r.stream = live[victim].second;
      live[victim] = live.back();
      live.pop_back();
    } else {
      r.kind = device_op::alloc;
      r.address = next_address++;
      r.stream = 0x100 + random() % 2;
      r.size = random() % 4 == 0 ? 1 + random() % (std::uint64_t{64} << 20)
                                 : 1 + random() % (std::uint64_t{1} << 20);
      live.emplace_back(r.address, r.stream);
    }
    out.push_back(r);
  }
  return out;
}

// Write the records as a device trace file.
bool write_trace(const char* path, const std::vector<device_record>& records) {
  std::FILE* f = std::fopen(path, "wb");
  if (f == nullptr) return false;
  strata::trace::file_header header{};
  std::memcpy(header.magic, strata::trace::magic, sizeof header.magic);
  header.version = strata::trace::version;
  header.flags = strata::trace::flag_device;
  std::fwrite(&header, sizeof header, 1, f);
  std::fwrite(records.data(), sizeof(device_record), records.size(), f);
  return std::fclose(f) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<device_record> records = make_trace(1'000'000);
  if (argc > 1 && !write_trace(argv[1], records)) {
    std::fprintf(stderr, "strata_gpu_replay_bench: cannot write %s\n", argv[1]);
    return 1;
  }
  for (const char* conf : {"", "max_split_size_mb:128,roundup_power2_divisions:4"}) {
    double best = 1e300;
    strata::gpu::replay_result result;
    for (int run = 0; run < 3; ++run) {
      const auto start = std::chrono::steady_clock::now();
      result = strata::gpu::replay(records, strata::gpu::parse_caching_config(conf));
      best = std::min(
          best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    std::printf(
        "replay of %zu records, config '%s': %.3f s (best of 3); peak reserved %zu, %llu "
        "cudaMallocs\n",
        records.size(), conf, best, result.peak_reserved,
        static_cast<unsigned long long>(result.device_allocations));
  }
  return 0;
}
