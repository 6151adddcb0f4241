#!/usr/bin/env bash
# One layer order: every C file calls only files before it in the order
# src/openwop.h declares (its header comment lists the layers, the lowest
# first).  Read from the built objects (nm), so a call hidden behind a
# macro counts too.  Needs the objects test/run builds; no server.
set -euo pipefail
cd "$(dirname "$0")/../.."

# the order: the file names of the numbered layer lines of the header comment
order=$(sed -n '/^ \*\t  1\. helpers/,/^ \*\t  6\. module/p' src/openwop.h |
	sed -E -e 's/^ \*\t *//' -e 's/^[0-9]\. (helpers|plumbing|store|domain|entry points|module) +//' |
	tr ',' ' ' | sed 's/(token_format\.h)//' | tr -s ' \t' '\n' | grep -v '^$' |
	sed 's/^_PG_init$/module/')
declare -A rank
i=0
for f in $order; do
	rank[$f]=$i
	i=$((i + 1))
done

# every object is in the order, and every file of the order is built
for o in src/*.o; do
	f=$(basename "$o" .o)
	[ -n "${rank[$f]+x}" ] || { echo "src/$f.c is not in the layer order of src/openwop.h"; exit 1; }
done
for f in $order; do
	[ -f "src/$f.o" ] || { echo "the layer order names $f, which is not built"; exit 1; }
done

# who defines each global symbol
declare -A owner
for o in src/*.o; do
	f=$(basename "$o" .o)
	for s in $(nm --defined-only -g "$o" | awk '{ print $3 }'); do
		owner[$s]=$f
	done
done

bad=0
calls=0
for o in src/*.o; do
	f=$(basename "$o" .o)
	for s in $(nm -u "$o" | awk '{ print $2 }'); do
		d=${owner[$s]:-}
		[ -n "$d" ] && [ "$d" != "$f" ] || continue
		calls=$((calls + 1))
		if [ "${rank[$d]}" -ge "${rank[$f]}" ]; then
			echo "src/$f.c uses $s of src/$d.c, which is not below it"
			bad=$((bad + 1))
		fi
	done
done
[ "$bad" -eq 0 ] || exit 1
echo "$(echo $order | wc -w) files in one layer order; all $calls uses of another file's symbols go down"
