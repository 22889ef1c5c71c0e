//! Why a scene could not be read, parsed or built, and the checks of its values: each names the key and points
//! at its value's line (`file:line: key `k`: ...`).

use std::fmt::Display;

use glam::Vec3;
use toml::Spanned;

use crate::physics::PhysicsError;

use super::generators::*;
use super::*;

/// Why a scene could not be read, parsed or built.
#[derive(Debug, thiserror::Error)]
pub enum SceneError {
    #[error("{file}: cannot read scene file: {source}")]
    Io { file: String, source: std::io::Error },
    /// Syntax errors, unknown keys, wrong types and bad values. `key` is `None` only for syntax errors
    /// that are not at a key.
    #[error("{file}:{line}: {}{message}", key_prefix(.key))]
    Invalid {
        file: String,
        line: usize,
        key: Option<String>,
        message: String,
    },
    #[error("{file}: the engine refused the world configuration: {source}")]
    Config { file: String, source: PhysicsError },
    #[error("{file}:{line}: {entry} (body {body}): the engine refused it: {source}")]
    Refused {
        file: String,
        line: usize,
        /// Like `[[tower]] #2`.
        entry: String,
        /// Index into [`Scene::bodies`].
        body: usize,
        source: PhysicsError,
    },
}

pub(super) fn key_prefix(key: &Option<String>) -> String {
    key.as_ref().map_or_else(String::new, |k| format!("key `{k}`: "))
}

// ---------------------------------------------------------------------------------------------------------
// Checks. Each names the key and points at its value's line.

/// The scene text and its name, for turning byte spans into `file:line` errors.
pub(super) struct Source<'a> {
    pub(super) file: &'a str,
    pub(super) text: &'a str,
}

impl Source<'_> {
    /// 1-based line of a byte offset.
    pub(super) fn line(&self, offset: usize) -> usize {
        let offset = offset.min(self.text.len());
        self.text.as_bytes()[..offset].iter().filter(|&&b| b == b'\n').count() + 1
    }

    pub(super) fn error(&self, span: Range<usize>, key: &str, message: impl Display) -> SceneError {
        SceneError::Invalid {
            file: self.file.to_owned(),
            line: self.line(span.start),
            key: Some(key.to_owned()),
            message: message.to_string(),
        }
    }

    /// toml's errors carry a span and a message but not the key, so the key is recovered from the message
    /// (unknown, missing or duplicate keys) or from the text at the span.
    pub(super) fn toml_error(&self, e: &toml::de::Error) -> SceneError {
        let message = e.message().trim().replace('\n', "; ");
        let start = e.span().map_or(0, |s| s.start);
        let named = ["unknown field", "missing field", "duplicate key"]
            .iter()
            .any(|p| message.starts_with(p))
            .then(|| message.split('`').nth(1).map(str::to_owned))
            .flatten();
        SceneError::Invalid {
            file: self.file.to_owned(),
            line: self.line(start),
            key: named.or_else(|| key_near(self.text, start)),
            message,
        }
    }
}

/// The key a byte offset belongs to: the name of the table header on its line, a key starting right there,
/// or else the nearest `key =` before it (the offset is inside that key's value, which may span lines).
pub(super) fn key_near(text: &str, offset: usize) -> Option<String> {
    let offset = (0..=offset.min(text.len())).rev().find(|&i| text.is_char_boundary(i))?;
    let is_key_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '"' | '\'');
    let clean = |k: &str| Some(k.trim().trim_matches(|c| c == '"' || c == '\'').to_owned()).filter(|k| !k.is_empty());
    let line_rest = text[offset..].lines().next().unwrap_or("");
    let line = text[text[..offset].rfind('\n').map_or(0, |i| i + 1)..].trim_start();
    if line.starts_with('[') {
        return clean(line.trim_start_matches('[').split(']').next()?);
    }
    let key_len = line_rest.find(|c| !is_key_char(c)).unwrap_or(line_rest.len());
    if key_len > 0 && line_rest[key_len..].trim_start().starts_with('=') {
        return clean(&line_rest[..key_len]);
    }
    let before = text[..offset].rfind('=').map(|eq| text[..eq].trim_end())?;
    let key_start = before
        .char_indices()
        .rev()
        .find(|&(_, c)| !is_key_char(c))
        .map_or(0, |(i, c)| i + c.len_utf8());
    clean(&before[key_start..])
}

/// A finite number that passes `ok`; `expected` completes "… is not …".
pub(super) fn number(
    src: &Source,
    v: &Spanned<f32>,
    key: &str,
    ok: impl Fn(f32) -> bool,
    expected: &str,
) -> Result<f32, SceneError> {
    let x = *v.get_ref();
    if x.is_finite() && ok(x) {
        Ok(x)
    } else {
        Err(src.error(v.span(), key, format!("{x} is not {expected}")))
    }
}

pub(super) fn vec3(src: &Source, v: &V3, key: &str) -> Result<Vec3, SceneError> {
    let a = *v.get_ref();
    if a.iter().all(|x| x.is_finite()) {
        Ok(Vec3::from_array(a))
    } else {
        Err(src.error(v.span(), key, format!("{a:?} is not finite (NaN or infinity)")))
    }
}

pub(super) fn velocity(src: &Source, v: Option<&V3>, key: &str, max: f32, unit: &str) -> Result<Vec3, SceneError> {
    let Some(v) = v else { return Ok(Vec3::ZERO) };
    let x = vec3(src, v, key)?;
    if x.length() > max {
        return Err(src.error(
            v.span(),
            key,
            format!("{x} is faster than the engine's limit of {max} {unit}"),
        ));
    }
    Ok(x)
}

pub(super) fn count(src: &Source, v: &Spanned<u32>, key: &str) -> Result<u32, SceneError> {
    match *v.get_ref() {
        0 => Err(src.error(v.span(), key, "must be at least 1")),
        n => Ok(n),
    }
}

/// Gap between neighbouring cubes (m): 0 (touching) unless given.
pub(super) fn gap(src: &Source, v: Option<&Spanned<f32>>) -> Result<f32, SceneError> {
    v.map_or(Ok(0.0), |g| number(src, g, "gap", |x| x >= 0.0, "≥ 0 m"))
}

/// Refuses an entry that would take the scene past [`MAX_SCENE_BODIES`], before any of it is built.
pub(super) fn reserve<T>(
    src: &Source,
    at: &Spanned<T>,
    key: &str,
    so_far: usize,
    adding: u64,
) -> Result<(), SceneError> {
    let total = (so_far as u64).saturating_add(adding);
    if total > MAX_SCENE_BODIES as u64 {
        let msg =
            format!("makes {adding} bodies, {total} in the scene so far, more than the limit of {MAX_SCENE_BODIES}");
        return Err(src.error(at.span(), key, msg));
    }
    Ok(())
}

pub(super) fn material(src: &Source, base: Material, keys: MaterialKeys) -> Result<Material, SceneError> {
    let mut m = base;
    if let Some(h) = keys.half_extent {
        let v = match *h.get_ref() {
            HalfExtent::Cube(s) => Vec3::splat(s),
            HalfExtent::Box(a) => Vec3::from_array(a),
        };
        if !v
            .to_array()
            .iter()
            .all(|x| (MIN_HALF_EXTENT_M..=MAX_HALF_EXTENT_M).contains(x))
        {
            let msg = format!("{v} is outside {MIN_HALF_EXTENT_M}..={MAX_HALF_EXTENT_M} m");
            return Err(src.error(h.span(), "half_extent", msg));
        }
        m.half_extents = v;
    }
    if let Some(d) = keys.density {
        let expected = format!("in {MIN_DENSITY_KG_M3}..={MAX_DENSITY_KG_M3} kg/m³");
        let in_range = |x: f32| (MIN_DENSITY_KG_M3..=MAX_DENSITY_KG_M3).contains(&x);
        m.density = number(src, d, "density", in_range, &expected)?;
    }
    if let Some(f) = keys.friction {
        m.friction = number(
            src,
            f,
            "friction",
            |x| (0.0..=MAX_FRICTION).contains(&x),
            &format!("in 0..={MAX_FRICTION}"),
        )?;
    }
    if let Some(r) = keys.restitution {
        m.restitution = number(src, r, "restitution", |x| (0.0..=1.0).contains(&x), "in 0..=1")?;
    }
    Ok(m)
}
