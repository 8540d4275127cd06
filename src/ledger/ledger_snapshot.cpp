// memory_ledger::take: the heap's statistics, every live entry and the devices
// they use, gathered under the ledger's lock.
#include <strata/ledger.hpp>

#include <algorithm>
#include <utility>

#include "ledger/heap_link.hpp"
#include "ledger/ledger_list.hpp"

namespace strata {
namespace {

// A row's index by its entry's address, to find each row's parent.
using entry_index = std::vector<std::pair<const ledger_entry*, std::size_t>>;

// The row of `entry`, or SIZE_MAX when it is null or no live entry.
std::size_t find_row(const entry_index& entries, const ledger_entry* entry) {
  auto at = std::lower_bound(entries.begin(), entries.end(), std::make_pair(entry, std::size_t{0}));
  return entry != nullptr && at != entries.end() && at->first == entry ? at->second : SIZE_MAX;
}

// The device row for `source`, added the first time a row names that device.
std::size_t device_row(std::vector<ledger_device_row>& devices,
                       std::vector<const void*>& device_objects,
                       const ledger_device_source& source) {
  for (std::size_t i = 0; i < device_objects.size(); ++i)
    if (device_objects[i] == source.device) return i;
  ledger_device_row row;
  row.ordinal = source.ordinal;
  row.backend = source.backend;
  row.memory = source.read(source.device);
  devices.push_back(std::move(row));
  device_objects.push_back(source.device);
  return devices.size() - 1;
}

}  // namespace

// Copy every entry's figures under the lock, then link parents and add up the roots.
memory_ledger memory_ledger::take() {
  memory_ledger ledger;
  ledger_heap::read_stats(&ledger.heap_);
  entry_index entries;
  std::vector<const ledger_entry*> parents;
  std::vector<std::size_t> row_device;  // index into devices_, or SIZE_MAX
  std::vector<const void*> device_objects;
  {
    std::lock_guard lock(ledger_list::mutex);
    ledger.rows_.reserve(ledger_list::live);
    entries.reserve(ledger_list::live);
    parents.reserve(ledger_list::live);
    row_device.reserve(ledger_list::live);
    for (const ledger_entry* e = ledger_list::head; e != nullptr; e = e->next_) {
      ledger_row row;
      row.kind = e->kind_;
      row.tag = e->tag_;
      row.domain = e->domain_;
      row.figures = e->read_ != nullptr ? e->read_(e->read_owner_) : ledger_figures{e->held()};
      std::size_t device = SIZE_MAX;
      if (e->device_.read != nullptr) {
        device = device_row(ledger.devices_, device_objects, e->device_);
        row.device = e->device_.ordinal;
      }
      entries.emplace_back(e, ledger.rows_.size());
      parents.push_back(e->parent_);
      row_device.push_back(device);
      ledger.rows_.push_back(std::move(row));
    }
  }
  std::sort(entries.begin(), entries.end());
  for (std::size_t i = 0; i < ledger.rows_.size(); ++i) {
    ledger_row& row = ledger.rows_[i];
    row.parent = find_row(entries, parents[i]);
    if (row.parent != SIZE_MAX) continue;
    ledger.totals_[static_cast<std::size_t>(row.domain)] += row.figures.held;
    if (row_device[i] != SIZE_MAX && row.domain == ledger_domain::device)
      ledger.devices_[row_device[i]].strata_held += row.figures.held;
  }
  for (ledger_device_row& d : ledger.devices_) {
    std::size_t used = d.memory.total > d.memory.free ? d.memory.total - d.memory.free : 0;
    d.outside = used > d.strata_held ? used - d.strata_held : 0;
  }
  return ledger;
}

}  // namespace strata
