// The main pass and the shadow pass of Tumble's renderer (engine/src/render). Compiled to SPIR-V by
// engine/build.rs with naga. Boxes (cubes, avatar parts, contact markers) are one instanced draw with no vertex
// buffer: the 24 corners come from the vertex index (through a 36-entry index list), the box from the instance
// storage buffer. Multiview: the view
// index picks the eye's matrix, so one draw fills every layer of the target.

struct Frame {
    view_proj: array<mat4x4<f32>, 2>,
    inv_view_proj: array<mat4x4<f32>, 2>,
    eye_position: array<vec4<f32>, 2>,
    light_view_proj: mat4x4<f32>,
    // xyz: unit vector from the scene towards the light.
    light_towards: vec4<f32>,
    // x: debug bits (1 = tint resting cubes), y: shadow map size in texels, z: 1 when each view shows its own
    // world (some boxes are flagged for one view) and the shadow map is split into a half per view, w: the boxes
    // drawn (the shadow pass of a split frame draws each twice, once per half).
    params: vec4<u32>,
    // x: the cubes among the boxes (the first ones: their flags are masked to the caller's, and the order buffer
    // says which of them each instance draws).
    counts: vec4<u32>,
    // Per view, the ground's triangles (engine/src/render/ground.rs): clip positions of points on the plane.
    ground: array<array<vec4<f32>, 12>, 2>,
}

// engine::render::CubeInstance as it lies in memory (64 bytes): the renderer copies cubes as they are.
struct Instance {
    rotation: vec4<f32>,
    position: vec3<f32>,
    half_x: f32,
    half_y: f32,
    half_z: f32,
    red: f32,
    green: f32,
    blue: f32,
    flags: u32,
}

@group(0) @binding(0) var<uniform> frame: Frame;
@group(0) @binding(1) var<storage, read> instances: array<Instance>;
@group(0) @binding(2) var shadow_map: texture_depth_2d;
@group(0) @binding(3) var shadow_sampler: sampler_comparison;
// The cubes' draw order, nearest first (engine/src/render/draw_order.rs): instance i draws cube order[i].
@group(0) @binding(4) var<storage, read> order: array<u32>;

const FLAG_SELECTED: u32 = 1u;
const FLAG_HELD: u32 = 2u;
const FLAG_RESTING: u32 = 4u;
const FLAG_UNLIT: u32 = 8u;
const FLAG_FIRST_VIEW_ONLY: u32 = 16u;
const FLAG_SECOND_VIEW_ONLY: u32 = 32u;
const DEBUG_RESTING: u32 = 1u;
// The flags a caller may set on a cube (engine::render::CUBE_FLAGS); the rest are the renderer's own.
const CUBE_FLAGS: u32 = 55u;

// A box as the shaders use it.
struct Box {
    position: vec3<f32>,
    rotation: vec4<f32>,
    half_extents: vec3<f32>,
    colour: vec3<f32>,
    flags: u32,
}

// Box `index` of the frame's records, a cube's flags masked to the caller's. Rotations arrive normalised (the
// renderer normalises a frame's cubes on the CPU when any is not): normalising them here left every box out of
// the second view on lavapipe (Mesa 22.3).
fn box_at(index: u32) -> Box {
    let r = instances[index];
    var flags = r.flags;
    if (index < frame.counts.x) {
        flags = flags & CUBE_FLAGS;
    }
    return Box(r.position, r.rotation, vec3<f32>(r.half_x, r.half_y, r.half_z),
               vec3<f32>(r.red, r.green, r.blue), flags);
}

// The record instance `instance` of the main pass draws: cubes in their draw order, then the other boxes.
fn drawn_box(instance: u32) -> Box {
    if (instance < frame.counts.x) {
        return box_at(order[instance]);
    }
    return box_at(instance);
}
// A clip position outside the view volume: a box's 36 corners all placed here make no triangle that covers a pixel.
const NOWHERE: vec4<f32> = vec4<f32>(2.0, 2.0, 2.0, 1.0);

// Whether a box with these flags is drawn in view (or shadow-map half) `view`.
fn shown_in(flags: u32, view: u32) -> bool {
    if (view == 0u) {
        return (flags & FLAG_SECOND_VIEW_ONLY) == 0u;
    }
    return (flags & FLAG_FIRST_VIEW_ONLY) == 0u;
}

fn rotate(q: vec4<f32>, v: vec3<f32>) -> vec3<f32> {
    let t = 2.0 * cross(q.xyz, v);
    return v + q.w * t + cross(q.xyz, t);
}

// One corner of a unit box (coordinates in -1..1) and its face normal, for vertex 0..23: four per face, drawn
// through the box's index list (engine/src/render/renderer.rs: BOX_INDICES, two triangles 0 1 2 and 0 2 3 per face),
// so each corner is shaded once rather than once per triangle. Each face has a normal n and two tangents with
// cross(t1, t2) = n, so (u, v) in the order below winds counter-clockwise seen from outside.
fn box_corner(vertex: u32) -> array<vec3<f32>, 2> {
    var normals = array<vec3<f32>, 6>(
        vec3<f32>(1.0, 0.0, 0.0), vec3<f32>(-1.0, 0.0, 0.0), vec3<f32>(0.0, 1.0, 0.0),
        vec3<f32>(0.0, -1.0, 0.0), vec3<f32>(0.0, 0.0, 1.0), vec3<f32>(0.0, 0.0, -1.0));
    var tangent1 = array<vec3<f32>, 6>(
        vec3<f32>(0.0, 1.0, 0.0), vec3<f32>(0.0, 0.0, 1.0), vec3<f32>(0.0, 0.0, 1.0),
        vec3<f32>(1.0, 0.0, 0.0), vec3<f32>(1.0, 0.0, 0.0), vec3<f32>(0.0, 1.0, 0.0));
    var tangent2 = array<vec3<f32>, 6>(
        vec3<f32>(0.0, 0.0, 1.0), vec3<f32>(0.0, 1.0, 0.0), vec3<f32>(1.0, 0.0, 0.0),
        vec3<f32>(0.0, 0.0, 1.0), vec3<f32>(0.0, 1.0, 0.0), vec3<f32>(1.0, 0.0, 0.0));
    var corners = array<vec2<f32>, 4>(
        vec2<f32>(-1.0, -1.0), vec2<f32>(1.0, -1.0), vec2<f32>(1.0, 1.0), vec2<f32>(-1.0, 1.0));
    let face = vertex / 4u;
    let uv = corners[vertex % 4u];
    let n = normals[face];
    return array<vec3<f32>, 2>(n + uv.x * tangent1[face] + uv.y * tangent2[face], n);
}

struct BoxOut {
    @builtin(position) clip: vec4<f32>,
    // Where the point is in the shadow map (see `shadow_coord`): affine in the world position, so interpolating it
    // is exact and the fragment shader does no matrix work.
    @location(0) shadow: vec3<f32>,
    @location(1) local: vec3<f32>,
    // Per box and face, worked out once per vertex rather than per pixel (lavapipe shades every sample of a
    // multisampled pixel): the face's normal, how squarely it faces the light (0 when turned away: no shadow
    // lookups), the albedo, what the box's state does to the shaded colour (colour * scale + add), the edge band's
    // width, and whether it is lit at all.
    @location(2) @interpolate(flat) normal: vec3<f32>,
    @location(3) @interpolate(flat) facing_light: f32,
    @location(4) @interpolate(flat) albedo: vec3<f32>,
    @location(5) @interpolate(flat) scale: f32,
    @location(6) @interpolate(flat) add: vec3<f32>,
    @location(7) @interpolate(flat) edge_width: f32,
    @location(8) @interpolate(flat) unlit: u32,
}

@vertex
fn vs_box(@builtin(vertex_index) vertex: u32, @builtin(instance_index) instance: u32,
          @builtin(view_index) view: u32) -> BoxOut {
    let box = drawn_box(instance);
    let corner = box_corner(vertex);
    let world = box.position + rotate(box.rotation, corner[0] * box.half_extents);
    var out: BoxOut;
    out.clip = frame.view_proj[view] * vec4<f32>(world, 1.0);
    if (!shown_in(box.flags, view)) {
        out.clip = NOWHERE;
    }
    out.local = corner[0];
    out.normal = rotate(box.rotation, corner[1]);
    out.shadow = shadow_coord(world, out.normal);
    out.facing_light = max(dot(out.normal, frame.light_towards.xyz), 0.0);
    var albedo = box.colour;
    if ((frame.params.x & DEBUG_RESTING) != 0u && (box.flags & FLAG_RESTING) != 0u) {
        albedo = albedo * vec3<f32>(0.45, 0.55, 1.0);
    }
    out.albedo = albedo;
    out.scale = 1.0;
    out.add = vec3<f32>(0.0, 0.0, 0.0);
    if ((box.flags & FLAG_HELD) != 0u) {
        out.scale = 0.55;
        out.add = vec3<f32>(1.0, 0.85, 0.3) * 0.45;
    } else if ((box.flags & FLAG_SELECTED) != 0u) {
        out.add = vec3<f32>(0.18, 0.18, 0.12);
    }
    out.edge_width = 0.045 / max(min(box.half_extents.x, min(box.half_extents.y, box.half_extents.z)), 0.01);
    out.unlit = box.flags & FLAG_UNLIT;
    return out;
}

// A point's place in the shadow map, pushed off its surface along the normal (no acne on faces that graze the
// light): the map's u, v (0..1 over the whole map) and the depth to compare, less the bias.
fn shadow_coord(world: vec3<f32>, normal: vec3<f32>) -> vec3<f32> {
    let clip = frame.light_view_proj * vec4<f32>(world + normal * 0.02, 1.0);
    let ndc = clip.xyz / clip.w;
    return vec3<f32>(ndc.xy * 0.5 + vec2<f32>(0.5, 0.5), ndc.z - 0.0015);
}

// Fraction of the light that reaches a point seen in `view`, from its shadow map coordinates: one tap of the
// sampler's 2x2 comparison filter (each further tap costs lavapipe as much as the rest of the box's shading). A
// split frame keeps each view's shadows in its own half of the map (left half: first view).
fn sunlight(coord: vec3<f32>, view: u32) -> f32 {
    var uv = coord.xy;
    if (uv.x <= 0.0 || uv.x >= 1.0 || uv.y <= 0.0 || uv.y >= 1.0 || coord.z >= 1.0) {
        return 1.0;
    }
    if (frame.params.z != 0u) {
        uv.x = (uv.x + f32(view)) * 0.5;
    }
    return textureSampleCompareLevel(shadow_map, shadow_sampler, uv, coord.z);
}

// `facing`: how squarely the surface faces the light (max(n.l, 0)); the shadow map is read only where it is lit.
fn shade(albedo: vec3<f32>, coord: vec3<f32>, normal_y: f32, facing: f32, view: u32) -> vec3<f32> {
    var direct = 0.0;
    if (facing > 0.0) {
        direct = facing * sunlight(coord, view);
    }
    // Hemisphere ambient: brighter from above, so faces turned away from the sun still read as solid.
    let sky = 0.30 + 0.15 * normal_y;
    return albedo * (sky + 0.85 * direct);
}

@fragment
@early_depth_test(force)
fn fs_box(in: BoxOut, @builtin(view_index) view: u32) -> @location(0) vec4<f32> {
    if (in.unlit != 0u) {
        return vec4<f32>(in.albedo, 1.0);
    }
    var colour = shade(in.albedo, in.shadow, in.normal.y, in.facing_light, view);
    // Darken the box's edges so cubes in a stack stay apart: the second largest local coordinate nears 1 there.
    let a = abs(in.local);
    let edge = max(min(a.x, a.y), max(min(a.y, a.z), min(a.x, a.z)));
    colour = colour * (1.0 - 0.45 * smoothstep(1.0 - in.edge_width, 1.0, edge));
    return vec4<f32>(colour * in.scale + in.add, 1.0);
}

// The ground is the plane y = 0: a few triangles covering exactly the part of the view where it is seen, their
// corners at the plane's depth (computed on the CPU, engine/src/render/ground.rs), so depth interpolates exactly
// and early depth tests skip every ground pixel behind a cube. The fragment finds its point on the plane from its
// view ray. Every corner lies inside the view: nothing to clip (lavapipe in Mesa 22 drops clipped triangles in
// multiview layers other than the first).
struct GroundOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) world: vec3<f32>,
    @location(1) shadow: vec3<f32>,
}

@vertex
fn vs_ground(@builtin(vertex_index) vertex: u32, @builtin(view_index) view: u32) -> GroundOut {
    let corner = frame.ground[view][vertex];
    let world4 = frame.inv_view_proj[view] * corner;
    let world = vec3<f32>(world4.x / world4.w, 0.0, world4.z / world4.w);
    var out: GroundOut;
    out.clip = corner;
    out.world = world;
    out.shadow = shadow_coord(world, vec3<f32>(0.0, 1.0, 0.0));
    return out;
}

@fragment
@early_depth_test(force)
fn fs_ground(in: GroundOut, @builtin(view_index) view: u32) -> @location(0) vec4<f32> {
    let world = in.world;
    let p = world.xz;
    // Grid lines one metre apart, a pixel wide whatever the distance (screen-space derivatives), every fifth
    // line stronger; both fade out far away where they would only shimmer.
    let w = max(fwidth(p), vec2<f32>(1e-4, 1e-4));
    let g1 = abs(fract(p - 0.5) - 0.5) / w;
    let line1 = 1.0 - min(min(g1.x, g1.y), 1.0);
    let g5 = abs(fract(p / 5.0 - 0.5) - 0.5) * 5.0 / w;
    let line5 = 1.0 - min(min(g5.x, g5.y), 1.0);
    let eye = frame.eye_position[view].xyz;
    let fade = clamp(1.0 - distance(eye, world) / 60.0, 0.0, 1.0);
    let base = vec3<f32>(0.42, 0.44, 0.40);
    let albedo = mix(base, vec3<f32>(0.20, 0.21, 0.19), max(line1 * 0.6, line5) * fade);
    return vec4<f32>(shade(albedo, in.shadow, 1.0, max(frame.light_towards.y, 0.0), view), 1.0);
}

@vertex
fn vs_shadow(@builtin(vertex_index) vertex: u32, @builtin(instance_index) instance: u32) -> @builtin(position) vec4<f32> {
    // A split frame draws the boxes twice: instances 0..n into the left half (first view), n..2n the right.
    let split = frame.params.z != 0u;
    let count = max(frame.params.w, 1u);
    var half = 0u;
    var index = instance;
    if (split) {
        half = instance / count;
        index = instance % count;
    }
    let box = box_at(index);
    if (split && !shown_in(box.flags, half)) {
        return NOWHERE;
    }
    let corner = box_corner(vertex);
    let world = box.position + rotate(box.rotation, corner[0] * box.half_extents);
    var clip = frame.light_view_proj * vec4<f32>(world, 1.0);
    if (split) {
        // The light's box (x in -w..w) squeezed into its half: -w..0 for the first view, 0..w for the second.
        clip.x = clip.x * 0.5 + (f32(half) - 0.5) * clip.w;
    }
    return clip;
}
