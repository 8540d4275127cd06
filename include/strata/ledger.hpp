// strata memory ledger: one tagged account of who holds what, host and device.
//
// Every strata resource that takes memory from an upstream (pools, slabs,
// arenas, bfc, buddy, and in the GPU layer the device, managed and pinned
// pools and the caching allocator) owns a ledger_entry:
// it joins the process's ledger when the resource is made and leaves it when
// the resource is destroyed. An entry counts the bytes its resource holds from
// its upstream on the resource's slow paths (when it takes or returns a chunk),
// so allocation paths pay nothing. A resource whose figures are safe to read
// from another thread (the caching allocator, a pool with a mutex) gives its
// entry a reader instead, which also says how much is handed out.
//
//   strata::bfc<> blocks;
//   blocks.ledger().set_tag("tensors");
//   strata::memory_ledger ledger = strata::memory_ledger::take();
//   std::puts(ledger.text().c_str());        // also json() and html()
//
// memory_ledger::take() gathers, under one lock: the strata heap's statistics,
// every live entry (each with its upstream entry, so the ledger is a tree of
// who holds what), and the device layer's own view of each device that
// entries use (free and total memory, as cudaMemGetInfo reports it, less what
// strata's device entries hold = memory used outside strata by other
// libraries, NCCL and the CUDA context). The host library knows nothing of
// GPUs: GPU resources hand their entry a ledger_device_source.
//
// Thread safety: entries join, leave and are read from any thread; took and
// gave are relaxed atomics; a resource's reader runs under the ledger's lock
// and must not make or destroy ledger entries.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "strata/strata.h"

namespace strata {

// Which memory an entry holds.
enum class ledger_domain : unsigned char { host, device, managed, pinned };
inline constexpr std::size_t ledger_domains = 4;

// The domain's name in the ledger's text, JSON and HTML.
__attribute__((visibility("default"))) const char* ledger_domain_name(
    ledger_domain domain) noexcept;

// In ledger_figures::in_use: the resource cannot tell without a lock on its allocation path.
inline constexpr std::size_t ledger_unknown = SIZE_MAX;

// What one entry holds now: taken from its upstream, and of that handed out.
struct ledger_figures {
  std::size_t held = 0;
  std::size_t in_use = ledger_unknown;
};

// A device's memory as the device reports it (cudaMemGetInfo).
struct ledger_device_memory {
  std::size_t free = 0;
  std::size_t total = 0;
};

// How the ledger asks the device layer about the device an entry's memory is on.
struct ledger_device_source {
  const void* device = nullptr;  // the device object: entries on one device share it
  int ordinal = -1;
  const char* backend = "";
  ledger_device_memory (*read)(const void* device) = nullptr;
};

class ledger_entry;

namespace detail {

// The domain of what a resource over `Upstream` holds: the upstream's
// ledger_memory where it declares one (the GPU layer's upstreams), else host.
template <class Upstream>
constexpr ledger_domain ledger_domain_of() noexcept {
  if constexpr (requires { Upstream::ledger_memory; })
    return Upstream::ledger_memory;
  else if constexpr (requires(const Upstream& u) { u.get(); })
    return ledger_domain_of<std::remove_cvref_t<decltype(std::declval<const Upstream&>().get())>>();
  else
    return ledger_domain::host;
}

// The ledger entry of the resource `upstream` stands for, or null when it keeps
// none: a row's parent in the tree. An upstream_ref and an adaptor (statistics,
// tracking, limiting...) are looked through to what they forward to, so a
// resource over an adaptor over a pool is the pool's child, not a second root.
template <class Upstream>
const ledger_entry* ledger_parent_of(const Upstream& upstream) noexcept {
  if constexpr (requires { upstream.ledger(); })
    return &upstream.ledger();
  else if constexpr (requires { upstream.get(); })
    return ledger_parent_of(upstream.get());
  else if constexpr (requires(Upstream & adaptor) { adaptor.upstream(); })
    return ledger_parent_of(const_cast<Upstream&>(upstream).upstream());  // only read
  else
    return nullptr;
}

// The device an upstream's memory is on, where the upstream can say (the GPU layer's).
template <class Upstream>
ledger_device_source ledger_device_of(const Upstream& upstream) noexcept {
  if constexpr (requires { upstream.ledger_device(); })
    return upstream.ledger_device();
  else
    return {};
}

}  // namespace detail

// One live resource's line in the ledger. Not copyable: it is its resource's member.
class __attribute__((visibility("default"))) ledger_entry {
 public:
  using reader = ledger_figures (*)(const void* owner);

  // Join the ledger. `kind` must outlive the entry (a string literal); `parent`
  // is the entry of the resource this one takes memory from (null: none).
  ledger_entry(const char* kind, ledger_domain domain, const ledger_entry* parent) noexcept;
  // Join with a reader and a device already set, so no snapshot sees the entry without them.
  ledger_entry(const char* kind, ledger_domain domain, const ledger_entry* parent, reader read,
               const void* read_owner, const ledger_device_source& device) noexcept;
  // Join as a resource over `upstream`: its domain, parent and device from it.
  template <class Upstream>
  ledger_entry(const char* kind, const Upstream& upstream) noexcept
      : ledger_entry(kind, detail::ledger_domain_of<Upstream>(), detail::ledger_parent_of(upstream),
                     nullptr, nullptr, detail::ledger_device_of(upstream)) {}
  ~ledger_entry() { leave(); }
  ledger_entry(const ledger_entry&) = delete;
  ledger_entry& operator=(const ledger_entry&) = delete;

  // The resource took `bytes` from its upstream, or gave them back.
  void took(std::size_t bytes) noexcept { held_.fetch_add(bytes, std::memory_order_relaxed); }
  void gave(std::size_t bytes) noexcept { held_.fetch_sub(bytes, std::memory_order_relaxed); }
  std::size_t held() const noexcept { return held_.load(std::memory_order_relaxed); }

  // A name of the caller's choosing, shown beside the kind (first 47 bytes kept).
  void set_tag(std::string_view tag) noexcept;
  // A more telling kind, for a resource built on another (a device pool's bfc).
  void set_kind(const char* kind) noexcept;
  // Figures read through `read(owner)` under the ledger's lock; null: held() alone.
  void set_reader(reader read, const void* owner) noexcept;
  // Leave the ledger before the resource starts tearing down (idempotent).
  void leave() noexcept;

 private:
  friend class memory_ledger;
  void join() noexcept;

  const char* kind_;
  ledger_domain domain_;
  bool joined_ = false;
  const ledger_entry* parent_;
  reader read_ = nullptr;
  const void* read_owner_ = nullptr;
  ledger_device_source device_{};
  std::atomic<std::size_t> held_{0};
  char tag_[48] = {};
  ledger_entry* prev_ = nullptr;
  ledger_entry* next_ = nullptr;
};

// One resource as the ledger saw it.
struct ledger_row {
  std::string kind;
  std::string tag;
  ledger_domain domain = ledger_domain::host;
  ledger_figures figures;
  std::size_t parent = SIZE_MAX;  // index of the row it takes memory from; SIZE_MAX: a root
  int device = -1;                // the device ordinal, for device-side rows
};

// One device as the device layer reports it, and how strata's share compares.
struct ledger_device_row {
  int ordinal = -1;
  std::string backend;
  ledger_device_memory memory;
  std::size_t strata_held = 0;  // held by strata's device-domain roots on it
  std::size_t outside = 0;      // used on the device, not by strata: (total - free) - strata_held
};

// A snapshot of the process's memory: the heap, every live resource, every device.
class __attribute__((visibility("default"))) memory_ledger {
 public:
  // Gather the ledger now.
  static memory_ledger take();
  // Live entries now, without a snapshot.
  static std::size_t live_entries() noexcept;

  const strata_stats_t& heap() const noexcept { return heap_; }
  const std::vector<ledger_row>& rows() const noexcept { return rows_; }
  const std::vector<ledger_device_row>& devices() const noexcept { return devices_; }
  // Held in `domain` by the roots (resources whose upstream is no entry).
  std::size_t total_held(ledger_domain domain) const noexcept {
    return totals_[static_cast<std::size_t>(domain)];
  }

  std::string text() const;
  std::string json() const;
  // A self-contained page (no scripts or links): the tree of who holds what.
  std::string html() const;

 private:
  strata_stats_t heap_{};
  std::vector<ledger_row> rows_;
  std::vector<ledger_device_row> devices_;
  std::size_t totals_[ledger_domains] = {};
};

}  // namespace strata
