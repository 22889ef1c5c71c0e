//! The image test: a fixed scene rendered offscreen (lavapipe is enough) and checked two ways.
//!
//! 1. Facts computed here, independent of the reference: where each front-row cube's centre projects, the pixel
//!    has that cube's authority colour (lit, so by which channels dominate, not exact values); points on the ground
//!    show the neutral ground, not the sky; the frame is neither black nor flat.
//! 2. Against the committed reference `tests/reference/authority_row_320x240.png`, with a perceptual tolerance:
//!    each pixel's colour difference is ΔE*76 in CIELAB (D65); a pixel differs when ΔE > [`PIXEL_DELTA_E`]
//!    (clearly visible, well above drivers' rounding), and the test fails when more than [`MAX_DIFFERING_FRACTION`]
//!    of the pixels differ (room for edge pixels that another rasterizer covers differently). A failing run writes
//!    the image it got next to the test binary's temp dir. `TUMBLE_UPDATE_REFERENCE=1` rewrites the reference.
//!
//! Without Vulkan the test fails with the renderer's message naming the packages (`make test` installs them).

use std::path::{Path, PathBuf};

use glam::Vec3;
use tumble_engine::physics::WorldConfig;
use tumble_engine::scene::parse_scene;
use tumble_game::screenshot::{project, render_cubes, world_cubes, write_png, Shot, ShotOptions};

/// ΔE*76 above which two pixels count as different.
const PIXEL_DELTA_E: f32 = 6.0;
/// Largest fraction of differing pixels the reference comparison allows.
const MAX_DIFFERING_FRACTION: f32 = 0.01;

const WIDTH: u32 = 320;
const HEIGHT: u32 = 240;

/// A row of five cubes, one per authority (none, players 1–4), and a short tower behind them.
const SCENE: &str = r#"
name = "authority_row"
[[cube]]
position = [-3.0, 0.5, 0.0]
[[cube]]
position = [-1.5, 0.5, 0.0]
[[cube]]
position = [0.0, 0.5, 0.0]
[[cube]]
position = [1.5, 0.5, 0.0]
[[cube]]
position = [3.0, 0.5, 0.0]
[[tower]]
base = [0.0, 0.0, -3.0]
height = 3
"#;

/// Authority per body: 0 (none), 1..=4 for the row; the tower none, blue, red.
const AUTHORITY: [u8; 8] = [0, 1, 2, 3, 4, 0, 1, 2];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Hue {
    Neutral,
    Blue,
    Red,
    Green,
    Yellow,
    Other,
}

fn hue(p: [u8; 3]) -> Hue {
    let [r, g, b] = p.map(i32::from);
    let margin = 35;
    if r > b + margin && g > b + margin && (r - g).abs() < 60 {
        Hue::Yellow
    } else if b > r + margin && b > g + margin / 2 {
        Hue::Blue
    } else if r > g + margin && r > b + margin {
        Hue::Red
    } else if g > r + margin && g > b + margin {
        Hue::Green
    } else if r.max(g).max(b) - r.min(g).min(b) < 30 {
        Hue::Neutral
    } else {
        Hue::Other
    }
}

fn pixel(shot: &Shot, x: u32, y: u32) -> [u8; 3] {
    let i = ((y * shot.width + x) * 4) as usize;
    [shot.rgba[i], shot.rgba[i + 1], shot.rgba[i + 2]]
}

fn render(stereo: bool, width: u32) -> Shot {
    let scene = parse_scene(SCENE, "authority_row.toml").expect("the test scene parses");
    let mut world = scene
        .build_world(WorldConfig::default())
        .expect("the test scene builds");
    // Let the cubes settle onto the ground (they start exactly on it).
    for _ in 0..30 {
        world.step();
    }
    let cubes = world_cubes(&world, &AUTHORITY).expect("cubes");
    let shot = render_cubes(&cubes, &ShotOptions { width, height: HEIGHT, stereo }).unwrap_or_else(|e| {
        panic!("rendering failed: {e}\n(the image test needs Vulkan; `make test` installs libvulkan1 and mesa-vulkan-drivers)")
    });
    // Rendered with the Vulkan validation layers on (a debug build where they are installed): nothing reported.
    assert!(
        tumble_engine::render::validation_layers_installed(),
        "the image tests run under the Vulkan validation layers: install vulkan-validationlayers (`make test` does)"
    );
    assert_eq!(
        tumble_engine::render::validation_messages(),
        0,
        "the validation layers reported problems (logged at warn/error, target \"vulkan\")"
    );
    shot
}

/// Checks the facts for the view `v` drawn at pixels `x0..x0 + w`.
fn check_facts(shot: &Shot, v: usize, x0: u32, w: u32) {
    let view = &shot.views[v];
    let expected = [Hue::Neutral, Hue::Blue, Hue::Red, Hue::Green, Hue::Yellow];
    for (i, want) in expected.iter().enumerate() {
        let centre = Vec3::new(-3.0 + 1.5 * i as f32, 0.5, 0.0);
        let (x, y) = project(view, centre, x0, w, shot.height).expect("cube in front of the camera");
        assert!(
            (x0 as f32..(x0 + w) as f32).contains(&x) && (0.0..shot.height as f32).contains(&y),
            "cube {i} off screen"
        );
        let p = pixel(shot, x as u32, y as u32);
        assert_eq!(
            hue(p),
            *want,
            "view {v}: cube {i} at ({x:.0}, {y:.0}) is {p:?}, expected {want:?}"
        );
    }
    // Ground in front of the row and to its side: neutral grey, and not sky-blue.
    for point in [
        Vec3::new(0.0, 0.0, 2.5),
        Vec3::new(-4.5, 0.0, 2.0),
        Vec3::new(4.5, 0.0, -1.5),
    ] {
        let (x, y) = project(view, point, x0, w, shot.height).expect("ground in front of the camera");
        let p = pixel(shot, x as u32, y as u32);
        assert_eq!(
            hue(p),
            Hue::Neutral,
            "view {v}: ground at {point} ({x:.0}, {y:.0}) is {p:?}"
        );
        assert!(p.iter().all(|&c| c > 60), "view {v}: ground at {point} too dark: {p:?}");
    }
}

/// Not black, not flat, no garbage: bright enough on average, hardly any pure black, many distinct colours.
fn check_sane(shot: &Shot) {
    let n = (shot.width * shot.height) as usize;
    assert_eq!(shot.rgba.len(), n * 4);
    let mut sum = 0u64;
    let mut black = 0usize;
    let mut seen = std::collections::BTreeSet::new();
    for px in shot.rgba.chunks_exact(4) {
        sum += u64::from(px[0]) + u64::from(px[1]) + u64::from(px[2]);
        black += usize::from(px[..3].iter().all(|&c| c < 8));
        seen.insert([px[0], px[1], px[2]]);
        assert_eq!(px[3], 255, "alpha must be opaque");
    }
    let mean = sum as f32 / (3 * n) as f32;
    assert!(mean > 60.0, "mean brightness {mean:.1}: the frame is (nearly) black");
    assert!(black * 200 < n, "{black} of {n} pixels are black");
    assert!(
        seen.len() > 200,
        "only {} distinct colours: a flat or broken frame",
        seen.len()
    );
}

fn srgb_to_lab(p: [u8; 3]) -> [f32; 3] {
    let lin = p.map(|c| {
        let c = f32::from(c) / 255.0;
        if c <= 0.04045 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    });
    let x = (0.4124 * lin[0] + 0.3576 * lin[1] + 0.1805 * lin[2]) / 0.95047;
    let y = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2];
    let z = (0.0193 * lin[0] + 0.1192 * lin[1] + 0.9505 * lin[2]) / 1.08883;
    let f = |t: f32| {
        if t > 0.008856 {
            t.cbrt()
        } else {
            7.787 * t + 16.0 / 116.0
        }
    };
    let (fx, fy, fz) = (f(x), f(y), f(z));
    [116.0 * fy - 16.0, 500.0 * (fx - fy), 200.0 * (fy - fz)]
}

fn delta_e(a: [u8; 3], b: [u8; 3]) -> f32 {
    let (a, b) = (srgb_to_lab(a), srgb_to_lab(b));
    ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2) + (a[2] - b[2]).powi(2)).sqrt()
}

fn read_png(path: &Path) -> (u32, u32, Vec<u8>) {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut reader = png::Decoder::new(std::io::BufReader::new(file))
        .read_info()
        .expect("reference PNG header");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("reference PNG data");
    assert_eq!(info.color_type, png::ColorType::Rgba, "reference must be RGBA8");
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf)
}

fn reference_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/reference/authority_row_320x240.png")
}

#[test]
fn mono_frame_shows_cubes_in_authority_colours_on_the_ground() {
    let shot = render(false, WIDTH);
    assert_eq!((shot.width, shot.height), (WIDTH, HEIGHT));
    check_sane(&shot);
    check_facts(&shot, 0, 0, WIDTH);
}

#[test]
fn mono_frame_matches_the_reference() {
    let shot = render(false, WIDTH);
    let reference = reference_path();
    if std::env::var_os("TUMBLE_UPDATE_REFERENCE").is_some() {
        write_png(&reference, shot.width, shot.height, &shot.rgba).expect("writing the reference");
    }
    let (w, h, expected) = read_png(&reference);
    assert_eq!((w, h), (shot.width, shot.height), "reference size");
    let mut differing = 0usize;
    let mut worst = 0.0f32;
    for (a, b) in shot.rgba.chunks_exact(4).zip(expected.chunks_exact(4)) {
        let d = delta_e([a[0], a[1], a[2]], [b[0], b[1], b[2]]);
        worst = worst.max(d);
        differing += usize::from(d > PIXEL_DELTA_E);
    }
    let fraction = differing as f32 / (w * h) as f32;
    if fraction > MAX_DIFFERING_FRACTION {
        let got = Path::new(env!("CARGO_TARGET_TMPDIR")).join("authority_row_got.png");
        let _ = write_png(&got, shot.width, shot.height, &shot.rgba);
        panic!(
            "{differing} pixels ({:.2} %) differ from {} by ΔE > {PIXEL_DELTA_E} (allowed {:.2} %, worst ΔE {worst:.1}); \
             got {}",
            fraction * 100.0,
            reference.display(),
            MAX_DIFFERING_FRACTION * 100.0,
            got.display()
        );
    }
}

#[test]
fn stereo_frame_has_both_eyes_side_by_side() {
    let shot = render(true, 2 * WIDTH);
    assert_eq!((shot.width, shot.height), (2 * WIDTH, HEIGHT));
    assert_eq!(shot.views.len(), 2);
    check_sane(&shot);
    check_facts(&shot, 0, 0, WIDTH);
    check_facts(&shot, 1, WIDTH, WIDTH);
    // The eyes are 64 mm apart: the halves are alike but not identical.
    let differing = (0..HEIGHT)
        .flat_map(|y| (0..WIDTH).map(move |x| (x, y)))
        .filter(|&(x, y)| pixel(&shot, x, y) != pixel(&shot, x + WIDTH, y))
        .count();
    assert!(differing > 0, "left and right eyes are identical");
}

/// The desktop's network-model comparison draws two worlds in one stereo frame: each cube flagged for one view is
/// drawn there only, and its shadow falls there only; an unflagged cube shows in both.
#[test]
fn cubes_flagged_for_one_view_show_and_cast_shadows_in_that_view_only() {
    use tumble_engine::render::{authority_rgb, CubeInstance, CUBE_FIRST_VIEW_ONLY, CUBE_SECOND_VIEW_ONLY};
    let cube = |position: Vec3, authority: u8, flags: u32| CubeInstance {
        position,
        rotation: glam::Quat::IDENTITY,
        half_extents: Vec3::splat(0.5),
        colour: authority_rgb(authority),
        flags,
    };
    let (red, blue, shared) = (
        Vec3::new(-2.0, 0.5, 0.0),
        Vec3::new(2.0, 0.5, 0.0),
        Vec3::new(0.0, 0.5, -3.0),
    );
    // A cube floating 2 m up, second view only: its shadow on the ground lies along the light from its centre.
    let floating = Vec3::new(1.0, 2.0, 3.0);
    let light = tumble_engine::render::DEFAULT_LIGHT_DIRECTION;
    let shadow = floating + light * (floating.y / -light.y);
    let cubes = [
        cube(red, 2, CUBE_FIRST_VIEW_ONLY),
        cube(blue, 1, CUBE_SECOND_VIEW_ONLY),
        cube(shared, 4, 0),
        cube(floating, 3, CUBE_SECOND_VIEW_ONLY),
    ];
    let shot = render_cubes(
        &cubes,
        &ShotOptions {
            width: 2 * WIDTH,
            height: HEIGHT,
            stereo: true,
        },
    )
    .unwrap_or_else(|e| panic!("rendering failed: {e}"));
    assert_eq!(
        tumble_engine::render::validation_messages(),
        0,
        "the validation layers reported problems"
    );
    let at = |v: usize, point: Vec3| {
        let (x, y) = project(&shot.views[v], point, v as u32 * WIDTH, WIDTH, HEIGHT).expect("in front");
        pixel(&shot, x as u32, y as u32)
    };
    assert_eq!(hue(at(0, red)), Hue::Red, "the first view's own cube");
    assert_eq!(
        hue(at(1, red)),
        Hue::Neutral,
        "not in the second view: the ground behind it"
    );
    assert_eq!(hue(at(1, blue)), Hue::Blue, "the second view's own cube");
    assert_eq!(hue(at(0, blue)), Hue::Neutral, "not in the first view");
    assert_eq!(
        (hue(at(0, shared)), hue(at(1, shared))),
        (Hue::Yellow, Hue::Yellow),
        "in both"
    );
    assert_eq!(hue(at(1, floating)), Hue::Green);
    let (lit, shaded) = (at(0, shadow), at(1, shadow));
    assert_eq!(
        (hue(lit), hue(shaded)),
        (Hue::Neutral, Hue::Neutral),
        "ground at the shadow's centre"
    );
    let brightness = |p: [u8; 3]| p.iter().map(|&c| u32::from(c)).sum::<u32>();
    assert!(
        brightness(shaded) * 10 < brightness(lit) * 8,
        "the floating cube shadows the second view's ground ({shaded:?}) and not the first's ({lit:?})"
    );
}

/// One frame of `cubes` from above and to the side, on `offscreen`.
fn frame_of(
    offscreen: &mut tumble_engine::render::Offscreen,
    cubes: &[tumble_engine::render::CubeInstance],
) -> Vec<u8> {
    use tumble_engine::render::{FrameInput, View};
    let view = [View::look_at(
        glam::Vec3::new(0.0, 9.0, 9.0),
        glam::Vec3::ZERO,
        1.0,
        WIDTH as f32 / HEIGHT as f32,
    )];
    offscreen
        .render(&FrameInput::new(&view, cubes))
        .expect("the frame renders")
        .to_vec()
}

#[test]
fn a_cube_that_moved_casts_its_shadow_where_it_now_is() {
    use tumble_engine::render::{authority_rgb, CubeInstance, Offscreen};
    let cube = |x: f32| CubeInstance {
        position: glam::Vec3::new(x, 0.5, 0.0),
        rotation: glam::Quat::IDENTITY,
        half_extents: glam::Vec3::splat(0.5),
        colour: authority_rgb(1),
        flags: 0,
    };
    let (here, there) = ([cube(-2.0), cube(3.0)], [cube(-2.0), cube(1.0)]);
    // A renderer that keeps its shadow map while nothing moves must still redraw it when a cube moves: the second
    // frame of one renderer is the frame a fresh renderer draws.
    let mut kept = Offscreen::new(WIDTH, HEIGHT, 1).expect("a renderer");
    let first = frame_of(&mut kept, &here);
    assert_eq!(
        frame_of(&mut kept, &here),
        first,
        "a still frame drawn again is the same"
    );
    let after_move = frame_of(&mut kept, &there);
    let mut fresh = Offscreen::new(WIDTH, HEIGHT, 1).expect("a renderer");
    let want = frame_of(&mut fresh, &there);
    assert_ne!(want, first, "the moved cube shows (else this test could not fail)");
    let differing = want.chunks(4).zip(after_move.chunks(4)).filter(|(a, b)| a != b).count();
    assert_eq!(
        differing, 0,
        "{differing} pixels differ from a fresh renderer's frame: a stale shadow map"
    );
}

/// Frames of moving cubes submit the passes each slot recorded before (only the buffers' contents change), and
/// still draw what a fresh renderer draws; a frame with another number of cubes records again (the draw's count
/// is in the recording) and shows the new cube.
#[test]
fn recorded_passes_are_submitted_again_and_draw_what_a_fresh_renderer_draws() {
    use tumble_engine::render::{authority_rgb, CubeInstance, Offscreen};
    let cubes = |frame: u32, n: usize| -> Vec<CubeInstance> {
        (0..n)
            .map(|i| CubeInstance {
                position: glam::Vec3::new(i as f32 * 1.5 - 2.0, 0.5, 0.0),
                rotation: glam::Quat::from_rotation_y(0.05 * frame as f32 + i as f32),
                half_extents: glam::Vec3::splat(0.5),
                colour: authority_rgb(i as u8 % 4),
                flags: 0,
            })
            .collect()
    };
    let mut kept = Offscreen::new(WIDTH, HEIGHT, 1).expect("a renderer");
    let fresh = |c: &[CubeInstance]| frame_of(&mut Offscreen::new(WIDTH, HEIGHT, 1).expect("a renderer"), c);
    for frame in 0..10 {
        frame_of(&mut kept, &cubes(frame, 3));
    }
    let recorded = kept.renderer().passes_recorded();
    assert!(
        recorded >= 2,
        "each slot recorded its passes once at least ({recorded})"
    );
    for frame in 10..26 {
        let drawn = frame_of(&mut kept, &cubes(frame, 3));
        if frame % 5 == 0 {
            assert!(
                drawn == fresh(&cubes(frame, 3)),
                "frame {frame} differs from a fresh renderer's"
            );
        }
    }
    assert_eq!(
        kept.renderer().passes_recorded(),
        recorded,
        "moving cubes, same count: nothing recorded again"
    );
    let four = frame_of(&mut kept, &cubes(26, 4));
    assert_ne!(
        four,
        fresh(&cubes(26, 3)),
        "the fourth cube shows (else this test could not fail)"
    );
    assert!(
        four == fresh(&cubes(26, 4)),
        "the frame with a fourth cube differs from a fresh renderer's"
    );
    assert!(
        kept.renderer().passes_recorded() > recorded,
        "a new cube count records again"
    );
}

#[test]
fn a_rotation_that_is_not_a_unit_quaternion_draws_as_its_unit_one() {
    use tumble_engine::render::{authority_rgb, CubeInstance, Offscreen};
    let cube = |rotation: glam::Quat| CubeInstance {
        position: glam::Vec3::new(0.0, 0.5, 0.0),
        rotation,
        half_extents: glam::Vec3::splat(0.5),
        colour: authority_rgb(2),
        flags: 0,
    };
    let turn = glam::Quat::from_rotation_y(0.4);
    let mut offscreen = Offscreen::new(WIDTH, HEIGHT, 1).expect("a renderer");
    let unit = frame_of(&mut offscreen, &[cube(turn)]);
    let long = frame_of(&mut offscreen, &[cube(turn * 2.0)]);
    assert_eq!(
        long, unit,
        "the shader takes rotations as unit quaternions: the renderer normalises first"
    );
    assert_ne!(
        frame_of(&mut offscreen, &[cube(glam::Quat::IDENTITY)]),
        unit,
        "the turn shows"
    );
}
