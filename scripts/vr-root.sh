#!/usr/bin/env bash
# A test bed for the VR path with no headset: a minimal Debian trixie root holding Monado (the open-source OpenXR
# runtime) with its simulated headset and controllers and its "null" compositor, on Mesa's software Vulkan.
# Debian 12 does not package Monado; trixie does, so the root is built with debootstrap and cached.
#
# Usage:
#   scripts/vr-root.sh build                  build the root if it is missing or its package list changed
#   scripts/vr-root.sh run [--no-service] [--] COMMAND [ARG...]
#                                             start monado-service in the root, run COMMAND inside (working directory
#                                             /tumble, which is this repository), stop the service; exit with
#                                             COMMAND's status. --no-service runs COMMAND alone (Monado in-process).
#   scripts/vr-root.sh shell                  an interactive shell in the root with the service running
#
# Environment: TUMBLE_VR_ROOT (where the root lives; default /var/cache/tumble/vr-root-trixie),
# TUMBLE_DEBIAN_MIRROR (a Debian mirror, when the machine's apt sources name none), TUMBLE_VR_LOG_DIR (where the
# service log goes; default target/vr in this repository), TUMBLE_VR_COMPOSITOR=window with DISPLAY and TUMBLE_VR_HZ
# (Monado's main compositor in an X window, paced at that rate, instead of the null one; see below). Needs root
# (debootstrap, chroot, mounts).
#
# Every run happens in a private mount namespace (unshare), so the mounts it makes (/proc, /dev, /sys, a tmpfs
# /tmp, the repository) vanish with it whatever happens; a trap stops the service and unmounts them first anyway.
set -euo pipefail

SUITE=trixie
# What the root holds. Changing this list (or SUITE) rebuilds the root on the next run.
PACKAGES=(
    monado-service libopenxr1-monado libopenxr-loader1 mesa-vulkan-drivers
    # The Vulkan validation layers: the debug build `make test-vr` runs turns them on; it fails on any message.
    vulkan-validationlayers
    # hello_xr (the OpenXR SDK's sample, in libopenxr-utils) and vulkaninfo, for comparing against a stock client.
    libopenxr-utils vulkan-tools
    # The mirror window's X11 keyboard library (winit needs it to open a window).
    libxkbcommon-x11-0
    ca-certificates
)
# Monado's service and clients: the simulated headset with two "simple" controllers, the null compositor (no
# display, no window), no interactive stdin for the service.
MONADO_ENV=(XRT_COMPOSITOR_NULL=1 SIMULATED_ENABLE=1 SIMULATED_LEFT=simple SIMULATED_RIGHT=simple XRT_NO_STDIN=1)
# TUMBLE_VR_COMPOSITOR=window swaps the null compositor (which paces at a fixed 20 Hz whatever it is told) for
# Monado's main compositor drawing into an X window on $DISPLAY (an Xvfb will do), paced at TUMBLE_VR_HZ (default
# 90): the way to run the headset's loop at 72, 120 or 144 Hz with no headset.
if [ "${TUMBLE_VR_COMPOSITOR:-null}" = window ]; then
    [ -n "${DISPLAY:-}" ] || { echo "vr-root: TUMBLE_VR_COMPOSITOR=window needs DISPLAY (an X server, Xvfb will do)" >&2; exit 1; }
    MONADO_ENV=(XRT_COMPOSITOR_FORCE_XCB=1 "DISPLAY=$DISPLAY" "XRT_COMPOSITOR_DEFAULT_FRAMERATE=${TUMBLE_VR_HZ:-90}"
        SIMULATED_ENABLE=1 SIMULATED_LEFT=simple SIMULATED_RIGHT=simple XRT_NO_STDIN=1)
elif [ "${TUMBLE_VR_COMPOSITOR:-null}" != null ]; then
    echo "vr-root: TUMBLE_VR_COMPOSITOR is null or window, not '$TUMBLE_VR_COMPOSITOR'" >&2
    exit 2
fi
# A short private runtime directory: Unix socket paths are limited to 108 bytes.
RUNTIME_DIR=/tmp/xr
SERVICE_SOCKET_WAIT_S=30
# Grace before KILL for the service and the command on the way out.
SERVICE_STOP_WAIT_S=5

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROOT=${TUMBLE_VR_ROOT:-/var/cache/tumble/vr-root-$SUITE}
LOG_DIR=${TUMBLE_VR_LOG_DIR:-$REPO/target/vr}
STAMP_FILE=.tumble-vr-root-stamp

die() {
    echo "vr-root: $*" >&2
    exit 1
}

# The stamp names what the root was built from; a different stamp means rebuild.
wanted_stamp() {
    echo "suite=$SUITE packages=${PACKAGES[*]} recipe=2"
}

# The Debian mirror this machine already uses, from its own apt sources (one-line and deb822 formats); the first
# URI whose path ends in /debian (not the security archive). TUMBLE_DEBIAN_MIRROR overrides.
debian_mirror() {
    if [ -n "${TUMBLE_DEBIAN_MIRROR:-}" ]; then
        echo "$TUMBLE_DEBIAN_MIRROR"
        return
    fi
    local uris=()
    local f
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -r "$f" ] || continue
        # deb [options] URI suite components...
        while read -r uri; do uris+=("$uri"); done < <(
            sed -E -n 's/^[[:space:]]*deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+).*/\2/p' "$f")
    done
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -r "$f" ] || continue
        while read -r uri; do uris+=("$uri"); done < <(
            sed -E -n 's/^URIs:[[:space:]]*//p' "$f" | tr ' ' '\n' | grep -v '^$')
    done
    local uri
    for uri in "${uris[@]}"; do
        case "${uri%/}" in
            */debian) echo "${uri%/}"; return ;;
        esac
    done
    die "no Debian mirror in /etc/apt/sources.list or /etc/apt/sources.list.d/ (is this Debian?); \
set TUMBLE_DEBIAN_MIRROR to one"
}

root_is_current() {
    [ -f "$ROOT/$STAMP_FILE" ] && [ "$(cat "$ROOT/$STAMP_FILE")" = "$(wanted_stamp)" ]
}

# Mounts the root needs, made inside a private mount namespace (the caller is `unshare -m`).
mount_root() {
    local root=$1
    mount -t proc proc "$root/proc"
    mount --rbind /dev "$root/dev"
    mount --make-rslave "$root/dev"
    mount --rbind /sys "$root/sys"
    mount --make-rslave "$root/sys"
    mount -t tmpfs -o mode=1777,size=512m tmpfs "$root/tmp"
    mkdir -p "$root/tumble"
    mount --bind "$REPO" "$root/tumble"
}

MOUNTED_ROOT=
unmount_root() {
    local root=$1 m
    [ -n "$root" ] || return 0
    # Deepest first; lazy, so a straggler process cannot keep one alive.
    for m in $(awk -v r="$root" '$5 == r || index($5, r "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r); do
        umount -l "$m" 2>/dev/null || true
    done
}

build_root() {
    [ "$(id -u)" -eq 0 ] || die "building the root needs root (debootstrap, chroot)"
    command -v debootstrap >/dev/null || "$REPO/scripts/ensure-system-packages.sh" debootstrap
    mkdir -p "$(dirname "$ROOT")"
    # Exclusive: waits for runs using the old root to end. Released when this function's caller exits or
    # closes fd 8.
    exec 8>"$ROOT.lock"
    flock 8
    if root_is_current; then
        exec 8>&-
        return
    fi
    local mirror new started
    mirror=$(debian_mirror)
    new="$ROOT.new"
    started=$(date +%s)
    echo "vr-root: building a Debian $SUITE root in $ROOT from $mirror (once; cached afterwards)" >&2
    unmount_root "$new"
    rm -rf --one-file-system "$new"
    debootstrap --variant=minbase "$SUITE" "$new" "$mirror" >"$LOG_DIR/debootstrap.log" 2>&1 ||
        die "debootstrap failed; see $LOG_DIR/debootstrap.log"
    unshare --mount --propagation private -- "$0" __install "$new" ||
        die "installing ${PACKAGES[*]} in the root failed"
    wanted_stamp >"$new/$STAMP_FILE"
    unmount_root "$ROOT"
    rm -rf --one-file-system "$ROOT"
    mv "$new" "$ROOT"
    echo "vr-root: root built in $(($(date +%s) - started)) s" >&2
    exec 8>&-
}

# Inside the namespace: install the packages with apt in the fresh root.
inner_install() {
    local root=$1
    MOUNTED_ROOT=$root
    trap 'unmount_root "$MOUNTED_ROOT"' EXIT
    mount_root "$root"
    chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 \
        sh -c 'apt-get update -qq && apt-get install -y -qq --no-install-recommends "$@" && apt-get clean' \
        sh "${PACKAGES[@]}" >"$LOG_DIR/apt-install.log" 2>&1 || {
        tail -n 20 "$LOG_DIR/apt-install.log" >&2
        return 1
    }
}

# The runtime manifest Monado installs (its path has moved between releases).
monado_manifest() {
    local m
    for m in /usr/share/openxr/1/openxr_monado.json /etc/xdg/openxr/1/openxr_monado.json; do
        if [ -f "$ROOT$m" ]; then
            echo "$m"
            return
        fi
    done
    die "Monado's runtime manifest is missing from the root (looked for openxr_monado.json)"
}

# The environment of everything started in the root: a clean one, plus Monado's settings and whatever log
# filters the caller set.
root_env() {
    local manifest=$1
    local vars=(PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "XDG_RUNTIME_DIR=$RUNTIME_DIR"
        "XR_RUNTIME_JSON=$manifest" "${MONADO_ENV[@]}")
    local v
    for v in RUST_LOG RUST_BACKTRACE XRT_LOG OXR_DEBUG_ENTRYPOINTS OXR_DEBUG_PRINT XR_LOADER_DEBUG VK_LOADER_DEBUG \
        U_PACING_APP_LOG XRT_COMPOSITOR_LOG IPC_EXIT_ON_DISCONNECT XRT_COMPOSITOR_SCALE_PERCENTAGE; do
        if [ -n "${!v:-}" ]; then vars+=("$v=${!v}"); fi
    done
    echo "${vars[@]}"
}

COMMAND_PID=
stop_command() {
    stop_pid "$COMMAND_PID"
    COMMAND_PID=
}

# TERM, a few seconds' grace, then KILL.
stop_pid() {
    local pid=$1 i
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < SERVICE_STOP_WAIT_S * 10; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

SERVICE_PID=
stop_service() {
    stop_pid "$SERVICE_PID"
    SERVICE_PID=
}

# Inside the namespace: mounts, the service, the command, and the clean-up.
inner_run() {
    local with_service=$1
    shift
    MOUNTED_ROOT=$ROOT
    trap 'stop_command; stop_service; unmount_root "$MOUNTED_ROOT"' EXIT
    mount_root "$ROOT"
    trap 'exit 130' INT TERM
    local manifest env_vars
    manifest=$(monado_manifest)
    read -r -a env_vars <<<"$(root_env "$manifest")"
    mkdir -p -m 700 "$ROOT$RUNTIME_DIR"
    local service_log="$LOG_DIR/monado-service.log"
    if [ "$with_service" = 1 ]; then
        chroot "$ROOT" env -i "${env_vars[@]}" monado-service >"$service_log" 2>&1 &
        SERVICE_PID=$!
        local i socket="$ROOT$RUNTIME_DIR/monado_comp_ipc"
        for ((i = 0; i < SERVICE_SOCKET_WAIT_S * 10; i++)); do
            [ -S "$socket" ] && break
            if ! kill -0 "$SERVICE_PID" 2>/dev/null; then
                tail -n 30 "$service_log" >&2
                die "monado-service exited before opening its socket; log: $service_log"
            fi
            sleep 0.1
        done
        [ -S "$socket" ] || die "monado-service did not open $RUNTIME_DIR/monado_comp_ipc in ${SERVICE_SOCKET_WAIT_S} s"
        echo "vr-root: monado-service is up (log: $service_log)" >&2
    fi
    # In the background with `wait`, so a signal to this script is handled at once (bash runs traps only between
    # foreground commands); stdin is passed on explicitly (a background command would get /dev/null).
    local status=0
    chroot "$ROOT" env -i "${env_vars[@]}" sh -c 'cd /tumble && exec "$@"' sh "$@" <&0 &
    COMMAND_PID=$!
    wait "$COMMAND_PID" || status=$?
    COMMAND_PID=
    stop_service
    return "$status"
}

main() {
    local cmd=${1:-}
    shift || true
    case "$cmd" in
        __install)
            inner_install "$@"
            ;;
        __run)
            inner_run "$@"
            ;;
        build)
            mkdir -p "$LOG_DIR"
            build_root
            ;;
        run | shell)
            [ "$(id -u)" -eq 0 ] || die "running in the root needs root (chroot, mounts); CI runs as root"
            mkdir -p "$LOG_DIR" "$(dirname "$ROOT")"
            # A shared lock for the whole run (held by the exec'd process below): a rebuild waits for running
            # tests, and a run never sees a half-built root. Build (exclusive) only when the root is stale.
            exec 9>"$ROOT.lock"
            flock -s 9
            if ! root_is_current; then
                flock -u 9
                build_root
                flock -s 9
            fi
            local with_service=1
            if [ "$cmd" = shell ]; then
                set -- bash
            else
                if [ "${1:-}" = --no-service ]; then
                    with_service=0
                    shift
                fi
                if [ "${1:-}" = -- ]; then shift; fi
                [ $# -gt 0 ] || die "run: which command? (scripts/vr-root.sh run -- COMMAND...)"
            fi
            # exec: a signal to this script reaches the one that holds the mounts and the service.
            exec unshare --mount --propagation private -- "$0" __run "$with_service" "$@"
            ;;
        *)
            sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
            exit 2
            ;;
    esac
}

main "$@"
