#include "quarantine.hpp"

#include <cstring>
#include <utility>

namespace strata::gpu::simulated {

bool passed(const frontier& f) {
  for (const queue_position& p : f)
    if (!p.queue->reached(p.at)) return false;
  return true;
}

namespace {

// The first offset whose byte is not the poison, or `bytes` when none.
std::size_t first_changed(const unsigned char* p, std::size_t bytes) {
  for (std::size_t i = 0; i < bytes; ++i)
    if (p[i] != quarantine::poison) return i;
  return bytes;
}

}  // namespace

// Nothing queued can touch memory whose streams have all passed the free:
// such memory goes back at once.
void quarantine::hold(void* p, std::size_t bytes, bool poisoned, frontier pending,
                      std::function<void()> release, std::string what) {
  if (passed(pending)) {
    release();
    return;
  }
  if (poisoned) std::memset(p, poison, bytes);
  std::lock_guard lock(mutex_);
  held_.emplace(reinterpret_cast<std::uintptr_t>(p),
                held{bytes, poisoned, std::move(pending), std::move(release), std::move(what)});
}

// The held block that starts at or before the range's end and reaches past its start.
std::optional<std::string> quarantine::overlapping(const void* p, std::size_t bytes) const {
  const auto start = reinterpret_cast<std::uintptr_t>(p);
  std::lock_guard lock(mutex_);
  auto it = held_.upper_bound(start + (bytes == 0 ? 0 : bytes - 1));
  if (it == held_.begin()) return std::nullopt;
  --it;
  if (it->first + it->second.bytes <= start) return std::nullopt;
  return it->second.what;
}

// Checked and released outside the lock, so the release may take its own.
std::vector<std::string> quarantine::reap(bool everything) {
  std::vector<held> done;
  std::vector<std::uintptr_t> starts;
  {
    std::lock_guard lock(mutex_);
    for (auto it = held_.begin(); it != held_.end();) {
      if (everything || passed(it->second.pending)) {
        starts.push_back(it->first);
        done.push_back(std::move(it->second));
        it = held_.erase(it);
      } else {
        ++it;
      }
    }
  }
  std::vector<std::string> overwritten;
  for (std::size_t i = 0; i < done.size(); ++i) {
    const held& h = done[i];
    if (h.poisoned) {
      const auto* bytes = reinterpret_cast<const unsigned char*>(starts[i]);
      const std::size_t at = first_changed(bytes, h.bytes);
      if (at != h.bytes)
        overwritten.push_back(h.what + ": byte " + std::to_string(at) +
                              " was written after the free by work queued before it");
    }
    h.release();
  }
  return overwritten;
}

bool quarantine::empty() const {
  std::lock_guard lock(mutex_);
  return held_.empty();
}

}  // namespace strata::gpu::simulated
