# Install rules, the CMake package and pkg-config. Everything installed works from
# the install alone, under whatever prefix `cmake --install --prefix` names:
#   find_package(strata)  strata::strata, strata::strata_static (the library and its
#                         headers, C++20), strata::strata-malloc, strata::strata-malloc-dlopen,
#                         strata::strata-malloc-static (the malloc override)
#   pkg-config strata     its prefix taken from where strata.pc lies
#   bin/strata-replay     installed by tools/strata-replay
#   bin/strata-prof       installed by tools/strata-prof (its modules in share/strata)
include(CMakePackageConfigHelpers)

install(TARGETS strata strata_static strata-malloc strata-malloc-dlopen strata-malloc-static EXPORT strataTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/strata DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# The GPU half (issue 34, item 10) joins here: its targets installed into the
# strataTargets export set (strata::gpu, and what it links), its headers, and
# find_dependency() of what they need in strataConfig.cmake.in; and its
# installed targets added to strata_installable below, so CI builds them.

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
