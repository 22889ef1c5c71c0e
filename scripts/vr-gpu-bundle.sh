#!/usr/bin/env bash
# `tumble vr` against Monado on a machine with a GPU but no display and no package registry (a rented GPU server):
# a bundle holding just what that needs, taken from the VR test bed's Debian trixie root (scripts/vr-root.sh), and
# the run there. Monado's main compositor (paced at the rate asked) draws into an Xvfb window, or its null compositor
# runs with no window at all (TUMBLE_VR_COMPOSITOR=null); the session's Vulkan device is the machine's own driver
# (NVIDIA's, found at run time), so frames are drawn and timed on real hardware. Needs gcc and xz here.
#
# Usage:
#   scripts/vr-gpu-bundle.sh pack OUT.tar.xz [--with-lavapipe]
#         here (root): the bundle — monado-service and its OpenXR runtime, Xvfb, the Vulkan and OpenXR loaders, the
#         validation layers, vulkaninfo, with every library they load, and `tumble` built both ways (release for
#         timings, debug with the validation layers on). --with-lavapipe adds Mesa's software Vulkan (LLVM is
#         large), for trying the bundle on a machine with no GPU.
#   scripts/vr-gpu-bundle.sh run BUNDLE.tar.xz OUTDIR [HZ ...]
#         there (root, in this repository): one `tumble vr` run of the smash scene at each rate (default 120 90 144)
#         with the release build and a recorded frame stream, then one at the first rate with the debug build
#         (validation layers on); reports, records and logs go to OUTDIR. TUMBLE_VR_FRAMES sets the frames (1200),
#         TUMBLE_VR_LIB_FIRST directories searched before the bundle's libraries.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROOT=${TUMBLE_VR_ROOT:-/var/cache/tumble/vr-root-trixie}
# The runs: frames each, and a bound on a stuck one.
FRAMES=${TUMBLE_VR_FRAMES:-1200}
MAX_SECONDS=40
MULTIARCH=usr/lib/x86_64-linux-gnu

die() {
    echo "vr-gpu-bundle: $*" >&2
    exit 1
}

# Copies PATH (as seen inside the root) into the stage at its real location, and the name it was asked by as a
# link to it when that differs (a library's soname).
copy_in() {
    local root=$1 stage=$2 path=$3 real
    real=$(chroot "$root" readlink -f "$path")
    [ -e "$root$real" ] || die "$path is not in the root"
    mkdir -p "$stage$(dirname "$real")"
    [ -e "$stage$real" ] || cp -a "$root$real" "$stage$real"
    # The name asked for, in its directory (after the directory's own links): a link to the real file, as the
    # root's alternatives and sonames have it.
    local asked
    asked=$(chroot "$root" readlink -f "$(dirname "$path")")/$(basename "$path")
    if [ "$asked" != "$real" ]; then
        mkdir -p "$stage$(dirname "$asked")"
        # Relative: the bundle's programs also run outside it (see `run`).
        ln -sfnr "$stage$real" "$stage$asked"
    fi
}

# PATH and every library it loads (ldd inside the root).
copy_with_libraries() {
    local root=$1 stage=$2 path=$3 lib
    copy_in "$root" "$stage" "$path"
    for lib in $(chroot "$root" ldd "$path" | awk '/=> \// { print $3 } /^\t\/.*ld-linux/ { print $1 }'); do
        copy_in "$root" "$stage" "$lib"
    done
}

pack() {
    local out=$1 lavapipe=${2:-}
    [ "$(id -u)" -eq 0 ] || die "pack needs root (chroot)"
    [ -d "$ROOT" ] || die "no VR root at $ROOT: run scripts/vr-root.sh build first"
    # Xvfb is not in the test bed, nor glvnd (libGLdispatch, libGLX, libEGL: NVIDIA's Vulkan driver is its GLX
    # library and will not start without them: "Could not get 'vkCreateInstance'"); a copy of the root gets them
    # (the test bed itself stays as vr-root.sh made it).
    WORK=$(mktemp -d /tmp/vr-gpu-bundle.XXXXXX)
    trap 'rm -rf --one-file-system "$WORK"' EXIT
    cp -a "$ROOT" "$WORK/root"
    local root=$WORK/root stage=$WORK/stage
    unshare -m sh -c "mount -t proc proc '$root/proc' && mount --rbind /dev '$root/dev' &&
        chroot '$root' env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
        sh -c 'apt-get update -qq && apt-get install -y -qq --no-install-recommends xvfb libglvnd0 libglx0 libegl1' \
        >'$WORK/apt.log' 2>&1" ||
        { tail -20 "$WORK/apt.log" >&2; die "installing xvfb and glvnd in the copy of the root failed"; }
    # monado-service links OpenCV's image codecs for two functions a simulated headset never calls; the real
    # library brings GDAL and every image format (170 libraries, 400 MB) with it. A stub that aborts if called
    # stands in (scripts/vr-gpu-bundle/stub-imgcodecs.c); Monado itself is unchanged.
    local codecs
    codecs=$(chroot "$root" readlink -f "/$MULTIARCH/libopencv_imgcodecs.so.410")
    gcc -shared -fPIC -O2 -Wl,-soname,libopencv_imgcodecs.so.410 -o "$root$codecs" \
        "$REPO/scripts/vr-gpu-bundle/stub-imgcodecs.c" || die "building the image-codec stub needs gcc"
    if chroot "$root" ldd /usr/bin/monado-service | grep -q "not found"; then
        die "monado-service misses a library with the stub in place: $(chroot "$root" ldd /usr/bin/monado-service | grep 'not found')"
    fi
    mkdir -p "$stage"
    # The merged-/usr links, as in the root.
    local d
    for d in bin sbin lib lib64; do
        [ -L "$root/$d" ] && cp -a "$root/$d" "$stage/$d"
    done
    # Where programs' ELF headers name the dynamic loader (/lib64/ld-linux-x86-64.so.2): a link there.
    mkdir -p "$stage/usr"
    cp -a "$root/usr/lib64" "$stage/usr/lib64"
    mkdir -p "$root/opt/tumble"
    cargo build --release -p tumble
    cargo build -p tumble
    strip -o "$root/opt/tumble/tumble" target/release/tumble
    strip -o "$root/opt/tumble/tumble-debug" target/debug/tumble
    local elves=(/usr/bin/monado-service /usr/bin/Xvfb /usr/bin/xkbcomp /usr/bin/vulkaninfo /usr/bin/dash
        /usr/bin/sleep /usr/bin/env /opt/tumble/tumble /opt/tumble/tumble-debug
        "/$MULTIARCH/libvulkan.so.1" "/$MULTIARCH/libopenxr_loader.so.1" "/$MULTIARCH/libVkLayer_khronos_validation.so")
    local runtime
    runtime=$(sed -n 's/.*"library_path": *"\([^"]*\)".*/\1/p' "$root/usr/share/openxr/1/openxr_monado.json")
    case "$runtime" in
        /*) elves+=("$runtime") ;;
        */*) elves+=("/usr/share/openxr/1/$runtime") ;;
        # A bare name: the loader opens it by the library search path.
        *) elves+=("/$MULTIARCH/$runtime") ;;
    esac
    [ -n "$lavapipe" ] && elves+=("/$MULTIARCH/libvulkan_lvp.so")
    # What a GPU vendor's driver libraries load beside libc (they come from the machine, these do not).
    local l
    for l in libGLdispatch.so.0 libGLX.so.0 libEGL.so.1 libdl.so.2 libpthread.so.0 librt.so.1 libutil.so.1 libresolv.so.2 libXext.so.6 libXrandr.so.2 \
        libX11-xcb.so.1 libxcb-dri3.so.0 libxcb-present.so.0 libxcb-sync.so.1 libxshmfence.so.1 \
        libwayland-client.so.0; do
        [ -e "$root/$MULTIARCH/$l" ] && elves+=("/$MULTIARCH/$l")
    done
    local e
    for e in "${elves[@]}"; do copy_with_libraries "$root" "$stage" "$e"; done
    ln -sfn dash "$stage/usr/bin/sh"
    # Data: the keyboard maps Xvfb compiles, the loaders' manifests, the OpenXR runtime manifest.
    for d in usr/share/X11/xkb usr/share/vulkan/explicit_layer.d usr/share/openxr etc/ld.so.conf etc/ld.so.conf.d \
        usr/lib/xorg; do
        [ -e "$root/$d" ] || continue
        mkdir -p "$stage/$(dirname "$d")"
        cp -a "$root/$d" "$stage/$d"
    done
    if [ -n "$lavapipe" ]; then
        mkdir -p "$stage/usr/share/vulkan/icd.d"
        cp -a "$root"/usr/share/vulkan/icd.d/lvp_icd.* "$stage/usr/share/vulkan/icd.d/"
    fi
    # Xvfb writes its keymap here; the run's mounts go here.
    mkdir -p "$stage/var/lib/xkb" "$stage/tmp" "$stage/proc" "$stage/dev" "$stage/sys"
    ldconfig -r "$stage" 2>/dev/null || true
    tar -C "$stage" -cf - . | xz -T0 -9e >"$out"
    echo "vr-gpu-bundle: $out ($(du -h "$out" | cut -f1); $(du -sh "$stage" | cut -f1) unpacked)" >&2
}

# The machine's Vulkan driver: NVIDIA's manifest wherever the machine keeps it, and the directory of the library it
# names (printed as "MANIFEST DIR"). The driver stays where it is: the bundle's programs run beside it.
find_driver() {
    local manifest="" m
    for m in /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json \
        /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/local/share/vulkan/icd.d/nvidia_icd.json; do
        [ -f "$m" ] && { manifest=$m; break; }
    done
    [ -n "$manifest" ] || manifest=$(find / -xdev -name 'nvidia_icd*.json' 2>/dev/null | head -1)
    [ -n "$manifest" ] || return 1
    local lib path=""
    lib=$(sed -n 's/.*"library_path": *"\([^"]*\)".*/\1/p' "$manifest")
    case "$lib" in
        /*) path=$lib ;;
        *)
            path=$(ldconfig -p | awk -v l="$lib" '$1 == l { print $NF; exit }')
            [ -n "$path" ] || path=$(find /usr/local/nvidia /usr/lib /usr/lib64 -name "$lib" 2>/dev/null | head -1)
            ;;
    esac
    [ -n "$path" ] && [ -e "$path" ] || return 1
    echo "$manifest $(dirname "$(readlink -f "$path")")"
}

run() {
    local bundle=$1 out=$2
    shift 2
    local rates=("$@")
    [ ${#rates[@]} -gt 0 ] || rates=(120 90 144)
    [ "$(id -u)" -eq 0 ] || die "run needs root (chroot, mounts)"
    mkdir -p "$out"
    out=$(cd "$out" && pwd)
    local b=/tmp/vr-gpu-bundle-root
    rm -rf "$b"
    mkdir -p "$b"
    # xz, or Python's lzma where the machine has no xz.
    if command -v xz >/dev/null; then
        xz -dc "$bundle" | tar -C "$b" -xf -
    else
        python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' "$bundle" |
            tar -C "$b" -xf -
    fi
    local driver icd driver_dir=""
    if driver=$(find_driver); then
        icd=${driver%% *}
        driver_dir=${driver#* }
        echo "vr-gpu-bundle: Vulkan driver from $icd (libraries in $driver_dir)" >&2
    elif [ -f "$b/usr/share/vulkan/icd.d/lvp_icd.json" ]; then
        echo "vr-gpu-bundle: no NVIDIA Vulkan driver here; lavapipe (software), from the bundle" >&2
        icd=$b/lvp_icd.json
        sed "s#\"library_path\": *\"[^\"]*\"#\"library_path\": \"$b/$MULTIARCH/libvulkan_lvp.so\"#" \
            "$b/usr/share/vulkan/icd.d/lvp_icd.json" >"$icd"
    else
        die "no Vulkan driver found (no nvidia_icd.json) and the bundle has no lavapipe"
    fi
    exec unshare --mount --propagation private -- "$0" __inside "$b" "$out" "$icd" "$driver_dir" "${rates[@]}"
}

# Xvfb runs inside the bundle (chroot: it runs xkbcomp and reads keymaps at fixed paths); Monado, vulkaninfo and
# tumble run beside the machine's own files, each through the bundle's dynamic loader and libraries plus the
# directory of the machine's GPU driver, so the driver loads from where the machine installed it. Clients reach the
# X server by its abstract socket, which a chroot does not hide.
#
# Seen on an H100 server (driver 580.159.04, no display): the null compositor runs (TUMBLE_VR_COMPOSITOR=null); the
# window compositor does not, as NVIDIA's Vulkan driver presents only to an X server with its own GLX, which Xvfb
# is not ("extension GLX missing", then monado-service crashes).
inside() {
    local b=$1 out=$2 icd=$3 driver_dir=$4
    shift 4
    mount -t proc proc "$b/proc"
    mount --rbind /dev "$b/dev"
    mount --rbind /sys "$b/sys"
    # Every directory of the bundle that holds libraries (some are found through an absolute RUNPATH, such as
    # PulseAudio's), then the driver's.
    local libs
    libs=$(find "$b/usr/lib" -name '*.so*' -printf '%h\n' | sort -u | paste -sd:)
    [ -z "$driver_dir" ] || libs=$libs:$driver_dir
    # TUMBLE_VR_LIB_FIRST: directories searched before the bundle's (another Vulkan loader, say).
    [ -z "${TUMBLE_VR_LIB_FIRST:-}" ] || libs=$TUMBLE_VR_LIB_FIRST:$libs
    local base=(PATH=/usr/bin:/bin HOME=/root LANG=C.UTF-8 "XDG_RUNTIME_DIR=$b/tmp/xr" "VK_DRIVER_FILES=$icd"
        "VK_ICD_FILENAMES=$icd" "VK_LAYER_PATH=$b/usr/share/vulkan/explicit_layer.d" "VK_LOADER_LAYERS_DISABLE=~implicit~"
        "XR_RUNTIME_JSON=$b/usr/share/openxr/1/openxr_monado.json")
    local loader=("$b/usr/lib64/ld-linux-x86-64.so.2" --library-path "$libs")
    mkdir -p -m 700 "$b/tmp/xr"
    chmod 1777 "$b/tmp"
    # TUMBLE_VR_COMPOSITOR=null: Monado's null compositor instead (no window, no X server; paced at 20 Hz).
    local compositor=(XRT_COMPOSITOR_FORCE_XCB=1) xvfb="" i
    if [ "${TUMBLE_VR_COMPOSITOR:-window}" = null ]; then
        compositor=(XRT_COMPOSITOR_NULL=1)
    else
        base+=(DISPLAY=:1)
        chroot "$b" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/root Xvfb :1 -screen 0 1920x1080x24 -nolisten tcp \
            >"$out/xvfb.log" 2>&1 &
        xvfb=$!
        for ((i = 0; i < 100; i++)); do [ -e "$b/tmp/.X11-unix/X1" ] && break; sleep 0.1; done
        [ -e "$b/tmp/.X11-unix/X1" ] || { tail "$out/xvfb.log" >&2; die "Xvfb did not start"; }
    fi
    env -i "${base[@]}" "${loader[@]}" "$b/usr/bin/vulkaninfo" --summary >"$out/vulkaninfo.txt" 2>&1 || true
    local hz build
    local runs=()
    for hz in "$@"; do runs+=("$hz:tumble"); done
    runs+=("$1:tumble-debug")
    for run in "${runs[@]}"; do
        hz=${run%%:*}
        build=${run#*:}
        local tag=$hz-$build
        rm -f "$b/tmp/xr/monado_comp_ipc"
        env -i "${base[@]}" "${compositor[@]}" "XRT_COMPOSITOR_DEFAULT_FRAMERATE=$hz" \
            SIMULATED_ENABLE=1 SIMULATED_LEFT=simple SIMULATED_RIGHT=simple XRT_NO_STDIN=1 \
            "${loader[@]}" "$b/usr/bin/monado-service" >"$out/monado-$tag.log" 2>&1 &
        local monado=$!
        for ((i = 0; i < 200; i++)); do
            [ -S "$b/tmp/xr/monado_comp_ipc" ] && break
            kill -0 "$monado" 2>/dev/null || break
            sleep 0.1
        done
        if [ -S "$b/tmp/xr/monado_comp_ipc" ]; then
            (cd "$REPO" && env -i "${base[@]}" "${loader[@]}" "$b/opt/tumble/$build" vr \
                --scene assets/scenes/smash.toml --frames "$FRAMES" --max-seconds "$MAX_SECONDS" \
                --record "$out/record-$tag.jsonl" --json >"$out/report-$tag.json" 2>"$out/tumble-$tag.log") ||
                echo "vr-gpu-bundle: tumble ($tag) exited with $?" >&2
            echo "vr-gpu-bundle: $tag: $(head -c 2000 "$out/report-$tag.json")" >&2
        else
            echo "vr-gpu-bundle: monado-service ($tag) did not open its socket:" >&2
            tail -20 "$out/monado-$tag.log" >&2
        fi
        kill "$monado" 2>/dev/null || true
        wait "$monado" 2>/dev/null || true
    done
    if [ -n "$xvfb" ]; then
        kill "$xvfb" 2>/dev/null || true
        wait "$xvfb" 2>/dev/null || true
    fi
}

case "${1:-}" in
    pack)
        shift
        [ $# -ge 1 ] || die "pack OUT.tar.xz [--with-lavapipe]"
        pack "$1" "${2:+lavapipe}"
        ;;
    run)
        shift
        [ $# -ge 2 ] || die "run BUNDLE.tar.xz OUTDIR [HZ ...]"
        run "$@"
        ;;
    __inside)
        shift
        inside "$@"
        ;;
    *)
        sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
        exit 2
        ;;
esac
