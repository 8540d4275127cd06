// What the ledger takes from the rest of strata: the heap's statistics, the
// STRATA_SHOW_STATS option and the report output. In libstrata these are the
// heap's own; a library that carries a ledger of its own without strata's heap
// (the GPU plugin, built with STRATA_LEDGER_STANDALONE) finds them at run time
// where a strata heap is loaded (LD_PRELOAD), and does without otherwise.
#pragma once

#include <strata/strata.h>

#include <cstddef>

namespace strata::ledger_heap {

// The heap's statistics; all zero where no strata heap is loaded.
void read_stats(strata_stats_t* out) noexcept;

// Whether STRATA_SHOW_STATS asks for the ledger at exit.
bool show_stats() noexcept;

// Write the ledger at exit where strata's reports go (standalone: stderr).
void report(const char* text, std::size_t length) noexcept;

}  // namespace strata::ledger_heap
