#!/usr/bin/env bash
# build-nix-2.31.sh: Nix 2.31.5 (NixOS 25.11's), one of the nixes podroles is
# tested on, built from its pinned source in a Debian 13 root of its own:
# Debian 12 lacks its dependencies (docs/nix-versions.md), Debian 13 has all
# but two, and its packages never enter the machine's Debian 12
# (scripts/debian13-root.sh).
#
#   scripts/build-nix-2.31.sh DIR TARBALL BLAKE3_TARBALL
#
# DIR receives:
#   root/         debootstrap --variant=minbase trixie, with the build's
#                 packages from Debian 13, BLAKE3's C library in /usr/local
#                 and the nix in /opt/nix-2.31.5
#   libexec/nix   that nix through the root's own loader and libraries, no
#                 store or configuration pinned; the tests run it through
#                 scripts/nix-own-root.sh, with a /nix of its own
#   times         seconds each step took; build.log, what they printed
# and, last, .built. With .built there, a run only checks that the nix
# starts. The Makefile names DIR after this script's hash and
# debian13-root.sh's, so any change to either builds anew. Needs root (or
# sudo) for debootstrap and the chroot.
#
# TARBALL is `git archive --prefix=nix-2.31.5/` of the tag and BLAKE3_TARBALL
# `git archive --prefix=BLAKE3-1.8.2/` of BLAKE3's tag (its C library), both
# checked against their sha256 below; they are only read when building.
set -euo pipefail

if [ $# -ne 3 ]; then
  echo "usage: $0 DIR TARBALL BLAKE3_TARBALL" >&2
  exit 2
fi
# shellcheck source=scripts/debian13-root.sh
. "$(dirname "$0")/debian13-root.sh"

NIX_VERSION=2.31.5
NIX_COMMIT=cc38c0c5ca55d533c5fb3e944305ca9926d32181
TARBALL_SHA256=656767785b64579c9eb69be85fa663d593930d351131bc4a747e15fd6ac584a8
BLAKE3_VERSION=1.8.2
BLAKE3_SHA256=41b196165f2cab5d79380ade9fe4ad20c77cc7fdb35f3b6120665cb5e6983098
PREFIX=/opt/nix-$NIX_VERSION
JOBS=${JOBS:-$(nproc)}

# Debian 13's packages for the build. Not packaged: BLAKE3's C library (built
# first, below) and editline (readline instead).
PACKAGES="build-essential meson ninja-build cmake pkg-config bison flex
  libboost-dev libboost-context-dev libboost-container-dev libboost-coroutine-dev
  libboost-iostreams-dev libboost-url-dev nlohmann-json3-dev libcurl4-openssl-dev
  libarchive-dev libsodium-dev libseccomp-dev libgc-dev libcpuid-dev libgit2-dev
  libtoml11-dev liblowdown-dev libsqlite3-dev libbrotli-dev libbz2-dev libssl-dev
  libreadline-dev"

mkdir -p "$1"
DIR=$(cd "$1" && pwd -P)
TARBALL=$2 BLAKE3_TARBALL=$3
ROOT=$DIR/root

runs() {
  [ "$(NIX_CONF_DIR="$DIR/libexec" NIX_USER_CONF_FILES= "$DIR/libexec/nix" --version 2>/dev/null)" = "nix (Nix) $NIX_VERSION" ]
}

# One build at a time per DIR: a second run waits, then finds .built.
exec 9>"$DIR.lock"
flock 9

if [ -e "$DIR/.built" ]; then
  runs && exit 0
  echo "nix $NIX_VERSION: $DIR/libexec/nix does not start; building it again"
fi

pinned() { # FILE SHA256 WHAT
  if [ ! -f "$1" ]; then
    echo "nix $NIX_VERSION: $1 is missing: it is the pinned source of $3 that the tests build (see docs/nix-versions.md)" >&2
    exit 1
  fi
  if ! echo "$2  $1" | sha256sum -c --status; then
    echo "nix $NIX_VERSION: $1 does not have the pinned sha256 $2" >&2
    exit 1
  fi
}
pinned "$TARBALL" "$TARBALL_SHA256" "Nix $NIX_VERSION"
pinned "$BLAKE3_TARBALL" "$BLAKE3_SHA256" "BLAKE3 $BLAKE3_VERSION"

# Clear what an unfinished run left, but never a folder this script did
# not make.
build_dir_fresh "$NIX_VERSION" "$DIR" "$ROOT"
started=$(date +%s)
timed() { # NAME COMMAND…: COMMAND, its seconds written to DIR/times
  local t
  t=$(date +%s)
  "${@:2}"
  echo "$1 $(($(date +%s) - t))" >>"$DIR/times"
}
echo "nix $NIX_VERSION: building from source in a Debian 13 root, $ROOT: about 15 minutes on 2 idle cores, once (log: $LOG)"

step="debootstrap of Debian 13"
timed debootstrap root_create "$ROOT" "$LOG"
step="apt-get install of the build's packages in the root"
# shellcheck disable=SC2086
timed packages root_install "$ROOT" "$LOG" $PACKAGES

step="BLAKE3 $BLAKE3_VERSION"
root_run "$ROOT" mkdir -p /build
root_run "$ROOT" tar -xzf - -C /build <"$BLAKE3_TARBALL"
timed blake3 root_run "$ROOT" sh -c "cmake -S /build/BLAKE3-$BLAKE3_VERSION/c -B /build/blake3 \
    -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DCMAKE_INSTALL_PREFIX=/usr/local &&
  cmake --build /build/blake3 -j$JOBS && cmake --install /build/blake3 && ldconfig" >>"$LOG" 2>&1

# The store and state folders stay /nix/store and /nix/var (the defaults):
# the tests give this nix a /nix of its own.
step="meson setup of Nix $NIX_VERSION"
root_run "$ROOT" tar -xzf - -C /build <"$TARBALL"
# Optimised as Nix's own packages build it (mesonBuildType = "release" in
# packaging/components.nix): the top meson.build sets no build type, and
# meson's default, debug, compiles with -O0 and evaluates two to five times
# slower. Without their link-time optimisation, which only makes it faster.
timed configure root_run "$ROOT" sh -c "cd /build/nix-$NIX_VERSION && meson setup build --prefix=$PREFIX \
    -Dbuildtype=release -Db_lto=false -Dunit-tests=false -Dbindings=false -Ddoc-gen=false -Dbenchmarks=false \
    -Dlibcmd:readline-flavor=readline" >>"$LOG" 2>&1
step="ninja (the build of Nix $NIX_VERSION)"
timed build root_run "$ROOT" nice -n 10 ninja -C "/build/nix-$NIX_VERSION/build" -j"$JOBS" >>"$LOG" 2>&1
step="ninja install"
# Without debug sections, should a dependency's flags add any.
timed install root_run "$ROOT" sh -c "ninja -C /build/nix-$NIX_VERSION/build install &&
  find $PREFIX -type f \\( -perm -u+x -o -name '*.so*' \\) -exec strip --strip-debug {} + 2>/dev/null; rm -rf /build" >>"$LOG" 2>&1

step="running the root's nix from the machine"
root_runner "$ROOT" "$PREFIX/bin/nix" "$DIR/libexec/nix" "$PREFIX/lib/x86_64-linux-gnu" /usr/local/lib 2>>"$LOG"
runs || { echo "nix $NIX_VERSION: $DIR/libexec/nix does not start, or is not $NIX_VERSION" >>"$LOG"; exit 1; }
step=""
echo "total $(($(date +%s) - started))" >>"$DIR/times"
echo "$NIX_COMMIT" >"$DIR/.built"
echo "nix $NIX_VERSION: built in $(($(date +%s) - started)) s: $DIR/libexec/nix"
