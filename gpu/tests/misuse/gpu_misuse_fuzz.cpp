// Fuzz GPU misuse: a byte string drives allocations and frees over two of
// each GPU resource (device pool, pinned pool, caching allocator, tracking,
// the device itself) on one strict simulated device, checked against the
// shadow model of tests/fuzz, with misuse injected: double, foreign, interior
// and sibling frees, two threads freeing one block at once, destroyed stream
// handles, and (in a forked child, tests/fuzz/misuse_child.hpp) calls on a
// destroyed resource and second destructors. A refused free must throw
// device_error(invalid_argument) and leave every live block as it was.
#include <strata/gpu/caching_allocator.hpp>
#include <strata/gpu/device_pool.hpp>
#include <strata/gpu/pinned_pool.hpp>
#include <strata/gpu/simulated.hpp>
#include <strata/gpu/tracking.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <thread>
#include <type_traits>
#include <vector>

#include "fuzz_input.hpp"
#include "misuse_child.hpp"
#include "shadow.hpp"

namespace {

using namespace strata::fuzz;
using namespace strata::gpu;

// One resource behind one face: allocate and free a block of host-visible memory.
struct gpu_subject {
  std::function<void*(std::size_t)> allocate;
  std::function<void(void*, std::size_t)> deallocate;
  bool refuses_by_throwing;  // false: one line and abort (tracking)
};

template <class R>
gpu_subject stream_resource(R& r) {
  return {[&r](std::size_t bytes) { return r.allocate(bytes, stream{}); },
          [&r](void* p, std::size_t bytes) { r.deallocate(p, bytes, stream{}); }, true};
}

// A fresh device and resource of kind `kind` in a child, destroyed, then used
// or destroyed again: one line and abort.
void destroyed_resource(unsigned kind, bool twice) {
  simulated_device dev;
  auto misuse = [twice](auto* r, auto use) {
    using R = std::remove_pointer_t<decltype(r)>;
    r->~R();
    // What the destructor left is what the next call reads: GCC, seeing the
    // object's life end, would call that read uninitialized.
    asm volatile("" : : "r"(r) : "memory");
    if (twice)
      r->~R();
    else
      use(*r);
  };
  alignas(64) static unsigned char room[std::size_t{1} << 15];
  switch (kind % 4) {
    case 0: {
      static_assert(sizeof(device_pool) <= sizeof room);
      return misuse(new (room) device_pool(dev), [](device_pool& r) { (void)r.allocate(64); });
    }
    case 1:
      static_assert(sizeof(pinned_pool) <= sizeof room);
      return misuse(new (room) pinned_pool(dev), [](pinned_pool& r) { (void)r.allocate(64); });
    case 2:
      return misuse(new (room) caching_allocator(dev),
                    [](caching_allocator& r) { (void)r.allocate(64); });
    default:
      static_assert(sizeof(tracking<device_pool>) <= sizeof room);
      return misuse(new (room) tracking<device_pool>(dev),
                    [](tracking<device_pool>& r) { (void)r.allocate(64); });
  }
}

class gpu_misuse_run {
 public:
  explicit gpu_misuse_run(fuzz_input& in) : in_(in) {
    for (int twice = 0; twice < 2; ++twice) {
      device_pools_.push_back(std::make_unique<device_pool>(dev_));
      pinned_.push_back(std::make_unique<pinned_pool>(dev_));
      caching_.push_back(std::make_unique<caching_allocator>(dev_));
      tracked_.push_back(std::make_unique<tracking<device_pool>>(dev_));
    }
    for (int kind = 0; kind < kinds; ++kind)  // siblings side by side (index ^ 1)
      for (int twice = 0; twice < 2; ++twice) subjects_.push_back(make(kind, twice));
  }

  void step() {
    switch (in_.byte() % 10) {
      case 0:
      case 1:
      case 2:
        return do_allocate();
      case 3:
      case 4:
        return do_free();
      case 5:
        return shadow_.verify_all();
      case 6:
        return refused_free(in_.byte() % 4);
      case 7:
        return racing_free();
      case 8:
        return destroyed_stream();
      default:
        return destroyed_instance();
    }
  }

  // Free every live block, each into its instance.
  void finish() {
    while (shadow_.size() != 0) {
      void* p = reinterpret_cast<void*>(shadow_.nth(0));
      live_block b = shadow_.at(shadow_.nth(0));
      shadow_.remove(p);
      subjects_[b.owner].deallocate(p, b.bytes);
    }
    dev_.synchronize();
  }

 private:
  static constexpr int kinds = 5;
  static constexpr int max_children = 4;

  gpu_subject make(int kind, int which) {
    switch (kind) {
      case 0:
        return stream_resource(*device_pools_[which]);
      case 1:
        return {[this, which](std::size_t bytes) { return pinned_[which]->allocate(bytes); },
                [this, which](void* p, std::size_t bytes) { pinned_[which]->deallocate(p, bytes); },
                true};
      case 2:
        return stream_resource(*caching_[which]);
      case 3: {
        gpu_subject s = stream_resource(*tracked_[which]);
        s.refuses_by_throwing = false;
        return s;
      }
      default:  // the device itself; both instances share it, so a sibling's block is its own
        return {[this](std::size_t bytes) { return dev_.allocate(bytes); },
                [this](void* p, std::size_t) { dev_.deallocate(p); }, true};
    }
  }

  unsigned pick_subject() { return in_.byte() % subjects_.size(); }

  void do_allocate() {
    unsigned s = pick_subject();
    std::size_t bytes = 16 + in_.below(241);
    if (shadow_.size() > 100) return;
    shadow_.add(subjects_[s].allocate(bytes), bytes, 0, s);
  }

  void do_free() {
    if (shadow_.size() == 0) return;
    void* p = reinterpret_cast<void*>(shadow_.nth(in_.below(shadow_.size())));
    live_block b = shadow_.at(reinterpret_cast<std::uintptr_t>(p));
    shadow_.remove(p);
    subjects_[b.owner].deallocate(p, b.bytes);
  }

  // A free the resource must refuse: of a static address, inside a live block,
  // of a sibling's block, or of a block freed already. Thrown and nothing
  // changed, or (tracking) one line and abort in a child.
  void refused_free(unsigned how) {
    static long words[8];
    if (shadow_.size() == 0) return;
    void* p = reinterpret_cast<void*>(shadow_.nth(in_.below(shadow_.size())));
    live_block b = shadow_.at(reinterpret_cast<std::uintptr_t>(p));
    unsigned owner = b.owner;
    void* target = p;
    if (how == 0) target = words;
    if (how == 1) target = static_cast<char*>(p) + 8;
    if (how == 2) owner = b.owner ^ 1;
    if (how == 2 && b.owner / 2 == 4) return;  // the device's siblings are one device
    if (how == 3) {                            // a freed block, freed again
      shadow_.remove(p);
      subjects_[owner].deallocate(p, b.bytes);
    }
    gpu_subject& s = subjects_[owner];
    if (!s.refuses_by_throwing) {
      if (children_ == max_children) return;
      ++children_;
      return expect_abort("refused free", "free of a block not live in this tracking adaptor",
                          [&s, target, &b] { s.deallocate(target, b.bytes); });
    }
    bool refused = false;
    try {
      s.deallocate(target, b.bytes);
    } catch (const device_error& e) {
      refused = e.code() == errc::invalid_argument;
    }
    check(refused, "a GPU resource took a free it must refuse", target, how);
    shadow_.verify_all();
  }

  // Two threads free one block at once: exactly one is taken.
  void racing_free() {
    if (shadow_.size() == 0) return;
    void* p = reinterpret_cast<void*>(shadow_.nth(in_.below(shadow_.size())));
    live_block b = shadow_.at(reinterpret_cast<std::uintptr_t>(p));
    gpu_subject& s = subjects_[b.owner];
    if (!s.refuses_by_throwing) return;
    shadow_.remove(p);
    std::atomic<int> ready{0};
    std::atomic<int> refused{0};
    auto free_it = [&] {
      ready.fetch_add(1);
      while (ready.load() < 2) {
      }
      try {
        s.deallocate(p, b.bytes);
      } catch (const device_error&) {
        refused.fetch_add(1);
      }
    };
    std::thread one(free_it), two(free_it);
    one.join();
    two.join();
    check(refused.load() == 1, "two threads freeing one GPU block: not exactly one refused", p);
  }

  // A stream destroyed, then named: device_error(invalid_argument), nothing handed out.
  void destroyed_stream() {
    const stream s = dev_.create_stream();
    dev_.destroy_stream(s);
    bool refused = false;
    try {
      (void)device_pools_[in_.byte() % 2]->allocate(64, s);
    } catch (const device_error& e) {
      refused = e.code() == errc::invalid_argument;
    }
    check(refused, "a GPU pool allocated on a destroyed stream");
  }

  // A resource used after its destructor, or destroyed twice: one line and abort.
  void destroyed_instance() {
    if (children_ == max_children) return;
    ++children_;
    unsigned kind = in_.byte();
    bool twice = in_.byte() % 2 == 0;
    expect_abort("destroyed GPU resource", twice ? "destroyed twice" : "use of a destroyed",
                 [kind, twice] { destroyed_resource(kind, twice); });
  }

  fuzz_input& in_;
  simulated_device dev_;
  std::vector<std::unique_ptr<device_pool>> device_pools_;
  std::vector<std::unique_ptr<pinned_pool>> pinned_;
  std::vector<std::unique_ptr<caching_allocator>> caching_;
  std::vector<std::unique_ptr<tracking<device_pool>>> tracked_;
  std::vector<gpu_subject> subjects_;
  shadow shadow_;
  int children_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz_input in(data, size);
  gpu_misuse_run run(in);
  for (int steps = 0; steps < 300 && !in.done(); ++steps) run.step();
  run.finish();
  return 0;
}
