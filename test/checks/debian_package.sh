#!/usr/bin/env bash
# The Debian package, built the Debian way from a clean copy of the tracked
# tree: dpkg-buildpackage -us -uc (dh --with pgxs: pg_buildext builds, installs
# and runs the regression and isolation suites against the installed files in
# a throwaway cluster with the library preloaded) makes
# postgresql-$PGVER-openwop-interrupt; lintian finds no error; apt installs it;
# the autopkgtest (debian/tests/installcheck) passes against the installed
# package; then it is removed and this build installed again for the checks
# that follow.  META.json names the version the control file does.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
version=$(sed -n "s/^default_version = '\(.*\)'/\1/p" openwop_interrupt.control)
work=$(mktemp -d)
# the build's test cluster runs as postgres and reads the extension from the
# build tree (extension_destdir): it lists the scripts to chain them
chmod 711 "$work"
pkg=postgresql-$PGVER-openwop-interrupt
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/$PGVER/bin/pg_config}
restore() {
	apt-get remove -y -qq "$pkg" >/dev/null 2>&1 || true
	make -s PG_CONFIG="$PG_CONFIG" install >/dev/null
	rm -rf "$work"
}
trap restore EXIT

# the versions agree: the control file, the changelog, META.json
[ "$(dpkg-parsechangelog -l debian/changelog -S Version)" = "$version" ] ||
	{ echo "debian/changelog is not at $version" >&2; exit 1; }
[ "$(jq -r .version META.json)" = "$version" ] && [ "$(jq -r '.provides.openwop_interrupt.version' META.json)" = "$version" ] ||
	{ echo "META.json is not at $version" >&2; exit 1; }
[ -f "sql/$(jq -r '.provides.openwop_interrupt.file | ltrimstr("sql/")' META.json)" ]
echo "debian/changelog and META.json are at $version"

# a clean copy, as a fresh checkout has it (no objects in the tree)
src="$work/openwop-interrupt-$version"
mkdir -p "$src"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	git ls-files -z | xargs -0 cp --parents -t "$src"
else
	# an unpacked tarball: the tree without what the build and the tests made
	tar -c --exclude=./test/results --exclude='*.o' --exclude='*.bc' --exclude='*.so' \
		--exclude=./build-\* . | tar -x -C "$src"
fi
# debian/control is kept as made for Debian 12's PostgreSQL 15; the copy's is
# made for the major under test (PG_SUPPORTED_VERSIONS, as postgresql-common reads it)
(cd "$src" && PG_SUPPORTED_VERSIONS=15 pg_buildext checkcontrol) >/dev/null 2>&1 ||
	{ echo "debian/control is not what debian/control.in and debian/pgversions make: run PG_SUPPORTED_VERSIONS=15 pg_buildext updatecontrol" >&2; exit 1; }
(cd "$src" && PG_SUPPORTED_VERSIONS=$PGVER pg_buildext updatecontrol) >/dev/null
# the build and the autopkgtest start throwaway clusters of their own: none of
# the environment of the cluster this check runs in (pg_virtualenv's PG*) may leak in
clean_env() { env -i PATH="$PATH" HOME="${HOME:-/root}" LANG=C.UTF-8 PG_SUPPORTED_VERSIONS="$PGVER" "$@"; }
if ! (cd "$src" && clean_env dpkg-buildpackage -us -uc -b) >"$work/build.log" 2>&1; then
	tail -n 60 "$work/build.log" >&2
	echo "dpkg-buildpackage failed" >&2
	exit 1
fi
deb=$(ls "$work"/${pkg}_${version}_*.deb)
# the two suites pg_buildext ran: regression, isolation
[ "$(grep -c 'All [0-9]* tests passed' "$work/build.log")" = 2 ] || { tail -n 60 "$work/build.log" >&2; exit 1; }
echo "dpkg-buildpackage made $(basename "$deb"), its suites passed against the installed files"

clean_env lintian --fail-on error "$work"/*.changes >"$work/lintian.log" 2>&1 ||
	{ cat "$work/lintian.log" >&2; echo "lintian found errors" >&2; exit 1; }
echo "lintian: no errors ($(grep -c '^W:' "$work/lintian.log" || true) warnings)"

export DEBIAN_FRONTEND=noninteractive
apt-get install -y -qq "$deb" >"$work/apt.log" 2>&1 || { cat "$work/apt.log" >&2; exit 1; }
[ "$(dpkg-query -W -f '${Status}' "$pkg")" = "install ok installed" ]
# the file list read from a file: grep -q in a pipe leaves dpkg writing to a
# closed pipe once the list outgrows one write, and pipefail fails the check
dpkg -L "$pkg" >"$work/files"
has() { grep -q "$1" "$work/files" || { echo "the package lacks $1" >&2; exit 1; }; }
has "/usr/lib/postgresql/$PGVER/lib/openwop_interrupt.so$"
# 0.1.0's install script and the updates to $version: PostgreSQL installs $version through them
has "/usr/share/postgresql/$PGVER/extension/openwop_interrupt--0.1.0.sql$"
has "/usr/share/postgresql/$PGVER/extension/openwop_interrupt--[0-9.]*--$version.sql$"
# the router extension ships in the same package, its 0.1.0 script made by the build
has "/usr/share/postgresql/$PGVER/extension/openwop_router.control$"
has "/usr/share/postgresql/$PGVER/extension/openwop_router--0.1.0.sql$"
if ! (cd "$src" && clean_env sh debian/tests/installcheck) >"$work/installcheck.log" 2>&1; then
	tail -n 60 "$work/installcheck.log" >&2
	echo "the installcheck against the installed package failed" >&2
	exit 1
fi
echo "apt installed it; the autopkgtest installcheck passed against the installed package"
echo "debian package checks passed"
