// A gate for tests: queued work that holds a stream until the test opens it.
#ifndef STRATA_GPU_TESTS_GATE_HPP
#define STRATA_GPU_TESTS_GATE_HPP

#include <strata/gpu/device.hpp>

#include <future>

namespace strata::gpu::testing {

// Work that holds a stream until the test opens the gate, so the test can look
// at the device while queued work is known not to have run. Declared after the
// device, it opens on destruction so no stream stays blocked.
class gate {
 public:
  gate() : opened_(promise_.get_future().share()) {}
  ~gate() { open(); }
  gate(const gate&) = delete;
  gate& operator=(const gate&) = delete;

  // The work to queue: it returns once the gate opens.
  host_work closed() const {
    return [opened = opened_] { opened.wait(); };
  }

  void open() {
    if (!open_) promise_.set_value();
    open_ = true;
  }

 private:
  std::promise<void> promise_;
  std::shared_future<void> opened_;
  bool open_ = false;
};

}  // namespace strata::gpu::testing

#endif
