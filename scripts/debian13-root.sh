# debian13-root.sh: a Debian 13 (trixie) root for the nixes that Debian 12
# cannot give: Debian 13's own nix-bin 2.26 (build-nix-2.26.sh) and Nix 2.31
# built from source with Debian 13's packages (build-nix-2.31.sh). Sourced
# by both; the Makefile hashes it with each of them, so a change here builds
# both anew.
#
# The root is a folder of the cache, never the machine's Debian 12: its
# packages are installed with the root's own apt, in a chroot, and its nix
# runs from the machine through the root's own loader and libraries.
# Everything that mounts (debootstrap, the chroot with /proc and /dev) runs in
# a mount namespace of its own, and unmounts on the way out, also on failure;
# a killed run leaves no mount behind either, since the namespace goes with it.
set -euo pipefail

DEBIAN13_SUITE=trixie
DEBIAN13_MIRROR=${DEBIAN13_MIRROR:-http://deb.debian.org/debian}
# The root's loader and library folder, by their real paths in the root (a
# link in it to an absolute path would name the machine's).
DEBIAN13_LOADER=/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
DEBIAN13_LIBS=/usr/lib/x86_64-linux-gnu
ROOT_SUDO=$([ "$(id -u)" = 0 ] || echo sudo)

# root_create ROOT LOG: debootstrap --variant=minbase trixie into ROOT (which
# must not exist yet), then the root's apt set up for unattended installs
# that start no service.
root_create() {
  local root=$1 log=$2
  if ! command -v debootstrap >/dev/null && [ ! -x /usr/sbin/debootstrap ]; then
    $ROOT_SUDO apt-get update -qq
    $ROOT_SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 debootstrap >/dev/null
  fi
  # debootstrap mounts /proc and /sys in the root while it runs; in a mount
  # namespace of its own those mounts cannot outlive it.
  $ROOT_SUDO unshare --mount --propagation private -- \
    env PATH="/usr/sbin:/usr/bin:/sbin:/bin" debootstrap --variant=minbase "$DEBIAN13_SUITE" "$root" "$DEBIAN13_MIRROR" >>"$log" 2>&1
  $ROOT_SUDO sh -c 'printf "#!/bin/sh\n# podroles: no service starts in this root.\nexit 101\n" >"$1/usr/sbin/policy-rc.d" && chmod +x "$1/usr/sbin/policy-rc.d" &&
    printf "APT::Install-Recommends \"false\";\nAPT::Install-Suggests \"false\";\nAcquire::Retries \"3\";\n" >"$1/etc/apt/apt.conf.d/90podroles"' sh "$root"
}

# root_run ROOT COMMAND…: COMMAND in a chroot of ROOT with the machine's /proc
# and /dev bound into it, both unmounted when it ends, whatever the outcome.
root_run() {
  local root=$1
  shift
  $ROOT_SUDO unshare --mount --propagation private -- bash -c '
    set -euo pipefail
    root=$1
    shift
    undo() {
      umount -R "$root/dev" 2>/dev/null || true
      umount "$root/proc" 2>/dev/null || true
    }
    trap undo EXIT
    trap "exit 130" INT TERM HUP
    mount --bind /proc "$root/proc"
    mount --rbind /dev "$root/dev"
    mount --make-rslave "$root/dev"
    chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
  ' root-run "$root" "$@"
}

# root_install ROOT LOG PACKAGE…: the packages from Debian 13, with the
# root's apt.
root_install() {
  local root=$1 log=$2
  shift 2
  root_run "$root" apt-get update -q >>"$log" 2>&1
  root_run "$root" apt-get install -y -q "$@" >>"$log" 2>&1
  root_run "$root" apt-get clean >>"$log" 2>&1
}

# root_runner ROOT NIX OUT LIBDIR…: writes OUT, a script that runs ROOT's NIX
# (a path inside the root) through the root's loader, with the root's
# LIBDIRs (paths inside the root; its /usr/lib/x86_64-linux-gnu last) and
# not the loader's cache, which is the machine's. Nothing else is pinned: the
# commands the tests run add a store and a configuration of their own. It
# fails if any library NIX needs would come from outside the root.
root_runner() {
  local root=$1 nix=$2 out=$3 libs="" d
  shift 3
  for d in "$@" "$DEBIAN13_LIBS"; do libs="$libs${libs:+:}$root$d"; done
  mkdir -p "$(dirname "$out")"
  cat >"$out.tmp" <<RUN
#!/bin/sh
# The nix of a Debian 13 root (scripts/debian13-root.sh), through the root's
# own loader and libraries. No store or configuration pinned:
# scripts/nix-own-root.sh gives it a /nix of its own.
exec '$root$DEBIAN13_LOADER' --inhibit-cache --library-path '$libs' '$root$nix' "\$@"
RUN
  chmod +x "$out.tmp"
  local outside
  outside=$("$root$DEBIAN13_LOADER" --list --inhibit-cache --library-path "$libs" "$root$nix" |
    awk -v root="$root/" '$2 == "=>" && index($3, root) != 1 { print $1 " => " $3 }')
  if [ -n "$outside" ]; then
    echo "$root$nix would load libraries from outside its root:" >&2
    echo "$outside" >&2
    return 1
  fi
  mv "$out.tmp" "$out"
}

# root_remove ROOT: the root, as root made it.
root_remove() {
  local root=$1
  if grep -qF " $root/" /proc/self/mounts; then
    echo "$root has something mounted in it; not removing it" >&2
    return 1
  fi
  $ROOT_SUDO rm -rf --one-file-system "$root"
}

# build_dir_fresh NAME DIR ROOT: empties DIR for a build of NAME, refusing
# a folder this script did not make, and sets LOG to DIR/build.log. The
# caller sets step to each step's name: a failing step then prints the
# log's end and its name on the way out.
build_dir_fresh() {
  local name=$1 dir=$2 root=$3
  if [ -n "$(ls -A "$dir")" ] && [ ! -e "$dir/.podroles-nix" ]; then
    echo "nix $name: $dir holds files this script did not write; give it an empty or new folder" >&2
    exit 1
  fi
  if [ -e "$root" ]; then root_remove "$root"; fi
  find "$dir" -mindepth 1 -delete
  touch "$dir/.podroles-nix"
  LOG=$dir/build.log
  step=""
  FAILED_NAME=$name
  trap 'rc=$?; if [ $rc -ne 0 ] && [ -n "$step" ]; then tail -n 30 "$LOG" >&2; echo "nix $FAILED_NAME: $step failed; the whole log is $LOG" >&2; fi' EXIT
}
