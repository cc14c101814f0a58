#!/bin/sh
# Builds the consumer project (tests/consumer) against sparsering installed in PREFIX, both ways a
# user would: CMake's find_package (shared and static targets) and pkg-config (shared, and static
# with --static), then runs each build. usage: run.sh PREFIX
set -eu
prefix=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
libdir=$(dirname "$(find "$prefix" -name sparsering.pc | head -n 1)")/..
echo "== find_package(sparsering) from $prefix"
cmake -S "$here" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cmake" >/dev/null
LD_LIBRARY_PATH="$libdir" "$work/cmake/knn_shared"
"$work/cmake/knn_static"
echo "== pkg-config sparsering"
export PKG_CONFIG_PATH="$libdir/pkgconfig"
# shellcheck disable=SC2046
cc "$here/knn.c" $(pkg-config --cflags --libs sparsering) -o "$work/knn_pc"
LD_LIBRARY_PATH="$libdir" "$work/knn_pc"
# shellcheck disable=SC2046
cc "$here/knn.c" $(pkg-config --static --cflags --libs sparsering | sed 's/-lsparsering/-l:libsparsering.a/') \
    -o "$work/knn_pc_static"
"$work/knn_pc_static"
echo "== the installed package builds and runs both ways"
