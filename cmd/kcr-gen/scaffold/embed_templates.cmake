# SPDX-License-Identifier: MIT
# embed_templates.cmake: cmake -DDIR=scaffold -DOUT=kcr_gen_scaffold.h -P
# embed_templates.cmake writes every DIR/*.tmpl as a NUL-terminated C array and a
# table of {name, text}, so kcr-gen init and create api need no data files.
file(GLOB files RELATIVE "${DIR}" "${DIR}/*.tmpl")
list(SORT files)
set(out "/* Generated from the scaffold templates by embed_templates.cmake. Do not edit. */\n")
set(table "")
set(i 0)
foreach(f IN LISTS files)
  file(READ "${DIR}/${f}" hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
  string(REGEX REPLACE "((0x..,){16})" "\\1\n" body "${body}")
  string(REGEX REPLACE "\\.tmpl$" "" name "${f}")
  string(APPEND out "static const char scaffold_t${i}[] = {\n${body}0x00};\n")
  string(APPEND table "  {\"${name}\", scaffold_t${i}},\n")
  math(EXPR i "${i} + 1")
endforeach()
string(APPEND out "static const struct scaffold_template {\n  const char *name;\n  const char *text;\n} "
  "scaffold_templates[] = {\n${table}  {0, 0}};\n")
file(WRITE "${OUT}.tmp" "${out}")
file(RENAME "${OUT}.tmp" "${OUT}")
