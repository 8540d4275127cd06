// Where strata writes what it reports: statistics at exit, option warnings,
// refused allocations and detected corruption.
#pragma once

#include <cstddef>

namespace strata::options {

// Choose the descriptor, once the options are read: STRATA_STATS_FILE when it
// is set (appended to), else, when a report was asked for at start
// (STRATA_SHOW_STATS, STRATA_SHOW_ERRORS, STRATA_VERBOSE), a duplicate of
// stderr taken now, so a program that closes its stderr before exit (as
// coreutils do) still shows them; else stderr itself. Called again on reload.
void open_report_output() noexcept;

// Whether STRATA_STATS_FILE names the output: statistics are then printed at exit.
bool report_output_is_stats_file() noexcept;

// The descriptor reports go to.
int report_fd() noexcept;

// Write `length` bytes of `text` whole, without allocating.
void report_write(const char* text, std::size_t length) noexcept;

// Write a C string whole.
void report_write(const char* text) noexcept;

}  // namespace strata::options
