# SPDX-License-Identifier: MIT
# kcrStatic.cmake: kcr_full_static(), for a project that links its program
# fully static against an installed kcr, as kcr-operator's image is built
# (find_package(kcr) includes this file; a kcr-gen project calls it when
# configured with -DKCR_STATIC=ON, which its Dockerfile and `make image` do).
#
#   kcr_full_static()
#
# defines kcr::full_static, an imported interface target carrying
# `pkg-config --static --cflags --libs kcr-static` (libkcr.a by its path and
# every library under it) with kcr's minimal static libcurl first on the
# pkg-config path, and the link options -static and -Wl,--gc-sections (libkcr.a
# has a section per function, so a program keeps only the built-in kinds it
# reaches). Link it instead of kcr::kcr; set KCR_GEN_LINK to it so that the
# kcr_gen_types() and kcr_gen_codecs() libraries link it too.
#
# That libcurl is the one kcr's own static build uses: HTTP/1.1 and HTTP/2 over
# OpenSSL, zlib, and c-ares for name resolution (an empty image has no NSS
# modules for getaddrinfo). KCR_CURL_PREFIX names one already built; empty, the
# installed scripts/static/libcurl.sh prints its prefix in ~/.cache/kcr/static,
# building it from Debian's source package the first time (minutes; it needs
# the archive apt uses, dpkg-dev and the -dev packages of OpenSSL, zlib,
# nghttp2 and c-ares).
function(kcr_full_static)
  if(TARGET kcr::full_static)
    return()
  endif()
  set(KCR_CURL_PREFIX "" CACHE PATH
    "kcr's static libcurl (empty: the one libcurl.sh builds once into ~/.cache/kcr/static)")
  set(curl "${KCR_CURL_PREFIX}")
  if(NOT curl)
    message(STATUS "kcr_full_static: kcr's static libcurl (${KCR_SCRIPTS_DIR}/static/libcurl.sh)")
    execute_process(COMMAND bash "${KCR_SCRIPTS_DIR}/static/libcurl.sh"
      OUTPUT_VARIABLE curl OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "kcr_full_static: ${KCR_SCRIPTS_DIR}/static/libcurl.sh failed (${rc}); "
        "set KCR_CURL_PREFIX to a static libcurl built by it")
    endif()
  endif()
  if(NOT EXISTS "${curl}/lib/libcurl.a" OR NOT EXISTS "${curl}/lib/pkgconfig/libcurl.pc")
    message(FATAL_ERROR "kcr_full_static: no static libcurl in ${curl}")
  endif()
  set(path "${curl}/lib/pkgconfig:${KCR_PKGCONFIG_DIR}")
  if(NOT "$ENV{PKG_CONFIG_PATH}" STREQUAL "")
    string(APPEND path ":$ENV{PKG_CONFIG_PATH}")
  endif()
  foreach(what cflags libs)
    execute_process(
      COMMAND ${CMAKE_COMMAND} -E env "PKG_CONFIG_PATH=${path}"
              "${PKG_CONFIG_EXECUTABLE}" --static --${what} kcr-static
      OUTPUT_VARIABLE out OUTPUT_STRIP_TRAILING_WHITESPACE
      ERROR_VARIABLE err RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "kcr_full_static: pkg-config --static --${what} kcr-static: ${err}")
    endif()
    separate_arguments(${what} UNIX_COMMAND "${out}")
  endforeach()
  # The libcurl.a found must be that one, not Debian's (which needs shared-only
  # libraries): its -L comes first, from libcurl.pc.
  list(FIND libs "-L${curl}/lib" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "kcr_full_static: kcr-static does not reach ${curl}'s libcurl: ${libs}")
  endif()
  set(includes)
  set(options)
  foreach(f IN LISTS cflags)
    if(f MATCHES "^-I(.+)")
      list(APPEND includes "${CMAKE_MATCH_1}")
    else()
      list(APPEND options "${f}")
    endif()
  endforeach()
  add_library(kcr::full_static INTERFACE IMPORTED GLOBAL)
  set_target_properties(kcr::full_static PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${includes}"
    INTERFACE_COMPILE_OPTIONS "${options}"
    INTERFACE_LINK_LIBRARIES "${libs}"
    INTERFACE_LINK_OPTIONS "-static;-Wl,--gc-sections")
  message(STATUS "kcr_full_static: libkcr.a with the static libcurl of ${curl}")
endfunction()
