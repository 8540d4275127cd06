// Guarded-region reports and the SIGSEGV handler that finds the faults.
//
// The handler reports a fault in the region, puts back the handler that was
// there before and returns: the access runs again and faults into the
// program's own handler, or kills the process with SIGSEGV as it would have.
#include "guarded/report.hpp"

#include <signal.h>
#include <ucontext.h>

#include <cstdlib>

#include "guarded/region.hpp"
#include "stack/text_line.hpp"

namespace strata::guarded {

namespace {

struct sigaction previous_action;

const char* kind_name(fault_kind kind) noexcept {
  switch (kind) {
    case fault_kind::overflow:
      return "buffer overflow";
    case fault_kind::underflow:
      return "buffer underflow";
    case fault_kind::use_after_free:
      return "use after free";
    case fault_kind::double_free:
      return "double free";
    case fault_kind::invalid_free:
      return "invalid free";
    case fault_kind::wild:
      return "wild access";
  }
  return "fault";
}

// The kind of a fault at `address`, and the slot it concerns: inside a slot,
// the slot's own state says; in a guard page, the nearer block's edge.
fault_kind classify(std::uintptr_t address, const location& where, const slot*& s) noexcept {
  s = where.inside;
  if (s == nullptr) {
    const slot* before = where.before;
    const slot* after = where.after;
    bool has_before = before != nullptr && before->state.load() != slot_state::unused;
    bool has_after = after != nullptr && after->state.load() != slot_state::unused;
    std::uintptr_t past_before = has_before ? address - (before->block + before->size) : ~0UL;
    std::uintptr_t ahead_after = has_after ? after->block - address : ~0UL;
    if (!has_before && !has_after) return fault_kind::wild;
    s = past_before <= ahead_after ? before : after;
  }
  slot_state state = s->state.load();
  if (state == slot_state::unused) return fault_kind::wild;
  if (state == slot_state::freed) return fault_kind::use_after_free;
  return address < s->block ? fault_kind::underflow : fault_kind::overflow;
}

// x86-64 page faults say whether the access wrote (bit 1 of the error code).
const char* access_of(void* context) noexcept {
#if defined(__x86_64__)
  auto* uc = static_cast<ucontext_t*>(context);
  return (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0 ? "write" : "read";
#else
  (void)context;
  return nullptr;
#endif
}

void on_fault(int signal, siginfo_t* info, void* context) {
  auto address = reinterpret_cast<std::uintptr_t>(info->si_addr);
  location where;
  if (locate(address, where)) {
    const slot* s = nullptr;
    fault_kind kind = classify(address, where, s);
    write_report(kind, address, s, access_of(context));
  }
  // Hand the fault on: the handler before ours, or the default action. A
  // fault the program did not cause itself (sent with kill) is raised again.
  sigaction(signal, &previous_action, nullptr);
  if (info->si_code <= 0) raise(signal);
}

}  // namespace

void write_report(fault_kind kind, std::uintptr_t address, const slot* s,
                  const char* access) noexcept {
  stack::text_line line;
  line.text("strata: guarded sampling caught a ").text(kind_name(kind));
  if (access != nullptr) line.text(" (").text(access).text(")");
  line.text(" at ").hex(address);
  line.flush();
  if (s == nullptr || s->state.load() == slot_state::unused) {
    line.text("  no sampled block is near that address").flush();
    return;
  }
  line.text("  block of ").decimal(s->size).text(" bytes at ").hex(s->block);
  if (address >= s->block + s->size && kind != fault_kind::double_free) {
    line.text(", ").decimal(address - (s->block + s->size)).text(" bytes past its end");
  } else if (address < s->block) {
    line.text(", ").decimal(s->block - address).text(" bytes before its start");
  } else {
    line.text(", offset ").decimal(address - s->block);
  }
  line.text(" (slot ").decimal(index_of(s)).text(")").flush();
  line.text("  allocated by thread ").decimal(s->alloc_thread).text(":").flush();
  stack::write_frames(s->alloc_stack);
  if (s->state.load() == slot_state::freed) {
    line.text("  freed by thread ").decimal(s->free_thread).text(":").flush();
    stack::write_frames(s->free_stack);
  }
}

void report_bad_free(fault_kind kind, const void* p, const slot* s,
                     const stack::frames& here) noexcept {
  write_report(kind, reinterpret_cast<std::uintptr_t>(p), s, nullptr);
  stack::text_line line;
  line.text("  this call, by thread ").decimal(stack::kernel_thread_id()).text(":").flush();
  stack::write_frames(here);
  std::abort();
}

void install_fault_handler() noexcept {
  struct sigaction action {};
  action.sa_sigaction = on_fault;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  sigaction(SIGSEGV, &action, &previous_action);
}

}  // namespace strata::guarded
