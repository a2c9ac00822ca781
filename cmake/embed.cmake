# SPDX-License-Identifier: Apache-2.0
# Turns a file into C: `cmake -DIN=file -DOUT=file.c -DNAME=sym -P embed.cmake`
# writes `const unsigned char sym[]` (the bytes, then a NUL) and
# `const unsigned long sym_len` (without the NUL). Used for the flame
# graph page (cmake/tools.cmake), so the binary needs no file beside it.
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n)
math(EXPR len "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE "${OUT}" "/* Generated from ${IN} by cmake/embed.cmake; do not edit. */\n"
  "extern const unsigned char ${NAME}[];\nextern const unsigned long ${NAME}_len;\n"
  "const unsigned char ${NAME}[] = {\n${bytes}0x00};\n"
  "const unsigned long ${NAME}_len = ${len};\n")
