# pip install gpu/integration/python (scikit-build-core, STRATA_PYTHON_PACKAGE=ON):
# the target strata_gpu_python builds what the wheel holds and the component
# of the same name installs it: strata_gpu.py at the wheel's root, and in
# strata_gpu_data/ the plugin (where the CUDA toolkit was found), the header
# and source of the PyTorch extension, and the layout file the module reads.
add_custom_target(strata_gpu_python)
set(strata_python_layout
  "\"include\": \"strata_gpu_data/include\", \"torch_extension\": \"strata_gpu_data/torch/strata_torch_allocator.cpp\"")
if(TARGET strata_gpu_alloc)
  add_dependencies(strata_gpu_python strata_gpu_alloc)
  install(TARGETS strata_gpu_alloc LIBRARY DESTINATION strata_gpu_data COMPONENT strata_gpu_python)
  string(APPEND strata_python_layout ", \"library\": \"strata_gpu_data/libstrata-gpu-alloc.so\"")
  message(STATUS "strata: the strata_gpu package holds libstrata-gpu-alloc.so (CUDA ${CUDAToolkit_VERSION})")
else()
  string(APPEND strata_python_layout ", \"built_without_cuda\": true")
  message(WARNING "strata: no CUDA toolkit 12 or later found: the strata_gpu package installs "
    "without libstrata-gpu-alloc.so, and its functions raise OSError(ENODEV) "
    "(set CUDAToolkit_ROOT, or put nvcc on PATH, and reinstall)")
endif()
file(WRITE ${PROJECT_BINARY_DIR}/python/strata_gpu_layout.json "{${strata_python_layout}}\n")
install(FILES gpu/integration/python/strata_gpu.py ${PROJECT_BINARY_DIR}/python/strata_gpu_layout.json
  DESTINATION . COMPONENT strata_gpu_python)
install(FILES gpu/include/strata/gpu/integration.h
  DESTINATION strata_gpu_data/include/strata/gpu COMPONENT strata_gpu_python)
install(FILES gpu/integration/torch/strata_torch_allocator.cpp
  DESTINATION strata_gpu_data/torch COMPONENT strata_gpu_python)
