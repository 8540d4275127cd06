// The process's ledger: every live ledger_entry on one intrusive list, joined
// when its resource is made and left when it is destroyed, under one mutex
// (resources are made and destroyed on slow paths only).
#include <strata/strata.h>
#include <strata/ledger.hpp>

#include <cstdlib>
#include <cstring>

#include "ledger/heap_link.hpp"
#include "ledger/ledger_list.hpp"

namespace strata {

namespace ledger_list {

std::mutex mutex;
ledger_entry* head = nullptr;
std::size_t live = 0;

}  // namespace ledger_list

namespace {

// The ledger as text, where strata's reports go.
void print_at_exit() {
  std::string text = memory_ledger::take().text();
  ledger_heap::report(text.data(), text.size());
}

// STRATA_SHOW_STATS=1: the ledger prints at exit. Arranged when the library
// loads, before any resource is made, so that resources still live at exit
// (statics, leaks) are in it.
__attribute__((constructor)) void arrange_print_at_exit() noexcept {
  if (ledger_heap::show_stats()) std::atexit(print_at_exit);
}

}  // namespace

// Join with a parent, no reader and no device.
ledger_entry::ledger_entry(const char* kind, ledger_domain domain,
                           const ledger_entry* parent) noexcept
    : ledger_entry(kind, domain, parent, nullptr, nullptr, ledger_device_source{}) {}

// Join with every field set.
ledger_entry::ledger_entry(const char* kind, ledger_domain domain, const ledger_entry* parent,
                           reader read, const void* read_owner,
                           const ledger_device_source& device) noexcept
    : kind_(kind),
      domain_(domain),
      parent_(parent),
      read_(read),
      read_owner_(read_owner),
      device_(device) {
  join();
}

// Link in at the head, under the lock, every field already set.
void ledger_entry::join() noexcept {
  std::lock_guard lock(ledger_list::mutex);
  next_ = ledger_list::head;
  if (next_ != nullptr) next_->prev_ = this;
  ledger_list::head = this;
  ++ledger_list::live;
  joined_ = true;
}

// Unlink, once: a resource may leave early, before it tears down.
void ledger_entry::leave() noexcept {
  std::lock_guard lock(ledger_list::mutex);
  if (!joined_) return;
  if (prev_ != nullptr)
    prev_->next_ = next_;
  else
    ledger_list::head = next_;
  if (next_ != nullptr) next_->prev_ = prev_;
  prev_ = next_ = nullptr;
  --ledger_list::live;
  joined_ = false;
}

// Under the lock: a snapshot never sees half a tag.
void ledger_entry::set_tag(std::string_view tag) noexcept {
  std::lock_guard lock(ledger_list::mutex);
  std::size_t length = tag.size() < sizeof(tag_) - 1 ? tag.size() : sizeof(tag_) - 1;
  std::memcpy(tag_, tag.data(), length);
  tag_[length] = '\0';
}

// Under the lock, as every field a snapshot reads.
void ledger_entry::set_kind(const char* kind) noexcept {
  std::lock_guard lock(ledger_list::mutex);
  kind_ = kind;
}

// Under the lock: once this returns, no snapshot still calls the old reader.
void ledger_entry::set_reader(reader read, const void* owner) noexcept {
  std::lock_guard lock(ledger_list::mutex);
  read_ = read;
  read_owner_ = owner;
}

// The count the list keeps.
std::size_t memory_ledger::live_entries() noexcept {
  std::lock_guard lock(ledger_list::mutex);
  return ledger_list::live;
}

// The names the text, JSON and HTML use.
const char* ledger_domain_name(ledger_domain domain) noexcept {
  switch (domain) {
    case ledger_domain::host:
      return "host";
    case ledger_domain::device:
      return "device";
    case ledger_domain::managed:
      return "managed";
    case ledger_domain::pinned:
      return "pinned";
  }
  return "host";
}

}  // namespace strata
