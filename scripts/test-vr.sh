#!/usr/bin/env bash
# The VR path against a real OpenXR runtime with no headset: builds `tumble`, runs
# `tumble vr --frames N --scripted-grab --json` beside Monado's simulated headset in the Debian trixie root
# (scripts/vr-root.sh), and checks the report: at least N stereo frames submitted while FOCUSED with both hands
# tracked, and grabs, a hand-to-hand pass and releases through game::interaction with a haptic pulse per grab
# (Monado's simulated simple controllers cannot squeeze, so the grip is scripted on their tracked poses; see
# game/product/src/vr/scripted.rs). The scene is drawn by engine::render on the runtime's Vulkan device, on the default
# path (both eyes in one multiview pass), with its depth submitted as a depth layer every frame, under the Vulkan
# validation layers. Then the runtime going away mid-game (a new session is made), and the headset's loop at
# 120 Hz asked of Monado's main compositor in an Xvfb window (every frame recorded and checked for moving cubes
# drawn twice in one place, at whatever rate the machine reaches), and the mirror window showing the left eye.
# Nothing here compares a time, a rate or a count of missed frames with a line: those are reported (and
# `make test-vr-realtime` says whether the machine holds 120 Hz). Needs root (CI runs as root).
# Usage: scripts/test-vr.sh [FRAMES]
set -euo pipefail

FRAMES=${1:-300}
# A hang guard, not a speed check: Monado's null compositor paces at about 20 Hz (300 frames take 15 s); a slow
# machine takes longer, and only a stuck run takes this long.
MAX_SECONDS=600

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
"$REPO/scripts/ensure-system-packages.sh" debootstrap jq xvfb

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
check "GPU time per pass reported: shadow, main with its resolve" \
    '[.gpu_frame_ms_p50, .gpu_shadow_ms_p50, .gpu_main_ms_p50] | all(type == "number")' \
    '[.gpu_frame_ms_p50, .gpu_shadow_ms_p50, .gpu_main_ms_p50]'
check "resolved straight into the swapchain images: no copy pass (nothing after the main pass)" \
    '.swapchain_output == "resolve" and .gpu_output_ms_p50 == null and .gpu_output_ms_p99 == null' \
    '[.swapchain_output, .gpu_output_ms_p50]'

# A networked game in the headset: `tumble vr --host` with a bot guest on its own UDP socket. The game steps on its
# own thread (issue 30): the headset's frames hand it the hands and draw what its steps left, and the scripted
# grips still grab through it, with nothing allocated per frame on the frame loop's thread.
report=target/vr/report-host.json
scripts/vr-root.sh run -- target/debug/tumble vr --host --no-port-mapping --port 0 --bots 1 --frames 200 --max-seconds "$MAX_SECONDS" \
    --scripted-grab --json >"$report" 2>target/vr/vr-host.log
echo "test-vr: host: $(jq -c '{frames_submitted, physics_steps, grabs, steady_frames, steady_frame_allocations,
    repeated_cube_poses, validation_messages}' "$report")" >&2
check "a networked game in the headset: frames, its own steps, grabs through it, nothing allocated per frame" \
    '.frames_submitted >= 200 and .physics_steps > 0 and .grabs >= 2 and .steady_frames >= 100
    and .steady_frame_allocations == 0 and .repeated_cube_poses == 0 and .validation_messages == 0' \
    '[.frames_submitted, .physics_steps, .grabs, .steady_frames, .steady_frame_allocations, .repeated_cube_poses,
    .validation_messages]'

# The runtime going away mid-game (monado-service killed and started again): tumble vr makes a new session and
# plays on in the same world.
loss=target/vr/session-loss.json
scripts/vr-root.sh run -- scripts/vr-session-loss.sh target/debug/tumble "$loss" 20 2>target/vr/session-loss.log
echo "test-vr: $(jq -c '{sessions_lost, sessions_recreated, frames_submitted, final_session_state}' "$loss")" >&2
report=$loss
check "a lost session is made again and played to the end" \
    '.sessions_lost == 1 and .sessions_recreated == 1 and .final_session_state == "EXITING" and .validation_messages == 0' \
    '[.sessions_lost, .sessions_recreated, .final_session_state, .validation_messages]'

# The headset's loop at 120 Hz asked of a real runtime (Monado's main compositor in an Xvfb window; see
# scripts/vr-window-run.sh), at whatever rate this machine reaches: a slow machine's pacer stretches the period to a
# multiple of 8.33 ms, which is reported, never failed (`make test-vr-realtime` reports whether the machine holds
# 120 Hz). What must hold at any rate is checked: every frame recorded, and no cube moving in two consecutive
# frames drawn at the same place in both — by tumble's own count and by the record re-read on its own. The same
# guarantee at exactly 120 Hz on a scripted clock is `tumble vr-pacing`'s test in `cargo test`.
scripts/vr-window-run.sh target/debug/tumble 120 600 target/vr
report=target/vr/report-120hz.json
echo "test-vr: 120 Hz asked: $(jq -c '{refresh_rate_hz, display_period_ms, frames_submitted, frames_missed,
    frames_with_moving_cubes, frames_in_the_same_step, repeated_cube_poses, frames_recorded, validation_messages}' \
    "$report")" >&2
check "120 Hz asked: >= 600 frames, every one recorded" \
    '.frames_submitted >= 600 and .frames_recorded == .frames_submitted' '[.frames_submitted, .frames_recorded]'
# Without moving cubes the next check would say nothing: the smash scene's thrown cube and falling tower move
# for seconds of simulation, so well over ten frames at any rate a machine can draw at all.
check "120 Hz asked: cubes moving while frames were drawn" '.frames_with_moving_cubes >= 10' \
    '.frames_with_moving_cubes'
check "120 Hz asked: no moving cube drawn twice in one place" '.repeated_cube_poses == 0' '.repeated_cube_poses'
check "120 Hz asked: no validation messages" '.validation_layers == true and .validation_messages == 0' \
    '[.validation_layers, .validation_messages]'
report=target/vr/realtime-120hz.json
check "120 Hz asked, the record on its own: a line per frame, no moving cube repeated" \
    ".record_lines == $(jq .frames_recorded target/vr/report-120hz.json) and .repeated_in_record == 0" \
    '[.record_lines, .repeated_in_record]'

# The mirror window: the left eye in a desktop window on an X server, beside the headset's frames (at the
# runtime's default 90 Hz here). How many frames reach the window depends on the machine (a frame with no window
# image free shows nothing new, so the headset is never held back): at least one must, with validation clean and
# nothing allocated per frame once the window's swapchain has settled.
# shellcheck source=scripts/xvfb.sh
. "$REPO/scripts/xvfb.sh"
start_xvfb target/vr/xvfb-mirror.log
report=target/vr/report-mirror.json
TUMBLE_VR_COMPOSITOR=window TUMBLE_VR_HZ=90 XRT_COMPOSITOR_SCALE_PERCENTAGE=20 \
    scripts/vr-root.sh run -- target/debug/tumble vr --scene assets/scenes/smash.toml --frames 300 \
    --max-seconds "$MAX_SECONDS" --json >"$report" 2>target/vr/vr-mirror.log
kill "$XVFB_PID" 2>/dev/null || true
echo "test-vr: mirror: $(jq -c '{mirror_window, mirror_frames_presented, frames_submitted, validation_messages,
    steady_frames, steady_frame_allocations, mirror_swapchain_builds}' "$report")" >&2
check "the left eye mirrored in a desktop window, validation clean, nothing allocated per frame" \
    '.mirror_window == true and .mirror_frames_presented >= 1 and .validation_messages == 0
    and .steady_frames >= 200 and .steady_frame_allocations == 0' \
    '[.mirror_window, .mirror_frames_presented, .validation_messages, .steady_frames, .steady_frame_allocations]'
check "the mirror blits out of the swapchain image the frame resolved into (its GPU time is the output part)" \
    '.swapchain_output == "resolve" and (.gpu_output_ms_p50 | type) == "number"' \
    '[.swapchain_output, .gpu_output_ms_p50]'

if [ "$fail" -ne 0 ]; then
    echo "test-vr: FAILED; Monado's log: target/vr/monado-service.log" >&2
    exit 1
fi
echo "test-vr: passed" >&2
