// The leak report (see leaks.hpp), printed without allocating.
#include "profile/leaks.hpp"

#include "stack/text_line.hpp"

namespace strata::profile {

namespace {

// The live bucket after `previous` in order of live bytes, largest first (ties
// by position), or the first when `previous` is null; null when none is left.
const bucket* next_largest(const bucket* buckets, std::size_t count, const bucket* previous) {
  const bucket* best = nullptr;
  for (std::size_t i = 0; i < count; ++i) {
    const bucket* k = &buckets[i];
    if (k->live.bytes < 0.5) continue;
    if (previous != nullptr && (k->live.bytes > previous->live.bytes ||
                                (k->live.bytes == previous->live.bytes && k <= previous)))
      continue;
    if (best == nullptr || k->live.bytes > best->live.bytes) best = k;
  }
  return best;
}

}  // namespace

void report_leaks(const bucket* buckets, std::size_t count, std::size_t top) noexcept {
  double total = 0;
  for (std::size_t i = 0; i < count; ++i) total += buckets[i].live.bytes;
  stack::text_line line;
  line.text("strata: profile: about ").decimal(static_cast<std::uint64_t>(total + 0.5));
  line.text(" bytes still live at exit (sampled estimate); the largest stacks:").flush();
  const bucket* k = nullptr;
  for (std::size_t n = 0; n < top && (k = next_largest(buckets, count, k)) != nullptr; ++n) {
    line.text("  about ").decimal(static_cast<std::uint64_t>(k->live.bytes + 0.5));
    line.text(" bytes in ").decimal(static_cast<std::uint64_t>(k->live.count + 0.5));
    line.text(" blocks allocated at:").flush();
    stack::write_frames(k->stack);
  }
}

}  // namespace strata::profile
