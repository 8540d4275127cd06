// Building a replay plan: one pass over the time-ordered records with a hash
// map from recorded address to (slot, size).
//
// Rules for what a real program's trace contains:
// - a free or realloc of an address never allocated (memory from before the
//   trace started, or from the dynamic loader) is counted, not fatal; such a
//   realloc replays as an allocation of its new block;
// - an allocation at an address still live means its free was not seen (two
//   threads' records a few nanoseconds apart, or a realloc that moved): the
//   old block is released first and counted;
// - a call that returned no block (address 0) replays as nothing.
#include "replay_plan.hpp"

#include <algorithm>
#include <unordered_map>

namespace strata_replay {

namespace {

using strata::trace::op;
using strata::trace::record;

struct live_block {
  std::uint32_t slot;
  std::uint64_t size;
};

// The plan under construction: the address map, the free slots, the live bytes.
class planner {
 public:
  explicit planner(plan& out) : out_(out) {}

  // Adds the steps of one record.
  void add(const record& r) {
    switch (r.kind) {
      case op::malloc:
      case op::calloc:
      case op::aligned:
        if (r.address == 0) {
          ++out_.failed_calls;
          return;
        }
        allocate(r, r.kind == op::calloc    ? action::allocate_zeroed
                    : r.kind == op::aligned ? action::allocate_aligned
                                            : action::allocate);
        return;
      case op::free:
        if (r.address == 0) return;
        if (!release(r.address)) ++out_.unknown_frees;
        return;
      case op::realloc:
        resize(r);
        return;
    }
  }

  // Blocks still live when the trace ends.
  std::uint64_t live_blocks() const { return blocks_.size(); }

 private:
  // A new block in a free slot.
  void allocate(const record& r, action what) {
    if (blocks_.count(r.address) != 0) {
      release(r.address);
      ++out_.implicit_frees;
    }
    std::uint32_t slot = take_slot();
    blocks_.emplace(r.address, live_block{slot, r.size});
    out_.steps.push_back(step{r.size, slot, what, r.alignment_log2, 0});
    grow(r.size, 0);
  }

  // Frees the block at `address`; false when it is not live.
  bool release(std::uint64_t address) {
    auto it = blocks_.find(address);
    if (it == blocks_.end()) return false;
    out_.steps.push_back(step{0, it->second.slot, action::release, 0, 0});
    live_ -= it->second.size;
    free_slots_.push_back(it->second.slot);
    blocks_.erase(it);
    return true;
  }

  // realloc: the same slot, a new address and size.
  void resize(const record& r) {
    if (r.old_address == 0) {
      if (r.address != 0)
        allocate(r, action::allocate);
      else
        ++out_.failed_calls;
      return;
    }
    if (r.address == 0) {  // failed (the old block stays), or a shrink to nothing
      if (r.size == 0) {
        if (!release(r.old_address)) ++out_.unknown_frees;
      } else {
        ++out_.failed_calls;
      }
      return;
    }
    auto it = blocks_.find(r.old_address);
    if (it == blocks_.end()) {
      ++out_.unknown_frees;
      allocate(r, action::allocate);
      return;
    }
    live_block block = it->second;
    blocks_.erase(it);
    if (blocks_.count(r.address) != 0) {
      release(r.address);
      ++out_.implicit_frees;
    }
    blocks_.emplace(r.address, live_block{block.slot, r.size});
    out_.steps.push_back(step{r.size, block.slot, action::resize, 0, 0});
    grow(r.size, block.size);
  }

  // A slot nobody holds.
  std::uint32_t take_slot() {
    if (!free_slots_.empty()) {
      std::uint32_t slot = free_slots_.back();
      free_slots_.pop_back();
      return slot;
    }
    return out_.slots++;
  }

  // Live bytes after a block of `before` bytes became `after` bytes.
  void grow(std::uint64_t after, std::uint64_t before) {
    live_ += after;
    live_ -= before;
    out_.peak_live_bytes = std::max(out_.peak_live_bytes, live_);
  }

  plan& out_;
  std::unordered_map<std::uint64_t, live_block> blocks_;
  std::vector<std::uint32_t> free_slots_;
  std::uint64_t live_ = 0;
};

}  // namespace

plan make_plan(std::vector<record> records) {
  std::stable_sort(records.begin(), records.end(),
                   [](const record& a, const record& b) { return a.time_ns < b.time_ns; });
  plan out;
  out.records = records.size();
  out.steps.reserve(records.size());
  std::vector<std::uint32_t> threads;
  for (const record& r : records) threads.push_back(r.thread);
  std::sort(threads.begin(), threads.end());
  out.threads =
      static_cast<std::uint32_t>(std::unique(threads.begin(), threads.end()) - threads.begin());
  if (!records.empty()) out.duration_ns = records.back().time_ns - records.front().time_ns;
  planner p(out);
  for (const record& r : records) p.add(r);
  out.live_at_end = p.live_blocks();
  return out;
}

}  // namespace strata_replay
