// An allocate+deallocate loop through the tracking adaptor for instruction
// counting: `tracking_pair MODE N` runs N pairs over the strata heap in run(),
// MODE `bare` (the heap resource alone), `tracked` (tracking<heap> on, exact),
// `one-thread` (tracking<heap, true, 0, no_lock>), `sampled` (tracking<heap>
// sampling 1 per 512 KiB) or `statistics` (statistics<heap>, the counting
// adaptor). A window of 64 live blocks, the oldest freed first, keeps the
// adaptor's records from being trivially hot.
#include <strata/resource.hpp>
#include <strata/statistics.hpp>
#include <strata/tracking.hpp>

#include <cstdlib>
#include <cstring>

namespace {

// The measured loop; out of line so callgrind can collect it alone.
template <class Resource>
[[gnu::noinline]] std::size_t run(Resource& resource, int n) {
  constexpr int window = 64;
  void* live[window] = {};
  std::size_t total = 0;
  for (int i = 0; i < n; ++i) {
    const std::size_t size = 64 + 16 * static_cast<std::size_t>(i % 8);
    void*& slot = live[i % window];
    if (slot != nullptr)
      resource.deallocate(slot, 64 + 16 * static_cast<std::size_t>((i - window) % 8));
    slot = resource.allocate(size);
    total += reinterpret_cast<std::uintptr_t>(slot) & 1;
  }
  for (int i = 0; i < window; ++i)
    if (live[i] != nullptr)
      resource.deallocate(live[i], 64 + 16 * static_cast<std::size_t>((n - window + i) % 8));
  return total;
}

// Warm up (the first pairs set the thread and the table up), then measure.
template <class Resource, class... Options>
int measure(int n, Options... options) {
  Resource resource(options...);
  run(resource, 1000);
  return run(resource, n) == 1 ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  const int n = std::atoi(argv[2]);
  if (std::strcmp(argv[1], "bare") == 0) return measure<strata::heap_resource>(n);
  if (std::strcmp(argv[1], "tracked") == 0)
    return measure<strata::tracking<strata::heap_resource, true>>(n);
  if (std::strcmp(argv[1], "one-thread") == 0)
    return measure<strata::tracking<strata::heap_resource, true, 0, strata::no_lock>>(n);
  if (std::strcmp(argv[1], "sampled") == 0)
    return measure<strata::tracking<strata::heap_resource, true>>(
        n, strata::tracking_options{.sample_bytes = 512 * 1024, .seed = 1});
  if (std::strcmp(argv[1], "statistics") == 0)
    return measure<strata::statistics<strata::heap_resource>>(n);
  return 2;
}
