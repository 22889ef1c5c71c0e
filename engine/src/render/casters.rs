//! A frame's cubes on their way to the GPU: copied as they are (a [`CubeInstance`] is laid out as the shader reads
//! it) and, in the same pass, summed up — whether any changed since the frame before (then the shadow map must be
//! drawn again), the box around them (the light's box is fitted to it), the flags any of them carries (a frame
//! with view-only cubes splits its shadow map) and whether any rotation is not a unit quaternion (the shader takes
//! rotations as they are, so the copy's are then normalised here). One read of each cube, one copy, a few
//! multiply-adds: about 7–10 ns a cube on the 2-core test machine.

use glam::{Vec3, Vec3A};

use super::scene_data::CubeInstance;

/// Bytes of a [`CubeInstance`] that hold its fields (the rest of its 64 is the tail padding).
const FIELD_BYTES: usize = 56;
const WORDS: usize = FIELD_BYTES / 8;
/// How far a rotation's squared length may be from 1 and still be drawn as it is.
const UNIT_TOLERANCE: f32 = 1e-4;
/// Odd multipliers of the change checksum's two sums.
const MIX: [u64; 2] = [0x9e37_79b9_7f4a_7c15, 0xbf58_476d_1ce4_e5b9];

/// What the cubes of recent frames added up to.
#[derive(Default)]
pub(crate) struct Casters {
    /// The last frame's cube count and checksum.
    last: Option<(usize, [u64; 2])>,
    /// Counts the frames whose cubes differed from the frame before's: equal generations, equal cubes.
    pub generation: u64,
    /// Lowest and highest centre, and the largest half-diagonal (m); `None` without cubes.
    pub bounds: Option<(Vec3, Vec3, f32)>,
    /// Every cube's flags or-ed together.
    pub flags: u32,
    /// Some cube's rotation is not a unit quaternion (then every rotation of the GPU's copy was normalised).
    pub unnormalised: bool,
}

impl Casters {
    /// Copies `cubes` (at most `capacity`) to `out` and sums them up; returns whether they differ from the last
    /// frame's. The change test is a checksum, not a comparison (keeping the last frame's cubes to compare would
    /// double the memory each frame moves): each cube's seven words are folded into one (rotated apart, so a change
    /// in one field rarely undoes a change in another), mixed with the cube's index by a multiply (so equal and
    /// opposite changes of two cubes do not cancel), and added into two sums with different multipliers. A change
    /// it missed would leave the shadow map one change behind; missing one takes two 64-bit collisions at once.
    ///
    /// # Safety
    /// `out` points to writable memory for `capacity` records that the GPU is not reading.
    pub unsafe fn write(&mut self, cubes: &[CubeInstance], out: *mut CubeInstance, capacity: usize) -> bool {
        let cubes = &cubes[..cubes.len().min(capacity)];
        let (mut lo, mut hi, mut reach2, mut flags) = (Vec3A::splat(f32::MAX), Vec3A::splat(f32::MIN), 0.0f32, 0u32);
        let mut unnormalised = false;
        let mut sum = [0u64; 2];
        for (i, c) in cubes.iter().enumerate() {
            let w = field_words(c);
            let folded = w[0]
                ^ w[1].rotate_left(9)
                ^ w[2].rotate_left(18)
                ^ w[3].rotate_left(27)
                ^ w[4].rotate_left(36)
                ^ w[5].rotate_left(45)
                ^ w[6].rotate_left(54);
            let mixed = (folded ^ i as u64).wrapping_mul(MIX[0]);
            sum[0] = sum[0].wrapping_add(mixed);
            sum[1] = sum[1].wrapping_add((mixed ^ (mixed >> 29)).wrapping_mul(MIX[1]));
            let p = Vec3A::from(c.position);
            lo = lo.min(p);
            hi = hi.max(p);
            reach2 = reach2.max(c.half_extents.length_squared());
            flags |= c.flags;
            // NaN counts as not normalised.
            let off = (c.rotation.length_squared() - 1.0).abs();
            unnormalised |= off > UNIT_TOLERANCE || off.is_nan();
        }
        // One copy of the whole slice after the pass (the cubes are in cache by now): storing each cube inside the
        // loop cost five times as much.
        // SAFETY: `cubes.len()` ≤ capacity records fit the caller's buffer; the slice and mapped memory are apart.
        unsafe { std::ptr::copy_nonoverlapping(cubes.as_ptr(), out, cubes.len()) };
        if unnormalised {
            for (i, c) in cubes.iter().enumerate() {
                // Written from the caller's slice, never read back from the copy: mapped upload memory may be the
                // GPU's own, which the CPU reads slowly.
                // SAFETY: as for the copy; the record was just written, and its rotation is its first field.
                unsafe { std::ptr::addr_of_mut!((*out.add(i)).rotation).write(c.rotation.normalize()) };
            }
        }
        self.bounds = (!cubes.is_empty()).then(|| (lo.into(), hi.into(), reach2.sqrt()));
        self.flags = flags;
        self.unnormalised = unnormalised;
        let now = Some((cubes.len(), sum));
        let changed = self.last != now;
        if changed {
            self.generation += 1;
            self.last = now;
        }
        changed
    }
}

/// A cube's fields as seven words (its tail padding left out: it is never initialised).
pub(crate) fn field_words(c: &CubeInstance) -> [u64; WORDS] {
    // SAFETY: a CubeInstance is 16-byte aligned and its first FIELD_BYTES bytes are its fields with no padding
    // between them (checked where the type is declared), so they read as seven initialised u64 words.
    unsafe { std::ptr::read((c as *const CubeInstance).cast::<[u64; WORDS]>()) }
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
        let mut casters = Casters::default();
        let gpu = std::cell::RefCell::new(vec![cube(9.0); 4]);
        let update = |casters: &mut Casters, cubes: &[CubeInstance]| {
            let mut gpu = gpu.borrow_mut();
            // SAFETY: `gpu` holds 4 records.
            unsafe { casters.write(cubes, gpu.as_mut_ptr(), gpu.len()) }
        };
        let mut cubes = vec![cube(0.0), cube(2.0)];
        assert!(update(&mut casters, &cubes), "the first frame is new");
        assert!(!update(&mut casters, &cubes), "the same cubes");
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
            assert!(update(&mut casters, &cubes), "{:?} -> {:?}", before, cubes[1]);
            cubes[1] = before;
            assert!(update(&mut casters, &cubes), "and back");
        }
        assert_eq!(casters.generation, g + 10);
        cubes.push(cube(4.0));
        assert!(update(&mut casters, &cubes), "one more cube");
        let (lo, hi, reach) = casters.bounds.expect("cubes");
        assert_eq!((lo.x, hi.x), (0.0, 4.0));
        assert!((reach - 0.75f32.sqrt()).abs() < 1e-6);
        assert!(!casters.unnormalised);
        cubes[0].rotation = Quat::from_xyzw(0.0, 0.0, 0.0, 2.0);
        update(&mut casters, &cubes);
        assert!(casters.unnormalised, "a rotation of length 2");
        let copied = gpu.borrow()[0].rotation;
        assert!(
            (copied.length() - 1.0).abs() < 1e-6,
            "the GPU's copy is normalised: {copied}"
        );
        assert!(update(&mut casters, &[]) && casters.bounds.is_none());
        let swapped = [cube(2.0), cube(0.0)];
        update(&mut casters, &[cube(0.0), cube(2.0)]);
        assert!(update(&mut casters, &swapped), "two cubes swapping places");
        let mut apart = [cube(1.0), cube(3.0)];
        update(&mut casters, &apart);
        apart[0].position.x -= 0.5;
        apart[1].position.x += 0.5;
        assert!(update(&mut casters, &apart), "two cubes moving apart by the same");
        assert_eq!(&gpu.borrow()[..2], &apart[..], "the cubes were copied as they are");
    }
}
