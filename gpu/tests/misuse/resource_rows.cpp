// Misuse rows of the GPU resources: the device pool, the managed pool, the
// caching allocator, the tracking adaptor, and the direct and stream-ordered
// device resources, each over a strict simulated device. They answer a pointer
// they did not hand out with device_error(invalid_argument) (exact tracking:
// one line and abort; sampled tracking leaves it to its pool), and a call on a
// destroyed resource with one line and abort.
#include <strata/gpu/async_resource.hpp>
#include <strata/gpu/caching_allocator.hpp>
#include <strata/gpu/device_pool.hpp>
#include <strata/gpu/device_resource.hpp>
#include <strata/gpu/managed_pool.hpp>
#include <strata/gpu/tracking.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <new>
#include <stdexcept>
#include <string>

#include "gpu_acts.hpp"
#include "gpu_rows.hpp"

namespace strata_misuse {
namespace {

using enum misuse_case;
using strata::gpu::errc;
using strata::gpu::simulated_device;
using strata::gpu::stream;

constexpr const char* section = "GPU resources";
constexpr std::size_t kib = 1024;

// What a resource answers where the resources differ.
struct answers {
  const char* api;
  const char* header;
  const char* kind;          // the name its misuse lines use
  bool zero_is_null;         // else a block
  bool bfc_errors;           // huge and misaligned: bfc's std::bad_alloc, std::invalid_argument
  std::string not_its_own;   // foreign, interior, double free: the device_error's text
  std::string abort_line;    // instead, one line and abort (tracking)
  bool holds_state = true;   // false: a reference to the device, nothing to destroy
  std::string stream_order;  // how a block freed on another stream waits
};

// The foreign, interior and double-free cells: a device_error, or one line and abort.
template <class R>
cell refused(misuse_case what, const answers& a, act each) {
  if (!a.abort_line.empty()) return aborts(what, a.abort_line, {std::move(each)});
  return throws_device_error(what, errc::invalid_argument,
                             "device_error(invalid_argument): \"" + a.not_its_own + "\"",
                             {a.not_its_own}, {std::move(each)});
}

// The cells every stream-ordered resource answers, made on a strict device.
template <class R>
std::vector<cell> resource_cells(const answers& a) {
  std::vector<cell> cells;
  cells.push_back(returns(null_argument, "deallocate(nullptr, n), either form, is a no-op", {[] {
                            simulated_device dev(strict_device());
                            R r(dev);
                            r.deallocate(nullptr, 64, stream{});
                            r.deallocate(nullptr, 64);
                          }}));
  bool zero_is_null = a.zero_is_null;
  cells.push_back(returns(zero_size, zero_is_null ? "NULL" : "a block", {[zero_is_null] {
                            simulated_device dev(strict_device());
                            R r(dev);
                            void* p = r.allocate(0, stream{});
                            EXPECT_EQ(p == nullptr, zero_is_null);
                            r.deallocate(p, 0, stream{});
                          }}));
  auto huge = [] {
    simulated_device dev(strict_device());
    R r(dev);
    (void)r.allocate(SIZE_MAX, stream{});
  };
  auto misaligned = [] {
    simulated_device dev(strict_device());
    R r(dev);
    (void)r.allocate(64, 24, stream{});
  };
  if (a.bfc_errors) {
    cells.push_back(throws<std::bad_alloc>(
        huge_size, "std::bad_alloc (strata::capacity_error, naming the size)", "cannot hold",
        {huge}));
    cells.push_back(throws<std::invalid_argument>(bad_alignment, "std::invalid_argument",
                                                  "is not a power of two", {misaligned}));
  } else {
    cells.push_back(throws_device_error(huge_size, errc::out_of_memory,
                                        "device_error(out_of_memory), naming the size",
                                        {"18446744073709551615"}, {huge}));
    cells.push_back(throws_device_error(bad_alignment, errc::invalid_argument,
                                        "device_error(invalid_argument): \"is not a power of two "
                                        "up to 256\"",
                                        {"is not a power of two up to 256"}, {misaligned}));
  }
  cells.push_back(refused<R>(foreign_pointer, a, [] {
    simulated_device dev(strict_device());
    R r(dev);
    (void)r.allocate(kib, stream{});
    c_block foreign;
    r.deallocate(foreign.p, 64, stream{});
  }));
  cells.push_back(refused<R>(interior_pointer, a, [] {
    simulated_device dev(strict_device());
    R r(dev);
    r.deallocate(static_cast<char*>(r.allocate(4 * kib, stream{})) + 512, 64, stream{});
  }));
  cells.push_back(refused<R>(double_free, a, [] {
    simulated_device dev(strict_device());
    R r(dev);
    void* p = r.allocate(4 * kib, stream{});
    r.deallocate(p, 4 * kib, stream{});
    r.deallocate(p, 4 * kib, stream{});
  }));
  if (a.holds_state) {
    std::string kind = a.kind;
    cells.push_back(aborts_each(use_after_destroy,
                                "one line and abort: \"strata: use of a destroyed " + kind + "\"",
                                {{"strata: use of a destroyed " + kind,
                                  [] {
                                    simulated_device dev(strict_device());
                                    resource_storage<R> storage;
                                    R* r = storage.make(dev);
                                    (void)r->allocate(kib, stream{});
                                    r->~R();
                                    (void)opaque(r)->allocate(kib, stream{});
                                  }},
                                 {"strata: use of a destroyed " + kind, [] {
                                    simulated_device dev(strict_device());
                                    resource_storage<R> storage;
                                    R* r = storage.make(dev);
                                    void* p = r->allocate(kib, stream{});
                                    r->~R();
                                    opaque(r)->deallocate(p, kib, stream{});
                                  }}}));
    cells.push_back(aborts(destroy_twice, "strata: " + kind + " destroyed twice", {[] {
                             simulated_device dev(strict_device());
                             resource_storage<R> storage;
                             R* r = storage.make(dev);
                             (void)r->allocate(kib, stream{});
                             r->~R();
                             opaque(r)->~R();
                           }}));
  } else {
    cells.push_back(unchecked(use_after_destroy,
                              "not checked: it holds only a pointer to its device and has "
                              "nothing of its own to release; a call after its destructor is "
                              "undefined (ASan's build reads a clobbered pointer)"));
    cells.push_back(
        returns(destroy_twice, "trivially destructible: nothing is released twice", {[] {
                  simulated_device dev(strict_device());
                  resource_storage<R> storage;
                  R* r = storage.make(dev);
                  r->~R();
                  opaque(r)->~R();
                }}));
  }
  cells.push_back(returns(wrong_thread, "freed: any thread may call; " + a.stream_order, {[] {
                            simulated_device dev(strict_device());
                            R r(dev);
                            const stream s = dev.create_stream();
                            void* p = r.allocate(kib, s);
                            on_another_thread([&r, p] { r.deallocate(p, kib, stream{}); });
                            void* q = r.allocate(kib, s);
                            dev.synchronize(s);
                            r.deallocate(q, kib, stream{});
                            dev.synchronize();
                            dev.destroy_stream(s);
                          }}));
  if (!a.abort_line.empty()) {
    cells.push_back(racing(aborts(racing_free, a.abort_line, {[] {
                                    simulated_device dev(strict_device());
                                    R r(dev);
                                    void* p = r.allocate(kib, stream{});
                                    auto free_it = [&r, p] { r.deallocate(p, kib, stream{}); };
                                    at_once(free_it, free_it);
                                    both_frees_accepted("gpu::tracking::deallocate");
                                  }})));
  } else {
    cells.push_back(racing_refused(
        "one free taken, the other device_error(invalid_argument), under the resource's lock", {[] {
          simulated_device dev(strict_device());
          R r(dev);
          void* p = nullptr;
          one_of_two_frees_refused([&] { p = r.allocate(kib, stream{}); },
                                   [&] { r.deallocate(p, kib, stream{}); },
                                   [&] { dev.synchronize(); });
        }}));
  }
  return cells;
}

// Another pool's block, or a stream handle that names no stream, is refused.
template <class R>
cell pool_other_instance(const answers& a) {
  const std::string handle = "unknown or destroyed stream handle";
  return throws_device_error(other_instance, errc::invalid_argument,
                             "device_error(invalid_argument): \"" + a.not_its_own +
                                 "\" for another pool's block, \"" + handle +
                                 "\" for a stream destroyed or never made",
                             {a.not_its_own, handle},
                             {[] {
                                simulated_device dev(strict_device());
                                R one(dev);
                                R other(dev);
                                (void)one.allocate(kib, stream{});
                                one.deallocate(other.allocate(kib, stream{}), kib, stream{});
                              },
                              [] {
                                simulated_device dev(strict_device());
                                R r(dev);
                                const stream s = dev.create_stream();
                                dev.destroy_stream(s);
                                (void)r.allocate(kib, s);
                              }});
}

template <class R>
row pool_row(const answers& a) {
  std::vector<cell> cells = resource_cells<R>(a);
  cells.push_back(pool_other_instance<R>(a));
  return {a.api, a.header, section, cells};
}

const char* const own_stream_only =
    "a block freed on another stream than the one it was used on is reused in the order of "
    "the freeing stream only (as cudaFreeAsync): the caller orders the other stream first";

row tracking_row() {
  answers a{"strata::gpu::tracking<device_pool>",
            "gpu/tracking.hpp",
            "tracking",
            false,
            true,
            "",
            "strata: free of a block not live in this tracking adaptor",
            true,
            own_stream_only};
  using R = strata::gpu::tracking<strata::gpu::device_pool>;
  std::vector<cell> cells = resource_cells<R>(a);
  cells.push_back(aborts(other_instance, a.abort_line, {[] {
                           simulated_device dev(strict_device());
                           R one(dev);
                           R other(dev);
                           (void)one.allocate(kib, stream{});
                           one.deallocate(other.allocate(kib, stream{}), kib, stream{});
                         }}));
  return {a.api, a.header, section, cells};
}

// gpu::tracking in sampled mode at a fixed seed, made from the device alone as
// the cells make every resource.
struct sampled_tracking : strata::gpu::tracking<strata::gpu::device_pool> {
  explicit sampled_tracking(strata::gpu::device& dev)
      : tracking(dev, strata::tracking_options{.sample_bytes = 512 * kib, .seed = 2026}) {}
};

// Sampled tracking keeps no record of most blocks, so a free it holds none of
// (foreign, interior, double, another adaptor's) is its device pool's to refuse.
row sampled_tracking_row() {
  return pool_row<sampled_tracking>(
      {"strata::gpu::tracking<device_pool> (tracking_options{.sample_bytes = N}: sampled)",
       "gpu/tracking.hpp", "tracking", false, true,
       "device_pool::deallocate: pointer is not a block of this pool", "", true, own_stream_only});
}

// The direct and stream-ordered resources name a device: two of one device are equal.
template <class R>
row device_resource_row(const answers& a) {
  std::vector<cell> cells = resource_cells<R>(a);
  cells.push_back(returns(other_instance,
                          "freed: resources of one device are equal, either frees the other's "
                          "block (another device's block: device_error(invalid_argument))",
                          {[] {
                            simulated_device dev(strict_device());
                            R one(dev);
                            R other(dev);
                            EXPECT_TRUE(one == other);
                            one.deallocate(other.allocate(kib, stream{}), kib, stream{});
                            dev.synchronize();
                          }}));
  return {a.api, a.header, section, cells};
}

}  // namespace

std::vector<row> gpu_resource_rows() {
  const std::string not_pool_block = "pointer is not a block of this pool";
  return {
      pool_row<strata::gpu::device_pool>(
          {"strata::gpu::device_pool", "gpu/device_pool.hpp", "device_pool", false, true,
           "device_pool::deallocate: " + not_pool_block, "", true, own_stream_only}),
      pool_row<strata::gpu::managed_pool>(
          {"strata::gpu::managed_pool", "gpu/managed_pool.hpp", "managed_pool", true, true,
           "managed_pool::deallocate: " + not_pool_block, "", true, own_stream_only}),
      pool_row<strata::gpu::caching_allocator>(
          {"strata::gpu::caching_allocator", "gpu/caching_allocator.hpp", "caching_allocator", true,
           false, "caching_allocator: deallocate of memory it did not hand out", "", true,
           "a block freed on another stream than its own waits for the work queued on both"}),
      tracking_row(),
      sampled_tracking_row(),
      device_resource_row<strata::gpu::device_resource>(
          {"strata::gpu::device_resource", "gpu/device_resource.hpp", "device_resource", true,
           false, "deallocate of memory not from allocate", "", false,
           "the stream form waits for the freeing stream's work (cudaFree is not ordered)"}),
      device_resource_row<strata::gpu::async_resource>(
          {"strata::gpu::async_resource", "gpu/async_resource.hpp", "async_resource", true, false,
           "deallocate_async of memory not from allocate_async", "", false, own_stream_only}),
  };
}

}  // namespace strata_misuse
