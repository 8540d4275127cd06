// Run-time options: STRATA_* environment variables parsed once, settable from code.
#pragma once

#include <atomic>

#include "strata/strata.h"

namespace strata::options {

// Values indexed by option; valid once ensure_initialized() has run.
extern std::atomic<long> values[STRATA_OPTION_COUNT];
extern std::atomic<bool> initialized;

// Parse the environment (once; later calls return at once).
void initialize() noexcept;

inline long get(strata_option_t option) noexcept {
  if (!initialized.load(std::memory_order_acquire)) initialize();
  return values[option].load(std::memory_order_relaxed);
}

// Re-read the environment as if the process had just started (tests).
void reload_from_environment() noexcept;

// Print the options in force, one per line, to the report output.
void print() noexcept;

}  // namespace strata::options
