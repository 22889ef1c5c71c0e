//! The numbers of one `tumble vr` run, and its JSON report.

use serde_json::json;
use tumble_engine::xr::{SessionState, HAND_COUNT};

/// Frame times kept for the report's percentiles: the last this many frames (a fixed ring: nothing allocated per
/// frame).
pub const FRAME_TIMES_KEPT: usize = 4096;

/// A fixed ring of the last [`FRAME_TIMES_KEPT`] frame times (ms), and their percentiles.
#[derive(Clone, Debug)]
pub struct FrameTimes {
    samples: Box<[f32; FRAME_TIMES_KEPT]>,
    count: usize,
}

impl Default for FrameTimes {
    fn default() -> Self {
        FrameTimes {
            samples: Box::new([0.0; FRAME_TIMES_KEPT]),
            count: 0,
        }
    }
}

impl FrameTimes {
    pub fn push(&mut self, ms: f32) {
        if ms.is_finite() {
            self.samples[self.count % FRAME_TIMES_KEPT] = ms;
            self.count += 1;
        }
    }

    /// The `q` quantile (0..=1) of the kept samples, nearest rank; `None` with no samples. (Sorts a copy: for the
    /// report at the end, not for every frame.)
    pub fn quantile(&self, q: f64) -> Option<f32> {
        let n = self.count.min(FRAME_TIMES_KEPT);
        if n == 0 {
            return None;
        }
        let mut sorted = self.samples[..n].to_vec();
        sorted.sort_by(f32::total_cmp);
        let rank = ((q.clamp(0.0, 1.0) * n as f64).ceil() as usize).clamp(1, n);
        Some(sorted[rank - 1])
    }
}

/// Counters of one run, for the JSON report.
#[derive(Clone, Debug, Default)]
pub struct VrReport {
    pub runtime: String,
    pub system: String,
    pub device: String,
    pub eye_width: u32,
    pub eye_height: u32,
    pub depth_layer: bool,
    pub play_space: &'static str,
    pub bound_profiles: usize,
    /// "engine::render" (the scene) or "clear" (`--clear-only`: a plain colour with a depth layer).
    pub renderer: &'static str,
    /// Submitted frames that carried a depth layer (`XR_KHR_composition_layer_depth`).
    pub frames_with_depth: u64,
    /// Frames that carried a projection layer (stereo: `views` each).
    pub frames_submitted: u64,
    /// Frames ended without a layer (the runtime said not to render, or views could not be located).
    pub frames_empty: u64,
    /// Views per submitted frame (2 for stereo), the most seen.
    pub views: u32,
    pub frames_focused: u64,
    /// Submitted while focused with both hands tracked: what `--frames` counts.
    pub frames_focused_hands_tracked: u64,
    pub hand_tracked_frames: [u64; HAND_COUNT],
    pub max_session_state: SessionState,
    pub final_session_state: SessionState,
    pub physics_steps: u64,
    /// `Grabbed` events from `game::interaction` (hand-to-hand passes included), and how many were passes.
    pub grabs: u64,
    pub passes: u64,
    pub releases: u64,
    pub haptic_pulses: u64,
    /// How the grip was driven (controllers, or the scripted grip of `--scripted-grab`).
    pub grab_driver: &'static str,
    pub cpu_frame_ms_total: f64,
    /// The runtime's predicted display period, last seen (ms).
    pub display_period_ms: f64,
    pub timed_out: bool,
    /// Focused frames after the warm-up (less any in which the mirror made a new swapchain: one-off work), and the
    /// heap allocations the frame loop's thread made in them (should be 0; counted by the binary's allocator, so 0
    /// also when it is not installed — see `alloc_count`).
    pub steady_frames: u64,
    pub steady_frame_allocations: u64,
    /// All allocations of the process's Rust code by the end (non-zero: proves the counter is live).
    pub allocations_total: u64,
    /// "multiview" (both eyes in one pass), "per-eye" (a pass each) or "clear".
    pub render_path: &'static str,
    /// Why the per-eye path was chosen ("asked (--pass-per-eye)"); none on the multiview path.
    pub render_path_reason: Option<String>,
    /// How frames reached the swapchain images: "resolve" (the main pass resolved into them, no copy) or "copy"
    /// (drawn into the renderer's own target and copied in); none without a renderer (`--clear-only`).
    pub swapchain_output: Option<&'static str>,
    /// Whether the Vulkan validation layers ran (a debug build with them installed), and the warnings and errors
    /// they reported by the end.
    pub validation_layers: bool,
    pub validation_messages: u64,
    /// Swapchain image waits that timed out before the image was ready (each waited on again).
    pub image_wait_timeouts: u64,
    /// CPU time of each frame's work (simulation and recording, from the runtime's wake-up to the submit), and the
    /// GPU time of the renderer's frames where the queue has timestamps (ms).
    pub cpu_frame_ms: FrameTimes,
    pub gpu_frame_ms: FrameTimes,
    /// The GPU time of each pass of those frames (ms): the shadow map, the main pass with its MSAA resolve (into
    /// the runtime's images when `swapchain_output` is "resolve"), and what follows it — the copies into the
    /// runtime's images ("copy") and the mirror window's blit — none (null) when nothing does (with
    /// `--pass-per-eye`, the first eye's renderer).
    pub gpu_shadow_ms: FrameTimes,
    pub gpu_main_ms: FrameTimes,
    pub gpu_output_ms: FrameTimes,
    /// Frames whose predicted display time came more than one and a half periods after the previous frame's: the
    /// runtime had to show an old frame (or reproject one) in between.
    pub frames_missed: u64,
    /// The display rate asked of the runtime (`XR_FB_display_refresh_rate`), when it offers a choice.
    pub refresh_rate_hz: Option<f32>,
    /// Frames drawn with orientation tracking only (the eyes held at their last tracked positions).
    pub frames_orientation_only: u64,
    /// Reference space changes (the player recentred): hand motion is forgotten across each.
    pub recentres: u64,
    /// How far the left thumbstick moved the player (m), and the right stick's snap turns.
    pub metres_walked: f64,
    pub snap_turns: u64,
    /// Frames in which a cube moved between the last two steps, and (frame, cube) pairs where such a cube was drawn
    /// exactly where the frame before drew it (`vr::pacing::RepeatCheck`): 0 when frames draw between steps.
    pub frames_with_moving_cubes: u64,
    pub repeated_cube_poses: u64,
    /// Frames whose display time fell in the same physics step interval as the frame before's (where drawing the
    /// last step's poses would repeat them; about one in four at 120 Hz).
    pub frames_in_the_same_step: u64,
    /// Frames written to `--record`'s file (0 without it).
    pub frames_recorded: u64,
    /// Whether the left eye was shown in a desktop mirror window, how many frames it showed, and how many
    /// swapchains it made for the window (one, plus one per resize; `null` in the JSON without a mirror).
    pub mirror_window: bool,
    pub mirror_frames_presented: u64,
    pub mirror_swapchain_builds: u64,
    /// Sessions the runtime lost (LOSS_PENDING, a lost instance) and new ones made after them.
    pub sessions_lost: u64,
    pub sessions_recreated: u64,
}

impl VrReport {
    pub fn mean_cpu_frame_ms(&self) -> f64 {
        let frames = self.frames_submitted + self.frames_empty;
        if frames == 0 {
            0.0
        } else {
            self.cpu_frame_ms_total / frames as f64
        }
    }

    pub fn to_json(&self) -> serde_json::Value {
        let mut report = self.counts_json();
        // Timing, in a second object (one `json!` of everything passes the macro's recursion limit).
        let timing = json!({
            "cpu_frame_ms_p50": self.cpu_frame_ms.quantile(0.5),
            "cpu_frame_ms_p99": self.cpu_frame_ms.quantile(0.99),
            "gpu_frame_ms_p50": self.gpu_frame_ms.quantile(0.5),
            "gpu_frame_ms_p99": self.gpu_frame_ms.quantile(0.99),
            "gpu_shadow_ms_p50": self.gpu_shadow_ms.quantile(0.5),
            "gpu_shadow_ms_p99": self.gpu_shadow_ms.quantile(0.99),
            "gpu_main_ms_p50": self.gpu_main_ms.quantile(0.5),
            "gpu_main_ms_p99": self.gpu_main_ms.quantile(0.99),
            "gpu_output_ms_p50": self.gpu_output_ms.quantile(0.5),
            "gpu_output_ms_p99": self.gpu_output_ms.quantile(0.99),
            "frames_missed": self.frames_missed,
            "refresh_rate_hz": self.refresh_rate_hz,
            "frames_orientation_only": self.frames_orientation_only,
            "recentres": self.recentres,
            "metres_walked": self.metres_walked,
            "snap_turns": self.snap_turns,
            "frames_with_moving_cubes": self.frames_with_moving_cubes,
            "repeated_cube_poses": self.repeated_cube_poses,
            "frames_in_the_same_step": self.frames_in_the_same_step,
            "frames_recorded": self.frames_recorded,
            "mirror_window": self.mirror_window,
            "mirror_frames_presented": self.mirror_frames_presented,
            "mirror_swapchain_builds": self.mirror_window.then_some(self.mirror_swapchain_builds),
            "sessions_lost": self.sessions_lost,
            "sessions_recreated": self.sessions_recreated,
        });
        if let (Some(all), serde_json::Value::Object(more)) = (report.as_object_mut(), timing) {
            all.extend(more);
        }
        report
    }

    fn counts_json(&self) -> serde_json::Value {
        json!({
            "frames_submitted": self.frames_submitted,
            "views": self.views,
            "max_session_state": self.max_session_state.name(),
            "left_hand_tracked": self.hand_tracked_frames[0] > 0,
            "right_hand_tracked": self.hand_tracked_frames[1] > 0,
            "grabs": self.grabs,
            "passes": self.passes,
            "releases": self.releases,
            "haptic_pulses": self.haptic_pulses,
            "grab_driver": self.grab_driver,
            "mean_cpu_frame_ms": self.mean_cpu_frame_ms(),
            "frames_empty": self.frames_empty,
            "frames_focused": self.frames_focused,
            "frames_focused_hands_tracked": self.frames_focused_hands_tracked,
            "left_hand_tracked_frames": self.hand_tracked_frames[0],
            "right_hand_tracked_frames": self.hand_tracked_frames[1],
            "final_session_state": self.final_session_state.name(),
            "physics_steps": self.physics_steps,
            "display_period_ms": self.display_period_ms,
            "runtime": self.runtime,
            "system": self.system,
            "vulkan_device": self.device,
            "eye_width": self.eye_width,
            "eye_height": self.eye_height,
            "depth_layer": self.depth_layer,
            "play_space": self.play_space,
            "bound_profiles": self.bound_profiles,
            "renderer": self.renderer,
            "frames_with_depth": self.frames_with_depth,
            "depth_layers_submitted": self.frames_with_depth,
            "render_path": self.render_path,
            "render_path_reason": self.render_path_reason,
            "swapchain_output": self.swapchain_output,
            "validation_layers": self.validation_layers,
            "validation_messages": self.validation_messages,
            "image_wait_timeouts": self.image_wait_timeouts,
            "timed_out": self.timed_out,
            "steady_frames": self.steady_frames,
            "steady_frame_allocations": self.steady_frame_allocations,
            "allocations_total": self.allocations_total,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_time_percentiles_use_the_last_frames_only() {
        let mut t = FrameTimes::default();
        assert_eq!(t.quantile(0.5), None);
        for i in 1..=100 {
            t.push(i as f32);
        }
        t.push(f32::NAN);
        assert_eq!(
            (t.quantile(0.5), t.quantile(0.99), t.quantile(1.0)),
            (Some(50.0), Some(99.0), Some(100.0))
        );
        // A long run keeps the last FRAME_TIMES_KEPT: a slow start falls out.
        for _ in 0..FRAME_TIMES_KEPT {
            t.push(2.0);
        }
        assert_eq!(t.quantile(0.99), Some(2.0));
    }
}
