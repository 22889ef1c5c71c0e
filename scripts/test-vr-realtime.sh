#!/usr/bin/env bash
# Whether this machine holds a headset's rate on a real runtime: the release build's VR loop at HZ (default 120)
# against Monado's main compositor in an Xvfb window (scripts/vr-window-run.sh), 600 frames of the smash scene.
# Prints one JSON object on stdout (display period, frames at it, missed frames, frames sharing a physics step,
# CPU per frame, and a verdict such as "machine too slow for 120 Hz: period 25 ms"). A report, not a test: it exits
# 0 whatever the rate, non-zero only when the run itself failed. Needs root, as `make test-vr` does.
# Usage: scripts/test-vr-realtime.sh [HZ]
set -euo pipefail

HZ=${1:-120}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
"$REPO/scripts/ensure-system-packages.sh" debootstrap jq xvfb
cargo build --release -p tumble
scripts/vr-window-run.sh target/release/tumble "$HZ" 600 target/vr-realtime
cat "target/vr-realtime/realtime-${HZ}hz.json"
