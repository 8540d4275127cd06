// strata GPU resources: the device-resource concept and the one base that gives
// every strata device resource all of its spellings.
//
// A device resource is stream-ordered: allocate(bytes, stream) hands out memory
// that work queued on the stream after the call may use; deallocate(p, bytes,
// stream) gives it back once work queued on the stream before the call is done
// with it. Memory freed on a stream may be reused at once on the same stream,
// and on another stream only after that stream waits on an event recorded on
// the first (the host never blocks for it). The synchronous forms hand out
// memory any stream may use at once and take back memory no work still uses.
//
// The spellings match CCCL's cuda::mr concepts: CCCL 3.0's resource
// (allocate(bytes, alignment), deallocate(p, bytes, alignment), ==) and
// async_resource (allocate_async(bytes, alignment, stream_ref), ...), and the
// later resource (allocate(stream_ref, bytes, alignment)) and
// synchronous_resource (allocate_sync, deallocate_sync). A CCCL stream_ref (any
// type whose get() yields the stream's handle) is taken as a strata stream.
#ifndef STRATA_GPU_STREAM_ORDERED_RESOURCE_HPP
#define STRATA_GPU_STREAM_ORDERED_RESOURCE_HPP

#include <strata/gpu/device.hpp>
#include <strata/gpu/memory_access.hpp>

#include <concepts>
#include <cstddef>
#include <type_traits>

namespace strata::gpu {

// cudaMalloc's alignment, and the default for every device resource.
inline constexpr std::size_t device_alignment = 256;

// A strata stream, or a foreign stream reference whose get() is the handle.
template <class S>
concept stream_like = std::same_as<S, stream> || requires(const S& s) {
  { s.get() } -> std::convertible_to<const volatile void*>;
};

// The strata stream a stream-like value names.
template <stream_like S>
stream as_stream(const S& s) noexcept {
  if constexpr (std::same_as<S, stream>)
    return s;
  else
    return stream{const_cast<void*>(static_cast<const volatile void*>(s.get()))};
}

// What every strata device resource offers, whatever its algorithm.
template <class R>
concept device_memory_resource = std::equality_comparable<R> &&
    requires(R& r, void* p, std::size_t n, std::size_t a, stream s) {
  { r.allocate(n, a, s) } -> std::same_as<void*>;
  r.deallocate(p, n, a, s);
  { r.allocate(n, a) } -> std::same_as<void*>;
  r.deallocate(p, n, a);
};

// The spellings, written once over the derived resource's four operations:
// allocate_on(bytes, alignment, stream), deallocate_on(p, bytes, alignment,
// stream), allocate_now(bytes, alignment), deallocate_now(p, bytes, alignment),
// and its `access` (where its memory may be touched from).
template <class Derived>
class stream_ordered_resource {
 public:
  // ---- stream-ordered --------------------------------------------------------
  // strata's own order: size first, then the stream.
  void* allocate(std::size_t bytes, stream s) {
    return self().allocate_on(bytes, device_alignment, s);
  }
  void* allocate(std::size_t bytes, std::size_t alignment, stream s) {
    return self().allocate_on(bytes, alignment, s);
  }
  void deallocate(void* p, std::size_t bytes, stream s) {
    self().deallocate_on(p, bytes, device_alignment, s);
  }
  void deallocate(void* p, std::size_t bytes, std::size_t alignment, stream s) {
    self().deallocate_on(p, bytes, alignment, s);
  }

  // CCCL's newer order and DESIGN.md's: the stream first.
  template <stream_like S>
  void* allocate(const S& s, std::size_t bytes, std::size_t alignment = device_alignment) {
    return self().allocate_on(bytes, alignment, as_stream(s));
  }
  template <stream_like S>
  void deallocate(const S& s, void* p, std::size_t bytes,
                  std::size_t alignment = device_alignment) {
    self().deallocate_on(p, bytes, alignment, as_stream(s));
  }

  // CCCL 3.0's async_resource spelling.
  template <stream_like S>
  void* allocate_async(std::size_t bytes, std::size_t alignment, const S& s) {
    return self().allocate_on(bytes, alignment, as_stream(s));
  }
  template <stream_like S>
  void deallocate_async(void* p, std::size_t bytes, std::size_t alignment, const S& s) {
    self().deallocate_on(p, bytes, alignment, as_stream(s));
  }

  // ---- synchronous -----------------------------------------------------------
  // CCCL 3.0's resource spelling.
  void* allocate(std::size_t bytes, std::size_t alignment = device_alignment) {
    return self().allocate_now(bytes, alignment);
  }
  void deallocate(void* p, std::size_t bytes, std::size_t alignment = device_alignment) {
    self().deallocate_now(p, bytes, alignment);
  }
  // CCCL's newer synchronous_resource spelling.
  void* allocate_sync(std::size_t bytes, std::size_t alignment = device_alignment) {
    return self().allocate_now(bytes, alignment);
  }
  void deallocate_sync(void* p, std::size_t bytes, std::size_t alignment = device_alignment) {
    self().deallocate_now(p, bytes, alignment);
  }

  // CCCL's get_property, found by argument-dependent lookup: present exactly
  // for the property types a bridge (cccl.hpp) maps to this resource's access.
  template <class Property, class Self = Derived>
  requires(offers(Self::access, property_access<Property>)) friend constexpr void get_property(
      const Derived&, Property) noexcept {}

 private:
  Derived& self() noexcept { return static_cast<Derived&>(*this); }
};

}  // namespace strata::gpu

#endif
