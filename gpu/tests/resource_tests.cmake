# The resource and pool suites: the device resources, the device pool (bfc over
# device memory), the pinned pool and transfer accounting.
foreach(test resource_test resource_transfer_test pool_device_test pool_pinned_test)
  strata_gpu_test(gpu_${test} ${test}.cpp)
endforeach()
strata_gpu_test(gpu_pool_concurrency_test pool_concurrency_test.cpp LABEL concurrency)

# Conformance with CCCL's cuda::mr concepts, where the toolkit ships CCCL.
find_path(strata_cccl_include cuda/memory_resource
  HINTS ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES cccl NO_DEFAULT_PATH)
if(TARGET strata_gpu_cuda AND strata_cccl_include)
  strata_gpu_test(gpu_resource_cccl_test resource_cccl_test.cpp)
  target_include_directories(gpu_resource_cccl_test SYSTEM PRIVATE ${strata_cccl_include})
endif()

# Managed memory: the device layer's prefetch, advice and residency, and the
# managed-memory pool (bfc over managed memory).
strata_gpu_test(gpu_managed_memory_test managed_memory_test.cpp)
strata_gpu_test(gpu_managed_pool_test managed_pool_test.cpp LABEL concurrency)
