// The allocators the misuse fuzzer drives, behind one face: allocate and free
// a block, and the line each answers a misused free with (null: the free is
// accepted by design, as a block of a sibling heap is).
#ifndef STRATA_FUZZ_MISUSE_SUBJECTS_HPP
#define STRATA_FUZZ_MISUSE_SUBJECTS_HPP

#include <strata/strata.h>
#include <strata/bfc.hpp>
#include <strata/buddy.hpp>
#include <strata/frame.hpp>
#include <strata/limiting.hpp>
#include <strata/pool.hpp>
#include <strata/session_heap.hpp>
#include <strata/tracking.hpp>

#include <cstddef>
#include <memory>
#include <new>

namespace strata::fuzz {

// The lines misused frees are answered with.
struct answers {
  const char* foreign;      // a static address, or a sibling instance's block
  const char* interior;     // a pointer 8 bytes into a live block
  const char* double_free;  // a live block freed twice, by one thread or two at once
  bool refuses_sibling;     // a block of the other instance of its kind is refused
  bool any_thread;          // two threads may free into it (a racing free is checked)
};

inline constexpr answers pool_answers{"block freed into the wrong pool",
                                      "pointer inside a pool block", "double free of a pool block",
                                      true, false};
inline constexpr answers heap_answers{"free of a pointer strata did not allocate",
                                      "free of a pointer strata did not hand out", "double free",
                                      false, true};

class subject {
 public:
  virtual ~subject() = default;
  virtual void* allocate(std::size_t bytes) = 0;  // std::bad_alloc when full
  virtual void deallocate(void* p, std::size_t bytes) = 0;
  virtual answers answer() const = 0;
  // Whether misusing `p` is checked (a session's buffer blocks are freed at once, later).
  virtual bool checks(const void*) const { return true; }
};

template <class Pool>
class pool_subject final : public subject {
 public:
  void* allocate(std::size_t) override { return pool_.allocate(); }
  void deallocate(void* p, std::size_t) override { pool_.deallocate(p); }
  answers answer() const override {
    answers a = pool_answers;
    a.any_thread = !std::is_same_v<Pool, fixed_pool<>>;
    return a;
  }
  static constexpr std::size_t block_bytes = 256;

 private:
  Pool pool_{block_bytes};
};

class frame_subject final : public subject {
 public:
  void* allocate(std::size_t bytes) override { return frames_.pool_allocate(bytes); }
  void deallocate(void* p, std::size_t) override { frames_.pool_deallocate(p); }
  answers answer() const override {
    return {"block freed into the wrong frame allocator", "pointer inside a pool block",
            "double free of a pool block", true, true};
  }
  frame_allocator<>& frames() { return frames_; }

 private:
  frame_allocator<> frames_;
};

class session_subject final : public subject {
 public:
  void* allocate(std::size_t bytes) override { return session_.allocate(bytes); }
  void deallocate(void* p, std::size_t bytes) override { session_.deallocate(p, bytes); }
  answers answer() const override { return heap_answers; }
  bool checks(const void* p) const override { return !session_.in_buffer(p); }
  session_heap& session() { return session_; }

 private:
  session_heap session_{4096};
};

template <class Alloc>
class best_fit_subject final : public subject {
 public:
  explicit best_fit_subject(Alloc* alloc) : alloc_(alloc) {}
  void* allocate(std::size_t bytes) override { return alloc_->allocate(bytes); }
  void deallocate(void* p, std::size_t bytes) override { alloc_->deallocate(p, bytes); }
  answers answer() const override {
    if constexpr (std::is_same_v<Alloc, bfc<>>)
      return {"bfc free of a pointer it did not hand out", "not a live block (interior)",
              "double free of a bfc block", true, false};
    else
      return {"buddy free of a pointer it did not hand out", "not a live block (interior)",
              "double free of a buddy block", true, false};
  }

 private:
  std::unique_ptr<Alloc> alloc_;
};

template <class Adaptor>
class adaptor_subject final : public subject {
 public:
  template <class... Args>
  explicit adaptor_subject(Args... args) : adaptor_(args...) {}
  void* allocate(std::size_t bytes) override { return adaptor_.allocate(bytes); }
  void deallocate(void* p, std::size_t bytes) override { adaptor_.deallocate(p, bytes); }
  answers answer() const override {
    if constexpr (std::is_same_v<Adaptor, tracking<heap_resource, true>>)
      return {"not live in this tracking adaptor", "not live in this tracking adaptor",
              "not live in this tracking adaptor", true, true};
    else
      return heap_answers;
  }
  Adaptor& adaptor() { return adaptor_; }

 private:
  Adaptor adaptor_;
};

// A first-class heap of the C API, remade (its old handle kept, stale) on demand.
class c_heap_subject final : public subject {
 public:
  c_heap_subject() : heap_(strata_heap_new()) {}
  ~c_heap_subject() override { strata_heap_destroy(heap_); }
  void* allocate(std::size_t bytes) override {
    void* p = strata_heap_malloc(heap_, bytes);
    if (p == nullptr) throw std::bad_alloc();
    return p;
  }
  void deallocate(void* p, std::size_t) override { strata_free(p); }
  answers answer() const override { return heap_answers; }
  strata_heap_t* handle() const { return heap_; }
  // Destroy the heap (its blocks with it) and make another; the old handle is stale.
  strata_heap_t* remake() {
    strata_heap_t* old = heap_;
    strata_heap_destroy(heap_);
    heap_ = strata_heap_new();
    return old;
  }

 private:
  strata_heap_t* heap_;
};

}  // namespace strata::fuzz

#endif  // STRATA_FUZZ_MISUSE_SUBJECTS_HPP
