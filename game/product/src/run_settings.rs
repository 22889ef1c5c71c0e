//! A run's length, seed and link, as one type with one set of flags: every model of `tumble compare`, `tumble
//! session`, `tumble loopback` and `tumble local` take them alike (`--link lan|typical|poor|terrible` names a
//! link; `--latency-ms`, `--jitter-ms`, `--loss-pct`, `--dup-pct` set or change its parts), checked the same way
//! and written the same way at the head of every JSON report.

use serde_json::{json, Value};
use tumble_net::LinkConfig;

/// Longest run a command measures (s): a day.
pub const MAX_SECONDS: f64 = 86_400.0;
/// Largest one-way latency or jitter the link simulator is given (ms).
pub const MAX_LINK_MS: f64 = 10_000.0;

/// A named link, each way: what players meet at home, on a common connection, on a bad one, and at the edge of
/// playable (the 2015 series' 250 ms round trip with 5 % loss is `poor`; its 2 s and 25 % `terrible`-er still).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LinkPreset {
    /// The same room: no delay, no loss.
    Lan,
    /// 50 ms ± 10 each way (a 100 ms round trip), 1 % loss.
    Typical,
    /// 125 ms ± 15 each way (250 ms round trip), 5 % loss, 1 % duplicates.
    Poor,
    /// 250 ms ± 50 each way (500 ms round trip), 20 % loss, 5 % duplicates.
    Terrible,
}

impl LinkPreset {
    /// The link simulator's settings for this link.
    pub fn config(self) -> LinkConfig {
        let (latency_ms, jitter_ms, loss_pct, duplicate_pct) = match self {
            LinkPreset::Lan => (0.0, 0.0, 0.0, 0.0),
            LinkPreset::Typical => (50.0, 10.0, 1.0, 0.0),
            LinkPreset::Poor => (125.0, 15.0, 5.0, 1.0),
            LinkPreset::Terrible => (250.0, 50.0, 20.0, 5.0),
        };
        LinkConfig {
            latency_ms,
            jitter_ms,
            loss_pct,
            duplicate_pct,
            ..LinkConfig::default()
        }
    }
}

/// The link flags, one set flattened into every command that simulates a link. A flag given changes that part
/// of `--link`'s link (or of the command's own default link when `--link` is not given).
#[derive(clap::Args, Clone, Debug, Default, PartialEq)]
pub struct LinkArgs {
    /// A named link: lan (none), typical (50 ± 10 ms each way, 1 % loss), poor (125 ± 15 ms, 5 % loss, 1 %
    /// duplicates), terrible (250 ± 50 ms, 20 % loss, 5 % duplicates); the flags below change its parts
    #[arg(long = "link", value_enum, value_name = "NAME")]
    pub preset: Option<LinkPreset>,
    /// One-way delay added in each direction (ms): 125 is a 250 ms round trip [default: the link's]
    #[arg(long, value_name = "L")]
    pub latency_ms: Option<f64>,
    /// ± jitter on each direction's delay (ms) [default: the link's]
    #[arg(long, value_name = "J")]
    pub jitter_ms: Option<f64>,
    /// Loss in each direction (percent) [default: the link's]
    #[arg(long, value_name = "P")]
    pub loss_pct: Option<f64>,
    /// Duplicates in each direction (percent) [default: the link's]
    #[arg(long, value_name = "D")]
    pub dup_pct: Option<f64>,
}

impl LinkArgs {
    /// The link these flags describe: `--link`'s (else `base`), with each part given by a flag replaced.
    pub fn config_or(&self, base: LinkConfig) -> LinkConfig {
        let link = self.preset.map_or(base, LinkPreset::config);
        LinkConfig {
            latency_ms: self.latency_ms.unwrap_or(link.latency_ms),
            jitter_ms: self.jitter_ms.unwrap_or(link.jitter_ms),
            loss_pct: self.loss_pct.unwrap_or(link.loss_pct),
            duplicate_pct: self.dup_pct.unwrap_or(link.duplicate_pct),
            ..link
        }
    }

    /// The link these flags describe, from a perfect link when `--link` is not given.
    pub fn config(&self) -> LinkConfig {
        self.config_or(LinkConfig::default())
    }

    /// Flags that describe `link` exactly (what a parent process passes its children).
    pub fn exactly(link: &LinkConfig) -> LinkArgs {
        LinkArgs {
            preset: None,
            latency_ms: Some(link.latency_ms),
            jitter_ms: Some(link.jitter_ms),
            loss_pct: Some(link.loss_pct),
            dup_pct: Some(link.duplicate_pct),
        }
    }
}

/// A run's length, seed and link.
#[derive(Clone, Debug, PartialEq)]
pub struct RunSettings {
    /// Simulated seconds (90 steps each).
    pub seconds: f64,
    /// Seeds the link simulator and the bots.
    pub seed: u64,
    /// Each direction's link.
    pub link: LinkConfig,
}

impl Default for RunSettings {
    fn default() -> Self {
        RunSettings {
            seconds: 20.0,
            seed: 1,
            link: LinkConfig::default(),
        }
    }
}

/// A run setting out of range, named by its flag.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum RunSettingsError {
    #[error("--seconds must be above 0 and at most {MAX_SECONDS} (got {0})")]
    Seconds(f64),
    #[error("{flag} must be in 0..={max} (got {value})")]
    Link { flag: &'static str, value: f64, max: f64 },
}

impl RunSettings {
    /// `seconds` of play on `link`.
    pub fn new(seconds: f64, seed: u64, link: LinkConfig) -> RunSettings {
        RunSettings { seconds, seed, link }
    }

    /// `seconds` on a link of `latency_ms` ± `jitter_ms` each way and `loss_pct` loss, seed 1 (tests' shorthand).
    pub fn link(seconds: f64, latency_ms: f64, jitter_ms: f64, loss_pct: f64) -> RunSettings {
        RunSettings {
            seconds,
            seed: 1,
            link: LinkConfig {
                latency_ms,
                jitter_ms,
                loss_pct,
                ..LinkConfig::default()
            },
        }
    }

    /// Every setting finite and in range: seconds in (0, [`MAX_SECONDS`]], latency and jitter in 0..=
    /// [`MAX_LINK_MS`], loss and duplicates in 0..=100.
    pub fn validate(&self) -> Result<(), RunSettingsError> {
        if !(self.seconds.is_finite() && self.seconds > 0.0 && self.seconds <= MAX_SECONDS) {
            return Err(RunSettingsError::Seconds(self.seconds));
        }
        validate_link(&self.link)
    }

    /// The settings as every report's JSON starts: `seconds`, `seed`, `latency_ms`, `jitter_ms`, `loss_pct`,
    /// `dup_pct`.
    pub fn json(&self) -> Value {
        json!({
            "seconds": self.seconds,
            "seed": self.seed,
            "latency_ms": self.link.latency_ms,
            "jitter_ms": self.link.jitter_ms,
            "loss_pct": self.link.loss_pct,
            "dup_pct": self.link.duplicate_pct,
        })
    }
}

/// The link's latency and jitter in 0..=[`MAX_LINK_MS`], loss and duplicates in 0..=100, all finite.
pub fn validate_link(link: &LinkConfig) -> Result<(), RunSettingsError> {
    for (flag, value, max) in [
        ("--latency-ms", link.latency_ms, MAX_LINK_MS),
        ("--jitter-ms", link.jitter_ms, MAX_LINK_MS),
        ("--loss-pct", link.loss_pct, 100.0),
        ("--dup-pct", link.duplicate_pct, 100.0),
    ] {
        if !(value.is_finite() && (0.0..=max).contains(&value)) {
            return Err(RunSettingsError::Link { flag, value, max });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        link: LinkArgs,
    }

    fn parse(args: &[&str]) -> LinkArgs {
        Cli::try_parse_from(std::iter::once("t").chain(args.iter().copied()))
            .unwrap()
            .link
    }

    #[test]
    fn a_preset_names_a_link_and_flags_change_its_parts() {
        assert_eq!(parse(&[]).config(), LinkConfig::default());
        let poor = parse(&["--link", "poor"]).config();
        assert_eq!(
            (poor.latency_ms, poor.jitter_ms, poor.loss_pct, poor.duplicate_pct),
            (125.0, 15.0, 5.0, 1.0)
        );
        let lossier = parse(&["--link", "poor", "--loss-pct", "25"]).config();
        assert_eq!((lossier.latency_ms, lossier.loss_pct), (125.0, 25.0));
        let base = LinkConfig {
            latency_ms: 50.0,
            ..LinkConfig::default()
        };
        assert_eq!(parse(&["--jitter-ms", "3"]).config_or(base).latency_ms, 50.0);
        assert_eq!(parse(&["--link", "lan"]).config_or(base).latency_ms, 0.0);
        let round_trip = LinkArgs::exactly(&poor).config_or(base);
        assert_eq!(round_trip, poor);
        assert!(Cli::try_parse_from(["t", "--link", "moon"]).is_err());
    }

    #[test]
    fn out_of_range_settings_are_errors_naming_the_flag() {
        assert!(RunSettings::default().validate().is_ok());
        for preset in [
            LinkPreset::Lan,
            LinkPreset::Typical,
            LinkPreset::Poor,
            LinkPreset::Terrible,
        ] {
            assert!(RunSettings::new(1.0, 1, preset.config()).validate().is_ok());
        }
        let e = RunSettings::link(10.0, 0.0, 0.0, 101.0).validate().unwrap_err();
        assert_eq!(e.to_string(), "--loss-pct must be in 0..=100 (got 101)");
        assert!(RunSettings::link(0.0, 0.0, 0.0, 0.0).validate().is_err());
        assert!(RunSettings::link(f64::NAN, 0.0, 0.0, 0.0).validate().is_err());
        assert!(RunSettings::link(1.0, -1.0, 0.0, 0.0).validate().is_err());
        assert!(RunSettings::link(1.0, 0.0, f64::INFINITY, 0.0).validate().is_err());
        let json = RunSettings::link(2.0, 50.0, 10.0, 5.0).json();
        assert_eq!(
            (json["latency_ms"].as_f64(), json["dup_pct"].as_f64()),
            (Some(50.0), Some(0.0))
        );
    }
}
