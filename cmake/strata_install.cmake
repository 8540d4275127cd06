# Install rules, the CMake package and pkg-config. Everything installed works from
# the install alone, under whatever prefix `cmake --install --prefix` names:
#   find_package(strata)  strata::strata, strata::strata_static (the library and its
#                         headers, C++20), strata::strata-malloc, strata::strata-malloc-dlopen,
#                         strata::strata-malloc-static (the malloc override), strata::gpu
#                         (and strata::gpu_cuda where CUDA was found, for consumers with CUDA)
#   share/strata/python   strata_gpu.py, beside lib/libstrata-gpu-alloc.so (with CUDA)
#   pkg-config strata     its prefix taken from where strata.pc lies
#   bin/strata-replay     installed by tools/strata-replay
#   bin/strata-prof       installed by tools/strata-prof (its modules in share/strata)
include(CMakePackageConfigHelpers)

install(TARGETS strata strata_static strata-malloc strata-malloc-dlopen strata-malloc-static EXPORT strataTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/strata DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# The GPU half: strata::gpu (the device layer, its simulated backend, the
# resources and the caching allocator) and its headers; where the CUDA toolkit
# was found, strata::gpu_cuda in an export set of its own (strataConfig.cmake
# loads it only when the consumer finds CUDA too), and what PyTorch and CuPy
# load: libstrata-gpu-alloc.so, strata_gpu.py and the PyTorch extension's source.
if(TARGET strata_gpu)
  set_target_properties(strata_gpu PROPERTIES EXPORT_NAME gpu)
  install(TARGETS strata_gpu EXPORT strataTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(DIRECTORY gpu/include/strata/gpu DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/strata)
endif()
if(TARGET strata_gpu_cuda)
  set_target_properties(strata_gpu_cuda PROPERTIES EXPORT_NAME gpu_cuda)
  install(TARGETS strata_gpu_cuda EXPORT strataGpuCudaTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(EXPORT strataGpuCudaTargets NAMESPACE strata:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/strata)
  install(TARGETS strata_gpu_alloc LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  # strata_gpu.py finds the library and the extension's header from this file,
  # by paths relative to itself, so the install can move.
  set(strata_python_dir ${CMAKE_INSTALL_DATADIR}/strata/python)
  file(RELATIVE_PATH strata_gpu_library_from_python "/${strata_python_dir}"
    "/${CMAKE_INSTALL_LIBDIR}/libstrata-gpu-alloc.so")
  file(RELATIVE_PATH strata_gpu_include_from_python "/${strata_python_dir}" "/${CMAKE_INSTALL_INCLUDEDIR}")
  file(WRITE ${PROJECT_BINARY_DIR}/strata_gpu_layout.json
    "{\"library\": \"${strata_gpu_library_from_python}\", "
    "\"include\": \"${strata_gpu_include_from_python}\", "
    "\"torch_extension\": \"../torch/strata_torch_allocator.cpp\"}\n")
  install(FILES gpu/integration/python/strata_gpu.py ${PROJECT_BINARY_DIR}/strata_gpu_layout.json
    DESTINATION ${strata_python_dir})
  install(FILES gpu/integration/torch/strata_torch_allocator.cpp
    DESTINATION ${CMAKE_INSTALL_DATADIR}/strata/torch)
endif()

install(EXPORT strataTargets NAMESPACE strata:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/strata)

configure_package_config_file(cmake/strataConfig.cmake.in
  ${PROJECT_BINARY_DIR}/strataConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/strata)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/strataConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/strataConfig.cmake ${PROJECT_BINARY_DIR}/strataConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/strata)

# pkg-config: the prefix is the path from strata.pc's folder back to the prefix.
file(RELATIVE_PATH strata_pc_to_prefix "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
configure_file(cmake/strata.pc.in ${PROJECT_BINARY_DIR}/strata.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/strata.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# Everything `cmake --install` copies, so a tree can build just that:
# cmake --build B --target strata_installable && cmake --install B
add_custom_target(strata_installable)
add_dependencies(strata_installable strata strata_static strata-malloc strata-malloc-dlopen
  strata-malloc-static strata-replay)
foreach(gpu_target strata_gpu strata_gpu_cuda strata_gpu_alloc)
  if(TARGET ${gpu_target})
    add_dependencies(strata_installable ${gpu_target})
  endif()
endforeach()
