#!/usr/bin/env bash
# build-nix-2.26.sh: Nix 2.26 as Debian 13 ships it (its nix-bin), one of
# the nixes podroles is tested on, in a Debian 13 root of its own: Debian 13's
# packages never enter the machine's Debian 12 (scripts/debian13-root.sh).
#
#   scripts/build-nix-2.26.sh DIR
#
# DIR receives:
#   root/         debootstrap --variant=minbase trixie, with nix-bin
#   libexec/nix   the root's /usr/bin/nix through the root's own loader and
#                 libraries, no store or configuration pinned; the tests run
#                 it through scripts/nix-own-root.sh, with a /nix of its own
#   nix-bin.version  the Debian package's version
#   times         seconds each step took; build.log, what they printed
# and, last, .built. With .built there, a run only checks that the nix
# starts. The Makefile names DIR after this script's hash and
# debian13-root.sh's, so any change to either builds anew. Needs root (or
# sudo) for debootstrap and the chroot.
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 DIR" >&2
  exit 2
fi
# shellcheck source=scripts/debian13-root.sh
. "$(dirname "$0")/debian13-root.sh"

NIX_SERIES=2.26
mkdir -p "$1"
DIR=$(cd "$1" && pwd -P)
ROOT=$DIR/root

runs() {
  case "$(NIX_CONF_DIR="$DIR/libexec" NIX_USER_CONF_FILES= "$DIR/libexec/nix" --version 2>/dev/null)" in
    "nix (Nix) $NIX_SERIES".*) return 0 ;;
    *) return 1 ;;
  esac
}

# One build at a time per DIR: a second run waits, then finds .built.
exec 9>"$DIR.lock"
flock 9

if [ -e "$DIR/.built" ]; then
  runs && exit 0
  echo "nix $NIX_SERIES: $DIR/libexec/nix does not start; making it again"
fi
# Clear what an unfinished run left, but never a folder this script did
# not make.
build_dir_fresh "$NIX_SERIES" "$DIR" "$ROOT"
echo "nix $NIX_SERIES: Debian 13's nix-bin in a Debian 13 root, $ROOT: one or two minutes, once (log: $LOG)"

t=$(date +%s)
step="debootstrap of Debian 13"
root_create "$ROOT" "$LOG"
echo "debootstrap $(($(date +%s) - t))" >>"$DIR/times"
t=$(date +%s)
step="apt-get install nix-bin in the root"
root_install "$ROOT" "$LOG" nix-bin
echo "nix-bin $(($(date +%s) - t))" >>"$DIR/times"
root_run "$ROOT" dpkg-query -W -f='${Version}\n' nix-bin >"$DIR/nix-bin.version"

step="running the root's nix from the machine"
root_runner "$ROOT" /usr/bin/nix "$DIR/libexec/nix" 2>>"$LOG"
runs || { echo "nix $NIX_SERIES: $DIR/libexec/nix does not start, or is not $NIX_SERIES" >>"$LOG"; exit 1; }
step=""
cp "$DIR/nix-bin.version" "$DIR/.built"
echo "nix $NIX_SERIES: nix-bin $(cat "$DIR/nix-bin.version") in $(awk '{ s += $2 } END { print s }' "$DIR/times") s: $DIR/libexec/nix"
