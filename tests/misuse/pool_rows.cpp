// Misuse rows of the pools (pool.hpp): fixed_pool (one thread),
// concurrent_fixed_pool (any thread), object_pool, and the slab under them.
#include <gtest/gtest.h>

#include <strata/pool.hpp>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

#include "answers.hpp"
#include "misuse_acts.hpp"
#include "rows.hpp"

namespace strata_misuse {
namespace {

using enum misuse_case;

constexpr const char* section = "Pools, bfc and buddy";
constexpr const char* destroyed_pool = "strata: use of a destroyed fixed_pool";
constexpr const char* pool_destroyed_twice = "strata: fixed_pool destroyed twice";

// Storage an object is made in and destroyed in by hand, so that what is done
// with it after its destructor reaches the object's own check.
template <class T>
struct storage {
  alignas(T) unsigned char bytes[sizeof(T)];
  template <class... Args>
  T* make(Args&&... args) {
    return new (bytes) T(std::forward<Args>(args)...);
  }
};

// `use` on an object of `make`'s after its destructor, given what `before`
// returned while it lived.
template <class T, class Before, class Use>
void after_destroy(std::function<T*(storage<T>&)> make, Before before, Use use) {
  storage<T> room;
  T* object = make(room);
  auto kept = before(*object);
  object->~T();
  use(*opaque(object), kept);
}

// A second destructor call on an object of `make`'s that handed out a block.
template <class T, class Touch>
void destroyed_twice(std::function<T*(storage<T>&)> make, Touch touch) {
  storage<T> room;
  T* object = make(room);
  touch(*object);
  object->~T();
  opaque(object)->~T();
}

std::string line(const char* what, const char* where) {
  return std::string("strata: ") + what + " in " + where;
}

// The cells of a pool freed with deallocate(p): fixed_pool and concurrent_fixed_pool.
template <class Pool>
std::vector<cell> pool_cells(bool any_thread) {
  const char* where = "fixed_pool::deallocate";
  std::vector<cell> cells = {
      aborts(null_argument, line("block freed into the wrong pool", where), {[] {
               Pool pool(64);
               (void)pool.allocate();
               pool.deallocate(nullptr);
             }}),
      returns(zero_size, "a pool of zero-byte blocks hands out distinct blocks", {[] {
                Pool pool(0);
                EXPECT_NE(pool.allocate(), pool.allocate());
              }}),
      throws<std::bad_alloc>(huge_size, "std::bad_alloc for a request past the block size",
                             "bad_alloc", {[] {
                               Pool pool(64);
                               (void)pool.allocate(65, 16);
                             }}),
      throws<std::invalid_argument>(bad_alignment, "std::invalid_argument", "is not a power of two",
                                    {[] {
                                       Pool pool(64);
                                       (void)pool.allocate(64, 24);
                                     },
                                     [] { Pool pool(64, 24); }}),
      aborts(foreign_pointer, line("block freed into the wrong pool", where),
             {[] {
                Pool pool(64);
                (void)pool.allocate();
                pool.deallocate(c_library_block());
              },
              [] {
                Pool pool(64);
                pool.deallocate(static_address());
              }}),
      aborts_each(interior_pointer,
                  "one line and abort: inside a block, or a block never handed out",
                  {{line("pointer inside a pool block, not at its start, freed", where),
                    [] {
                      Pool pool(64);
                      pool.deallocate(static_cast<char*>(pool.allocate()) + 8);
                    }},
                   {line("pool block that was never allocated freed", where),
                    [] {
                      Pool pool(64);
                      pool.deallocate(static_cast<char*>(pool.allocate()) + 64);
                    }}}),
      aborts(double_free, line("double free of a pool block", where), {[] {
               Pool pool(64);
               void* p = pool.allocate();
               pool.deallocate(p);
               pool.deallocate(p);
             }}),
      aborts(use_after_destroy, destroyed_pool,
             {[] {
                after_destroy<Pool>([](storage<Pool>& room) { return room.make(64); },
                                    [](Pool& pool) { return pool.allocate(); },
                                    [](Pool& pool, void*) { (void)pool.allocate(); });
              },
              [] {
                after_destroy<Pool>([](storage<Pool>& room) { return room.make(64); },
                                    [](Pool& pool) { return pool.allocate(); },
                                    [](Pool& pool, void* p) { pool.deallocate(p); });
              }}),
      aborts(destroy_twice, pool_destroyed_twice, {[] {
               destroyed_twice<Pool>([](storage<Pool>& room) { return room.make(64); },
                                     [](Pool& pool) { (void)pool.allocate(); });
             }}),
      aborts(other_instance, line("block freed into the wrong pool", where), {[] {
               Pool one(64);
               Pool other(64);
               (void)one.allocate();
               one.deallocate(other.allocate());
             }}),
  };
  if (any_thread) {
    cells.push_back(returns(wrong_thread, "freed: any thread allocates and frees", {[] {
                              Pool pool(64);
                              void* p = pool.allocate();
                              on_another_thread([&pool, p] { pool.deallocate(p); });
                              EXPECT_EQ(pool.allocate(), p);
                            }}));
    cells.push_back(racing(aborts(racing_free, line("double free of a pool block", where), {[] {
                                    Pool pool(64);
                                    void* p = pool.allocate();
                                    void* keep = pool.allocate();
                                    auto free_it = [&pool, p] { pool.deallocate(p); };
                                    at_once(free_it, free_it);
                                    both_frees_accepted("concurrent_fixed_pool::deallocate");
                                    pool.deallocate(keep);
                                  }})));
  } else {
    cells.push_back(unchecked(wrong_thread,
                              "a fixed_pool serves one thread at a time and does not check which "
                              "(concurrent_fixed_pool serves any)"));
    cells.push_back(unchecked(racing_free, "one thread at a time: see wrong thread"));
  }
  return cells;
}

row object_pool_row() {
  const char* where = "object_pool::destroy";
  using pool_type = strata::object_pool<long, strata::malloc_resource, strata::spin_lock>;
  return {
      "strata::object_pool<T> (no_lock or spin_lock)",
      "pool.hpp",
      section,
      {
          returns(null_argument, "destroy(nullptr) is a no-op", {[] {
                    pool_type pool;
                    pool.destroy(nullptr);
                  }}),
          not_applicable(zero_size, "sizeof(T) is never zero"),
          not_applicable(huge_size, "takes no size: each object is one T"),
          not_applicable(bad_alignment, "alignof(T)"),
          aborts(foreign_pointer, line("block freed into the wrong pool", where), {[] {
                   pool_type pool;
                   (void)pool.create(1L);
                   pool.destroy(static_cast<long*>(c_library_block()));
                 }}),
          aborts(interior_pointer, line("pool block that was never allocated freed", where), {[] {
                   pool_type pool;
                   pool.destroy(pool.create(1L) + 2);
                 }}),
          aborts(double_free, line("double free of a pool block", where), {[] {
                   pool_type pool;
                   long* p = pool.create(1L);
                   pool.destroy(p);
                   pool.destroy(p);
                 }}),
          aborts(use_after_destroy, destroyed_pool,
                 {[] {
                    after_destroy<pool_type>([](storage<pool_type>& room) { return room.make(); },
                                             [](pool_type& pool) { return pool.create(1L); },
                                             [](pool_type& pool, long*) { (void)pool.create(2L); });
                  },
                  [] {
                    after_destroy<pool_type>([](storage<pool_type>& room) { return room.make(); },
                                             [](pool_type& pool) { return pool.create(1L); },
                                             [](pool_type& pool, long* p) { pool.destroy(p); });
                  }}),
          aborts(destroy_twice, pool_destroyed_twice, {[] {
                   destroyed_twice<pool_type>([](storage<pool_type>& room) { return room.make(); },
                                              [](pool_type& pool) { (void)pool.create(1L); });
                 }}),
          returns(wrong_thread, "with spin_lock, any thread; with no_lock, one at a time", {[] {
                    pool_type pool;
                    long* p = pool.create(1L);
                    on_another_thread([&pool, p] { pool.destroy(p); });
                  }}),
          racing(aborts(racing_free, "strata: double free of a pool block", {[] {
                          pool_type pool;
                          long* p = pool.create(1L);
                          auto destroy_it = [&pool, p] { pool.destroy(p); };
                          at_once(destroy_it, destroy_it);
                          both_frees_accepted("object_pool::destroy");
                        }})),
          aborts(other_instance, line("block freed into the wrong pool", where), {[] {
                   pool_type one;
                   pool_type other;
                   (void)one.create(1L);
                   one.destroy(other.create(2L));
                 }}),
      }};
}

row slab_row() {
  const char* where = "slab::deallocate";
  return {"strata::slab<>",
          "pool.hpp",
          section,
          {
              aborts(null_argument, line("page freed into the wrong slab", where), {[] {
                       strata::slab<> slab(4096, 2);
                       slab.deallocate(nullptr);
                     }}),
              returns(zero_size, "a page", {[] {
                        strata::slab<> slab(4096, 2);
                        EXPECT_NE(slab.allocate(0), nullptr);
                      }}),
              throws<std::bad_alloc>(huge_size, "std::bad_alloc past one page", "bad_alloc", {[] {
                                       strata::slab<> slab(4096, 2);
                                       (void)slab.allocate(4097);
                                     }}),
              throws<std::invalid_argument>(bad_alignment, "std::invalid_argument",
                                            "is not a power of two", {[] {
                                              strata::slab<> slab(4096, 2);
                                              (void)slab.allocate(16, 3);
                                            }}),
              aborts(foreign_pointer, line("page freed into the wrong slab", where), {[] {
                       strata::slab<> slab(4096, 2);
                       slab.deallocate(c_library_block());
                     }}),
              aborts(interior_pointer, line("page freed into the wrong slab", where), {[] {
                       strata::slab<> slab(4096, 2);
                       slab.deallocate(static_cast<char*>(slab.allocate(4096)) + 64);
                     }}),
              aborts(double_free, line("double free of a slab page", where), {[] {
                       strata::slab<> slab(4096, 2);
                       void* p = slab.allocate(4096);
                       slab.deallocate(p);
                       slab.deallocate(p);
                     }}),
              aborts(use_after_destroy, "strata: use of a destroyed slab",
                     {[] {
                        after_destroy<strata::slab<>>(
                            [](storage<strata::slab<>>& room) { return room.make(4096, 2); },
                            [](strata::slab<>& slab) { return slab.allocate(4096); },
                            [](strata::slab<>& slab, void*) { (void)slab.allocate(4096); });
                      },
                      [] {
                        after_destroy<strata::slab<>>(
                            [](storage<strata::slab<>>& room) { return room.make(4096, 2); },
                            [](strata::slab<>& slab) { return slab.allocate(4096); },
                            [](strata::slab<>& slab, void* p) { slab.deallocate(p); });
                      }}),
              aborts(destroy_twice, "strata: slab destroyed twice", {[] {
                       destroyed_twice<strata::slab<>>(
                           [](storage<strata::slab<>>& room) { return room.make(4096, 2); },
                           [](strata::slab<>& slab) { (void)slab.allocate(4096); });
                     }}),
              returns(wrong_thread, "freed: a slab is thread-safe", {[] {
                        strata::slab<> slab(4096, 2);
                        void* p = slab.allocate(4096);
                        on_another_thread([&slab, p] { slab.deallocate(p); });
                      }}),
              racing(aborts(racing_free, line("double free of a slab page", where), {[] {
                              strata::slab<> slab(4096, 2);
                              void* p = slab.allocate(4096);
                              auto free_it = [&slab, p] { slab.deallocate(p); };
                              at_once(free_it, free_it);
                              both_frees_accepted("slab::deallocate");
                            }})),
              aborts(other_instance, line("page freed into the wrong slab", where), {[] {
                       strata::slab<> one(4096, 2);
                       strata::slab<> other(4096, 2);
                       (void)one.allocate(4096);
                       one.deallocate(other.allocate(4096));
                     }}),
          }};
}

}  // namespace

std::vector<row> pool_rows() {
  return {
      {"strata::fixed_pool<> (pool_config::checked, the default)", "pool.hpp", section,
       pool_cells<strata::fixed_pool<>>(false)},
      {"strata::concurrent_fixed_pool<> (pool_config::checked, the default)", "pool.hpp", section,
       pool_cells<strata::concurrent_fixed_pool<>>(true)},
      object_pool_row(),
      slab_row(),
  };
}

}  // namespace strata_misuse
