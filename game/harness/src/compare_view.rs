//! `tumble compare --view`: the 2015 cube game played in the window over one network model, laid out as the
//! 2015 videos were — the player's own machine on the left, what the other side's machine shows on the right.
//! Both sides are one stereo frame: each cube is flagged for its view ([`CUBE_FIRST_VIEW_ONLY`] /
//! [`CUBE_SECOND_VIEW_ONLY`]), so each side draws, and casts shadows in, its own world only; one camera follows
//! the player's cube, so the right side's lag shows as its cube trailing behind the same spot.
//!
//! The run is the measured harness's own ([`ModelRun`]: the same machines, link simulator and bots as `tumble
//! compare`), stepped one 90 Hz frame at a time by the window's clock. The keyboard or gamepad plays the human's
//! seat ([`human_player`]: player 1, except in `predict`, where the person is the client that predicts, player 2);
//! bots play the others. Changing the model or the link restarts the game on a fresh run with the new settings
//! (a run's link is built with it).

use anyhow::Result;
use glam::{Quat, Vec3};
use tumble_engine::physics::{BodyId, World, WorldConfig};
use tumble_engine::render::{authority_rgb, CubeInstance, CUBE_FIRST_VIEW_ONLY, CUBE_SECOND_VIEW_ONLY};

use std::cell::RefCell;

use crate::compare::{load_field, CompareArgs, LockstepConfig, LockstepRun, Model};
use crate::compare_authority::{AuthorityConfig, AuthorityRun};
use crate::compare_predict::{world_config, PredictConfig, PredictRun};
use crate::compare_snapshots::{SnapshotConfig, SnapshotRun};
use tumble_game::cube_game::{CubeGame, CubeInput};
use tumble_game::desktop::mode::Mode;
use tumble_game::desktop::side_by_side::SideBySide;
use tumble_game::desktop::sim::SimStats;
use tumble_game::desktop::{run_with, DesktopError};
use tumble_game::draw::table_tint;
use tumble_game::fixed_step::FixedStep;
use tumble_game::interpolate::PoseBuffer;
use tumble_game::session::peer::Peer;

/// How long a run in the window may go on (s): a day, the harness's longest.
pub const VIEW_SECONDS: f64 = 86_400.0;
/// The camera behind the player's cube (m back along its facing, m up) and the point it looks at (m ahead).
pub const CAMERA_BACK_M: f32 = 11.0;
pub const CAMERA_UP_M: f32 = 8.0;
pub const CAMERA_AHEAD_M: f32 = 5.0;

/// One of the four models' runs, as `tumble compare` builds it.
pub enum ModelRun {
    Lockstep(Box<LockstepRun>),
    Snapshots(Box<SnapshotRun>),
    Predict(Box<PredictRun>),
    Authority(Box<AuthorityRun>),
}

/// What one side of the window shows after the last step: every body's pose (the previous step's too, for
/// blending) and colour (linear RGB).
#[derive(Default)]
pub struct Side {
    pub poses: PoseBuffer,
    pub colours: Vec<[f32; 3]>,
}

/// What the overlay reports of the running game.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LiveFigures {
    pub seconds: f64,
    /// Mean since the start, IP/UDP headers included: sent by the host (server) and by the guest (client).
    pub kbps_host: f64,
    pub kbps_guest: f64,
    /// Lockstep: frames any machine waited for an input; desyncs found by checksum.
    pub hitch_frames: Option<u64>,
    pub desyncs: Option<u64>,
    /// Predict: the client's corrections; authority: every peer's.
    pub corrections: Option<u64>,
    /// Snapshots: the client's playout delay (ms).
    pub playout_ms: Option<f64>,
}

/// The game in the window.
pub struct CompareView {
    /// The settings the run was built with (`model` is never `All`).
    pub settings: CompareArgs,
    pub scene_name: String,
    run: ModelRun,
    /// The field with the player cubes, as every machine starts: the bodies' sizes, and the right side's picture
    /// until a snapshot client has drawn its first snapshot.
    field: World,
    /// The player cubes and their facings.
    game: CubeGame,
    clock: FixedStep,
    pub left: Side,
    pub right: Side,
    /// The player (1-based) whose machine the right side shows: 2 unless another is chosen (keys 2–4, with more
    /// than two players).
    pub right_player: usize,
    pub steps: u64,
    /// Wall time of one frame of the run (every machine and the link), mean over the last window frame (ms).
    pub step_ms: f32,
    /// The last restart's error, for the overlay (the old game goes on).
    pub error: Option<String>,
    /// The settings as the overlay edits them (applied on restart). A cell: the overlay reads the view while it
    /// draws the panel that edits them.
    pub edit: RefCell<CompareArgs>,
}

/// `tumble compare --view`: opens the window on the game `args` describe and plays until it is closed.
pub fn run(args: &CompareArgs) -> Result<(), DesktopError> {
    run_with(args.frames, || {
        Ok(Mode::SideBySide(Box::new(
            CompareView::new(args).map_err(DesktopError::Compare)?,
        )))
    })
}

/// The player (1-based) the person plays under `model`: the predicting client in `predict`, else player 1.
pub fn human_player(model: Model) -> usize {
    if model == Model::Predict {
        2
    } else {
        1
    }
}

/// `settings` made runnable in the window: a model (not `All`: lockstep), two players where the model has two,
/// and a day to run.
fn normalised(settings: &CompareArgs) -> CompareArgs {
    let model = if settings.model == Model::All {
        Model::Lockstep
    } else {
        settings.model
    };
    let players = match model {
        Model::Snapshots | Model::Predict => 2,
        _ => settings.players,
    };
    CompareArgs {
        model,
        players,
        seconds: VIEW_SECONDS,
        ..settings.clone()
    }
}

impl CompareView {
    /// Loads the scene and starts the game `settings` describe.
    pub fn new(settings: &CompareArgs) -> Result<Self> {
        let settings = normalised(settings);
        let (run, field, game, scene_name) = build(&settings)?;
        let mut view = CompareView {
            edit: RefCell::new(settings.clone()),
            settings,
            scene_name,
            run,
            field,
            game,
            clock: FixedStep::default(),
            left: Side::default(),
            right: Side::default(),
            right_player: 2,
            steps: 0,
            step_ms: 0.0,
            error: None,
        };
        view.record()?;
        view.record()?;
        Ok(view)
    }

    /// Starts again with `settings` (a new run, link and bots). Settings that are refused leave the game as it
    /// was and return the error.
    pub fn restart_with(&mut self, settings: &CompareArgs) -> Result<()> {
        let settings = normalised(settings);
        let (run, field, game, scene_name) = build(&settings)?;
        self.run = run;
        self.field = field;
        self.game = game;
        self.scene_name = scene_name;
        self.settings = settings;
        self.clock.clear();
        self.steps = 0;
        self.right_player = self.right_player.min(self.settings.players);
        self.record()?;
        self.record()
    }

    /// Shows player `player`'s machine on the right (not the person's own; only players the game has). Returns
    /// whether it changed.
    pub fn show_on_right(&mut self, player: usize) -> bool {
        let valid = (1..=self.settings.players).contains(&player) && player != human_player(self.settings.model);
        if !valid || player == self.right_player {
            return false;
        }
        self.right_player = player;
        // Both ends of the new side's blend at its present poses: no sweep from the old machine's picture.
        self.record().is_ok() && self.record().is_ok()
    }

    /// The field as every machine starts it (player cubes included).
    pub fn field(&self) -> &World {
        &self.field
    }

    /// One frame's steps at 90 Hz (the window's clock), the person's `input` for each; returns the steps taken.
    pub fn advance(&mut self, frame_s: f64, input: CubeInput) -> Result<u32> {
        let steps = self.clock.advance(frame_s);
        let started = std::time::Instant::now();
        for _ in 0..steps {
            self.step_once(input)?;
        }
        if steps > 0 {
            self.step_ms = (started.elapsed().as_secs_f64() * 1000.0 / f64::from(steps)) as f32;
        }
        Ok(steps)
    }

    /// One frame of the run (every machine and the link), the person playing `input`; then both sides' pictures.
    pub fn step_once(&mut self, input: CubeInput) -> Result<()> {
        let human = Some(input);
        match &mut self.run {
            ModelRun::Lockstep(r) => {
                r.set_human(human);
                r.frame(true)?;
            }
            ModelRun::Snapshots(r) => {
                r.set_human(human);
                r.frame()?;
            }
            ModelRun::Predict(r) => {
                r.set_human(human);
                r.frame()?;
            }
            ModelRun::Authority(r) => {
                r.set_human(human);
                r.frame()?;
            }
        }
        self.steps += 1;
        self.record()
    }

    /// Where the frame lies between the last two steps (0..1).
    pub fn alpha(&self) -> f32 {
        self.clock.alpha()
    }

    /// Takes both sides' pictures after a step: the poses each machine draws, and its colours (the cube game's
    /// touch colours; the authority model's authority tints; a snapshot client has no colours, only the players').
    fn record(&mut self) -> Result<()> {
        let n = self.field.body_count();
        let (left, right) = (&mut self.left, &mut self.right);
        match &self.run {
            ModelRun::Lockstep(r) => {
                let (peers, shown) = (r.peers(), self.right_player - 1);
                record_world(left, peers[0].world(), peers[0].game().colours());
                record_world(right, peers[shown].world(), peers[shown].game().colours());
            }
            ModelRun::Snapshots(r) => {
                record_world(left, r.server.world(), r.server.game().colours());
                let drawn = r.client.drawn();
                if r.client_has_drawn() && drawn.len() == n {
                    right.poses.record_with(n, |i| (drawn[i].position, drawn[i].rotation));
                } else {
                    right.poses.record_with(n, |i| pose(&self.field, i));
                }
                fill_colours(&mut right.colours, n, |i| {
                    let player = self.game.players().iter().position(|p| p.index() == i);
                    authority_rgb(player.map_or(0, |p| p as u8 + 1))
                });
            }
            ModelRun::Predict(r) => {
                let client = r.client();
                // Every body through the client's smoothing: its own cube's correction easing, the rest's draw
                // smoothing (a rewind moves them without a jump).
                left.poses.record_with(n, |i| {
                    client
                        .drawn_pose(BodyId(i as u32))
                        .map_or_else(|_| pose(client.world(), i), |p| (p.position, p.rotation))
                });
                fill_colours(&mut left.colours, n, |i| colour_of(client.game().colours(), i));
                record_world(right, r.server().world(), r.server().game().colours());
            }
            ModelRun::Authority(r) => {
                let shown = self.right_player as u8;
                let mut peers = r.session().peers();
                let host = peers.next();
                // A guest has its player once the host welcomed it; until then the first guest stands in.
                let guest = r
                    .session()
                    .peers()
                    .skip(1)
                    .find(|p| p.player() == shown)
                    .or(peers.next());
                let (Some(host), Some(guest)) = (host, guest) else {
                    anyhow::bail!("the authority run has fewer than two machines");
                };
                record_peer(left, host, n);
                record_peer(right, guest, n);
            }
        }
        Ok(())
    }

    /// Both sides' cubes for the frame: the left flagged for the first view, the right for the second.
    pub fn fill(&self, cubes: &mut Vec<CubeInstance>) {
        cubes.clear();
        let alpha = self.alpha();
        for (side, flags) in [(&self.left, CUBE_FIRST_VIEW_ONLY), (&self.right, CUBE_SECOND_VIEW_ONLY)] {
            for i in 0..side.poses.len().min(side.colours.len()) {
                let (position, rotation) = side.poses.interpolated(i, alpha);
                cubes.push(CubeInstance {
                    position,
                    rotation,
                    half_extents: self.field.half_extents(BodyId(i as u32)).unwrap_or(Vec3::splat(0.5)),
                    colour: side.colours[i],
                    flags,
                });
            }
        }
    }

    /// The camera both sides share: behind the person's cube as the player's machine draws it, looking ahead
    /// along its facing. Returns (eye, target).
    pub fn camera(&self) -> (Vec3, Vec3) {
        let p = human_player(self.settings.model) - 1;
        let (Some(&cube), Some(forward)) = (self.game.players().get(p), self.game.forward(p)) else {
            return (Vec3::new(0.0, CAMERA_UP_M, CAMERA_BACK_M), Vec3::ZERO);
        };
        let at = if cube.index() < self.left.poses.len() {
            self.left.poses.interpolated(cube.index(), self.alpha()).0
        } else {
            Vec3::ZERO
        };
        let ground = Vec3::new(at.x, 0.0, at.z);
        (
            ground - forward * CAMERA_BACK_M + Vec3::Y * CAMERA_UP_M,
            ground + forward * CAMERA_AHEAD_M,
        )
    }

    /// The running game's figures for the overlay.
    pub fn figures(&self) -> LiveFigures {
        let (host, guest) = match &self.run {
            ModelRun::Lockstep(r) => r.wire_bytes(),
            ModelRun::Snapshots(r) => r.wire_bytes(),
            ModelRun::Predict(r) => r.wire_bytes(),
            ModelRun::Authority(r) => r.wire_bytes(),
        };
        let step_s = 1.0 / tumble_game::STEP_HZ as f64;
        let seconds = self.steps as f64 * step_s;
        let kbps = |bytes: u64| bytes as f64 * 8.0 / 1000.0 / seconds.max(step_s);
        let mut f = LiveFigures {
            seconds,
            kbps_host: kbps(host),
            kbps_guest: kbps(guest),
            ..LiveFigures::default()
        };
        match &self.run {
            ModelRun::Lockstep(r) => {
                f.hitch_frames = Some(r.peers().iter().map(|p| p.stats.hitch_frames).sum());
                f.desyncs = r.peers().iter().map(|p| p.desyncs()).max();
            }
            ModelRun::Snapshots(r) => f.playout_ms = Some(r.client.delay_s() * 1000.0),
            ModelRun::Predict(r) => f.corrections = Some(r.client().stats.corrections),
            ModelRun::Authority(r) => f.corrections = Some(r.session().peers().map(|p| p.stats.corrections).sum()),
        }
        f
    }
}

/// The run `settings` describe on the scene they name, the field with the player cubes, the cube game's players,
/// and the scene's name.
fn build(settings: &CompareArgs) -> Result<(ModelRun, World, CubeGame, String)> {
    let config = match settings.model {
        Model::Predict => world_config(settings.predict_early_stop),
        _ => WorldConfig::default(),
    };
    let (scene, world) = load_field(&settings.scene, config)?;
    let mut field = world.clone();
    let game = CubeGame::new(&mut field, settings.players)?;
    let run = match settings.model {
        Model::Lockstep | Model::All => {
            let config = LockstepConfig::from_args(settings);
            ModelRun::Lockstep(Box::new(LockstepRun::new(&config, vec![world; settings.players])?))
        }
        Model::Snapshots => {
            ModelRun::Snapshots(Box::new(SnapshotRun::new(&SnapshotConfig::from_args(settings), world)?))
        }
        Model::Predict => ModelRun::Predict(Box::new(PredictRun::new(
            &PredictConfig::from_args(settings),
            world.clone(),
            world,
        )?)),
        Model::Authority | Model::StateSync => ModelRun::Authority(Box::new(AuthorityRun::new(
            &AuthorityConfig::from_args(settings),
            world,
        )?)),
    };
    Ok((run, field, game, scene))
}

fn pose(world: &World, i: usize) -> (Vec3, Quat) {
    world
        .state(BodyId(i as u32))
        .map_or((Vec3::ZERO, Quat::IDENTITY), |s| (s.position, s.rotation))
}

/// The cube game's colour of body `i` (grey, or the player who last touched it).
fn colour_of(colours: &[u8], i: usize) -> [f32; 3] {
    authority_rgb(colours.get(i).copied().unwrap_or(0))
}

impl SideBySide for CompareView {
    fn scene_name(&self) -> &str {
        &self.scene_name
    }

    fn field(&self) -> &World {
        &self.field
    }

    fn left_poses(&self) -> &PoseBuffer {
        &self.left.poses
    }

    fn alpha(&self) -> f32 {
        self.clock.alpha()
    }

    fn stats(&self) -> SimStats {
        SimStats {
            steps: self.steps,
            step_ms: self.step_ms,
            cubes: self.field.body_count(),
            ..SimStats::default()
        }
    }

    fn advance(&mut self, frame_s: f64, keys: CubeInput) -> Result<u32> {
        CompareView::advance(self, frame_s, keys)
    }

    fn show_on_right(&mut self, player: usize) -> bool {
        CompareView::show_on_right(self, player)
    }

    /// Restarts with the overlay's settings; refused settings are logged and shown, and the game goes on.
    fn restart(&mut self) {
        let settings = self.edit.borrow().clone();
        match self.restart_with(&settings) {
            Ok(()) => {
                self.error = None;
                *self.edit.borrow_mut() = self.settings.clone();
                let link = self.settings.link.config();
                tracing::info!(model = ?self.settings.model, latency_ms = link.latency_ms,
                    loss_pct = link.loss_pct, "the cube game restarted");
            }
            Err(e) => {
                tracing::warn!("the cube game's settings were refused: {e:#}");
                self.error = Some(format!("{e:#}"));
            }
        }
    }

    fn fill(&self, cubes: &mut Vec<CubeInstance>) {
        CompareView::fill(self, cubes)
    }

    fn camera(&self) -> (Vec3, Vec3) {
        CompareView::camera(self)
    }

    fn panel(&self, ctx: &egui::Context) -> bool {
        crate::compare_panel::draw(ctx, self, &mut self.edit.borrow_mut())
    }
}

fn fill_colours(out: &mut Vec<[f32; 3]>, n: usize, colour: impl Fn(usize) -> [f32; 3]) {
    out.clear();
    out.extend((0..n).map(colour));
}

/// A machine that simulates the world: its poses and its cube-game colours.
fn record_world(side: &mut Side, world: &World, colours: &[u8]) {
    let n = world.body_count();
    side.poses.record_with(n, |i| pose(world, i));
    fill_colours(&mut side.colours, n, |i| colour_of(colours, i));
}

/// A state-sync peer: the poses it draws (smoothed) and its authority tints.
fn record_peer(side: &mut Side, peer: &Peer, n: usize) {
    side.poses.record_with(n, |i| {
        peer.drawn_pose(BodyId(i as u32))
            .map_or((Vec3::ZERO, Quat::IDENTITY), |p| (p.position, p.rotation))
    });
    fill_colours(&mut side.colours, n, |i| table_tint(Some(&peer.table), i as u32).0);
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: CompareArgs,
    }

    fn settings(model: &str, more: &[&str]) -> CompareArgs {
        let scene = concat!(env!("CARGO_MANIFEST_DIR"), "/../../assets/scenes/cubes90.toml");
        let mut argv = vec!["compare", "--model", model, "--scene", scene];
        argv.extend_from_slice(more);
        Cli::parse_from(argv).args
    }

    fn player_position(side: &Side, cube: BodyId) -> Vec3 {
        side.poses.interpolated(cube.index(), 1.0).0
    }

    /// Every model: the person's forward key rolls their cube along its facing on their own machine (left), and
    /// the other machine (right) shows it moving too; each side's cubes are flagged for its own view.
    #[test]
    fn the_person_plays_each_model_and_the_other_side_sees_it() {
        for model in ["lockstep", "snapshots", "predict", "authority"] {
            let mut view = CompareView::new(&settings(model, &["--latency-ms", "50"])).unwrap();
            let p = human_player(view.settings.model) - 1;
            let cube = view.game.players()[p];
            let forward = view.game.forward(p).unwrap();
            let start = player_position(&view.left, cube);
            assert_eq!(
                start,
                player_position(&view.right, cube),
                "{model}: both sides start alike"
            );
            let push = CubeInput::from_bits(CubeInput::FORWARD);
            for _ in 0..270 {
                view.step_once(push).unwrap();
            }
            let rolled = (player_position(&view.left, cube) - start).dot(forward);
            assert!(
                rolled > 2.0,
                "{model}: the person's cube rolled {rolled} m forward on their machine"
            );
            let seen = (player_position(&view.right, cube) - start).dot(forward);
            assert!(seen > 1.0, "{model}: the other side shows it {seen} m forward");
            let mut cubes = Vec::new();
            view.fill(&mut cubes);
            let n = view.field().body_count();
            assert_eq!(cubes.len(), 2 * n, "{model}");
            assert!(cubes[..n].iter().all(|c| c.flags == CUBE_FIRST_VIEW_ONLY));
            assert!(cubes[n..].iter().all(|c| c.flags == CUBE_SECOND_VIEW_ONLY));
            let (eye, target) = view.camera();
            assert!(
                (target - eye).dot(forward) > 0.0 && eye.y > 1.0,
                "{model}: the camera looks along the facing"
            );
            let figures = view.figures();
            assert!(
                figures.kbps_host > 0.0 && figures.kbps_guest > 0.0,
                "{model}: {figures:?}"
            );
            assert!((figures.seconds - 3.0).abs() < 1e-9);
        }
    }

    #[test]
    fn with_more_players_the_right_side_shows_the_one_chosen() {
        for model in ["lockstep", "authority"] {
            let mut view = CompareView::new(&settings(model, &["--players", "3"])).unwrap();
            for _ in 0..180 {
                view.step_once(CubeInput::NONE).unwrap();
            }
            assert!(
                !view.show_on_right(1),
                "{model}: the person's own machine is on the left"
            );
            assert!(!view.show_on_right(4), "{model}: no player 4");
            assert!(view.show_on_right(3));
            assert_eq!(view.right_player, 3);
            // Player 3's bot moved its cube; its machine shows it where it is, as the left side does within lag.
            let cube = view.game.players()[2];
            let (left, right) = (player_position(&view.left, cube), player_position(&view.right, cube));
            assert!(left.distance(right) < 2.0, "{model}: {left} vs {right}");
            let mut fewer = view.settings.clone();
            fewer.players = 2;
            view.restart_with(&fewer).unwrap();
            assert_eq!(view.right_player, 2, "{model}: back to a player the game has");
        }
    }

    #[test]
    fn a_restart_switches_the_model_and_refused_settings_keep_the_game() {
        let mut view = CompareView::new(&settings("all", &["--players", "3"])).unwrap();
        assert_eq!(view.settings.model, Model::Lockstep, "all: starts with lockstep");
        assert_eq!(view.game.players().len(), 3);
        for _ in 0..10 {
            view.step_once(CubeInput::NONE).unwrap();
        }
        let mut next = view.settings.clone();
        next.model = Model::Predict;
        view.restart_with(&next).unwrap();
        assert_eq!(
            (view.settings.model, view.settings.players, view.steps),
            (Model::Predict, 2, 0)
        );
        let mut bad = view.settings.clone();
        bad.link.loss_pct = Some(150.0);
        assert!(view.restart_with(&bad).is_err());
        assert_eq!(view.settings.model, Model::Predict, "the game goes on as it was");
        view.step_once(CubeInput::NONE).unwrap();
    }
}
