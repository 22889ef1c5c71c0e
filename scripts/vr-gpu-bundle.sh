#!/usr/bin/env bash
# `tumble vr` against Monado on a machine with a GPU but no display and no package registry (a rented GPU server):
# a bundle holding just what that needs, taken from the VR test bed's Debian trixie root (scripts/vr-root.sh), and
# the run there. Monado's main compositor (paced at the rate asked) draws into an Xvfb window; the session's Vulkan
# device is the machine's own driver (NVIDIA's, found at run time), so frames are timed on real hardware.
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
#         (validation layers on); reports, records and logs go to OUTDIR.
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
        ln -sfn "$real" "$stage$asked"
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
    # Xvfb is not in the test bed; a copy of the root gets it (the test bed itself stays as vr-root.sh made it).
    WORK=$(mktemp -d /tmp/vr-gpu-bundle.XXXXXX)
    trap 'rm -rf --one-file-system "$WORK"' EXIT
    cp -a "$ROOT" "$WORK/root"
    local root=$WORK/root stage=$WORK/stage
    unshare -m sh -c "mount -t proc proc '$root/proc' && mount --rbind /dev '$root/dev' &&
        chroot '$root' env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
        sh -c 'apt-get update -qq && apt-get install -y -qq --no-install-recommends xvfb' >'$WORK/apt.log' 2>&1" ||
        { tail -20 "$WORK/apt.log" >&2; die "installing xvfb in the copy of the root failed"; }
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
    mkdir -p "$stage/var/lib/xkb" "$stage/tmp" "$stage/proc" "$stage/dev" "$stage/sys" "$stage/tumble" "$stage/nv"
    ldconfig -r "$stage" 2>/dev/null || true
    tar -C "$stage" -cf - . | xz -T0 -9e >"$out"
    echo "vr-gpu-bundle: $out ($(du -h "$out" | cut -f1); $(du -sh "$stage" | cut -f1) unpacked)" >&2
}

# The machine's Vulkan driver, copied into the bundle's /nv with a manifest naming it there: NVIDIA's, from its
# manifest wherever the machine keeps it.
bring_driver() {
    local b=$1 manifest="" m
    for m in /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json \
        /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/local/share/vulkan/icd.d/nvidia_icd.json; do
        [ -f "$m" ] && { manifest=$m; break; }
    done
    [ -n "$manifest" ] || manifest=$(find / -xdev -name 'nvidia_icd*.json' 2>/dev/null | head -1)
    [ -n "$manifest" ] || return 1
    local lib
    lib=$(sed -n 's/.*"library_path": *"\([^"]*\)".*/\1/p' "$manifest")
    local path=""
    case "$lib" in
        /*) path=$lib ;;
        *)
            path=$(ldconfig -p | awk -v l="$lib" '$1 == l { print $NF; exit }')
            [ -n "$path" ] || path=$(find /usr/local/nvidia /usr/lib /usr/lib64 -name "$lib" 2>/dev/null | head -1)
            ;;
    esac
    [ -n "$path" ] && [ -e "$path" ] || return 1
    local dir
    dir=$(dirname "$(readlink -f "$path")")
    echo "vr-gpu-bundle: Vulkan driver $path (manifest $manifest)" >&2
    cp -aL "$dir"/libGLX_nvidia.so* "$dir"/libnvidia-*.so* "$b/nv/" 2>/dev/null || true
    cp -aL "$path" "$b/nv/$(basename "$path")"
    sed "s#\"library_path\": *\"[^\"]*\"#\"library_path\": \"/nv/$(basename "$path")\"#" "$manifest" >"$b/nv/icd.json"
    [ -f /usr/share/nvidia/nvidia-application-profiles-rc ] && mkdir -p "$b/usr/share/nvidia" &&
        cp /usr/share/nvidia/nvidia-application-profiles-rc "$b/usr/share/nvidia/"
    return 0
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
    local icd
    if bring_driver "$b"; then
        icd=/nv/icd.json
    elif icd=$(cd "$b" && ls usr/share/vulkan/icd.d/lvp_icd*.json 2>/dev/null | head -1) && [ -n "$icd" ]; then
        echo "vr-gpu-bundle: no NVIDIA Vulkan driver here; lavapipe (software)" >&2
        icd=/$icd
    else
        die "no Vulkan driver found (no nvidia_icd.json) and the bundle has no lavapipe"
    fi
    exec unshare --mount --propagation private -- "$0" __inside "$b" "$out" "$icd" "${rates[@]}"
}

inside() {
    local b=$1 out=$2 icd=$3
    shift 3
    mount -t proc proc "$b/proc"
    mount --rbind /dev "$b/dev"
    mount --rbind /sys "$b/sys"
    mount -t tmpfs -o mode=1777 tmpfs "$b/tmp"
    mount --bind "$REPO" "$b/tumble"
    mkdir -p "$b/out"
    mount --bind "$out" "$b/out"
    local base=(PATH=/usr/bin:/bin HOME=/root LANG=C.UTF-8 XDG_RUNTIME_DIR=/tmp/xr LD_LIBRARY_PATH=/nv
        "VK_DRIVER_FILES=$icd" "VK_ICD_FILENAMES=$icd" XR_RUNTIME_JSON=/usr/share/openxr/1/openxr_monado.json
        DISPLAY=:1)
    mkdir -p -m 700 "$b/tmp/xr"
    chroot "$b" env -i "${base[@]}" vulkaninfo --summary >"$out/vulkaninfo.txt" 2>&1 || true
    chroot "$b" env -i "${base[@]}" Xvfb :1 -screen 0 1920x1080x24 -nolisten tcp >"$out/xvfb.log" 2>&1 &
    local xvfb=$! i
    for ((i = 0; i < 100; i++)); do [ -e "$b/tmp/.X11-unix/X1" ] && break; sleep 0.1; done
    [ -e "$b/tmp/.X11-unix/X1" ] || { tail "$out/xvfb.log" >&2; die "Xvfb did not start"; }
    local hz build
    local runs=()
    for hz in "$@"; do runs+=("$hz:tumble"); done
    runs+=("$1:tumble-debug")
    for run in "${runs[@]}"; do
        hz=${run%%:*}
        build=${run#*:}
        local tag=$hz-$build
        rm -f "$b/tmp/xr/monado_comp_ipc"
        chroot "$b" env -i "${base[@]}" XRT_COMPOSITOR_FORCE_XCB=1 "XRT_COMPOSITOR_DEFAULT_FRAMERATE=$hz" \
            SIMULATED_ENABLE=1 SIMULATED_LEFT=simple SIMULATED_RIGHT=simple XRT_NO_STDIN=1 \
            monado-service >"$out/monado-$tag.log" 2>&1 &
        local monado=$!
        for ((i = 0; i < 200; i++)); do
            [ -S "$b/tmp/xr/monado_comp_ipc" ] && break
            kill -0 "$monado" 2>/dev/null || break
            sleep 0.1
        done
        if [ -S "$b/tmp/xr/monado_comp_ipc" ]; then
            chroot "$b" env -i "${base[@]}" sh -c 'cd /tumble && exec "$@"' sh "/opt/tumble/$build" vr \
                --scene assets/scenes/smash.toml --frames "$FRAMES" --max-seconds "$MAX_SECONDS" \
                --record "/out/record-$tag.jsonl" --json >"$out/report-$tag.json" 2>"$out/tumble-$tag.log" ||
                echo "vr-gpu-bundle: tumble ($tag) exited with $?" >&2
            echo "vr-gpu-bundle: $tag: $(head -c 2000 "$out/report-$tag.json")" >&2
        else
            echo "vr-gpu-bundle: monado-service ($tag) did not open its socket:" >&2
            tail -20 "$out/monado-$tag.log" >&2
        fi
        kill "$monado" 2>/dev/null || true
        wait "$monado" 2>/dev/null || true
    done
    kill "$xvfb" 2>/dev/null || true
    wait "$xvfb" 2>/dev/null || true
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
