//! A notice floating in front of the player in the headset, for what must be told whatever the player looks at
//! (the host gone). The renderer draws boxes, not text: the words are spelt in small boxes, one per lit pixel of a
//! 5 × 7 font, on a dark plate, at eye height ahead of the head and turned to face it. Only the letters the notices
//! use are in the font.

use glam::{Quat, Vec3};
use tumble_engine::render::CubeInstance;

use crate::avatar::Pose;
use crate::session::peer::HostGone;

/// How far ahead of the eyes the notice floats (m), and the size of one pixel of its letters (m).
const DISTANCE_M: f32 = 1.6;
const PIXEL_M: f32 = 0.025;
/// Pixels between letters, and the plate's margin around the text (pixels).
const LETTER_GAP_PX: f32 = 1.0;
const MARGIN_PX: f32 = 2.0;
/// Letter and plate colours (linear RGB): amber on near black.
const LETTER_RGB: [f32; 3] = [1.0, 0.55, 0.05];
const PLATE_RGB: [f32; 3] = [0.02, 0.02, 0.03];
/// The longest notice (characters), and so the most boxes one takes: every pixel of every letter, and the plate.
pub const MAX_CHARS: usize = 12;
pub const MAX_NOTICE_BOXES: usize = MAX_CHARS * 35 + 1;

/// 5 × 7 letters, a row of five bits each (top row first, the leftmost pixel the highest bit).
const GLYPHS: [(char, [u8; 7]); 9] = [
    (' ', [0, 0, 0, 0, 0, 0, 0]),
    ('E', [0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F]),
    ('F', [0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10]),
    ('H', [0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11]),
    ('L', [0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F]),
    ('O', [0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E]),
    ('S', [0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E]),
    ('T', [0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04]),
    ('G', [0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F]),
];

/// What the headset shows when the host is gone.
pub fn host_gone_text(how: HostGone) -> &'static str {
    match how {
        HostGone::Left => "HOST LEFT",
        HostGone::TimedOut => "HOST LOST",
    }
}

/// Appends the boxes of `text` floating ahead of `head` (a world pose) to `out`: a plate, then one box per lit
/// pixel. Letters the font lacks are left blank; text past [`MAX_CHARS`] is cut.
pub fn push_notice_boxes(text: &str, head: &Pose, out: &mut Vec<CubeInstance>) {
    // Level: the notice turns with the head about the vertical only, so it stays upright.
    let forward = (head.rotation * Vec3::NEG_Z) * Vec3::new(1.0, 0.0, 1.0);
    let forward = forward.try_normalize().unwrap_or(Vec3::NEG_Z);
    let facing = Quat::from_rotation_arc(Vec3::NEG_Z, forward);
    let centre = head.position + forward * DISTANCE_M;
    let chars = text.chars().take(MAX_CHARS).count() as f32;
    let width_px = chars * (5.0 + LETTER_GAP_PX) - LETTER_GAP_PX;
    let right = facing * Vec3::X;
    let up = Vec3::Y;
    out.push(CubeInstance {
        position: centre + forward * (PIXEL_M * 0.5),
        rotation: facing,
        half_extents: Vec3::new(
            (width_px + 2.0 * MARGIN_PX) * PIXEL_M * 0.5,
            (7.0 + 2.0 * MARGIN_PX) * PIXEL_M * 0.5,
            PIXEL_M * 0.25,
        ),
        colour: PLATE_RGB,
        flags: 0,
    });
    for (k, c) in text.chars().take(MAX_CHARS).enumerate() {
        let Some((_, rows)) = GLYPHS.iter().find(|(g, _)| *g == c) else {
            continue;
        };
        for (row, bits) in rows.iter().enumerate() {
            for col in 0..5 {
                if bits & (0x10 >> col) == 0 {
                    continue;
                }
                let x = k as f32 * (5.0 + LETTER_GAP_PX) + col as f32 - width_px * 0.5 + 0.5;
                let y = 3.0 - row as f32;
                out.push(CubeInstance {
                    position: centre + (right * x + up * y) * PIXEL_M,
                    rotation: facing,
                    half_extents: Vec3::splat(PIXEL_M * 0.45),
                    colour: LETTER_RGB,
                    flags: 0,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_notice_floats_ahead_of_the_head_and_spells_its_letters() {
        let head = Pose::new(
            Vec3::new(2.0, 1.7, 0.0),
            Quat::from_rotation_y(std::f32::consts::FRAC_PI_2),
        );
        let mut out = Vec::new();
        push_notice_boxes("HOST LEFT", &head, &mut out);
        // A plate and the lit pixels of H O S T L E F T (the space has none).
        let lit: u32 = "HOSTLEFT"
            .chars()
            .map(|c| {
                GLYPHS
                    .iter()
                    .find(|(g, _)| *g == c)
                    .unwrap()
                    .1
                    .iter()
                    .map(|r| r.count_ones())
                    .sum::<u32>()
            })
            .sum();
        assert_eq!(out.len() as u32, 1 + lit);
        // Turned a quarter left, the head looks along −x: the notice is 1.6 m that way, at eye height.
        for b in &out {
            let d = b.position - head.position;
            assert!((d.x + DISTANCE_M).abs() < 0.05, "{d}");
            assert!(d.y.abs() < 0.15 && d.z.abs() < 0.7, "{d}");
        }
        // Looking down does not tilt it: it stays at eye height, upright.
        let down = Pose::new(head.position, head.rotation * Quat::from_rotation_x(-0.6));
        let mut tilted = Vec::new();
        push_notice_boxes("HOST LEFT", &down, &mut tilted);
        assert!(tilted[0].position.distance(out[0].position) < 1e-5);
        assert!(out.len() <= MAX_NOTICE_BOXES);
        assert_eq!(host_gone_text(HostGone::TimedOut), "HOST LOST");
    }
}
