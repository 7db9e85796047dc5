# SPDX-License-Identifier: MIT
# meta_v1_check.cmake: makes libkcr's meta/v1 types again into OUT and fails
# when they differ from the committed include/kcr/meta_v1.h and
# src/api/meta_v1.c (then build the target kcr_gen_meta_v1 and commit).
execute_process(COMMAND ${GEN} -o ${OUT} ${SCHEMAS} WORKING_DIRECTORY ${SRC} RESULT_VARIABLE rc
                OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "kcr-gen failed (${rc})")
endif()
foreach(pair "meta_v1.h;include/kcr/meta_v1.h" "meta_v1.c;src/api/meta_v1.c")
  list(GET pair 0 made)
  list(GET pair 1 committed)
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${OUT}/${made} ${SRC}/${committed}
                  RESULT_VARIABLE diff)
  if(NOT diff EQUAL 0)
    message(FATAL_ERROR "${committed} is stale: build the target kcr_gen_meta_v1 and commit it")
  endif()
endforeach()
