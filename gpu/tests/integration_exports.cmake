# libstrata-gpu-alloc.so exports exactly the functions strata/gpu/integration.h
# declares with STRATA_GPU_EXPORT: nm -D --defined-only lists no other symbol.
#   cmake -DNM=<nm> -DLIBRARY=<the .so> -DHEADER=<integration.h> -P integration_exports.cmake
file(READ "${HEADER}" header)
string(REGEX MATCHALL "STRATA_GPU_EXPORT[^(;]*[ *](strata_gpu_[a-z_]+)\\(" declarations "${header}")
set(declared)
foreach(declaration IN LISTS declarations)
  string(REGEX MATCH "(strata_gpu_[a-z_]+)\\($" name "${declaration}")
  list(APPEND declared "${CMAKE_MATCH_1}")
endforeach()
list(SORT declared)
list(LENGTH declared count)
if(count EQUAL 0)
  message(FATAL_ERROR "no STRATA_GPU_EXPORT declarations found in ${HEADER}")
endif()

execute_process(COMMAND "${NM}" -D --defined-only "${LIBRARY}"
  OUTPUT_VARIABLE listing RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${NM} -D --defined-only ${LIBRARY} failed (${status})")
endif()
string(REGEX MATCHALL "[^\n]+" lines "${listing}")
set(exported)
foreach(line IN LISTS lines)
  # "<address> <type> <name>[@version]": keep the name.
  string(REGEX REPLACE "^[0-9a-fA-F]* *[A-Za-z] +([^@ ]+).*$" "\\1" name "${line}")
  list(APPEND exported "${name}")
endforeach()
list(SORT exported)

if(NOT exported STREQUAL declared)
  message(FATAL_ERROR "${LIBRARY} exports\n  ${exported}\nbut ${HEADER} declares\n  ${declared}")
endif()
message(STATUS "exports match the header: ${exported}")
