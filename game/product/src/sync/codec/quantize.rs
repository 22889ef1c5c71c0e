//! Body state exactly as the network sends it. Both sides quantize every body before every physics step, so a
//! peer simulates from the very values it would receive, and a resting body re-quantizes to exactly itself: a
//! resting stack stays bit-identical under quantized stepping.
//!
//! The property everything relies on is idempotency: `quantize_state(&dequantize_state(&q)) == q` for every `q`
//! that `quantize_state` returns. Positions and velocities get it for free (power-of-two resolutions make the way
//! back exact); rotations get it by construction ([`quantize_rotation`] returns only encodings that re-encode to
//! themselves).
//!
//! Only IEEE basic operations, `sqrt` and rounding are used, so every platform agrees bit for bit.

use std::f64::consts::SQRT_2;

use glam::{Quat, Vec3};

use crate::sync::codec::stamp::AuthorityStamp;
use tumble_engine::physics::{BodyId, BodyState, PhysicsError, World};

/// Position resolution: 1/4096 m (0.24 mm) per unit, round to nearest, so the error is at most 1/8192 m.
pub const POSITION_UNITS_PER_M: f32 = 4096.0;
/// Bits per position axis: 2^21 values cover -256 m ..= 256 m - 1/4096 m at 1/4096 m.
pub const POSITION_BITS: u32 = 21;
/// Positions are clamped into ±this box (m) on every axis; the positive end is one unit short of it.
pub const POSITION_BOUND_M: f32 = fixed_bound(POSITION_BITS, POSITION_UNITS_PER_M);

/// Bits naming the dropped (largest-magnitude) quaternion component, x y z w = 0 1 2 3.
pub const ROTATION_INDEX_BITS: u32 = 2;
/// Bits per stored component: signed integers in ±[`ROTATION_COMPONENT_MAX`].
pub const ROTATION_COMPONENT_BITS: u32 = 15;
/// ±this integer stands for ±1/√2, the range of the three components that are not the largest.
pub const ROTATION_COMPONENT_MAX: i16 = (1 << (ROTATION_COMPONENT_BITS - 1)) - 1;
/// Integer units per unit of quaternion component (≈ 23169, a resolution of 4.3e-5).
const ROTATION_UNITS: f64 = ROTATION_COMPONENT_MAX as f64 * SQRT_2;
/// Largest rotation error (rad) between a unit quaternion and its quantized value. For stored components off by
/// `δ` (in component units, the dropped one rebuilt), the error is at most `4·|δ|` to first order (worst when
/// all four components are equal). Plain rounding gives `|δᵢ| ≤ u/2`, so `2·√3·u` ≈ 1.495e-4 rad with
/// `u = 1/ROTATION_UNITS`; breaking a tie (see [`quantize_rotation`]) moves a component at most one more unit,
/// `|δᵢ| ≤ 3u/2`, so `6·√3·u` ≈ 4.49e-4 rad. Measured over a million samples, a sixth of them tie-broken:
/// 1.50e-4 rad.
pub const ROTATION_MAX_ERROR_RAD: f64 = 6.0 * SQRT_3 / ROTATION_UNITS;
const SQRT_3: f64 = 1.732_050_807_568_877_2;
/// After a decode, the reconstructed component must beat every other one by this much, so that a rotation which
/// moved by a few f32 ulps (the engine renormalising it in f32) still drops the same component.
const ROTATION_TIE_MARGIN: f64 = 1e-6;

/// Linear velocity resolution: 1/1024 m/s per unit. A body crawling below 0.5 mm/s quantizes to exactly zero,
/// and the smallest non-zero speed moves it 11 µm per 90 Hz step, far below the rest detector's thresholds.
pub const LINEAR_VELOCITY_UNITS_PER_M_S: f32 = 1024.0;
/// Bits per linear velocity axis: 2^16 values cover ±32 m/s (the engine's own cap is 50 m/s in length; thrown
/// cubes reach 20 m/s).
pub const LINEAR_VELOCITY_BITS: u32 = 16;
/// Linear velocity is clamped into ±this (m/s) per axis.
pub const LINEAR_VELOCITY_BOUND_M_S: f32 = fixed_bound(LINEAR_VELOCITY_BITS, LINEAR_VELOCITY_UNITS_PER_M_S);

/// Angular velocity resolution: 1/1024 rad/s per unit (a 1 m cube's corner moves 9 µm per step per unit).
pub const ANGULAR_VELOCITY_UNITS_PER_RAD_S: f32 = 1024.0;
/// Bits per angular velocity axis: 2^17 values cover ±64 rad/s (the engine caps at 50 rad/s in length).
pub const ANGULAR_VELOCITY_BITS: u32 = 17;
/// Angular velocity is clamped into ±this (rad/s) per axis.
pub const ANGULAR_VELOCITY_BOUND_RAD_S: f32 = fixed_bound(ANGULAR_VELOCITY_BITS, ANGULAR_VELOCITY_UNITS_PER_RAD_S);

/// The rest flag.
pub const AT_REST_BITS: u32 = 1;
/// Bits of a resting body: velocities are known to be zero and are not sent.
pub const STATE_BITS_AT_REST: u32 =
    3 * POSITION_BITS + ROTATION_INDEX_BITS + 3 * ROTATION_COMPONENT_BITS + AT_REST_BITS;
/// Bits of an awake body.
pub const STATE_BITS_AWAKE: u32 = STATE_BITS_AT_REST + 3 * LINEAR_VELOCITY_BITS + 3 * ANGULAR_VELOCITY_BITS;

const fn fixed_bound(bits: u32, units: f32) -> f32 {
    (1u32 << (bits - 1)) as f32 / units
}

/// A rotation as smallest-three: the largest-magnitude component is dropped (the quaternion negated first if
/// that made it negative, since q and -q are the same rotation) and rebuilt from the other three.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct QuantizedRotation {
    /// Index of the dropped component, x y z w = 0 1 2 3.
    pub largest: u8,
    /// The other three components in x y z w order, each in ±[`ROTATION_COMPONENT_MAX`] for ±1/√2.
    pub smallest_three: [i16; 3],
}

impl QuantizedRotation {
    pub const IDENTITY: QuantizedRotation = QuantizedRotation {
        largest: 3,
        smallest_three: [0; 3],
    };
}

impl Default for QuantizedRotation {
    fn default() -> Self {
        Self::IDENTITY
    }
}

/// A body state as integers, ready for the bit packer. The default is a body at the origin, unrotated and still
/// (a placeholder for fixed-size buffers, never a state of the world).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct QuantizedState {
    /// Units of 1/[`POSITION_UNITS_PER_M`] m, each in the signed [`POSITION_BITS`]-bit range.
    pub position: [i32; 3],
    pub rotation: QuantizedRotation,
    /// Units of 1/[`LINEAR_VELOCITY_UNITS_PER_M_S`] m/s, signed [`LINEAR_VELOCITY_BITS`]-bit range; zero at rest.
    pub linear_velocity: [i32; 3],
    /// Units of 1/[`ANGULAR_VELOCITY_UNITS_PER_RAD_S`] rad/s, signed [`ANGULAR_VELOCITY_BITS`]-bit range; zero at rest.
    pub angular_velocity: [i32; 3],
    pub at_rest: bool,
    /// Who may move the cube and how recent that claim is. Not physics: quantizing a body gives the default stamp,
    /// and the sender fills in the authority table's. It rides in the state so that baselines, "not changed" and
    /// prediction cover it with no extra bookkeeping.
    pub stamp: AuthorityStamp,
}

/// Fixed point: `round(x · units)` clamped to the signed `bits`-bit range. With power-of-two `units` the product
/// and [`from_fixed`] are exact in f32, so a dequantized value quantizes to itself. NaN becomes 0.
fn to_fixed(x: f32, units: f32, bits: u32) -> i32 {
    let max = ((1i32 << (bits - 1)) - 1) as f32;
    (x * units).round().clamp(-max - 1.0, max) as i32
}

fn from_fixed(i: i32, units: f32) -> f32 {
    i as f32 / units
}

fn vec_to_fixed(v: Vec3, units: f32, bits: u32) -> [i32; 3] {
    v.to_array().map(|x| to_fixed(x, units, bits))
}

fn vec_from_fixed(v: [i32; 3], units: f32) -> Vec3 {
    Vec3::from_array(v.map(|i| from_fixed(i, units)))
}

/// The indices other than `k`, in order.
fn others(k: usize) -> [usize; 3] {
    [0, 1, 2].map(|i| i + usize::from(i >= k))
}

fn sum_of_squares(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum()
}

/// Smallest-three by plain rounding, on the quaternion normalised in f64. Not idempotent by itself near ties.
fn encode_rotation_rounded(q: Quat) -> QuantizedRotation {
    let v = q.to_array().map(f64::from);
    let len = sum_of_squares(&v).sqrt();
    if !(len.is_finite() && len > 0.0) {
        return QuantizedRotation::IDENTITY;
    }
    // First of equal magnitudes wins, so the choice never depends on anything but the values.
    let largest = (1..4).fold(0, |best, i| if v[i].abs() > v[best].abs() { i } else { best });
    let scale = if v[largest] < 0.0 {
        -ROTATION_UNITS / len
    } else {
        ROTATION_UNITS / len
    };
    let max = f64::from(ROTATION_COMPONENT_MAX);
    QuantizedRotation {
        largest: largest as u8,
        smallest_three: others(largest).map(|i| (v[i] * scale).round().clamp(-max, max) as i16),
    }
}

/// Rebuilds the dropped component as `sqrt(max(0, 1 - a² - b² - c²))` and normalises, in f64. Total: any index
/// and integers give a unit quaternion (out-of-range integers are clamped).
pub fn dequantize_rotation(r: &QuantizedRotation) -> Quat {
    let k = usize::from(r.largest & 3);
    let mut v = [0.0f64; 4];
    for (i, c) in others(k).into_iter().zip(r.smallest_three) {
        v[i] = f64::from(c.clamp(-ROTATION_COMPONENT_MAX, ROTATION_COMPONENT_MAX)) / ROTATION_UNITS;
    }
    v[k] = (1.0 - sum_of_squares(&v)).max(0.0).sqrt();
    let len = sum_of_squares(&v).sqrt();
    Quat::from_array(v.map(|x| (x / len) as f32))
}

/// An encoding is canonical when its decode re-encodes to it, with the rebuilt component ahead of the others by
/// [`ROTATION_TIE_MARGIN`].
fn is_canonical(r: &QuantizedRotation) -> bool {
    let q = dequantize_rotation(r);
    let v = q.to_array().map(f64::from);
    let k = usize::from(r.largest);
    others(k).iter().all(|&i| v[i].abs() + ROTATION_TIE_MARGIN <= v[k]) && encode_rotation_rounded(q) == *r
}

/// Smallest-three of `q` (normalised first; a zero or non-finite quaternion gives the identity).
///
/// When two components are within a rounding of each other, the rounded smaller one can come back larger than
/// the rebuilt one, and a re-encode would drop the other: not idempotent. Stepping the largest stored integer one
/// unit towards zero shrinks it and grows the rebuilt component, widening the gap by about two units per step; it
/// ends (all zeros is canonical); in the test sweep it takes at most two steps, never two on one component.
/// Since only canonical encodings come out, and a canonical encoding's decode rounds straight back to it,
/// quantization is idempotent by construction.
pub fn quantize_rotation(q: Quat) -> QuantizedRotation {
    let mut r = encode_rotation_rounded(q);
    while !is_canonical(&r) {
        let c = &mut r.smallest_three;
        let j = (1..3).fold(0, |best, i| if c[i].abs() > c[best].abs() { i } else { best });
        c[j] -= c[j].signum();
    }
    r
}

/// True when every cube has the same quantized state (and the same removed flag) on both sides.
pub fn bit_identical(a: &World, b: &World) -> Result<bool, PhysicsError> {
    for i in 0..a.body_count() as u32 {
        if body_differs(a, b, BodyId(i))? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Whether body `id` differs between the two worlds as the wire would carry it: removed in one only, or a
/// different quantized state.
pub fn body_differs(a: &World, b: &World, id: BodyId) -> Result<bool, PhysicsError> {
    let removed = a.is_removed(id)?;
    if removed != b.is_removed(id)? {
        return Ok(true);
    }
    Ok(!removed && quantize_state(&a.state(id)?) != quantize_state(&b.state(id)?))
}

/// The body state as the wire carries it. Out-of-range values are clamped; at rest, velocities are exactly zero.
pub fn quantize_state(s: &BodyState) -> QuantizedState {
    let (linear_velocity, angular_velocity) = if s.at_rest {
        ([0; 3], [0; 3])
    } else {
        (
            vec_to_fixed(s.linear_velocity, LINEAR_VELOCITY_UNITS_PER_M_S, LINEAR_VELOCITY_BITS),
            vec_to_fixed(
                s.angular_velocity,
                ANGULAR_VELOCITY_UNITS_PER_RAD_S,
                ANGULAR_VELOCITY_BITS,
            ),
        )
    };
    QuantizedState {
        position: vec_to_fixed(s.position, POSITION_UNITS_PER_M, POSITION_BITS),
        rotation: quantize_rotation(s.rotation),
        linear_velocity,
        angular_velocity,
        at_rest: s.at_rest,
        stamp: AuthorityStamp::DEFAULT,
    }
}

/// The body state a quantized one stands for. Total: never panics, whatever arrived off the wire.
pub fn dequantize_state(q: &QuantizedState) -> BodyState {
    let (linear_velocity, angular_velocity) = if q.at_rest {
        (Vec3::ZERO, Vec3::ZERO)
    } else {
        (
            vec_from_fixed(q.linear_velocity, LINEAR_VELOCITY_UNITS_PER_M_S),
            vec_from_fixed(q.angular_velocity, ANGULAR_VELOCITY_UNITS_PER_RAD_S),
        )
    };
    BodyState {
        position: vec_from_fixed(q.position, POSITION_UNITS_PER_M),
        rotation: dequantize_rotation(&q.rotation),
        linear_velocity,
        angular_velocity,
        at_rest: q.at_rest,
    }
}

/// The round trip both sides apply before every step; applying it twice changes nothing, bit for bit.
pub fn quantize_body_state(s: &BodyState) -> BodyState {
    dequantize_state(&quantize_state(s))
}

/// What both sides do before every step: every body still in the simulation snapped to exactly what the wire
/// would carry, so the non-authority side extrapolates from the very values the authority side has.
pub fn quantize_world(world: &mut World) -> Result<(), PhysicsError> {
    for i in 0..world.body_count() as u32 {
        let id = BodyId(i);
        // Setting a removed body's state would put it back into the simulation.
        if !world.is_removed(id)? {
            let state = quantize_body_state(&world.state(id)?);
            world.set_state(id, &state)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SplitMix64: a seeded generator, so a failing sweep is reproducible without a dependency.
    struct Rng(u64);

    impl Rng {
        fn next_u64(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }
        /// Uniform in [0, 1).
        fn unit(&mut self) -> f64 {
            (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
        }
        fn range(&mut self, lo: f64, hi: f64) -> f32 {
            (lo + (hi - lo) * self.unit()) as f32
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next_u64() % n as u64) as usize
        }
        fn sign(&mut self) -> f32 {
            if self.next_u64() & 1 == 0 {
                1.0
            } else {
                -1.0
            }
        }
    }

    /// A uniformly random unit quaternion (Shoemake), or one with two, three or four components equal in
    /// magnitude give or take a relative 1e-3 .. 1e-9 (or exactly), where the dropped component is ambiguous.
    fn random_rotation(rng: &mut Rng) -> Quat {
        let (u1, u2, u3) = (
            rng.unit(),
            rng.unit() * std::f64::consts::TAU,
            rng.unit() * std::f64::consts::TAU,
        );
        let (a, b) = ((1.0 - u1).sqrt(), u1.sqrt());
        let mut v = [a * u2.sin(), a * u2.cos(), b * u3.sin(), b * u3.cos()].map(|x| x as f32);
        if rng.below(2) == 0 {
            let k = (0..4).max_by(|&i, &j| v[i].abs().total_cmp(&v[j].abs())).unwrap();
            for _ in 0..1 + rng.below(3) {
                let j = rng.below(4);
                let eps = if rng.below(4) == 0 {
                    0.0
                } else {
                    rng.sign() * 10f32.powi(-3 - rng.below(7) as i32)
                };
                v[j] = rng.sign() * v[k].abs() * (1.0 + eps);
            }
        }
        let q = Quat::from_array(v);
        // Mostly unit, as the engine supplies; sometimes up to 1 % off, which the quantizer must normalise.
        if rng.below(8) == 0 {
            q * rng.range(0.99, 1.01)
        } else {
            q.normalize()
        }
    }

    fn random_value(rng: &mut Rng, bound: f64) -> f32 {
        match rng.below(8) {
            0 => 0.0,
            1 => rng.range(-1e-3, 1e-3),
            2 => rng.sign() * (bound as f32 + rng.range(-1e-3, 1e-3)),
            _ => rng.range(-1.25 * bound, 1.25 * bound),
        }
    }

    fn random_state(rng: &mut Rng) -> BodyState {
        let mut v3 = |bound| {
            Vec3::new(
                random_value(rng, bound),
                random_value(rng, bound),
                random_value(rng, bound),
            )
        };
        let (position, linear_velocity, angular_velocity) = (v3(256.0), v3(32.0), v3(64.0));
        BodyState {
            position,
            rotation: random_rotation(rng),
            linear_velocity,
            angular_velocity,
            at_rest: rng.below(8) == 0,
        }
    }

    fn bits(s: &BodyState) -> Vec<u32> {
        [
            s.position.to_array(),
            s.linear_velocity.to_array(),
            s.angular_velocity.to_array(),
        ]
        .concat()
        .into_iter()
        .chain(s.rotation.to_array())
        .map(f32::to_bits)
        .chain([u32::from(s.at_rest)])
        .collect()
    }

    /// Rotation error (rad) that comes from the quantized value being stored in f32.
    const F32_SLOP_RAD: f64 = 1e-6;

    /// Rotation angle (rad) between two quaternions, accurate for tiny angles.
    fn angle_between(a: Quat, b: Quat) -> f64 {
        let [ax, ay, az, aw] = a.to_array().map(f64::from);
        let [bx, by, bz, bw] = b.to_array().map(f64::from);
        let (la, lb) = (
            (ax * ax + ay * ay + az * az + aw * aw).sqrt(),
            (bx * bx + by * by + bz * bz + bw * bw).sqrt(),
        );
        // conj(a) · b
        let w = aw * bw + ax * bx + ay * by + az * bz;
        let x = aw * bx - ax * bw - ay * bz + az * by;
        let y = aw * by + ax * bz - ay * bw - az * bx;
        let z = aw * bz - ax * by + ay * bx - az * bw;
        2.0 * ((x * x + y * y + z * z).sqrt() / (la * lb)).atan2(w.abs() / (la * lb))
    }

    fn in_range(v: &[i32], bits: u32) -> bool {
        v.iter().all(|&i| (-(1 << (bits - 1))..1 << (bits - 1)).contains(&i))
    }

    #[test]
    fn sweep_is_idempotent_and_within_error_bounds() {
        const SAMPLES: usize = 1_000_000;
        let mut rng = Rng(0x7475_6d62_6c65);
        let (mut worst_rotation_error, mut tie_broken) = (0.0f64, 0);
        for n in 0..SAMPLES {
            let s = random_state(&mut rng);
            let q = quantize_state(&s);
            let once = dequantize_state(&q);
            assert_eq!(quantize_state(&once), q, "sample {n}: {s:?}");
            assert_eq!(bits(&quantize_body_state(&once)), bits(&once), "sample {n}: {s:?}");
            // The engine renormalises in f32 (`rotation / rotation.length()`) when the state is set back.
            let renormalised = once.rotation / once.rotation.length();
            assert_eq!(quantize_rotation(renormalised), q.rotation, "sample {n}: {s:?}");

            assert!(in_range(&q.position, POSITION_BITS));
            assert!(in_range(&q.linear_velocity, LINEAR_VELOCITY_BITS));
            assert!(in_range(&q.angular_velocity, ANGULAR_VELOCITY_BITS));
            assert!(q.rotation.largest < 4);
            assert!(q
                .rotation
                .smallest_three
                .iter()
                .all(|c| c.abs() <= ROTATION_COMPONENT_MAX));
            for (p, p1) in s.position.to_array().into_iter().zip(once.position.to_array()) {
                let inside = (-POSITION_BOUND_M..=POSITION_BOUND_M - 1.0 / 8192.0).contains(&p);
                assert!(!inside || (p - p1).abs() <= 1.0 / 8192.0, "sample {n}: {p} -> {p1}");
            }
            if s.at_rest {
                assert_eq!(once.linear_velocity.to_array().map(f32::to_bits), [0; 3]);
                assert_eq!(once.angular_velocity.to_array().map(f32::to_bits), [0; 3]);
            }
            // Rounded encodings are within 2·√3·u; a tie-broken one differs from rounding by at most one unit per
            // component, which is what the documented bound assumes.
            let rounded = encode_rotation_rounded(s.rotation);
            let error = angle_between(s.rotation, once.rotation);
            if q.rotation == rounded {
                assert!(
                    error <= 2.0 * SQRT_3 / ROTATION_UNITS + F32_SLOP_RAD,
                    "sample {n}: {s:?}: {error}"
                );
            } else {
                assert_eq!(q.rotation.largest, rounded.largest);
                let mut steps = q
                    .rotation
                    .smallest_three
                    .iter()
                    .zip(rounded.smallest_three)
                    .map(|(a, b)| (a - b).abs());
                assert!(steps.all(|d| d <= 1), "sample {n}: {s:?}");
                tie_broken += 1;
            }
            worst_rotation_error = worst_rotation_error.max(error);
        }
        eprintln!(
            "worst rotation error over {SAMPLES} samples ({tie_broken} tie-broken): \
             {worst_rotation_error:.4e} rad"
        );
        assert!(worst_rotation_error <= ROTATION_MAX_ERROR_RAD, "{worst_rotation_error}");
    }

    #[test]
    fn exact_ties_are_idempotent() {
        let h = 0.5f32;
        let r = std::f32::consts::FRAC_1_SQRT_2;
        let mut cases = Vec::new();
        for signs in 0..16u32 {
            let sign = |i: u32| if signs >> i & 1 == 0 { 1.0 } else { -1.0 };
            cases.push(Quat::from_xyzw(h * sign(0), h * sign(1), h * sign(2), h * sign(3)));
            for (i, j) in [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)] {
                let mut v = [0.0; 4];
                (v[i], v[j]) = (r * sign(0), r * sign(1));
                cases.push(Quat::from_array(v));
            }
        }
        for q in cases {
            let e = quantize_rotation(q);
            let back = dequantize_rotation(&e);
            assert_eq!(quantize_rotation(back), e, "{q:?}");
            assert!(
                angle_between(q, back) <= ROTATION_MAX_ERROR_RAD,
                "{q:?}: {}",
                angle_between(q, back)
            );
        }
    }

    #[test]
    fn identity_is_exact() {
        let s = BodyState {
            position: Vec3::ZERO,
            rotation: Quat::IDENTITY,
            linear_velocity: Vec3::ZERO,
            angular_velocity: Vec3::ZERO,
            at_rest: false,
        };
        assert_eq!(quantize_state(&s).rotation, QuantizedRotation::IDENTITY);
        assert_eq!(bits(&quantize_body_state(&s)), bits(&s));
    }

    #[test]
    fn q_and_minus_q_quantize_alike() {
        let mut rng = Rng(42);
        for _ in 0..10_000 {
            let q = random_rotation(&mut rng);
            assert_eq!(quantize_rotation(q), quantize_rotation(-q), "{q:?}");
        }
        let e = quantize_rotation(Quat::from_xyzw(0.0, 0.0, 0.0, -1.0));
        assert_eq!(e, QuantizedRotation::IDENTITY);
    }

    #[test]
    fn out_of_range_values_are_clamped() {
        let s = BodyState {
            position: Vec3::new(1000.0, -1000.0, 256.0),
            rotation: Quat::IDENTITY,
            linear_velocity: Vec3::new(50.0, -50.0, 31.0),
            angular_velocity: Vec3::new(100.0, -100.0, 63.0),
            at_rest: false,
        };
        let q = quantize_state(&s);
        assert_eq!(q.position, [(1 << 20) - 1, -(1 << 20), (1 << 20) - 1]);
        let back = dequantize_state(&q);
        assert_eq!(
            back.position,
            Vec3::new(256.0 - 1.0 / 4096.0, -256.0, 256.0 - 1.0 / 4096.0)
        );
        assert_eq!(back.linear_velocity, Vec3::new(32.0 - 1.0 / 1024.0, -32.0, 31.0));
        assert_eq!(back.angular_velocity, Vec3::new(64.0 - 1.0 / 1024.0, -64.0, 63.0));
        assert_eq!(
            (
                POSITION_BOUND_M,
                LINEAR_VELOCITY_BOUND_M_S,
                ANGULAR_VELOCITY_BOUND_RAD_S
            ),
            (256.0, 32.0, 64.0)
        );
    }

    #[test]
    fn at_rest_zeroes_velocities() {
        let s = BodyState {
            position: Vec3::new(1.0, 0.5, -2.0),
            rotation: Quat::from_rotation_y(0.3),
            linear_velocity: Vec3::new(0.01, -0.2, 3.0),
            angular_velocity: Vec3::splat(1.0),
            at_rest: true,
        };
        let q = quantize_state(&s);
        assert_eq!((q.linear_velocity, q.angular_velocity), ([0; 3], [0; 3]));
        let back = dequantize_state(&QuantizedState {
            linear_velocity: [5; 3],
            ..q
        });
        assert_eq!((back.linear_velocity, back.angular_velocity), (Vec3::ZERO, Vec3::ZERO));
    }

    #[test]
    fn garbage_never_panics() {
        let s = BodyState {
            position: Vec3::new(f32::NAN, f32::INFINITY, f32::NEG_INFINITY),
            rotation: Quat::from_xyzw(f32::NAN, 0.0, 0.0, 1.0),
            linear_velocity: Vec3::splat(f32::NAN),
            angular_velocity: Vec3::splat(f32::INFINITY),
            at_rest: false,
        };
        let back = quantize_body_state(&s);
        assert!(back.position.is_finite() && back.linear_velocity.is_finite() && back.angular_velocity.is_finite());
        assert_eq!(back.rotation, Quat::IDENTITY);
        assert_eq!(
            quantize_rotation(Quat::from_xyzw(0.0, 0.0, 0.0, 0.0)),
            QuantizedRotation::IDENTITY
        );
        let wild = QuantizedRotation {
            largest: 200,
            smallest_three: [i16::MAX, i16::MIN, i16::MAX],
        };
        assert!((dequantize_rotation(&wild).length() - 1.0).abs() < 1e-6);
    }

    #[test]
    fn bit_budget() {
        assert_eq!(STATE_BITS_AT_REST, 111);
        assert_eq!(STATE_BITS_AWAKE, 210);
    }
}
