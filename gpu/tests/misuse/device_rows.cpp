// Misuse rows of the device API (device.hpp), run on the strict simulated
// device: its memory calls refuse a pointer they did not hand out, and its
// stream and event calls a handle destroyed or never made, with
// device_error(invalid_argument).
#include <strata/gpu/device.hpp>
#include <strata/gpu/pinned_pool.hpp>
#include <strata/gpu/simulated.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
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
const std::string not_from = "of memory not from";
const std::string unknown_handle = "unknown or destroyed stream handle";

cell device_refuses(misuse_case what, std::initializer_list<act> acts) {
  return throws_device_error(what, errc::invalid_argument,
                             "device_error(invalid_argument): \"<call> of memory not from "
                             "<its allocate>\"",
                             {not_from}, acts);
}

row device_row() {
  return {"strata::gpu::device (simulated_device; the CUDA backend answers alike)",
          "gpu/simulated.hpp",
          section,
          {
              returns(null_argument, "every deallocate form of nullptr is a no-op", {[] {
                        simulated_device dev(strict_device());
                        dev.deallocate(nullptr);
                        dev.deallocate_async(nullptr, stream{});
                        dev.deallocate_pinned(nullptr);
                        dev.deallocate_managed(nullptr);
                      }}),
              returns(zero_size, "NULL from every allocate form", {[] {
                        simulated_device dev(strict_device());
                        EXPECT_EQ(dev.allocate(0), nullptr);
                        EXPECT_EQ(dev.allocate_async(0, stream{}), nullptr);
                        EXPECT_EQ(dev.allocate_pinned(0), nullptr);
                        EXPECT_EQ(dev.allocate_managed(0), nullptr);
                      }}),
              throws_device_error(huge_size, errc::out_of_memory,
                                  "device_error(out_of_memory), naming the size",
                                  {"18446744073709551615"},
                                  {[] {
                                     simulated_device dev(strict_device());
                                     (void)dev.allocate(SIZE_MAX);
                                   },
                                   [] {
                                     simulated_device dev(strict_device());
                                     (void)dev.allocate_async(SIZE_MAX, stream{});
                                   },
                                   [] {
                                     simulated_device dev(strict_device());
                                     (void)dev.allocate_pinned(SIZE_MAX);
                                   },
                                   [] {
                                     simulated_device dev(strict_device());
                                     (void)dev.allocate_managed(SIZE_MAX);
                                   }}),
              not_applicable(bad_alignment,
                             "takes no alignment: blocks are aligned to the device's granularity"),
              device_refuses(foreign_pointer, {[] {
                                                 simulated_device dev(strict_device());
                                                 c_block foreign;
                                                 dev.deallocate(foreign.p);
                                               },
                                               [] {
                                                 simulated_device dev(strict_device());
                                                 c_block foreign;
                                                 dev.deallocate_pinned(foreign.p);
                                               },
                                               [] {
                                                 simulated_device dev(strict_device());
                                                 c_block foreign;
                                                 dev.deallocate_managed(foreign.p);
                                               },
                                               [] {
                                                 simulated_device dev(strict_device());
                                                 dev.deallocate_pinned(
                                                     dev.allocate(512));  // the wrong kind's free
                                               }}),
              device_refuses(interior_pointer, {[] {
                               simulated_device dev(strict_device());
                               dev.deallocate(static_cast<char*>(dev.allocate(512)) + 256);
                             }}),
              device_refuses(double_free, {[] {
                                             simulated_device dev(strict_device());
                                             void* p = dev.allocate(512);
                                             dev.deallocate(p);
                                             dev.deallocate(p);
                                           },
                                           [] {
                                             simulated_device dev(strict_device());
                                             void* p = dev.allocate_async(512, stream{});
                                             dev.deallocate_async(p, stream{});
                                             dev.deallocate_async(p, stream{});
                                           }}),
              throws_device_error(
                  use_after_destroy, errc::invalid_argument,
                  "device_error(invalid_argument) for a stream or event handle used after its "
                  "destroy call",
                  {"unknown or destroyed", "unknown event"},
                  {[] {
                     simulated_device dev(strict_device());
                     const stream s = dev.create_stream();
                     dev.destroy_stream(s);
                     (void)dev.allocate_async(512, s);
                   },
                   [] {
                     simulated_device dev(strict_device());
                     const strata::gpu::event e = dev.create_event();
                     dev.destroy_event(e);
                     dev.record(e, stream{});
                   }}),
              throws_device_error(destroy_twice, errc::invalid_argument,
                                  "device_error(invalid_argument) for a stream or event destroyed "
                                  "twice",
                                  {"unknown or destroyed", "unknown event"},
                                  {[] {
                                     simulated_device dev(strict_device());
                                     const stream s = dev.create_stream();
                                     dev.destroy_stream(s);
                                     dev.destroy_stream(s);
                                   },
                                   [] {
                                     simulated_device dev(strict_device());
                                     const strata::gpu::event e = dev.create_event();
                                     dev.destroy_event(e);
                                     dev.destroy_event(e);
                                   }}),
              returns(wrong_thread, "freed: every call is thread-safe", {[] {
                        simulated_device dev(strict_device());
                        void* p = dev.allocate(512);
                        on_another_thread([&dev, p] { dev.deallocate(p); });
                      }}),
              racing_refused("one free taken, the other device_error(invalid_argument)", {[] {
                               simulated_device dev(strict_device());
                               void* p = nullptr;
                               one_of_two_frees_refused([&] { p = dev.allocate(512); },
                                                        [&] { dev.deallocate(p); }, [] {});
                             }}),
              device_refuses(other_instance, {[] {
                               simulated_device one(strict_device());
                               simulated_device other(strict_device());
                               one.deallocate(other.allocate(512));
                             }}),
          }};
}

row pinned_pool_row() {
  using strata::gpu::pinned_pool;
  const std::string not_buffer = "pinned_pool::deallocate: pointer is not a buffer of this pool";
  auto refused = [&not_buffer](misuse_case what, act each) {
    return throws_device_error(what, errc::invalid_argument,
                               "device_error(invalid_argument): \"" + not_buffer + "\"",
                               {not_buffer}, {std::move(each)});
  };
  return {"strata::gpu::pinned_pool",
          "gpu/pinned_pool.hpp",
          section,
          {
              returns(null_argument, "deallocate(nullptr, n), with a stream or without, is a no-op",
                      {[] {
                        simulated_device dev(strict_device());
                        pinned_pool pool(dev);
                        pool.deallocate(nullptr, 64);
                        pool.deallocate(nullptr, 64, stream{});
                      }}),
              returns(zero_size, "a buffer of min_bytes", {[] {
                        simulated_device dev(strict_device());
                        pinned_pool pool(dev);
                        void* p = pool.allocate(0);
                        EXPECT_NE(p, nullptr);
                        pool.deallocate(p, 0);
                      }}),
              throws_device_error(huge_size, errc::out_of_memory,
                                  "device_error(out_of_memory), naming the size",
                                  {"18446744073709551615"}, {[] {
                                    simulated_device dev(strict_device());
                                    pinned_pool pool(dev);
                                    (void)pool.allocate(SIZE_MAX);
                                  }}),
              throws_device_error(bad_alignment, errc::invalid_argument,
                                  "device_error(invalid_argument): \"is not a power of two up to "
                                  "4096\"",
                                  {"is not a power of two up to 4096"}, {[] {
                                    simulated_device dev(strict_device());
                                    pinned_pool pool(dev);
                                    (void)pool.allocate(64, 24);
                                  }}),
              refused(foreign_pointer,
                      [] {
                        simulated_device dev(strict_device());
                        pinned_pool pool(dev);
                        c_block foreign;
                        pool.deallocate(foreign.p, 64);
                      }),
              refused(interior_pointer,
                      [] {
                        simulated_device dev(strict_device());
                        pinned_pool pool(dev);
                        pool.deallocate(static_cast<char*>(pool.allocate(64)) + 64, 64);
                      }),
              refused(double_free,
                      [] {
                        simulated_device dev(strict_device());
                        pinned_pool pool(dev);
                        void* p = pool.allocate(64);
                        pool.deallocate(p, 64);
                        pool.deallocate(p, 64);
                      }),
              aborts_each(use_after_destroy,
                          "one line and abort: \"strata: use of a destroyed pinned_pool\"",
                          {{"strata: use of a destroyed pinned_pool",
                            [] {
                              simulated_device dev(strict_device());
                              resource_storage<pinned_pool> storage;
                              pinned_pool* pool = storage.make(dev);
                              (void)pool->allocate(64);
                              pool->~pinned_pool();
                              (void)opaque(pool)->allocate(64);
                            }},
                           {"strata: use of a destroyed pinned_pool",
                            [] {
                              simulated_device dev(strict_device());
                              resource_storage<pinned_pool> storage;
                              pinned_pool* pool = storage.make(dev);
                              void* p = pool->allocate(64);
                              pool->~pinned_pool();
                              opaque(pool)->deallocate(p, 64);
                            }}}),
              aborts(destroy_twice, "strata: pinned_pool destroyed twice", {[] {
                       simulated_device dev(strict_device());
                       resource_storage<pinned_pool> storage;
                       pinned_pool* pool = storage.make(dev);
                       (void)pool->allocate(64);
                       pool->~pinned_pool();
                       opaque(pool)->~pinned_pool();
                     }}),
              returns(wrong_thread,
                      "freed: any thread may call; a buffer released on a stream is reused only "
                      "once that stream's work before the release has run",
                      {[] {
                        simulated_device dev(strict_device());
                        pinned_pool pool(dev);
                        void* p = pool.allocate(64);
                        on_another_thread([&pool, p] { pool.deallocate(p, 64, stream{}); });
                        dev.synchronize();
                      }}),
              racing_refused("one free taken, the other device_error(invalid_argument), under the "
                             "pool's lock",
                             {[] {
                               simulated_device dev(strict_device());
                               pinned_pool pool(dev);
                               void* p = nullptr;
                               one_of_two_frees_refused([&] { p = pool.allocate(64); },
                                                        [&] { pool.deallocate(p, 64); }, [] {});
                             }}),
              throws_device_error(other_instance, errc::invalid_argument,
                                  "device_error(invalid_argument): \"" + not_buffer +
                                      "\" for another pool's buffer, \"" + unknown_handle +
                                      "\" for a stream destroyed or never made",
                                  {not_buffer, unknown_handle},
                                  {[] {
                                     simulated_device dev(strict_device());
                                     pinned_pool one(dev);
                                     pinned_pool other(dev);
                                     one.deallocate(other.allocate(64), 64);
                                   },
                                   [] {
                                     simulated_device dev(strict_device());
                                     pinned_pool pool(dev);
                                     const stream s = dev.create_stream();
                                     dev.destroy_stream(s);
                                     pool.deallocate(pool.allocate(64), 64, s);
                                   }}),
          }};
}

}  // namespace

std::vector<row> gpu_device_rows() {
  return {device_row(), pinned_pool_row()};
}

}  // namespace strata_misuse
