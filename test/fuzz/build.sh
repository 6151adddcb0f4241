#!/usr/bin/env bash
# Builds the standalone token checks against libpgcommon and libpgport:
#   build.sh unit    -> token_unit   (gcc; prints TAP)
#   build.sh fuzz    -> token_fuzz   (clang libFuzzer + ASan + UBSan)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
PG_CONFIG=${PG_CONFIG:-pg_config}
inc=$($PG_CONFIG --includedir-server)
libdir=$($PG_CONFIG --libdir)
pglib=$($PG_CONFIG --pkglibdir)
libs="$libdir/libpgcommon.a $libdir/libpgport.a"
[ -f "$libdir/libpgcommon.a" ] || libs="$pglib/libpgcommon.a $pglib/libpgport.a"
out=${OUT:-$top/test/results/fuzz}
mkdir -p "$out"
case "${1:-unit}" in
unit)
	gcc -O1 -g -Wall -Wextra -Werror -DFRONTEND -I"$top/src" -I"$inc" \
		-o "$out/token_unit" "$here/token_unit.c" "$top/src/base/token_format.c" $libs -lcrypto -lm
	echo "$out/token_unit" ;;
fuzz)
	clang=$(command -v clang)
	$clang -O1 -g -Wno-ignored-attributes -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		-DFRONTEND -I"$top/src" -I"$inc" \
		-o "$out/token_fuzz" "$here/token_fuzz.c" "$top/src/base/token_format.c" $libs -lcrypto -lm
	echo "$out/token_fuzz" ;;
*)
	echo "usage: build.sh unit|fuzz" >&2; exit 2 ;;
esac
