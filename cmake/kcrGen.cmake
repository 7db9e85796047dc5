# SPDX-License-Identifier: MIT
# kcrGen.cmake: kcr_gen_types() and kcr_gen_codecs() for projects built against an installed kcr
# (find_package(kcr) includes this file; kcr::kcr-gen is the installed kcr-gen,
# KCR_GEN_EXECUTABLE its path). The same call as in kcr's own tree:
#
#   kcr_gen_types(<target> CRD <file> PREFIX <name> VERSIONS <v>...)
#
# runs kcr-gen over the CRD at build time (again whenever the CRD changes) into
# <build>/kcr-gen/<target>/ and makes a static library <target> of the result,
# linked to kcr::kcr, with its headers on the include path of whoever links it.
# Both functions link KCR_GEN_LINK instead of kcr::kcr when it is set: a
# project linking fully static sets it to kcr::full_static (kcrStatic.cmake).
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
  if(KCR_GEN_LINK)
    target_link_libraries(${target} PUBLIC ${KCR_GEN_LINK})
  else()
    target_link_libraries(${target} PUBLIC kcr::kcr)
  endif()
endfunction()

# kcr_gen_codecs(<target> HEADERS <h>... [USES <h>...] [INCLUDE_ROOT <dir>])
#
# runs `kcr-gen codecs` over type headers (api/<version>/<kind>_types.h) at
# build time: the codecs of the headers' own structs, <name>_codecs.h and .c
# for each <name>_types.h, in <build>/kcr-gen/<target>/, as a static library
# <target> linked to kcr::kcr. The codecs include each header as its path
# less INCLUDE_ROOT (the project's directory, so "api/v1/widget_types.h"),
# which goes on the include path of whoever links <target>. A USES header is
# read for the types HEADERS use from it; another kcr_gen_codecs target codes
# it. kcr's own tree uses this function too, with KCR_GEN_EXE, KCR_GEN_LINK
# and KCR_GEN_WARNINGS set to its kcr-gen, library and warnings.
function(kcr_gen_codecs target)
  cmake_parse_arguments(G "" "INCLUDE_ROOT" "HEADERS;USES" ${ARGN})
  if(NOT G_HEADERS)
    message(FATAL_ERROR "kcr_gen_codecs(${target}): HEADERS is required")
  endif()
  set(exe kcr::kcr-gen)
  set(link kcr::kcr)
  set(deps)
  if(KCR_GEN_EXE) # kcr's tree: its own kcr-gen, rebuilt first
    set(exe ${KCR_GEN_EXE})
    set(deps ${KCR_GEN_EXE})
  endif()
  if(KCR_GEN_LINK) # kcr's tree: its own library; a project: kcr::full_static
    set(link ${KCR_GEN_LINK})
  endif()
  set(dir ${CMAKE_BINARY_DIR}/kcr-gen/${target})
  set(args -o ${dir})
  if(G_INCLUDE_ROOT)
    list(APPEND args -I ${G_INCLUDE_ROOT})
  endif()
  foreach(h IN LISTS G_USES)
    list(APPEND args --uses ${h})
  endforeach()
  set(outputs)
  foreach(h IN LISTS G_HEADERS)
    get_filename_component(n ${h} NAME_WE) # NAME_types.h: NAME_codecs (kcr-gen's rule)
    string(REGEX REPLACE "(.)_types$" "\\1" n "${n}")
    list(APPEND outputs ${dir}/${n}_codecs.h ${dir}/${n}_codecs.c)
  endforeach()
  add_custom_command(
    OUTPUT ${outputs}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
    COMMAND ${exe} codecs ${args} ${G_HEADERS}
    DEPENDS ${deps} ${G_USES} ${G_HEADERS}
    COMMENT "kcr-gen: codecs of ${G_HEADERS}"
    VERBATIM)
  list(FILTER outputs INCLUDE REGEX "\\.c$")
  add_library(${target} STATIC ${outputs})
  set_target_properties(${target} PROPERTIES C_STANDARD 11 POSITION_INDEPENDENT_CODE ON)
  target_compile_options(${target} PRIVATE ${KCR_GEN_WARNINGS})
  target_include_directories(${target} PUBLIC ${dir} ${G_INCLUDE_ROOT})
  target_link_libraries(${target} PUBLIC ${link})
endfunction()
