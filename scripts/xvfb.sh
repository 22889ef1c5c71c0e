# Sourced by the VR scripts: start_xvfb LOG starts an Xvfb on the first free display of :90..:99, sets DISPLAY to it,
# waits for its socket and stops it when the calling script exits.
start_xvfb() {
    local log=$1 n
    DISPLAY=
    for n in $(seq 90 99); do
        if [ ! -e "/tmp/.X$n-lock" ] && [ ! -e "/tmp/.X11-unix/X$n" ]; then DISPLAY=:$n; break; fi
    done
    [ -n "$DISPLAY" ] || { echo "no free X display number in :90..:99" >&2; return 1; }
    Xvfb "$DISPLAY" -screen 0 1280x720x24 -nolisten tcp >"$log" 2>&1 &
    XVFB_PID=$!
    trap 'kill "$XVFB_PID" 2>/dev/null || true' EXIT
    for _ in $(seq 50); do [ -e "/tmp/.X11-unix/X${DISPLAY#:}" ] && break; sleep 0.1; done
    export DISPLAY
}
