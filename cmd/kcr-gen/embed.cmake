# SPDX-License-Identifier: MIT
# embed.cmake: cmake -DIN=runtime.inc -DOUT=kcr_gen_runtime.h -P embed.cmake
# writes IN as a C array (kcr_gen_runtime[], or -DNAME=..., NUL-terminated), so
# kcr-gen carries the runtime it copies into generated sources (and the known
# schemas of `kcr-gen crd`) and needs no data file installed.
if(NOT NAME)
  set(NAME kcr_gen_runtime)
endif()
file(READ "${IN}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" body "${body}")
file(WRITE "${OUT}.tmp"
  "/* Generated from ${IN} by embed.cmake. Do not edit. */\n"
  "static const char ${NAME}[] = {\n${body}0x00};\n")
file(RENAME "${OUT}.tmp" "${OUT}")
