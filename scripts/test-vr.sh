#!/usr/bin/env bash
# The VR path against a real OpenXR runtime with no headset: builds `tumble`, runs
# `tumble vr --frames N --scripted-grab --json` beside Monado's simulated headset in the Debian trixie root
# (scripts/vr-root.sh), and checks the report: at least N stereo frames submitted while FOCUSED with both hands
# tracked, and grabs, a hand-to-hand pass and releases through game::interaction with a haptic pulse per grab
# (Monado's simulated simple controllers cannot squeeze, so the grip is scripted on their tracked poses; see
# game/src/vr/scripted.rs). The scene is drawn by engine::render on the runtime's Vulkan device, on the default
# path (both eyes in one multiview pass), with its depth submitted as a depth layer every frame, under the Vulkan
# validation layers. Needs root (CI runs as root).
# Usage: scripts/test-vr.sh [FRAMES]
set -euo pipefail

FRAMES=${1:-300}
# Monado's null compositor paces at about 20 Hz: 300 frames take 15 s; this bounds a stuck run.
MAX_SECONDS=120

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
"$REPO/scripts/ensure-system-packages.sh" debootstrap jq

# Built here on Debian 12 (glibc 2.36); it runs unchanged in the trixie root (glibc 2.41), which sees this
# repository at /tumble.
cargo build -p tumble
mkdir -p target/vr
report=target/vr/report.json
scripts/vr-root.sh run -- target/debug/tumble vr --frames "$FRAMES" --max-seconds "$MAX_SECONDS" \
    --scripted-grab --json >"$report"
echo "test-vr: $(cat "$report")" >&2

fail=0
check() {
    local what=$1 expr=$2
    if jq -e "$expr" "$report" >/dev/null; then
        echo "test-vr: ok   $what" >&2
    else
        echo "test-vr: FAIL $what ($(jq -c "$3" "$report"))" >&2
        fail=1
    fi
}
check "session reached FOCUSED" '.max_session_state == "FOCUSED"' '.max_session_state'
check "stereo frames (2 views)" '.views == 2' '.views'
check ">= $FRAMES frames submitted" ".frames_submitted >= $FRAMES" '.frames_submitted'
check ">= $FRAMES frames focused with both hands tracked" ".frames_focused_hands_tracked >= $FRAMES" \
    '.frames_focused_hands_tracked'
check "left hand tracked" '.left_hand_tracked == true' '.left_hand_tracked_frames'
check "right hand tracked" '.right_hand_tracked == true' '.right_hand_tracked_frames'
check "the session ended cleanly (EXITING)" '.final_session_state == "EXITING"' '.final_session_state'
check "physics stepped" '.physics_steps > 0' '.physics_steps'
check "grabs through game::interaction" '.grabs >= 2' '.grabs'
check "a hand-to-hand pass" '.passes >= 1' '.passes'
check "releases" '.releases >= 1' '.releases'
check "a haptic pulse per grab" '.haptic_pulses == .grabs' '[.haptic_pulses, .grabs]'
check "no heap allocation in steady frames (counter live)" \
    '.steady_frames >= 200 and .steady_frame_allocations == 0 and .allocations_total > 0' \
    '[.steady_frames, .steady_frame_allocations, .allocations_total]'
check "drawn by engine::render" '.renderer | startswith("engine::render")' '.renderer'
check "the default path: both eyes in one multiview pass" '.render_path == "multiview"' \
    '[.render_path, .render_path_reason]'
check "a depth layer (the renderer's depth) with every frame submitted" \
    '.depth_layer == true and .depth_layers_submitted == .frames_submitted' \
    '[.depth_layer, .depth_layers_submitted, .frames_submitted]'
check "not timed out" '.timed_out == false' '.timed_out'
check "under the Vulkan validation layers" '.validation_layers == true' '.validation_layers'
check "no validation messages" '.validation_messages == 0' '.validation_messages'
check "frame times and missed frames reported" \
    '(.cpu_frame_ms_p50 | type) == "number" and .cpu_frame_ms_p99 >= .cpu_frame_ms_p50 and (.frames_missed | type) == "number"' \
    '[.cpu_frame_ms_p50, .cpu_frame_ms_p99, .gpu_frame_ms_p50, .frames_missed]'

# The runtime going away mid-game (monado-service killed and started again): tumble vr makes a new session and
# plays on in the same world.
loss=target/vr/session-loss.json
scripts/vr-root.sh run -- scripts/vr-session-loss.sh target/debug/tumble "$loss" 20 2>target/vr/session-loss.log
echo "test-vr: $(jq -c '{sessions_lost, sessions_recreated, frames_submitted, final_session_state}' "$loss")" >&2
report=$loss
check "a lost session is made again and played to the end" \
    '.sessions_lost == 1 and .sessions_recreated == 1 and .final_session_state == "EXITING" and .validation_messages == 0' \
    '[.sessions_lost, .sessions_recreated, .final_session_state, .validation_messages]'

if [ "$fail" -ne 0 ]; then
    echo "test-vr: FAILED; Monado's log: target/vr/monado-service.log" >&2
    exit 1
fi
echo "test-vr: passed" >&2
