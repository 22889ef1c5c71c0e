#!/bin/sh
# Runs inside the VR test bed's root (scripts/vr-root.sh run -- scripts/vr-session-loss.sh TUMBLE REPORT), beside the
# monado-service that vr-root.sh started: starts `tumble vr` for SECONDS, kills the service a few seconds in (the
# runtime going away, as when a headset is unplugged or the runtime restarts), starts a new one two seconds later,
# and waits for tumble, which must make a new session on it and play on. Its JSON report goes to REPORT.
set -eu
TUMBLE=$1
REPORT=$2
SECONDS_TOTAL=${3:-20}
KILL_AT_S=5
RESTART_AFTER_S=2

service_pids() {
    for p in /proc/[0-9]*; do
        if grep -q monado-service "$p/cmdline" 2>/dev/null; then echo "${p#/proc/}"; fi
    done
}

"$TUMBLE" vr --max-seconds "$SECONDS_TOTAL" --scripted-grab --json >"$REPORT" &
tumble=$!
sleep "$KILL_AT_S"
for p in $(service_pids); do kill "$p"; done
sleep "$RESTART_AFTER_S"
# The environment vr-root.sh gave this command is the service's own (null compositor, simulated headset).
monado-service >"$(dirname "$REPORT")/monado-service-restarted.log" 2>&1 &
service=$!
status=0
wait "$tumble" || status=$?
kill "$service" 2>/dev/null || true
wait "$service" 2>/dev/null || true
exit "$status"
