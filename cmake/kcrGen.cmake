# SPDX-License-Identifier: MIT
# kcrGen.cmake: kcr_gen_types() for projects built against an installed kcr
# (find_package(kcr) includes this file; kcr::kcr-gen is the installed kcr-gen,
# KCR_GEN_EXECUTABLE its path). The same call as in kcr's own tree:
#
#   kcr_gen_types(<target> CRD <file> PREFIX <name> VERSIONS <v>...)
#
# runs kcr-gen over the CRD at build time (again whenever the CRD changes) into
# <build>/kcr-gen/<target>/ and makes a static library <target> of the result,
# linked to kcr::kcr, with its headers on the include path of whoever links it.
function(kcr_gen_types target)
  cmake_parse_arguments(G "" "CRD;PREFIX" "VERSIONS" ${ARGN})
  if(NOT G_CRD OR NOT G_PREFIX OR NOT G_VERSIONS)
    message(FATAL_ERROR "kcr_gen_types(${target}): CRD, PREFIX and VERSIONS are required")
  endif()
  # A kind whose API is a type header (kcr-gen create api) gets its CRD from
  # `make manifests`, which configures first: a missing CRD is a warning here,
  # so that manifests can write it, and an error only when the types are built.
  if(NOT EXISTS "${G_CRD}")
    message(WARNING "kcr_gen_types(${target}): no CRD file ${G_CRD} yet: `make manifests` "
      "writes it from the kind's type headers (api/<version>/<kind>_types.h); the types "
      "cannot be built without it")
  endif()
  set(dir ${CMAKE_BINARY_DIR}/kcr-gen/${target})
  # exactly these versions, served or not (one an overlay serves, as behind a
  # conversion webhook, included)
  list(JOIN G_VERSIONS "," _versions)
  set(outputs)
  foreach(v IN LISTS G_VERSIONS)
    list(APPEND outputs ${dir}/${G_PREFIX}_${v}.h ${dir}/${G_PREFIX}_${v}.c)
  endforeach()
  add_custom_command(
    OUTPUT ${outputs}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
    COMMAND kcr::kcr-gen types -p ${G_PREFIX} -V "${_versions}" -o ${dir} ${G_CRD}
    DEPENDS ${G_CRD}
    COMMENT "kcr-gen: types from ${G_CRD}"
    VERBATIM)
  list(FILTER outputs INCLUDE REGEX "\\.c$")
  add_library(${target} STATIC ${outputs})
  set_target_properties(${target} PROPERTIES C_STANDARD 11 POSITION_INDEPENDENT_CODE ON)
  target_include_directories(${target} PUBLIC ${dir})
  target_link_libraries(${target} PUBLIC kcr::kcr)
endfunction()
