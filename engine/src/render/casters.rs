//! What the frame's cubes add up to, found in one pass over them with no arithmetic past a min and a max: whether
//! any changed since the frame before (then the shadow map must be drawn again), the box around them (the light's
//! box is fitted to it) and the flags any of them carries (a frame with view-only cubes splits its shadow map).
//! The renderer copies the cubes to the GPU as they are (`instances.rs`), so this pass and that copy are all it
//! does per cube: 5,000 cubes cost it less than 1,000 cost the renderer that converted each one.

use glam::Vec3;

use super::scene_data::CubeInstance;

/// Bytes of a [`CubeInstance`] that hold its fields (the rest of its 64 is the tail padding).
const FIELD_BYTES: usize = 56;

/// The cubes of the last frame and what was found in them.
#[derive(Default)]
pub(crate) struct Casters {
    last: Vec<CubeInstance>,
    /// Counts the frames whose cubes differed from the frame before's: equal generations, equal cubes.
    pub generation: u64,
    /// Lowest and highest centre, and the largest half-diagonal (m); `None` without cubes.
    pub bounds: Option<(Vec3, Vec3, f32)>,
    /// Every cube's flags or-ed together.
    pub flags: u32,
    /// Some cube's rotation is not a unit quaternion (the renderer then normalises them on the way to the GPU).
    pub unnormalised: bool,
}

/// How far a rotation's squared length may be from 1 and still be drawn as it is.
const UNIT_TOLERANCE: f32 = 1e-4;

impl Casters {
    pub fn with_capacity(cubes: usize) -> Casters {
        Casters {
            last: Vec::with_capacity(cubes),
            ..Casters::default()
        }
    }

    /// Takes this frame's cubes; returns whether they differ from the last frame's (count, or any bit of any field).
    pub fn update(&mut self, cubes: &[CubeInstance]) -> bool {
        let mut same = cubes.len() == self.last.len();
        let (mut lo, mut hi, mut reach2, mut flags) = (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN), 0.0f32, 0u32);
        let mut unnormalised = false;
        for (i, c) in cubes.iter().enumerate() {
            if same && !same_bits(c, &self.last[i]) {
                same = false;
            }
            lo = lo.min(c.position);
            hi = hi.max(c.position);
            reach2 = reach2.max(c.half_extents.length_squared());
            flags |= c.flags;
            // NaN counts as not normalised.
            let off = (c.rotation.length_squared() - 1.0).abs();
            unnormalised |= off > UNIT_TOLERANCE || off.is_nan();
        }
        self.unnormalised = unnormalised;
        self.bounds = (!cubes.is_empty()).then(|| (lo, hi, reach2.sqrt()));
        self.flags = flags;
        if !same {
            self.generation += 1;
            self.last.clear();
            self.last.extend_from_slice(cubes);
        }
        !same
    }
}

/// Whether two cubes have the same bits in every field.
fn same_bits(a: &CubeInstance, b: &CubeInstance) -> bool {
    field_words(a) == field_words(b)
}

/// A cube's fields as seven words (its tail padding left out: it is never initialised).
pub(crate) fn field_words(c: &CubeInstance) -> [u64; FIELD_BYTES / 8] {
    // SAFETY: a CubeInstance is 16-byte aligned and its first FIELD_BYTES bytes are its fields with no padding
    // between them (checked where the type is declared), so they read as seven initialised u64 words.
    unsafe { std::ptr::read((c as *const CubeInstance).cast::<[u64; FIELD_BYTES / 8]>()) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Quat;

    fn cube(x: f32) -> CubeInstance {
        CubeInstance {
            position: Vec3::new(x, 0.5, 0.0),
            rotation: Quat::IDENTITY,
            half_extents: Vec3::splat(0.5),
            colour: [1.0; 3],
            flags: 0,
        }
    }

    #[test]
    fn a_change_in_any_field_or_the_count_is_a_new_generation() {
        let mut casters = Casters::with_capacity(4);
        let mut cubes = vec![cube(0.0), cube(2.0)];
        assert!(casters.update(&cubes), "the first frame is new");
        assert!(!casters.update(&cubes), "the same cubes");
        let g = casters.generation;
        let changes: [fn(&mut CubeInstance); 5] = [
            |c| c.position.z += 1e-6,
            |c| c.rotation = Quat::from_rotation_x(1e-3),
            |c| c.half_extents.y = 0.25,
            |c| c.colour[2] = 0.5,
            |c| c.flags = 4,
        ];
        for change in changes {
            let before = cubes[1];
            change(&mut cubes[1]);
            assert!(casters.update(&cubes), "{:?} -> {:?}", before, cubes[1]);
            cubes[1] = before;
            assert!(casters.update(&cubes), "and back");
        }
        assert_eq!(casters.generation, g + 10);
        cubes.push(cube(4.0));
        assert!(casters.update(&cubes), "one more cube");
        let (lo, hi, reach) = casters.bounds.expect("cubes");
        assert_eq!((lo.x, hi.x), (0.0, 4.0));
        assert!((reach - 0.75f32.sqrt()).abs() < 1e-6);
        assert!(!casters.unnormalised);
        cubes[0].rotation = Quat::from_xyzw(0.0, 0.0, 0.0, 2.0);
        casters.update(&cubes);
        assert!(casters.unnormalised, "a rotation of length 2");
        assert!(casters.update(&[]) && casters.bounds.is_none());
    }
}
