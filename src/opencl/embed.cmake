# Writes the file IN as a C array NAME (NUL-terminated) into OUT: cmake -DIN= -DOUT= -DNAME= -P embed.cmake
file(READ ${IN} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE ${OUT} "/* Generated from ${IN} by embed.cmake: do not edit. */\nconst char ${NAME}[] = {\n${bytes}0x00};\n")
