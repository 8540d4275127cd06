// Fuzz misuse: a byte string drives allocations and frees over two instances
// of every allocator and adaptor (misuse_subjects.hpp), checked against the
// shadow model, with misuse injected: double, foreign, interior and sibling
// frees, two threads freeing one block at once, stale heap handles and arena
// marks, calls from a thread that does not own the instance, null arguments
// and unregistered frame tags. A misuse answered by one line and abort runs in
// a forked child (misuse_child.hpp); the others must give their documented
// value and leave every live block as it was.
#include <strata/arena.hpp>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <stdexcept>
#include <thread>
#include <vector>

#include "fuzz_input.hpp"
#include "misuse_child.hpp"
#include "misuse_subjects.hpp"
#include "shadow.hpp"

namespace {

using namespace strata::fuzz;

// Allocate from `heap`, for the misuses that must abort on the way.
void use_heap(strata_heap_t* heap) {
  void* p = strata_heap_malloc(heap, 16);
  strata_free(p);
}

// The instances, two of each kind, siblings side by side (index ^ 1).
std::vector<std::unique_ptr<subject>> make_subjects() {
  std::vector<std::unique_ptr<subject>> all;
  for (int twice = 0; twice < 2; ++twice) {
    all.push_back(std::make_unique<pool_subject<strata::fixed_pool<>>>());
    all.push_back(std::make_unique<pool_subject<strata::concurrent_fixed_pool<>>>());
    all.push_back(std::make_unique<frame_subject>());
    all.push_back(std::make_unique<session_subject>());
    all.push_back(std::make_unique<best_fit_subject<strata::bfc<>>>(
        new strata::bfc<>({.initial_region_bytes = 1 << 20, .max_reserved_bytes = 4 << 20})));
    all.push_back(std::make_unique<best_fit_subject<strata::buddy<>>>(
        new strata::buddy<>({.total_bytes = 1 << 20, .min_block = 64})));
    all.push_back(
        std::make_unique<adaptor_subject<strata::tracking<strata::heap_resource, true>>>());
    all.push_back(
        std::make_unique<adaptor_subject<strata::limiting<strata::heap_resource>>>(4 << 20));
    all.push_back(std::make_unique<c_heap_subject>());
  }
  return all;
}
constexpr unsigned kinds = 9;
constexpr unsigned frame_kind = 2, session_kind = 3, tracking_kind = 6, limiting_kind = 7,
                   c_heap_kind = 8;

class misuse_run {
 public:
  explicit misuse_run(fuzz_input& in) : in_(in), subjects_(make_subjects()) {}

  void step() {
    switch (in_.byte() % 12) {
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
        return misuse_block(&misuse_run::double_free);
      case 7:
        return misuse_foreign();
      case 8:
        return misuse_block(&misuse_run::interior_free);
      case 9:
        return misuse_block(&misuse_run::sibling_free);
      case 10:
        return misuse_block(&misuse_run::racing_free);
      default:
        return misuse_handle();
    }
  }

  // Free every live block, each into its instance.
  void finish() {
    while (shadow_.size() != 0) {
      void* p = reinterpret_cast<void*>(shadow_.nth(0));
      live_block b = shadow_.at(shadow_.nth(0));
      shadow_.remove(p);
      subjects_[b.owner]->deallocate(p, b.bytes);
    }
  }

 private:
  static constexpr int max_children = 6;  // forks per input: each costs a millisecond or more

  unsigned pick_subject() { return in_.byte() % subjects_.size(); }

  void do_allocate() {
    unsigned s = pick_subject();
    std::size_t bytes = 16 + in_.below(241);  // within every pool's block
    if (shadow_.size() > 200) return;
    try {
      shadow_.add(subjects_[s]->allocate(bytes), bytes, 0, s);
    } catch (const std::bad_alloc&) {
    }
  }

  void do_free() {
    if (shadow_.size() == 0) return;
    void* p = reinterpret_cast<void*>(shadow_.nth(in_.below(shadow_.size())));
    live_block b = shadow_.at(reinterpret_cast<std::uintptr_t>(p));
    shadow_.remove(p);
    subjects_[b.owner]->deallocate(p, b.bytes);
  }

  // A live block whose misuse is checked, and its instance; false if none (or
  // no more children this input).
  bool pick_block(void*& p, live_block& b) {
    if (shadow_.size() == 0 || children_ == max_children) return false;
    p = reinterpret_cast<void*>(shadow_.nth(in_.below(shadow_.size())));
    b = shadow_.at(reinterpret_cast<std::uintptr_t>(p));
    if (!subjects_[b.owner]->checks(p)) return false;
    ++children_;
    return true;
  }

  using block_misuse = void (misuse_run::*)(void*, const live_block&);
  void misuse_block(block_misuse misuse) {
    void* p;
    live_block b;
    if (pick_block(p, b)) (this->*misuse)(p, b);
  }

  void double_free(void* p, const live_block& b) {
    subject* s = subjects_[b.owner].get();
    expect_abort("double free", s->answer().double_free, [s, p, &b] {
      s->deallocate(p, b.bytes);
      s->deallocate(p, b.bytes);
    });
  }

  void interior_free(void* p, const live_block& b) {
    subject* s = subjects_[b.owner].get();
    expect_abort("interior free", s->answer().interior,
                 [s, p, &b] { s->deallocate(static_cast<char*>(p) + 8, b.bytes - 8); });
  }

  void sibling_free(void* p, const live_block& b) {
    subject* sibling = subjects_[b.owner ^ 1].get();
    if (!sibling->answer().refuses_sibling) return;
    expect_abort("free into a sibling", sibling->answer().foreign,
                 [sibling, p, &b] { sibling->deallocate(p, b.bytes); });
  }

  // In the child, two threads free one block at once: one must abort. A race
  // that lets both through does not always show, so seeds race several blocks.
  void racing_free(void* p, const live_block& b) {
    subject* s = subjects_[b.owner].get();
    if (!s->answer().any_thread) return;
    expect_abort("two threads free one block", s->answer().double_free, [s, p, &b] {
      std::atomic<int> ready{0};
      auto free_it = [&] {
        ready.fetch_add(1);
        while (ready.load() < 2) {
        }
        s->deallocate(p, b.bytes);
        strata_collect(0);
      };
      std::thread one(free_it), two(free_it);
      one.join();
      two.join();
    });
  }

  void misuse_foreign() {
    if (children_ == max_children) return;
    ++children_;
    subject* s = subjects_[pick_subject()].get();
    static long words[8];
    expect_abort("foreign free", s->answer().foreign, [s] { s->deallocate(words, 64); });
  }

  // The misuses of handles, marks, threads and null arguments.
  void misuse_handle() {
    unsigned instance = in_.byte() % 2 * kinds;
    switch (in_.byte() % 8) {
      case 0:
        return stale_heap_handle(instance);
      case 1:
        return null_arguments(instance);
      case 2:
        return unregistered_tag(instance);
      case 3:
        return arena_marks();
      case 4:
        return wrong_thread(instance);
      case 5:
        return never_handed_out_remote();
      default:
        return null_deallocate(instance);
    }
  }

  // Destroy a heap (its blocks go with it) and use its handle: refused.
  void stale_heap_handle(unsigned instance) {
    auto* heap = static_cast<c_heap_subject*>(subjects_[instance + c_heap_kind].get());
    shadow_.drop_owner(instance + c_heap_kind);
    strata_heap_t* stale = heap->remake();
    if (children_ == max_children) return;
    ++children_;
    switch (in_.byte() % 4) {
      case 0:
        return expect_abort("malloc from a destroyed heap", "heap destroyed",
                            [stale] { use_heap(stale); });
      case 1:
        return expect_abort("heap destroyed twice", "heap destroyed",
                            [stale] { strata_heap_destroy(stale); });
      case 2:
        return expect_abort("heap deleted after destroy", "heap destroyed",
                            [stale] { strata_heap_delete(stale); });
      default:
        return expect_abort("check of a destroyed heap", "heap destroyed",
                            [stale] { (void)strata_heap_check(stale); });
    }
  }

  // Null heaps and arrays: NULL with errno EINVAL, nothing touched.
  void null_arguments(unsigned) {
    errno = 0;
    check(strata_heap_malloc(nullptr, 16) == nullptr && errno == EINVAL,
          "strata_heap_malloc(NULL) did not answer NULL, EINVAL");
    errno = 0;
    check(strata_malloc_batch(16, 4, nullptr) == 0 && errno == EINVAL,
          "strata_malloc_batch(NULL out) did not answer 0, EINVAL");
    shadow_.verify_all();
  }

  // A tag never registered: std::invalid_argument, nothing counted.
  void unregistered_tag(unsigned instance) {
    auto* frame = static_cast<frame_subject*>(subjects_[instance + frame_kind].get());
    auto tag = static_cast<strata::frame_tag>(1 + in_.byte() % 63);
    bool threw = false;
    try {
      (void)frame->frames().allocate(16, 16, tag);
    } catch (const std::invalid_argument&) {
      threw = true;
    }
    check(threw, "an unregistered frame tag was accepted", nullptr, tag);
  }

  // A mark of a destroyed arena on its successor, and a mark from before a reset.
  void arena_marks() {
    if (children_ == max_children) return;
    ++children_;
    bool destroyed = in_.byte() % 2 == 0;
    expect_abort("arena mark", destroyed ? "foreign arena mark" : "stale arena mark", [destroyed] {
      using arena = strata::monotonic_arena<>;
      alignas(arena) unsigned char storage[sizeof(arena)];
      auto* first = new (storage) arena();
      (void)first->allocate(64);
      strata::arena_mark mark = first->mark();
      if (destroyed) {
        first->~arena();
        first = new (storage) arena();
      } else {
        first->reset();
      }
      (void)first->allocate(64);
      first->rewind(mark);
    });
  }

  // Allocation from a session or heap of another thread.
  void wrong_thread(unsigned instance) {
    if (children_ == max_children) return;
    ++children_;
    if (in_.byte() % 2 == 0) {
      auto* session = static_cast<session_subject*>(subjects_[instance + session_kind].get());
      expect_abort("session used from another thread", "does not own it", [session] {
        std::thread([session] { (void)session->session().allocate(16); }).join();
      });
    } else {
      auto* heap = static_cast<c_heap_subject*>(subjects_[instance + c_heap_kind].get());
      expect_abort("heap used from another thread", "does not own heap",
                   [heap] { std::thread([heap] { use_heap(heap->handle()); }).join(); });
    }
  }

  // A frame pool block never handed out, freed by another thread (the block
  // after the first of a fresh allocator's page), then carved by its owner
  // before the owner takes the deferred free back: handed out twice, unchecked.
  void never_handed_out_remote() {
    if (children_ == max_children) return;
    ++children_;
    expect_abort("never handed out, freed by another thread", "never allocated", [] {
      strata::frame_allocator<> frames;
      void* first = frames.pool_allocate(64);
      std::thread([&frames, first] {
        frames.pool_deallocate(static_cast<char*>(first) + 64);
      }).join();
      void* carved = frames.pool_allocate(64);
      frames.begin_frame();
      check(frames.pool_allocate(64) != carved, "frame pool block handed out twice", carved);
    });
  }

  // deallocate(nullptr, n) through an adaptor: a no-op, its counts unchanged.
  void null_deallocate(unsigned instance) {
    auto* tracked = static_cast<adaptor_subject<strata::tracking<strata::heap_resource, true>>*>(
        subjects_[instance + tracking_kind].get());
    auto* limited = static_cast<adaptor_subject<strata::limiting<strata::heap_resource>>*>(
        subjects_[instance + limiting_kind].get());
    std::size_t blocks = tracked->adaptor().live_blocks();
    std::size_t bytes = limited->adaptor().bytes_in_use();
    tracked->deallocate(nullptr, 1 + in_.byte());
    limited->deallocate(nullptr, 1 + in_.byte());
    check(tracked->adaptor().live_blocks() == blocks, "tracking counted a null free");
    check(limited->adaptor().bytes_in_use() == bytes, "limiting counted a null free");
  }

  fuzz_input& in_;
  shadow shadow_;
  std::vector<std::unique_ptr<subject>> subjects_;
  int children_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // No purge thread: a child forked while it held a heap lock would wait forever.
  static const bool no_purge_thread = strata_option_set(STRATA_OPTION_PURGE_THREAD, 0) == 0;
  (void)no_purge_thread;
  fuzz_input in(data, size);
  misuse_run run(in);
  for (int steps = 0; steps < 300 && !in.done(); ++steps) run.step();
  run.finish();
  return 0;
}
