#!/usr/bin/env bash
# The headset's loop on a real runtime at a chosen display rate: Monado's main compositor (not the null one, which
# paces at 20 Hz whatever it is asked) paced at HZ, drawing into an Xvfb window, eye images at 20 % of the simulated
# headset's size. Runs `TUMBLE vr --scene smash --frames FRAMES --no-mirror --record OUT/record-<HZ>hz.jsonl --json`
# (a tower hit by a thrown cube, so cubes move), writes the report to OUT/report-<HZ>hz.json and a summary of what
# the run reached in real time — the runtime's display period, frames on its grid, missed frames, frames sharing a
# physics step — to OUT/realtime-<HZ>hz.json, with a verdict line on stderr ("machine too slow for 120 Hz: period
# 25 ms" when the pacer stretched the period). Nothing here fails on speed: the caller decides what to assert.
# Usage: scripts/vr-window-run.sh TUMBLE HZ FRAMES OUT   (root, as scripts/vr-root.sh needs)
set -euo pipefail

TUMBLE=$1
HZ=$2
FRAMES=$3
OUT=$4
# A hang guard only (a slow machine draws at whatever rate it can; 600 frames at 5 Hz take 2 minutes).
MAX_SECONDS=${TUMBLE_VR_MAX_SECONDS:-600}

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
mkdir -p "$OUT"

# shellcheck source=scripts/xvfb.sh
. "$REPO/scripts/xvfb.sh"
start_xvfb "$OUT/xvfb-${HZ}hz.log"

record=$OUT/record-${HZ}hz.jsonl
report=$OUT/report-${HZ}hz.json
status=0
TUMBLE_VR_COMPOSITOR=window TUMBLE_VR_HZ=$HZ XRT_COMPOSITOR_SCALE_PERCENTAGE=20 \
    scripts/vr-root.sh run -- "$TUMBLE" vr --scene assets/scenes/smash.toml --frames "$FRAMES" \
    --max-seconds "$MAX_SECONDS" --no-mirror --record "$record" --json >"$report" 2>"$OUT/vr-${HZ}hz.log" || status=$?
if [ "$status" -ne 0 ] || [ ! -s "$report" ]; then
    echo "vr-window-run: tumble vr at $HZ Hz failed (exit $status); its log: $OUT/vr-${HZ}hz.log" >&2
    exit 1
fi

# What the runtime gave in real time, from the report and from the record read on its own: frames at the asked
# period, display times off the period's grid after the first 30 frames (the pacer finding the app's timing),
# frames that drew the same moving cube where the frame before drew it.
period_ns=$(awk "BEGIN { printf \"%d\", 1e9 / $HZ }")
realtime=$OUT/realtime-${HZ}hz.json
jq -s --argjson hz "$HZ" --argjson period "$period_ns" --slurpfile r "$report" '
    ($r[0]) as $rep |
    {asked_hz: $hz,
     refresh_rate_hz: $rep.refresh_rate_hz,
     display_period_ms: $rep.display_period_ms,
     frames_submitted: $rep.frames_submitted,
     frames_missed: $rep.frames_missed,
     frames_in_the_same_step: $rep.frames_in_the_same_step,
     frames_with_moving_cubes: $rep.frames_with_moving_cubes,
     cpu_frame_ms_p50: $rep.cpu_frame_ms_p50,
     record_lines: length,
     at_display_period: [.[] | select(.period_ns > $period * 0.98 and .period_ns < $period * 1.02)] | length,
     off_grid: [range(30; length) as $i | (.[$i].display_ns - .[$i - 1].display_ns) as $d
         | ($d / $period | round) as $k | select($k < 1 or (($d - $k * $period) | fabs) > 200000)] | length,
     repeated_in_record: [range(1; length) as $i | .[$i - 1] as $a | .[$i] as $b
         | ($a.moving | map({key: (.[0] | tostring), value: .[1:]}) | from_entries) as $before
         | $b.moving[] | select($before[.[0] | tostring] == .[1:])] | length}
    | .held_rate = (.display_period_ms != null and (.display_period_ms * 1e6 - $period | fabs) < $period * 0.02
         and .at_display_period * 2 >= .record_lines)' "$record" >"$realtime"
if jq -e .held_rate "$realtime" >/dev/null; then
    verdict="the runtime held $HZ Hz: period $(jq -r '.display_period_ms * 100 | round / 100' "$realtime") ms, $(jq -r '"\(.at_display_period) of \(.record_lines)"' "$realtime") frames at it"
else
    verdict="machine too slow for $HZ Hz: period $(jq -r '.display_period_ms * 100 | round / 100' "$realtime") ms ($(jq -r '"\(.at_display_period) of \(.record_lines)"' "$realtime") frames at $(awk "BEGIN { printf \"%.2f\", 1000 / $HZ }") ms, CPU $(jq -r '.cpu_frame_ms_p50 * 10 | round / 10' "$realtime") ms a frame)"
fi
jq --arg v "$verdict" '.verdict = $v' "$realtime" >"$realtime.tmp" && mv "$realtime.tmp" "$realtime"
echo "vr-window-run: $verdict" >&2
echo "vr-window-run: $(jq -c 'del(.verdict)' "$realtime")" >&2
