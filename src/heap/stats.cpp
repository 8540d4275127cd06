// strata_stats_get / strata_stats_print: counters of every heap plus the
// segment layer's byte counts, as text or JSON.
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "heap/heap_internal.hpp"
#include "heap/registry.hpp"
#include "heap/sampled_stats.hpp"
#include "heap/stats_internal.hpp"
#include "os/os.hpp"
#include "strata/strata.h"

namespace strata::heap {
namespace {
std::atomic<std::size_t> peak_in_use{0};
}

// Fill `out` and raise the sampled peak of bytes in use.
void stats_collect(strata_stats_t* out) noexcept {
  std::memset(out, 0, sizeof(*out));
  registry_sum(out);
  out->huge_in_use = global_stats::huge_in_use.load(std::memory_order_relaxed);
  sampled_stats_add(out);  // blocks of guarded sampling and the profiler
  out->in_use += out->huge_in_use;
  std::size_t peak = peak_in_use.load(std::memory_order_relaxed);
  while (out->in_use > peak &&
         !peak_in_use.compare_exchange_weak(peak, out->in_use, std::memory_order_relaxed)) {
  }
  out->peak_in_use = out->in_use > peak ? out->in_use : peak;
  out->committed = global_stats::committed.load(std::memory_order_relaxed);
  out->peak_committed = global_stats::peak_committed.load(std::memory_order_relaxed);
  out->reserved = global_stats::reserved.load(std::memory_order_relaxed);
  out->purged = global_stats::purged.load(std::memory_order_relaxed);
  out->pages = global_stats::pages.load(std::memory_order_relaxed);
  out->segments = global_stats::segments.load(std::memory_order_relaxed);
  out->segments_cached = global_stats::segments_cached.load(std::memory_order_relaxed);
  out->os_calls = os::call_count();
}

// Fold the calling thread's pages, so that its own counts are exact; other
// threads' pages are folded on their slow paths and when they exit. The frees
// it holds for other threads' pages (or exited ones') are posted, and so
// counted, first.
void fold_own_heaps() noexcept {
  heap* h = tls_entry.own_heap;
  if (h == &empty_heap) return;
  remote_flush_all(h->context);
  for (heap* each = &h->context->main_heap; each != nullptr; each = each->next_in_thread)
    heap_fold_stats(each);
}

// Called when the heap maps a new segment or huge block: the moments a peak can form.
// (It sums every heap's counters, so it stays off the paths that reuse cached memory.)
void stats_sample_peak() noexcept {
  strata_stats_t s;
  stats_collect(&s);
}

}  // namespace strata::heap

using namespace strata::heap;

void strata_stats_get(strata_stats_t* out) noexcept {
  if (out == nullptr) {
    errno = EINVAL;
    return;
  }
  fold_own_heaps();
  stats_collect(out);
}

void strata_stats_print(FILE* out, int json) noexcept {
  strata_stats_t s;
  fold_own_heaps();
  stats_collect(&s);
  if (out == nullptr) out = stderr;
  if (json != 0) {
    std::fprintf(
        out,
        "{\"in_use\": %zu, \"peak_in_use\": %zu, \"committed\": %zu, "
        "\"peak_committed\": %zu, \"reserved\": %zu, \"purged\": %zu, \"huge_in_use\": %zu, "
        "\"mallocs\": %" PRIu64 ", \"frees\": %" PRIu64 ", \"pages\": %" PRIu64
        ", \"segments\": %" PRIu64 ", \"segments_cached\": %" PRIu64
        ", \"cross_thread_frees\": %" PRIu64 ", \"os_calls\": %" PRIu64 ", \"threads\": %" PRIu64
        ", \"classes\": [",
        s.in_use, s.peak_in_use, s.committed, s.peak_committed, s.reserved, s.purged, s.huge_in_use,
        s.mallocs, s.frees, s.pages, s.segments, s.segments_cached, s.cross_thread_frees,
        s.os_calls, s.threads);
    const char* sep = "";
    for (std::size_t c = 0; c < STRATA_SIZE_CLASSES; ++c) {
      if (s.class_mallocs[c] == 0) continue;
      std::fprintf(out, "%s{\"size\": %zu, \"mallocs\": %" PRIu64 ", \"frees\": %" PRIu64 "}", sep,
                   strata_size_class_size(c), s.class_mallocs[c], s.class_frees[c]);
      sep = ", ";
    }
    std::fprintf(out, "]}\n");
    return;
  }
  std::fprintf(out,
               "strata statistics\n"
               "  in use          %12zu bytes (peak %zu, huge %zu)\n"
               "  committed       %12zu bytes (peak %zu)\n"
               "  reserved        %12zu bytes\n"
               "  purged          %12zu bytes (cumulative)\n"
               "  mallocs         %12" PRIu64
               "\n"
               "  frees           %12" PRIu64 " (%" PRIu64
               " from other threads)\n"
               "  pages           %12" PRIu64
               "\n"
               "  segments        %12" PRIu64 " (%" PRIu64
               " cached)\n"
               "  os calls        %12" PRIu64
               "\n"
               "  threads         %12" PRIu64 "\n",
               s.in_use, s.peak_in_use, s.huge_in_use, s.committed, s.peak_committed, s.reserved,
               s.purged, s.mallocs, s.frees, s.cross_thread_frees, s.pages, s.segments,
               s.segments_cached, s.os_calls, s.threads);
  std::fprintf(out, "  %10s %14s %14s %14s\n", "class", "mallocs", "frees", "live");
  for (std::size_t c = 0; c < STRATA_SIZE_CLASSES; ++c) {
    if (s.class_mallocs[c] == 0) continue;
    std::fprintf(out, "  %10zu %14" PRIu64 " %14" PRIu64 " %14" PRIu64 "\n",
                 strata_size_class_size(c), s.class_mallocs[c], s.class_frees[c],
                 s.class_mallocs[c] - s.class_frees[c]);
  }
}

size_t strata_size_class_size(size_t cls) noexcept {
  return cls < class_count ? class_block_size(cls) : 0;
}
