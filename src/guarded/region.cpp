// The guarded region's slots: placement, release into quarantine, lookup.
//
// Layout: a guard page, then per slot `slot_bytes` of memory and a guard page.
// Only the pages a live block covers are accessible; everything else of the
// region stays PROT_NONE. Slots are used fresh first, then the one freed
// longest ago, so a freed block stays inaccessible for as long as possible.
#include "guarded/region.hpp"

#include <pthread.h>
#include <sys/mman.h>

#include <mutex>

#include "guarded/report.hpp"
#include "guarded/slot.hpp"
#include "os/mutex.hpp"
#include "os/os.hpp"

namespace strata::guarded {

std::atomic<std::uintptr_t> region_begin{0};
std::atomic<std::uintptr_t> region_end{0};

namespace {

struct region_state {
  std::uintptr_t first_slot = 0;  // after the leading guard page
  std::size_t stride = 0;         // slot_bytes and its guard page
  std::size_t page = 0;
  std::size_t slot_count = 0;
  slot* slots = nullptr;
  std::uint32_t* quarantine = nullptr;  // freed slots, oldest at `oldest`
  std::size_t oldest = 0;
  std::size_t quarantined = 0;
  std::size_t used = 0;  // slots handed out at least once
  unsigned underflow_percent = 0;
  std::uint64_t random = 0x9e3779b97f4a7c15;
  os::mutex lock;
};

region_state state;

// xorshift: which blocks go against the guard before them.
std::uint64_t next_random() noexcept {
  std::uint64_t x = state.random;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return state.random = x;
}

std::uintptr_t slot_start(std::size_t index) noexcept {
  return state.first_slot + index * state.stride;
}

std::uintptr_t page_down(std::uintptr_t a) noexcept {
  return a & ~(state.page - 1);
}

std::uintptr_t page_up(std::uintptr_t a) noexcept {
  return (a + state.page - 1) & ~(state.page - 1);
}

// A slot to place a block in (fresh, else the oldest in quarantine); null when
// every slot holds a live block.
slot* take_slot() noexcept {
  if (state.used < state.slot_count) return &state.slots[state.used++];
  if (state.quarantined == 0) return nullptr;
  std::uint32_t index = state.quarantine[state.oldest];
  state.oldest = (state.oldest + 1) % state.slot_count;
  --state.quarantined;
  return &state.slots[index];
}

// The slot whose block starts at `p`, else null (reported by the caller).
slot* slot_of_block(const void* p) noexcept {
  location where;
  if (!locate(reinterpret_cast<std::uintptr_t>(p), where) || where.inside == nullptr)
    return nullptr;
  return const_cast<slot*>(where.inside);
}

// A fork while another thread holds the lock must not strand the child.
void fork_prepare() {
  state.lock.lock();
}
void fork_release() {
  state.lock.unlock();
}

}  // namespace

bool locate(std::uintptr_t address, location& out) noexcept {
  if (!owns(reinterpret_cast<const void*>(address))) return false;
  out = location{};
  if (address < state.first_slot) {  // the leading guard page
    out.after = &state.slots[0];
    return true;
  }
  std::size_t index = (address - state.first_slot) / state.stride;
  std::size_t offset = (address - state.first_slot) % state.stride;
  if (index >= state.slot_count) return true;  // the unused rest of the last unit
  if (offset < slot_bytes) {
    out.inside = &state.slots[index];
  } else {
    out.before = &state.slots[index];
    if (index + 1 < state.slot_count) out.after = &state.slots[index + 1];
  }
  return true;
}

std::size_t index_of(const slot* s) noexcept {
  return static_cast<std::size_t>(s - state.slots);
}

bool start(std::size_t max_slots, unsigned underflow_percent, std::size_t unit) noexcept {
  if (region_end.load(std::memory_order_relaxed) != 0 || max_slots == 0) return false;
  state.page = os::page_size();
  state.stride = slot_bytes + state.page;
  std::size_t bytes = (state.page + max_slots * state.stride + unit - 1) & ~(unit - 1);
  void* region = os::reserve_aligned(bytes, unit, false);
  if (region == nullptr) return false;
  // Bookkeeping: mapped beside the region, so the guarded heap is never asked.
  std::size_t book = max_slots * (sizeof(slot) + sizeof(std::uint32_t));
  void* records = os::reserve_aligned(book, state.page, true);
  if (records == nullptr) {
    os::release(region, bytes);
    return false;
  }
  state.slots = new (records) slot[max_slots];
  state.quarantine = reinterpret_cast<std::uint32_t*>(state.slots + max_slots);
  state.slot_count = max_slots;
  state.first_slot = reinterpret_cast<std::uintptr_t>(region) + state.page;
  state.underflow_percent = underflow_percent;
  state.random ^= reinterpret_cast<std::uintptr_t>(region);
  pthread_atfork(fork_prepare, fork_release, fork_release);
  install_fault_handler();
  region_begin.store(reinterpret_cast<std::uintptr_t>(region), std::memory_order_relaxed);
  region_end.store(reinterpret_cast<std::uintptr_t>(region) + bytes, std::memory_order_release);
  return true;
}

void* allocate(std::size_t size, std::size_t alignment) noexcept {
  if (size > slot_bytes || alignment > state.page || region_end.load() == 0) return nullptr;
  if (alignment < 16) alignment = 16;
  std::size_t rounded = size == 0 ? alignment : (size + alignment - 1) & ~(alignment - 1);
  stack::frames stack;
  stack::capture(stack, 2);  // this function and the sampling hook
  std::lock_guard<os::mutex> guard(state.lock);
  slot* s = take_slot();
  if (s == nullptr) return nullptr;
  std::uintptr_t start = slot_start(index_of(s));
  bool at_start = next_random() % 100 < state.underflow_percent;
  std::uintptr_t block = at_start ? start : start + slot_bytes - rounded;
  std::uintptr_t from = page_down(block);
  if (!os::unprotect(reinterpret_cast<void*>(from), page_up(block + rounded) - from)) {
    s->state.store(slot_state::freed, std::memory_order_relaxed);  // back to quarantine
    state.quarantine[(state.oldest + state.quarantined++) % state.slot_count] =
        static_cast<std::uint32_t>(index_of(s));
    return nullptr;
  }
  s->block = block;
  s->size = size;
  s->alloc_thread = stack::kernel_thread_id();
  s->alloc_stack = stack;
  s->free_thread = 0;
  s->free_stack.count = 0;
  s->state.store(slot_state::live, std::memory_order_release);
  return reinterpret_cast<void*>(block);
}

std::size_t release(void* p, bool* other_thread) noexcept {
  stack::frames stack;
  stack::capture(stack, 3);  // this function, the sampler's free and the heap's
  std::unique_lock<os::mutex> guard(state.lock);
  slot* s = slot_of_block(p);
  if (s == nullptr || s->state.load() == slot_state::unused ||
      s->block != reinterpret_cast<std::uintptr_t>(p)) {
    guard.unlock();
    report_bad_free(fault_kind::invalid_free, p, s, stack);
  }
  if (s->state.load() == slot_state::freed) {
    guard.unlock();
    report_bad_free(fault_kind::double_free, p, s, stack);
  }
  s->free_thread = stack::kernel_thread_id();
  s->free_stack = stack;
  s->state.store(slot_state::freed, std::memory_order_release);
  os::protect(reinterpret_cast<void*>(slot_start(index_of(s))), slot_bytes);
  state.quarantine[(state.oldest + state.quarantined++) % state.slot_count] =
      static_cast<std::uint32_t>(index_of(s));
  *other_thread = s->free_thread != s->alloc_thread;
  return s->size;
}

std::size_t usable_size(const void* p) noexcept {
  slot* s = slot_of_block(p);
  if (s != nullptr && s->state.load() == slot_state::live &&
      s->block == reinterpret_cast<std::uintptr_t>(p))
    return s->size == 0 ? 16 : (s->size + 15) & ~std::size_t{15};  // within the slot either way
  stack::frames stack;
  stack::capture(stack, 1);
  report_bad_free(s != nullptr && s->state.load() == slot_state::freed ? fault_kind::use_after_free
                                                                       : fault_kind::invalid_free,
                  p, s, stack);
}

}  // namespace strata::guarded
