// The list of live ledger entries (ledger_entry.cpp), which memory_ledger::take reads.
#pragma once

#include <strata/ledger.hpp>

#include <cstddef>
#include <mutex>

namespace strata::ledger_list {

// Guards every entry's links and the fields a snapshot reads.
extern std::mutex mutex;
extern ledger_entry* head;
extern std::size_t live;

}  // namespace strata::ledger_list
