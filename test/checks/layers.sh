#!/usr/bin/env bash
# The layers are the folders of src/, in the order LAYERS of the Makefile
# names them (the lowest first), and src/module.c above them all: every C
# file calls only files of its own folder and of the folders before it
# (the files of one folder without a circle), and includes only the
# headers of those folders.  Calls are read from the
# built objects (nm), so a call hidden behind a macro counts too.  Needs
# the objects test/run builds; no server.
set -euo pipefail
cd "$(dirname "$0")/../.."

layers=$(sed -n 's/^LAYERS *= *//p' Makefile)
declare -A rank
i=0
for l in $layers; do
	rank[$l]=$i
	i=$((i + 1))
done
rank[module]=$i
layer_of() {   # layer_of src/<layer>/<file>.{o,c} or src/module.{o,c}
	case "$1" in
	src/module.*) echo module ;;
	src/*/*) local d=${1#src/}; echo "${d%%/*}" ;;
	*) echo "" ;;
	esac
}

# every C file is in a layer, and every layer holds a file and its header
for f in $(find src -name '*.c' | sort); do
	l=$(layer_of "$f")
	[ -n "$l" ] && [ -n "${rank[$l]+x}" ] || { echo "$f is in no layer of LAYERS (Makefile)"; exit 1; }
	[ -f "${f%.c}.o" ] || { echo "$f is not built"; exit 1; }
done
for l in $layers; do
	ls src/$l/*.c >/dev/null 2>&1 || { echo "layer $l has no file"; exit 1; }
	[ -f src/$l/$l.h ] || { echo "layer $l has no header src/$l/$l.h"; exit 1; }
done

# who defines each global symbol
declare -A owner
objects=$(find src -name '*.o' | sort)
for o in $objects; do
	for s in $(nm --defined-only -g "$o" | awk '{ print $3 }'); do
		owner[$s]=$o
	done
done

bad=0
calls=0
pairs=$(mktemp)
trap 'rm -f "$pairs"' EXIT
for o in $objects; do
	l=$(layer_of "$o")
	for s in $(nm -u "$o" | awk '{ print $2 }'); do
		d=${owner[$s]:-}
		[ -n "$d" ] && [ "$d" != "$o" ] || continue
		calls=$((calls + 1))
		[ "$(layer_of "$d")" != "$l" ] || echo "$d $o" >>"$pairs"
		if [ "${rank[$(layer_of "$d")]}" -gt "${rank[$l]}" ]; then
			echo "${o%.o}.c uses $s of ${d%.o}.c, a layer above it"
			bad=$((bad + 1))
		fi
	done
done

# within a layer the files call each other without a circle (tsort names one)
if ! loop=$(tsort "$pairs" 2>&1 >/dev/null) || [ -n "$loop" ]; then
	echo "files of one layer call each other in a circle:"
	echo "$loop"
	bad=$((bad + 1))
fi

# headers: a file includes its own layer's header and those below, by the
# path from src/ ("store/store.h"), never a layer above
includes=0
for f in $(find src -name '*.c' -o -name '*.h' | sort); do
	l=$(layer_of "$f")
	for h in $(sed -n 's/^#include "\([a-z_]*\)\/[a-z_]*\.h"$/\1/p' "$f"); do
		[ -n "${rank[$h]+x}" ] || continue   # the server's own (utils/, access/, ...)
		includes=$((includes + 1))
		if [ "${rank[$h]}" -gt "${rank[$l]}" ]; then
			echo "$f includes the header of $h/, a layer above it"
			bad=$((bad + 1))
		fi
	done
done
# versions: what differs between PostgreSQL majors is in src/compat.h alone
for f in $(grep -rl 'PG_VERSION_NUM' src --include='*.c' --include='*.h' | grep -v '^src/compat.h$'); do
	echo "$f branches on PG_VERSION_NUM: put the difference in src/compat.h"
	bad=$((bad + 1))
done
[ "$bad" -eq 0 ] || exit 1
echo "$(echo $layers | wc -w) layers and module.c: all $calls uses of another file's symbols and $includes includes go down or stay in their layer; no branch on the server's version outside src/compat.h"
