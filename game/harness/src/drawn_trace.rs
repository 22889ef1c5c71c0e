//! What each peer process of `tumble session --processes` drew, step by step, for the parent to measure against
//! the truth once every process has ended (no process sees another's world while it plays): a binary file per
//! process of one record per step — the peer's [`PeerSample`] (where it simulated and drew each cube, the remote
//! avatars it drew and its own), and per cube whether it simulated it for everyone, at rest, and the authority its
//! table named. Steps are numbered on the session's common clock (all processes step on one grid of the wall
//! clock), so the records of one step line up across files. About 1.7 kB a step for 64 cubes: 90 MB for ten
//! minutes; the files are deleted once read.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;

use anyhow::{bail, Context, Result};
use glam::Vec3;
use tumble_engine::physics::BodyId;

use super::drawn::{Authority, AvatarPoints, DrawnMeter, PeerSample, SETTLED_STEPS};
use tumble_game::session::peer::Peer;
use tumble_game::sync::codec::stamp::DEFAULT_AUTHORITY;
use tumble_game::STEP_HZ;

const MAGIC: &[u8; 4] = b"TTRC";
const VERSION: u32 = 1;

/// Per cube, beside the sample: the peer's own word on it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct CubeWord {
    /// This peer simulates it for everyone (its authority, or the host's default cube on the host).
    local: bool,
    at_rest: bool,
    /// The authority its table names.
    authority: u8,
}

/// One process's trace, written as it plays.
pub struct TraceWriter {
    out: BufWriter<File>,
    sample: PeerSample,
    words: Vec<CubeWord>,
}

impl TraceWriter {
    pub fn create(path: &Path, cubes: usize) -> Result<TraceWriter> {
        let file = File::create(path).with_context(|| format!("the drawn trace {}", path.display()))?;
        let mut out = BufWriter::new(file);
        out.write_all(MAGIC)?;
        out.write_all(&VERSION.to_le_bytes())?;
        out.write_all(&(cubes as u32).to_le_bytes())?;
        Ok(TraceWriter {
            out,
            sample: PeerSample::default(),
            words: Vec::with_capacity(cubes),
        })
    }

    /// `peer` after its step, as step `grid_step` of the common clock, its remote avatars played out at
    /// `played_at_s` on that clock.
    pub fn record(&mut self, peer: &Peer, grid_step: u64, played_at_s: f64) -> Result<()> {
        self.sample.take(peer)?;
        self.words.clear();
        for c in 0..peer.world.body_count() as u32 {
            let authority = peer.table.stamp(c).authority;
            let removed = peer.world.is_removed(BodyId(c))?;
            let at_rest = !removed && peer.world.state(BodyId(c))?.at_rest;
            self.words.push(CubeWord {
                local: peer.table.is_local_authority(c),
                at_rest,
                authority,
            });
        }
        let o = &mut self.out;
        o.write_all(&grid_step.to_le_bytes())?;
        o.write_all(&played_at_s.to_le_bytes())?;
        o.write_all(&[self.sample.player, u8::from(self.sample.measured)])?;
        match self.sample.own {
            Some((step, points)) => {
                o.write_all(&[1])?;
                o.write_all(&step.to_le_bytes())?;
                write_points(o, &points)?;
            }
            None => o.write_all(&[0])?,
        }
        for (c, word) in self.words.iter().enumerate() {
            let sim = self.sample.sim[c];
            let flags = u8::from(sim.is_some())
                | u8::from(self.sample.in_hand[c]) << 1
                | u8::from(word.local) << 2
                | u8::from(word.at_rest) << 3;
            o.write_all(&[flags, word.authority])?;
            write_vec(o, sim.unwrap_or_default())?;
            write_vec(o, self.sample.drawn[c])?;
        }
        for remote in &self.sample.remote {
            match remote {
                Some((t, points)) => {
                    o.write_all(&[1])?;
                    o.write_all(&t.to_le_bytes())?;
                    write_points(o, points)?;
                }
                None => o.write_all(&[0])?,
            }
        }
        Ok(())
    }

    pub fn finish(mut self) -> Result<()> {
        self.out.flush()?;
        Ok(())
    }
}

fn write_vec(o: &mut impl Write, v: Vec3) -> std::io::Result<()> {
    for x in v.to_array() {
        o.write_all(&x.to_le_bytes())?;
    }
    Ok(())
}

fn write_points(o: &mut impl Write, points: &AvatarPoints) -> std::io::Result<()> {
    for (tracked, p) in points {
        o.write_all(&[u8::from(*tracked)])?;
        write_vec(o, *p)?;
    }
    Ok(())
}

/// One process's trace, read back record by record.
struct TraceReader {
    input: BufReader<File>,
    cubes: usize,
    /// The next record, read ahead: (grid step, sample, words).
    next: Option<(u64, PeerSample, Vec<CubeWord>)>,
}

impl TraceReader {
    fn open(path: &Path) -> Result<TraceReader> {
        let file = File::open(path).with_context(|| format!("the drawn trace {}", path.display()))?;
        let mut input = BufReader::new(file);
        let mut head = [0u8; 12];
        input.read_exact(&mut head)?;
        if &head[..4] != MAGIC || u32::from_le_bytes(head[4..8].try_into()?) != VERSION {
            bail!("{} is not a drawn trace of this version", path.display());
        }
        let cubes = u32::from_le_bytes(head[8..12].try_into()?) as usize;
        if cubes > 1 << 20 {
            bail!("{}: {cubes} cubes", path.display());
        }
        let mut r = TraceReader {
            input,
            cubes,
            next: None,
        };
        r.next = r.read_record()?;
        Ok(r)
    }

    fn read_record(&mut self) -> Result<Option<(u64, PeerSample, Vec<CubeWord>)>> {
        let mut step = [0u8; 8];
        match self.input.read_exact(&mut step) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(e) => return Err(e.into()),
        }
        let i = &mut self.input;
        let played_at_s = f64::from_le_bytes(read_array::<8>(i)?);
        let [player, measured] = read_array::<2>(i)?;
        let mut sample = PeerSample {
            present: true,
            player,
            measured: measured != 0,
            played_at_s: Some(played_at_s),
            ..PeerSample::default()
        };
        if read_array::<1>(i)?[0] != 0 {
            let own_step = u64::from_le_bytes(read_array::<8>(i)?);
            sample.own = Some((own_step, read_points(i)?));
        }
        let mut words = Vec::with_capacity(self.cubes);
        for _ in 0..self.cubes {
            let [flags, authority] = read_array::<2>(i)?;
            let sim = read_vec(i)?;
            let drawn = read_vec(i)?;
            sample.sim.push((flags & 1 != 0).then_some(sim));
            sample.drawn.push(drawn);
            sample.in_hand.push(flags & 2 != 0);
            words.push(CubeWord {
                local: flags & 4 != 0,
                at_rest: flags & 8 != 0,
                authority,
            });
        }
        for k in 0..4 {
            if read_array::<1>(i)?[0] != 0 {
                let t = f64::from_le_bytes(read_array::<8>(i)?);
                sample.remote[k] = Some((t, read_points(i)?));
            }
        }
        Ok(Some((u64::from_le_bytes(step), sample, words)))
    }

    /// The record of grid step `step`, if this process has one (it may have joined late or left early).
    fn take(&mut self, step: u64) -> Result<Option<(PeerSample, Vec<CubeWord>)>> {
        while self.next.as_ref().is_some_and(|(s, _, _)| *s < step) {
            self.next = self.read_record()?;
        }
        match self.next.take() {
            Some((s, sample, words)) if s == step => {
                self.next = self.read_record()?;
                Ok(Some((sample, words)))
            }
            other => {
                self.next = other;
                Ok(None)
            }
        }
    }
}

fn read_array<const N: usize>(i: &mut impl Read) -> std::io::Result<[u8; N]> {
    let mut b = [0u8; N];
    i.read_exact(&mut b)?;
    Ok(b)
}

fn read_vec(i: &mut impl Read) -> std::io::Result<Vec3> {
    let mut v = [0f32; 3];
    for x in &mut v {
        *x = f32::from_le_bytes(read_array::<4>(i)?);
    }
    Ok(Vec3::from_array(v))
}

fn read_points(i: &mut impl Read) -> std::io::Result<AvatarPoints> {
    let mut out = [(false, Vec3::ZERO); 3];
    for p in &mut out {
        let tracked = read_array::<1>(i)?[0] != 0;
        *p = (tracked, read_vec(i)?);
    }
    Ok(out)
}

/// Measures the traces of a run's processes (`paths[seat]`, host first) on the common clock: each step, each
/// cube's truth is the process that simulated it for everyone — a guest whose own claim it was, else the process
/// of the authority the host's table named (the host for default cubes) — as one process sees the others only
/// through this.
///
/// `news_steps`: the late visible jump's window ([`DrawnMeter::with_news_steps`]).
pub fn measure(paths: &[std::path::PathBuf], seconds: f64, news_steps: u64) -> Result<DrawnMeter> {
    let mut readers = paths.iter().map(|p| TraceReader::open(p)).collect::<Result<Vec<_>>>()?;
    let cubes = readers.first().map_or(0, |r| r.cubes);
    let mut meter = DrawnMeter::new(readers.len(), cubes).with_news_steps(news_steps);
    let steps = (seconds * f64::from(STEP_HZ)).ceil() as u64 + u64::from(STEP_HZ);
    let mut samples = vec![PeerSample::default(); readers.len()];
    let mut words: Vec<Option<Vec<CubeWord>>> = vec![None; readers.len()];
    let mut authority = vec![None; cubes];
    // Per cube: the truth's seat and the step since which it has had the cube at rest.
    let mut rest_since: Vec<Option<(usize, u64)>> = vec![None; cubes];
    for step in 0..steps {
        for (k, r) in readers.iter_mut().enumerate() {
            match r.take(step)? {
                Some((s, w)) => {
                    samples[k] = s;
                    words[k] = Some(w);
                }
                None => {
                    samples[k].absent();
                    words[k] = None;
                }
            }
        }
        for c in 0..cubes {
            let truth = truth_seat(&samples, &words, c);
            let resting = truth.is_some_and(|t| words[t].as_ref().is_some_and(|w| w[c].at_rest));
            rest_since[c] = match (truth, resting, rest_since[c]) {
                (Some(t), true, Some((seat, since))) if seat == t => Some((seat, since)),
                (Some(t), true, _) => Some((t, step)),
                _ => None,
            };
            authority[c] = truth.map(|seat| Authority {
                seat,
                settled: rest_since[c].is_some_and(|(_, since)| step - since >= SETTLED_STEPS),
            });
        }
        meter.observe(&samples, &authority, (step + 1) as f64 / f64::from(STEP_HZ));
    }
    Ok(meter)
}

/// The seat whose world is cube `c`'s truth this step.
fn truth_seat(samples: &[PeerSample], words: &[Option<Vec<CubeWord>>], c: usize) -> Option<usize> {
    let host = words.first()?.as_ref()?;
    let claimed = (1..samples.len()).find(|&k| {
        words[k]
            .as_ref()
            .is_some_and(|w| w[c].local && w[c].authority == samples[k].player && samples[k].player != 0)
    });
    if let Some(k) = claimed {
        return Some(k);
    }
    match host[c].authority {
        DEFAULT_AUTHORITY => Some(0),
        a => (0..samples.len()).find(|&k| samples[k].present && samples[k].player == a),
    }
}
