// Peak live bytes of a trace, computed the plain way (a map of live blocks in
// time order, frees of unknown blocks ignored), to hold strata-replay's own
// figure against: prints the number of bytes.
#include <algorithm>
#include <cstdio>
#include <string>
#include <unordered_map>
#include <vector>

#include "strata/trace_reader.hpp"

int main(int argc, char** argv) {
  using strata::trace::op;
  using strata::trace::record;
  if (argc != 2) {
    std::fprintf(stderr, "usage: trace_peak FILE\n");
    return 2;
  }
  std::vector<record> records;
  std::string error;
  if (!strata::trace::read_file(argv[1], records, error)) {
    std::fprintf(stderr, "trace_peak: %s\n", error.c_str());
    return 1;
  }
  std::stable_sort(records.begin(), records.end(),
                   [](const record& a, const record& b) { return a.time_ns < b.time_ns; });
  std::unordered_map<std::uint64_t, std::uint64_t> live;
  std::uint64_t bytes = 0, peak = 0;
  auto drop = [&](std::uint64_t address) {
    auto it = live.find(address);
    if (it == live.end()) return;
    bytes -= it->second;
    live.erase(it);
  };
  for (const record& r : records) {
    if (r.kind == op::free) {
      drop(r.address);
      continue;
    }
    if (r.address == 0) {  // failed, or realloc to nothing: the old block is gone only then
      if (r.kind == op::realloc && r.size == 0) drop(r.old_address);
      continue;
    }
    if (r.kind == op::realloc) drop(r.old_address);
    drop(r.address);
    live[r.address] = r.size;
    bytes += r.size;
    peak = std::max(peak, bytes);
  }
  std::printf("%llu\n", static_cast<unsigned long long>(peak));
  return 0;
}
