// strata::allocator<T, Resource>: a standard allocator over any strata host
// resource, for every standard container, std::allocate_shared and friends.
//
// It holds a pointer to the resource (which must outlive every container using
// it); allocators are equal when they point at the same resource, or at equal
// ones (Resource::is_equal), so memory from one may be freed through the other.
//
// Propagation: the allocator travels with the contents. Copy construction of a
// container keeps the source's resource (select_on_container_copy_construction
// returns the allocator itself: never std::pmr's silent fall-back to the default
// resource), and copy assignment, move assignment and swap propagate it
// (all three traits true). So a move assignment is always O(1) and never copies
// elements one by one, swap is defined for any two containers, and a container
// never holds memory of a resource other than the one its allocator names.
// The cost of that choice: assigning into a container makes it use the
// source's resource from then on.
//
// A default-constructed allocator (Resource default-constructible) points at
// one process-wide instance of Resource, made on first use: for heap_resource,
// malloc_resource and new_delete_resource that is the resource itself. For a
// resource with state, pass the instance: the shared one is as thread-safe as
// the type is.
#ifndef STRATA_ALLOCATOR_HPP
#define STRATA_ALLOCATOR_HPP

#include <strata/resource.hpp>

#include <cstddef>
#include <type_traits>

namespace strata {

template <class T, host_resource Resource = heap_resource>
class allocator {
 public:
  using value_type = T;
  using resource_type = Resource;
  using propagate_on_container_copy_assignment = std::true_type;
  using propagate_on_container_move_assignment = std::true_type;
  using propagate_on_container_swap = std::true_type;
  using is_always_equal = std::false_type;

  template <class U>
  struct rebind {
    using other = allocator<U, Resource>;
  };

  // Over the process-wide default instance of Resource.
  allocator() noexcept requires std::default_initializable<Resource>
      : resource_(&shared_instance()) {}
  // Over `resource`, which must outlive every block handed out.
  explicit allocator(Resource& resource) noexcept : resource_(&resource) {}
  // The same resource, for another element type (rebinding).
  template <class U>
  allocator(const allocator<U, Resource>& other) noexcept : resource_(&other.resource()) {}

  // Room for n objects of T; throws std::bad_array_new_length when n * sizeof(T) overflows.
  T* allocate(std::size_t n) {
    return static_cast<T*>(resource_->allocate(checked_multiply(n, sizeof(T)), alignof(T)));
  }
  // Return room for n objects of T.
  void deallocate(T* p, std::size_t n) noexcept {
    resource_->deallocate(p, n * sizeof(T), alignof(T));
  }

  // A container copy keeps the resource.
  allocator select_on_container_copy_construction() const noexcept { return *this; }

  Resource& resource() const noexcept { return *resource_; }

  // Equal when either may free what the other allocated.
  template <class U>
  bool operator==(const allocator<U, Resource>& other) const noexcept {
    return resource_ == &other.resource() || resource_->is_equal(other.resource());
  }

 private:
  // The one instance a default-constructed allocator uses.
  static Resource& shared_instance() noexcept {
    static Resource instance;
    return instance;
  }

  Resource* resource_;
};

}  // namespace strata

#endif  // STRATA_ALLOCATOR_HPP
