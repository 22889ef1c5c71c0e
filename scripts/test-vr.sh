#!/usr/bin/env bash
# The VR path against a real OpenXR runtime with no headset: builds `tumble`, runs
# `tumble vr --frames N --scripted-grab --json` beside Monado's simulated headset in the Debian trixie root
# (scripts/vr-root.sh), and checks the report: at least N stereo frames submitted while FOCUSED with both hands
# tracked, and grabs, a hand-to-hand pass and releases through game::interaction with a haptic pulse per grab
# (Monado's simulated simple controllers cannot squeeze, so the grip is scripted on their tracked poses; see
# game/src/vr/scripted.rs). The scene is drawn by engine::render on the runtime's Vulkan device, on the default
# path (both eyes in one multiview pass), with its depth submitted as a depth layer every frame, under the Vulkan
# validation layers. Then the runtime going away mid-game (a new session is made), and the headset's loop at
# 120 Hz against 90 Hz physics on Monado's main compositor in an Xvfb window (every frame recorded and checked for
# moving cubes drawn twice in one place, and the mirror window showing the left eye). Needs root (CI runs as root).
# Usage: scripts/test-vr.sh [FRAMES]
set -euo pipefail

FRAMES=${1:-300}
# Monado's null compositor paces at about 20 Hz: 300 frames take 15 s; this bounds a stuck run.
MAX_SECONDS=120

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

# The runtime going away mid-game (monado-service killed and started again): tumble vr makes a new session and
# plays on in the same world.
loss=target/vr/session-loss.json
scripts/vr-root.sh run -- scripts/vr-session-loss.sh target/debug/tumble "$loss" 20 2>target/vr/session-loss.log
echo "test-vr: $(jq -c '{sessions_lost, sessions_recreated, frames_submitted, final_session_state}' "$loss")" >&2
report=$loss
check "a lost session is made again and played to the end" \
    '.sessions_lost == 1 and .sessions_recreated == 1 and .final_session_state == "EXITING" and .validation_messages == 0' \
    '[.sessions_lost, .sessions_recreated, .final_session_state, .validation_messages]'

# The headset's loop at 120 Hz against 90 Hz physics, on a real runtime: Monado's main compositor (not the null
# one, which paces at 20 Hz whatever it is asked) paced at 120 Hz, drawing into an Xvfb window. Eye images at 20 %
# of the simulated headset's size, so that lavapipe draws a frame inside the 8.3 ms period. The smash scene (a
# tower hit by a thrown cube) keeps cubes moving; every frame is recorded, and the record is checked here on its own
# as well as by tumble's count: no cube moving in two consecutive frames is drawn at the same place in both.
display=
for n in $(seq 90 99); do
    if [ ! -e "/tmp/.X$n-lock" ] && [ ! -e "/tmp/.X11-unix/X$n" ]; then display=:$n; break; fi
done
[ -n "$display" ] || { echo "test-vr: no free X display number in :90..:99" >&2; exit 1; }
Xvfb "$display" -screen 0 1280x720x24 -nolisten tcp >target/vr/xvfb.log 2>&1 &
xvfb=$!
trap 'kill "$xvfb" 2>/dev/null || true' EXIT
for _ in $(seq 50); do [ -e "/tmp/.X11-unix/X${display#:}" ] && break; sleep 0.1; done
record=target/vr/record-120hz.jsonl
report=target/vr/report-120hz.json
DISPLAY=$display TUMBLE_VR_COMPOSITOR=window TUMBLE_VR_HZ=120 XRT_COMPOSITOR_SCALE_PERCENTAGE=20 \
    scripts/vr-root.sh run -- target/debug/tumble vr --scene assets/scenes/smash.toml --frames 600 \
    --max-seconds "$MAX_SECONDS" --no-mirror --record "$record" --json >"$report" 2>target/vr/vr-120hz.log
echo "test-vr: 120 Hz: $(jq -c '{refresh_rate_hz, display_period_ms, frames_submitted, frames_missed,
    frames_with_moving_cubes, frames_in_the_same_step, repeated_cube_poses, frames_recorded, validation_messages}' \
    "$report")" >&2
check "120 Hz: the runtime runs at 120 Hz" \
    '.refresh_rate_hz > 119.5 and .refresh_rate_hz < 120.5 and .display_period_ms > 8.2 and .display_period_ms < 8.5' \
    '[.refresh_rate_hz, .display_period_ms]'
check "120 Hz: >= 600 frames, every one recorded" '.frames_submitted >= 600 and .frames_recorded == .frames_submitted' \
    '[.frames_submitted, .frames_recorded]'
check "120 Hz: cubes moving and frames sharing a step interval" \
    '.frames_with_moving_cubes >= 60 and .frames_in_the_same_step >= 20' \
    '[.frames_with_moving_cubes, .frames_in_the_same_step]'
check "120 Hz: no moving cube drawn twice in one place" '.repeated_cube_poses == 0' '.repeated_cube_poses'
check "120 Hz: no validation messages" '.validation_layers == true and .validation_messages == 0' \
    '[.validation_layers, .validation_messages]'
# The record on its own: a line per frame; at least half the frames at the 120 Hz period (Monado's pacer stretches the app's
# period to a multiple of it while the app runs late); after the first 30 frames (the pacer finding the app's
# timing at the start) display times 8.33 ms apart or a whole multiple; and the cubes drawn at the same place two
# frames running although moving in both.
recount=$(jq -s '{lines: length,
    at_display_period: [.[] | select(.period_ns > 8200000 and .period_ns < 8500000)] | length,
    off_grid: [range(30; length) as $i | (.[$i].display_ns - .[$i - 1].display_ns) as $d
        | ($d / 8333333.3 | round) as $k | select($k < 1 or (($d - $k * 8333333.3) | fabs) > 200000)] | length,
    repeated: [range(1; length) as $i | .[$i - 1] as $a | .[$i] as $b
        | ($a.moving | map({key: (.[0] | tostring), value: .[1:]}) | from_entries) as $before
        | $b.moving[] | select($before[.[0] | tostring] == .[1:])] | length}' "$record")
echo "test-vr: 120 Hz record: $(echo "$recount" | jq -c .)" >&2
report=target/vr/record-120hz-check.json
echo "$recount" >"$report"
check "120 Hz record: a line per frame, on the 120 Hz grid, no moving cube repeated" \
    ".lines == $(jq .frames_recorded target/vr/report-120hz.json) and .at_display_period * 2 >= .lines \
    and .off_grid == 0 and .repeated == 0" '.'

# The mirror window: the left eye in a desktop window on the same X server, beside the headset's frames (at the
# runtime's default 90 Hz here: on lavapipe the window's blits and presents cost the CPU the 120 Hz run needs).
report=target/vr/report-mirror.json
DISPLAY=$display TUMBLE_VR_COMPOSITOR=window TUMBLE_VR_HZ=90 XRT_COMPOSITOR_SCALE_PERCENTAGE=20 \
    scripts/vr-root.sh run -- target/debug/tumble vr --scene assets/scenes/smash.toml --frames 300 \
    --max-seconds "$MAX_SECONDS" --json >"$report" 2>target/vr/vr-mirror.log
kill "$xvfb" 2>/dev/null || true
echo "test-vr: mirror: $(jq -c '{mirror_window, mirror_frames_presented, frames_submitted, validation_messages,
    steady_frame_allocations}' "$report")" >&2
check "the left eye mirrored in a desktop window, validation clean, nothing allocated per frame" \
    '.mirror_window == true and .mirror_frames_presented >= 150 and .validation_messages == 0
    and .steady_frames >= 200 and .steady_frame_allocations == 0' \
    '[.mirror_window, .mirror_frames_presented, .validation_messages, .steady_frames, .steady_frame_allocations]'

if [ "$fail" -ne 0 ]; then
    echo "test-vr: FAILED; Monado's log: target/vr/monado-service.log" >&2
    exit 1
fi
echo "test-vr: passed" >&2
