#!/usr/bin/env bash
# nix-own-root.sh: the command the tests run as one of the built nixes, over
# the folder DIR that its build script filled:
#
#   scripts/nix-own-root.sh DIR       → DIR/own-root/bin/nix
#
# The nix is DIR/prefix/bin/nix (Nix 2.24, scripts/build-nix.sh), or
# DIR/libexec/nix (a nix of a Debian 13 root run through the root's own
# loader, scripts/build-nix-2.26.sh and build-nix-2.31.sh).
#
# That nix runs in a mount namespace of its own in which DIR/own-root/nix is
# bound over /nix: it has a /nix/store and a /nix/var/nix of its own, as on a
# user's machine (store paths, the files its errors name and `nix flake`
# commands are as users see them), and Debian nix's /nix, its store and its
# database, are out of its sight. (The chroot store of build-nix.sh's own
# bin/nix keeps Debian's database apart too, but 2.24 then names files by
# their path under the chroot, and its `nix flake metadata` fails.)
# Its configuration is pinned (no NIX_CONF_DIR, NIX_CONFIG, NIX_REMOTE or
# user's nix.conf from the caller) and its cache folder is its own, so the
# nixes never share fetcher caches or git repositories under ~/.cache/nix.
# As root it needs only unshare(1); otherwise unprivileged user namespaces.
# Apart from the build scripts, so that a change here builds nothing anew.
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 DIR" >&2
  exit 2
fi
DIR=$(cd "$1" && pwd -P)
NIX=$DIR/prefix/bin/nix
[ -x "$NIX" ] || NIX=$DIR/libexec/nix
OWN=$DIR/own-root
if [ ! -x "$NIX" ]; then
  echo "nix-own-root.sh: $DIR has neither prefix/bin/nix nor libexec/nix: run its build script first" >&2
  exit 1
fi
# Its release, for the wrapper's messages (read with no configuration: the
# machine's /etc/nix/nix.conf is Debian nix's).
VERSION=$(NIX_CONF_DIR="$DIR" NIX_USER_CONF_FILES= "$NIX" --version | awk 'NR == 1 { print $NF }')
mkdir -p "$OWN/nix/store" "$OWN/nix/var/nix" "$OWN/etc/nix" "$OWN/bin" "$DIR/cache"
cat >"$OWN/etc/nix/nix.conf" <<CONF
# Nix $VERSION for podroles' tests (scripts/nix-own-root.sh): the default store,
# /nix/store, which is $OWN/nix/store in its mount namespace.
CONF
# sh binds the folder over /nix and execs nix in its place: the same pid
# and process group as the caller started.
cat >"$OWN/bin/nix.tmp" <<'WRAP'
#!/bin/sh
# Nix @VERSION@ for podroles' tests (scripts/nix-own-root.sh): /nix of its own
# in a mount namespace, its own configuration and cache.
unset NIX_CONFIG NIX_REMOTE NIX_STATE_DIR NIX_STORE_DIR NIX_STORE NIX_LOG_DIR
export NIX_CONF_DIR='@OWN@/etc/nix' NIX_USER_CONF_FILES='@OWN@/etc/nix/nix.conf' XDG_CACHE_HOME='@DIR@/cache'
if [ "$(id -u)" = 0 ]; then ns=--mount; else ns="--user --map-root-user --mount"; fi
exec unshare $ns sh -c 'mount --bind "$0" /nix || { echo "nix @VERSION@: cannot bind $0 over /nix in a mount namespace (unshare needs root or user namespaces)" >&2; exit 1; }; exec "$@"' \
  '@OWN@/nix' '@NIX@' "$@"
WRAP
sed -i "s|@OWN@|$OWN|g; s|@DIR@|$DIR|g; s|@NIX@|$NIX|g; s|@VERSION@|$VERSION|g" "$OWN/bin/nix.tmp"
chmod +x "$OWN/bin/nix.tmp"
mv "$OWN/bin/nix.tmp" "$OWN/bin/nix"
"$OWN/bin/nix" --version >/dev/null
