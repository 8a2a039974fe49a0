#!/usr/bin/env bash
# nix-own-root.sh: the command the tests run as Nix 2.24, over the build of
# scripts/build-nix.sh in DIR:
#
#   scripts/nix-own-root.sh DIR       → DIR/own-root/bin/nix
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
# two nixes never share fetcher caches or git repositories under
# ~/.cache/nix. As root it needs only unshare(1); otherwise unprivileged user
# namespaces. Apart from build-nix.sh, so that a change here builds nothing
# anew.
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 DIR" >&2
  exit 2
fi
DIR=$(cd "$1" && pwd -P)
NIX=$DIR/prefix/bin/nix
OWN=$DIR/own-root
if [ ! -x "$NIX" ]; then
  echo "nix 2.24: $NIX is missing: run scripts/build-nix.sh first" >&2
  exit 1
fi
mkdir -p "$OWN/nix/store" "$OWN/nix/var/nix" "$OWN/etc/nix" "$OWN/bin" "$DIR/cache"
cat >"$OWN/etc/nix/nix.conf" <<CONF
# Nix 2.24 for podroles' tests (scripts/nix-own-root.sh): the default store,
# /nix/store, which is $OWN/nix/store in its mount namespace.
CONF
# sh binds the folder over /nix and execs nix in its place: the same pid
# and process group as the caller started.
cat >"$OWN/bin/nix.tmp" <<'WRAP'
#!/bin/sh
# Nix 2.24 for podroles' tests (scripts/nix-own-root.sh): /nix of its own in
# a mount namespace, its own configuration and cache.
unset NIX_CONFIG NIX_REMOTE NIX_STATE_DIR NIX_STORE_DIR NIX_STORE NIX_LOG_DIR
export NIX_CONF_DIR='@OWN@/etc/nix' NIX_USER_CONF_FILES='@OWN@/etc/nix/nix.conf' XDG_CACHE_HOME='@DIR@/cache'
if [ "$(id -u)" = 0 ]; then ns=--mount; else ns="--user --map-root-user --mount"; fi
exec unshare $ns sh -c 'mount --bind "$0" /nix || { echo "nix 2.24: cannot bind $0 over /nix in a mount namespace (unshare needs root or user namespaces)" >&2; exit 1; }; exec "$@"' \
  '@OWN@/nix' '@NIX@' "$@"
WRAP
sed -i "s|@OWN@|$OWN|g; s|@DIR@|$DIR|g; s|@NIX@|$NIX|g" "$OWN/bin/nix.tmp"
chmod +x "$OWN/bin/nix.tmp"
mv "$OWN/bin/nix.tmp" "$OWN/bin/nix"
"$OWN/bin/nix" --version >/dev/null
