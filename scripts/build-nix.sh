#!/usr/bin/env bash
# build-nix.sh: Nix 2.24.15, the second nix podroles is tested on, built from
# its pinned source with Debian 12's own packages into a folder of its own,
# beside (never over) Debian's nix-bin.
#
#   scripts/build-nix.sh DIR TARBALL
#
# DIR receives:
#   bin/nix      the command to run: prefix/bin/nix with its own config and
#                cache, whatever the caller's environment says
#   prefix/      the install (not relocatable: its RUNPATH and config folder
#                are absolute, so a cache must restore DIR at the same path)
#   store-root/  its chroot store (store = local?root=…). Nix's compiled-in
#                state folder is /nix/var/nix, Debian nix's, whose database a
#                root nix with the default store would open and migrate.
#   cache/       its XDG_CACHE_HOME, so that the two nixes never share the
#                fetcher caches and git repositories under ~/.cache/nix
#   build.log    what configure and make printed; build-seconds, the time
# and, last, .built. With .built there, a run only checks that bin/nix
# starts (installing the runtime libraries if a cache was restored onto a
# new machine). The Makefile names DIR after this script's hash, so any
# change here builds anew.
#
# TARBALL is `git archive --prefix=nix-2.24.15/` of the tag, checked against
# its sha256 below; it is only read when building.
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 DIR TARBALL" >&2
  exit 2
fi
DIR=$1 TARBALL=$2

NIX_VERSION=2.24.15
NIX_COMMIT=148585470c2a595cf5d4c9b921b286ec9758389f
TARBALL_SHA256=59911085daeec8196806170a34060bf4323edd8015b966c3dbc01f9f73efe5d1
JOBS=${JOBS:-$(nproc)}
SUDO=$([ "$(id -u)" = 0 ] || echo sudo)

# Debian 12 has no libeditline-dev (hence readline); lowdown.pc requires
# libbsd and libmd, without which configure quietly drops markdown.
PACKAGES="build-essential autoconf autoconf-archive automake pkg-config bison flex
  libboost-dev libboost-context-dev libboost-container-dev libboost-coroutine-dev
  nlohmann-json3-dev libsqlite3-dev libcurl4-openssl-dev libreadline-dev
  libarchive-dev libbrotli-dev libsodium-dev libseccomp-dev libgc-dev libcpuid-dev
  libgit2-dev libtoml11-dev liblowdown-dev libbsd-dev libmd-dev jq libssl-dev
  libxml2-utils xsltproc git"

install_packages() {
  local missing=""
  for p in $PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
  done
  [ -z "$missing" ] && return 0
  echo "nix $NIX_VERSION: installing from Debian:$missing"
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 --no-install-recommends $missing >/dev/null
}

runs() {
  [ "$("$DIR/bin/nix" --version 2>/dev/null)" = "nix (Nix) $NIX_VERSION" ]
}

mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd -P)
# One build at a time per DIR: a second run waits, then finds .built.
exec 9>"$DIR.lock"
flock 9

if [ -e "$DIR/.built" ]; then
  runs && exit 0
  install_packages
  runs && exit 0
  echo "nix $NIX_VERSION: $DIR/bin/nix does not start; building it again"
fi

if [ ! -f "$TARBALL" ]; then
  echo "nix $NIX_VERSION: $TARBALL is missing: it is the pinned source of Nix $NIX_VERSION that the tests build (see docs/nix-versions.md)" >&2
  exit 1
fi
if ! echo "$TARBALL_SHA256  $TARBALL" | sha256sum -c --status; then
  echo "nix $NIX_VERSION: $TARBALL does not have the pinned sha256 $TARBALL_SHA256" >&2
  exit 1
fi

# Clear what an unfinished build left, but never a folder this script did
# not make.
if [ -n "$(ls -A "$DIR")" ] && [ ! -e "$DIR/.podroles-nix" ]; then
  echo "nix $NIX_VERSION: $DIR holds files this script did not write; give it an empty or new folder" >&2
  exit 1
fi
find "$DIR" -mindepth 1 -delete
touch "$DIR/.podroles-nix"
started=$(date +%s)
install_packages
echo "nix $NIX_VERSION: building from source into $DIR: about 12 minutes on 2 cores, once (log: $DIR/build.log)"
LOG=$DIR/build.log
SRC=$DIR/build/nix-$NIX_VERSION
mkdir -p "$SRC"
tar -xzf "$TARBALL" -C "$SRC" --strip-components=1

# Debian 12's libgc-dev 8.2.2 declares the members of gc_allocator<void>,
# gc_allocator_ignore_off_page<void> and traceable_allocator<void> private,
# and boost 1.74's small_vector (src/libexpr/eval.cc) needs them public
# (NixOS/nix#9888; bdwgc PR #586 fixed it upstream). The build reads an
# overlay of the gc headers with `public:` added; /usr/include is not
# touched. GCC drops configure's explicit -I/usr/include, so the overlay wins.
GC_OVERLAY=$DIR/build/gc-overlay
mkdir -p "$GC_OVERLAY" && cp -r /usr/include/gc "$GC_OVERLAY/gc"
header=$GC_OVERLAY/gc/gc_allocator.h
before=$(grep -c '^public:$' "$header" || true)
sed -i -E 's/^(class (gc_allocator|gc_allocator_ignore_off_page|traceable_allocator)<void> \{)$/\1\npublic:/' "$header"
if [ "$(grep -c '^public:$' "$header")" -ne $((before + 3)) ]; then
  echo "nix $NIX_VERSION: /usr/include/gc/gc_allocator.h is not the one this recipe patches (libgc-dev changed?)" >&2
  exit 1
fi

fail() {
  tail -n 30 "$LOG" >&2
  echo "nix $NIX_VERSION: $1 failed; the whole log is $LOG" >&2
  exit 1
}
# The store folder stays /nix/store so that store paths are the users'; the
# state folder stays /nix/var (configure's default), which is why nix.conf
# below gives this nix a chroot store. The source is a fresh tree each time:
# nix 2.24's makefiles regenerate config.h while compiling when configure runs
# again in a built tree, and a -j2 build then fails on "config.h: No such file".
(
  cd "$SRC"
  autoreconf -fi
  ./configure --prefix="$DIR/prefix" --with-readline-flavor=readline \
    --disable-doc-gen --disable-unit-tests --disable-functional-tests \
    CXXFLAGS="-I$GC_OVERLAY"
) >"$LOG" 2>&1 || fail configure
nice -n 10 make -C "$SRC" -j"$JOBS" >>"$LOG" 2>&1 || fail make
make -C "$SRC" install >>"$LOG" 2>&1 || fail "make install"
# Objects always carry -g: 491 MB installed, 21 MB without the debug
# sections.
find "$DIR/prefix/bin" "$DIR/prefix/lib" -type f \( -perm -u+x -o -name '*.so*' \) \
  -exec strip --strip-debug {} + 2>/dev/null || true
rm -rf "$DIR/build"

mkdir -p "$DIR/prefix/etc/nix" "$DIR/store-root" "$DIR/cache" "$DIR/bin"
cat >"$DIR/prefix/etc/nix/nix.conf" <<CONF
# Nix $NIX_VERSION for podroles' tests (scripts/build-nix.sh). Its own store:
# the compiled-in state folder is /nix/var/nix, Debian nix's, whose database
# it must never open.
store = local?root=$DIR/store-root
CONF
# The command the tests run. It pins the config to the one above (neither
# NIX_CONF_DIR, NIX_CONFIG, NIX_REMOTE nor a user's nix.conf can point it at
# Debian's store) and gives it a cache folder of its own.
cat >"$DIR/bin/nix" <<WRAP
#!/bin/sh
# Nix $NIX_VERSION for podroles' tests (scripts/build-nix.sh): its own config, store and cache.
unset NIX_CONFIG NIX_REMOTE NIX_STATE_DIR NIX_STORE_DIR NIX_STORE
NIX_CONF_DIR='$DIR/prefix/etc/nix' NIX_USER_CONF_FILES='$DIR/prefix/etc/nix/nix.conf' XDG_CACHE_HOME='$DIR/cache' \\
  exec '$DIR/prefix/bin/nix' "\$@"
WRAP
chmod +x "$DIR/bin/nix"
runs || { echo "nix $NIX_VERSION: the build finished but $DIR/bin/nix does not start" >&2; exit 1; }
echo $(($(date +%s) - started)) >"$DIR/build-seconds"
echo "$NIX_COMMIT" >"$DIR/.built"
echo "nix $NIX_VERSION: built in $(cat "$DIR/build-seconds") s: $DIR/bin/nix"
