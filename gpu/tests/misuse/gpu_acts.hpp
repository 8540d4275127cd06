// What the GPU rows' misuses share: a small strict simulated device (queued
// work that touches freed memory aborts), storage a resource is made and
// destroyed in by hand, an answer of one of several device errors, and two
// threads freeing one block at once where one of them must be refused.
#pragma once

#include <strata/gpu/error.hpp>
#include <strata/gpu/simulated.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <exception>
#include <functional>
#include <initializer_list>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "answers.hpp"
#include "misuse_acts.hpp"

namespace strata_misuse {

// A host-backed simulated device of 256 MiB (two device pools' first regions) that aborts on any
// use of freed memory by queued work (violation_policy::abort, the default).
inline strata::gpu::simulated_config strict_device() {
  strata::gpu::simulated_config config;
  config.capacity = std::size_t{256} << 20;
  config.on_violation = strata::gpu::violation_policy::abort;
  return config;
}

// A block of the C library's malloc, freed when it goes out of scope: a
// refused free throws, and the block must not leak under LeakSanitizer.
struct c_block {
  void* p = c_library_block();
  c_block() = default;
  c_block(const c_block&) = delete;
  c_block& operator=(const c_block&) = delete;
  ~c_block() { std::free(p); }
};

// Storage a resource is made in and destroyed in by hand, so that what is
// done with it after its destructor reaches the resource's own check.
template <class Resource>
struct resource_storage {
  alignas(Resource) unsigned char bytes[sizeof(Resource)];
  template <class... Args>
  Resource* make(Args&&... args) {
    return new (bytes) Resource(std::forward<Args>(args)...);
  }
};

// A device_error of `code` whose what() holds one of `parts`, from each act.
inline cell throws_device_error(misuse_case what, strata::gpu::errc code, std::string text,
                                std::vector<std::string> parts, std::initializer_list<act> acts) {
  cell c{what, answer_kind::throws, std::move(text), acts, {}, nullptr};
  c.matches = [code, parts](std::exception_ptr thrown) {
    try {
      std::rethrow_exception(thrown);
    } catch (const strata::gpu::device_error& e) {
      if (e.code() != code) return false;
      for (const std::string& part : parts)
        if (std::string(e.what()).find(part) != std::string::npos) return true;
      return false;
    } catch (...) {
      return false;
    }
  };
  return c;
}

// Two threads free one block at the same instant, `runs` times: exactly one
// of each pair is taken and the other refused with a device_error of
// invalid_argument (the act checks it, so the cell has no matcher).
inline void one_of_two_frees_refused(const std::function<void()>& make_block,
                                     const std::function<void()>& free_block,
                                     const std::function<void()>& settle, int runs = 20) {
  for (int run = 0; run < runs; ++run) {
    make_block();
    std::atomic<int> refused{0};
    auto free_it = [&] {
      try {
        free_block();
      } catch (const strata::gpu::device_error& e) {
        if (e.code() == strata::gpu::errc::invalid_argument) refused.fetch_add(1);
      }
    };
    at_once(free_it, free_it);
    settle();
    ASSERT_EQ(refused.load(), 1) << "run " << run << ": both frees taken, or both refused";
  }
}

// A racing cell whose acts check their own answer (see one_of_two_frees_refused).
inline cell racing_refused(std::string text, std::initializer_list<act> acts) {
  return cell{misuse_case::racing_free, answer_kind::throws, std::move(text), acts, {}, nullptr};
}

}  // namespace strata_misuse
