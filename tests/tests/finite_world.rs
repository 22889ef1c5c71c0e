//! Inputs cannot poison the world: values that would make a mass, an inertia or a state non-finite are refused
//! with a typed error, and no step turns a finite world into NaN, however extreme the finite inputs it is given
//! (speeds at the clamp, bodies piled into one point, mass ratios of 10¹⁶, bodies at the edge of the world).

use glam::{Quat, Vec3};
use tumble_engine::physics::body::{
    MAX_DENSITY_KG_M3, MAX_HALF_EXTENT_M, MAX_POSITION_M, MIN_DENSITY_KG_M3, MIN_HALF_EXTENT_M,
};
use tumble_engine::physics::{BodyDesc, BodyId, BodyKind, BodyState, PhysicsError, World, WorldConfig};

/// A small deterministic generator (64-bit LCG, high bits out): the same numbers on every run and platform.
struct Lcg(u64);

impl Lcg {
    fn next_unit(&mut self) -> f32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 40) as f32 / (1u64 << 24) as f32
    }

    /// Uniform in -r..r.
    fn symmetric(&mut self, r: f32) -> f32 {
        (self.next_unit() * 2.0 - 1.0) * r
    }

    fn vec(&mut self, r: f32) -> Vec3 {
        Vec3::new(self.symmetric(r), self.symmetric(r), self.symmetric(r))
    }

    fn rotation(&mut self) -> Quat {
        let q = Quat::from_xyzw(
            self.symmetric(1.0),
            self.symmetric(1.0),
            self.symmetric(1.0),
            self.symmetric(1.0),
        );
        if q.length() < 0.1 {
            Quat::IDENTITY
        } else {
            q.normalize()
        }
    }
}

fn assert_finite(world: &World, what: &str, step: u32) {
    for id in world.body_ids() {
        let s = world.state(id).unwrap();
        let floats = [
            s.position.to_array(),
            s.linear_velocity.to_array(),
            s.angular_velocity.to_array(),
        ];
        assert!(
            floats.iter().flatten().all(|x| x.is_finite()) && s.rotation.is_finite() && s.rotation.is_normalized(),
            "{what}, step {step}: body {} became {s:?}",
            id.0
        );
    }
    let report = world.report();
    assert!(report.max_penetration.is_finite(), "{what}, step {step}: penetration");
    for c in &report.contacts {
        assert!(
            c.normal.is_finite() && c.max_normal_impulse.is_finite() && c.approach_speed.is_finite(),
            "{what}, step {step}: contact {c:?}"
        );
    }
}

fn run_checked(world: &mut World, what: &str, steps: u32) {
    for step in 0..steps {
        world.step();
        assert_finite(world, what, step);
    }
}

#[test]
fn add_body_refuses_what_would_give_no_or_infinite_inverse_mass() {
    let mut world = World::new(WorldConfig::default()).unwrap();
    let before = world.checksum();
    let smallest = Vec3::splat(MIN_HALF_EXTENT_M);
    for (density, half) in [
        (f32::MIN_POSITIVE, smallest),
        (1.0e-30, Vec3::splat(1.0)),
        (MIN_DENSITY_KG_M3 * 0.5, smallest),
        (0.0, Vec3::splat(0.5)),
        (-1.0, Vec3::splat(0.5)),
        (MAX_DENSITY_KG_M3 * 2.0, Vec3::splat(0.5)),
        (f32::MAX, Vec3::splat(MAX_HALF_EXTENT_M)),
        (f32::NAN, Vec3::splat(0.5)),
    ] {
        let desc = BodyDesc {
            density,
            half_extents: half,
            ..BodyDesc::default()
        };
        let refused = world.add_body(&desc);
        assert!(
            matches!(
                refused,
                Err(PhysicsError::OutOfRange { .. } | PhysicsError::NotFinite { .. })
            ),
            "density {density}, half extents {half}: {refused:?}"
        );
    }
    // A kinematic body may be massless (density 0), but not of negative or absurd density.
    for density in [-1.0, f32::MIN_POSITIVE, MAX_DENSITY_KG_M3 * 2.0] {
        let desc = BodyDesc {
            kind: BodyKind::Kinematic,
            density,
            ..BodyDesc::default()
        };
        assert!(world.add_body(&desc).is_err(), "kinematic density {density}");
    }
    assert_eq!(world.body_count(), 0);
    assert_eq!(world.checksum(), before);
    // The extremes that are allowed give finite, positive inverse masses: the lightest smallest and the heaviest
    // largest box both simulate.
    for (density, half) in [
        (MIN_DENSITY_KG_M3, smallest),
        (MAX_DENSITY_KG_M3, Vec3::splat(MAX_HALF_EXTENT_M)),
    ] {
        let id = world
            .add_body(&BodyDesc {
                density,
                half_extents: half,
                position: Vec3::new(world.body_count() as f32 * 40.0, 20.0, 0.0),
                ..BodyDesc::default()
            })
            .unwrap();
        assert!(world.state(id).is_ok());
    }
    run_checked(&mut world, "extreme densities", 200);
}

#[test]
fn set_state_and_kinematic_targets_refuse_non_finite_values() {
    let mut world = World::new(WorldConfig::default()).unwrap();
    let cube = world.add_body(&BodyDesc::default()).unwrap();
    let hand = world
        .add_body(&BodyDesc {
            kind: BodyKind::Kinematic,
            density: 0.0,
            position: Vec3::new(3.0, 1.0, 0.0),
            ..BodyDesc::default()
        })
        .unwrap();
    let before = world.checksum();
    let good = world.state(cube).unwrap();
    for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        let states = [
            BodyState {
                position: Vec3::new(0.0, bad, 0.0),
                ..good
            },
            BodyState {
                rotation: Quat::from_xyzw(0.0, 0.0, bad, 1.0),
                ..good
            },
            BodyState {
                linear_velocity: Vec3::new(bad, 0.0, 0.0),
                ..good
            },
            BodyState {
                angular_velocity: Vec3::new(0.0, 0.0, bad),
                ..good
            },
        ];
        for s in &states {
            assert!(
                matches!(world.set_state(cube, s), Err(PhysicsError::NotFinite { .. })),
                "{s:?}"
            );
        }
        let p = Vec3::new(bad, 1.0, 0.0);
        assert!(matches!(
            world.set_kinematic_target(hand, p, Quat::IDENTITY),
            Err(PhysicsError::NotFinite { .. })
        ));
        let q = Quat::from_xyzw(bad, 0.0, 0.0, 1.0);
        assert!(matches!(
            world.set_kinematic_target(hand, Vec3::ONE, q),
            Err(PhysicsError::NotFinite { .. })
        ));
    }
    // Finite but outside the world.
    let far = BodyState {
        position: Vec3::new(MAX_POSITION_M * 2.0, 0.0, 0.0),
        ..good
    };
    assert!(matches!(
        world.set_state(cube, &far),
        Err(PhysicsError::OutOfRange { .. })
    ));
    assert_eq!(world.checksum(), before, "refused input changed the world");
}

#[test]
fn a_pile_of_cubes_in_one_point_at_the_speed_limit_stays_finite() {
    let mut rng = Lcg(7);
    let mut world = World::new(WorldConfig::default()).unwrap();
    for k in 0..24 {
        // Half of them exactly on top of each other (same centre and rotation), half scattered within 10 cm.
        let exact = k % 2 == 0;
        world
            .add_body(&BodyDesc {
                position: Vec3::new(0.0, 0.5, 0.0) + if exact { Vec3::ZERO } else { rng.vec(0.1) },
                rotation: if exact { Quat::IDENTITY } else { rng.rotation() },
                linear_velocity: rng.vec(1.0e6),
                angular_velocity: rng.vec(1.0e6),
                ..BodyDesc::default()
            })
            .unwrap();
    }
    run_checked(&mut world, "pile in one point", 300);
}

#[test]
fn extreme_mass_ratios_sizes_and_depths_stay_finite() {
    let mut world = World::new(WorldConfig::default()).unwrap();
    // A 32 m slab of the densest material on a 2 cm cube of the lightest, and the reverse, both starting deep
    // inside the ground and each other.
    let bodies = [
        (
            MAX_DENSITY_KG_M3,
            Vec3::new(MAX_HALF_EXTENT_M, 0.5, MAX_HALF_EXTENT_M),
            Vec3::new(0.0, 0.2, 0.0),
        ),
        (
            MIN_DENSITY_KG_M3,
            Vec3::splat(MIN_HALF_EXTENT_M),
            Vec3::new(0.3, 0.0, 0.2),
        ),
        (
            MIN_DENSITY_KG_M3,
            Vec3::splat(MAX_HALF_EXTENT_M),
            Vec3::new(40.0, 3.0, 0.0),
        ),
        (
            MAX_DENSITY_KG_M3,
            Vec3::splat(MIN_HALF_EXTENT_M),
            Vec3::new(40.0, 3.0, 0.0),
        ),
        (
            MAX_DENSITY_KG_M3,
            Vec3::new(MIN_HALF_EXTENT_M, MAX_HALF_EXTENT_M, MIN_HALF_EXTENT_M),
            Vec3::new(-40.0, -10.0, 0.0),
        ),
    ];
    for (density, half, position) in bodies {
        world
            .add_body(&BodyDesc {
                density,
                half_extents: half,
                position,
                rotation: Quat::from_rotation_z(0.3) * Quat::from_rotation_x(0.2),
                linear_velocity: Vec3::new(50.0, -50.0, 0.0),
                angular_velocity: Vec3::new(0.0, 50.0, 50.0),
                ..BodyDesc::default()
            })
            .unwrap();
    }
    run_checked(&mut world, "mass ratios", 300);
}

#[test]
fn bodies_at_the_edge_of_the_world_and_a_wild_kinematic_body_stay_finite() {
    let mut rng = Lcg(11);
    let config = WorldConfig {
        ground_height: None,
        ..WorldConfig::default()
    };
    let mut world = World::new(config).unwrap();
    let edge = MAX_POSITION_M - 1.0;
    for corner in [
        Vec3::splat(edge),
        Vec3::new(-edge, edge, -edge),
        Vec3::new(edge, -edge, 0.0),
    ] {
        for k in 0..3 {
            world
                .add_body(&BodyDesc {
                    position: corner + Vec3::X * (k as f32 * 0.9) * -corner.x.signum(),
                    linear_velocity: -corner.normalize() * 50.0,
                    angular_velocity: rng.vec(50.0),
                    ..BodyDesc::default()
                })
                .unwrap();
        }
    }
    let hand = world
        .add_body(&BodyDesc {
            kind: BodyKind::Kinematic,
            position: Vec3::splat(edge),
            ..BodyDesc::default()
        })
        .unwrap();
    for step in 0..300 {
        // Targets anywhere in the world every other step, and every tenth step a body thrown anew.
        let target = if step % 2 == 0 {
            rng.vec(edge)
        } else {
            world.state(hand).unwrap().position + rng.vec(0.01)
        };
        world.set_kinematic_target(hand, target, rng.rotation()).unwrap();
        if step % 10 == 0 {
            let id = BodyId(step / 10 % 9);
            let mut s = world.state(id).unwrap();
            s.linear_velocity = rng.vec(1.0e9);
            s.angular_velocity = rng.vec(1.0e9);
            s.at_rest = false;
            // A body that has flown out of the world keeps flying, but no state may be set there.
            let set = world.set_state(id, &s);
            assert!(matches!(set, Ok(()) | Err(PhysicsError::OutOfRange { .. })), "{set:?}");
        }
        world.step();
        assert_finite(&world, "edge of the world", step);
    }
}

#[test]
fn a_world_configuration_that_could_overflow_is_refused() {
    let finite_but_absurd = [
        WorldConfig {
            gravity: Vec3::new(0.0, -1.0e30, 0.0),
            ..WorldConfig::default()
        },
        WorldConfig {
            max_depenetration_velocity: 1.0e30,
            ..WorldConfig::default()
        },
        WorldConfig {
            ground_height: Some(1.0e30),
            ..WorldConfig::default()
        },
        WorldConfig {
            ground_friction: 1.0e30,
            ..WorldConfig::default()
        },
        WorldConfig {
            restitution_threshold: -1.0,
            ..WorldConfig::default()
        },
    ];
    for config in finite_but_absurd {
        assert!(
            matches!(World::new(config), Err(PhysicsError::InvalidConfig(_))),
            "{config:?}"
        );
    }
}
