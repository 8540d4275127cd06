// The one list of the misuse matrix, joined from its parts, and the cases.
#include "misuse_matrix.hpp"

#include "rows.hpp"

namespace strata_misuse {

const char* case_name(misuse_case c) {
  switch (c) {
    case misuse_case::null_argument:
      return "null";
    case misuse_case::zero_size:
      return "zero";
    case misuse_case::huge_size:
      return "huge";
    case misuse_case::bad_alignment:
      return "misaligned";
    case misuse_case::foreign_pointer:
      return "foreign";
    case misuse_case::interior_pointer:
      return "interior";
    case misuse_case::double_free:
      return "double free";
    case misuse_case::use_after_destroy:
      return "use after destroy or reset";
    case misuse_case::destroy_twice:
      return "destroy twice";
    case misuse_case::wrong_thread:
      return "wrong thread";
    case misuse_case::racing_free:
      return "two threads free one block";
    case misuse_case::other_instance:
      return "mark or handle of another instance";
  }
  return "?";
}

const char* case_meaning(misuse_case c) {
  switch (c) {
    case misuse_case::null_argument:
      return "a null pointer where a block, handle, array or callback is expected";
    case misuse_case::zero_size:
      return "a request for zero bytes (or zero blocks)";
    case misuse_case::huge_size:
      return "a size (or count) no memory can hold, or past a configured cap";
    case misuse_case::bad_alignment:
      return "an alignment that is not a power of two";
    case misuse_case::foreign_pointer:
      return "a pointer this allocator never handed out (the C library's, a static "
             "object's, another allocator's)";
    case misuse_case::interior_pointer:
      return "a pointer into the allocator's memory that no allocation returned: inside a "
             "block, or a block never handed out";
    case misuse_case::double_free:
      return "a block freed twice by one thread";
    case misuse_case::use_after_destroy:
      return "a call on an instance (or a handle, or a mark) after it was destroyed or reset";
    case misuse_case::destroy_twice:
      return "an instance destroyed twice";
    case misuse_case::wrong_thread:
      return "a call from a thread that does not own the instance";
    case misuse_case::racing_free:
      return "one block freed by two threads at the same instant";
    case misuse_case::other_instance:
      return "a mark, handle or block of another instance of the same kind";
  }
  return "?";
}

const std::vector<row>& misuse_matrix() {
  static const std::vector<row> rows = [] {
    std::vector<row> all;
    for (auto part : {c_allocation_rows, c_heap_rows, c_service_rows, arena_rows, frame_rows,
                      session_rows, pool_rows, bfc_buddy_rows, adaptor_rows, resource_rows,
                      cpu_and_trace_rows, override_rows})
      for (row& r : part()) all.push_back(std::move(r));
    return all;
  }();
  return rows;
}

const std::vector<exempt_header>& exempt_headers() {
  static const std::vector<exempt_header> headers = {
      {"thread_number.hpp", "a per-thread counter: takes no argument, holds no memory"},
      {"trace_format.hpp", "the trace file's record layout: types and constants only"},
      {"memory_pressure.hpp",
       "a monitor of thresholds: allocates nothing; cpu_allocator's row covers its use"},
      {"cpu_backend.hpp", "the backend loader of cpu_allocator, whose row covers it"},
      {"detail/bfc_address_table.hpp", "bfc's internal table; bfc's row covers it"},
      {"detail/bfc_capacity_error.hpp", "the exception bfc and buddy throw"},
      {"detail/bfc_size_bins.hpp", "bfc's internal bins; bfc's row covers it"},
      {"detail/buddy_bitmap.hpp", "buddy's internal bitmaps; buddy's row covers it"},
      {"detail/arena_signature.hpp", "a constant arena chunks start with"},
      {"detail/tracking_shard.hpp",
       "the tracking adaptor's per-thread tables; tracking's row covers it"},
      {"detail/sample_filter.hpp",
       "the sampled tracking adaptor's filter of drawn addresses; tracking's row covers it"},
      {"detail/exp_log.hpp", "the byte sampler's logarithm and exponential: no memory"},
      {"detail/poisson_sampler.hpp",
       "the byte-sampling arithmetic of the profiler and sampled tracking: no memory"},
      {"no_lock.hpp", "the lock that takes no lock: no memory, no argument"},
      {"ledger.hpp",
       "an account of the other resources, handing out no memory; its C calls answer a null "
       "output or an unknown format with EINVAL (tests/ledger)"},
  };
  return headers;
}

}  // namespace strata_misuse
