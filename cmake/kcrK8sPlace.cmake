# SPDX-License-Identifier: MIT
# kcrK8sPlace.cmake: after `kcr-gen openapi --split` wrote GEN/<unit>.h and .c for
# each of UNITS (comma-separated), puts the headers in INCLUDE (kcr/k8s/ of the
# build's include tree, as installed) and the sources in SRC. A unit kcr-gen did not write means
# CMakeLists.txt's KCR_K8S_UNITS no longer matches KCR_K8S_KINDS: say so.
string(REPLACE "," ";" UNITS "${UNITS}")
file(MAKE_DIRECTORY ${INCLUDE} ${SRC})
file(GLOB written ${GEN}/*.h)
list(LENGTH written nwritten)
list(LENGTH UNITS nunits)
if(NOT nwritten EQUAL nunits)
  message(FATAL_ERROR "kcr-gen wrote ${nwritten} packages (${written}), KCR_K8S_UNITS names "
                      "${nunits} (${UNITS}): make them agree in CMakeLists.txt")
endif()
foreach(u IN LISTS UNITS)
  if(NOT EXISTS ${GEN}/${u}.h OR NOT EXISTS ${GEN}/${u}.c)
    message(FATAL_ERROR "kcr-gen wrote no package ${u}: KCR_K8S_UNITS in CMakeLists.txt "
                        "names a group-version that KCR_K8S_KINDS does not reach")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different ${GEN}/${u}.h ${INCLUDE}/${u}.h
                  COMMAND_ERROR_IS_FATAL ANY)
  execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different ${GEN}/${u}.c ${SRC}/${u}.c
                  COMMAND_ERROR_IS_FATAL ANY)
endforeach()
