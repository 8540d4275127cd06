// The guarded region's reports: one block of text saying what went wrong,
// where, and the allocating and freeing stacks and threads.
#pragma once

#include <cstdint>

#include "guarded/slot.hpp"

namespace strata::guarded {

enum class fault_kind { overflow, underflow, use_after_free, double_free, invalid_free, wild };

// Write the report of `kind` at `address` for slot `s` (may be null for a wild
// access); `access` is "read", "write" or null when unknown.
void write_report(fault_kind kind, std::uintptr_t address, const slot* s,
                  const char* access) noexcept;

// Report a misuse found by free (double or invalid free), with the stack of
// the call that found it, and abort.
[[noreturn]] void report_bad_free(fault_kind kind, const void* p, const slot* s,
                                  const stack::frames& here) noexcept;

// Install the SIGSEGV handler that reports faults in the region (once).
void install_fault_handler() noexcept;

}  // namespace strata::guarded
