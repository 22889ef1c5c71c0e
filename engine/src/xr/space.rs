//! The play space: STAGE (origin on the floor at the centre of the play area, y up), which room-scale runtimes
//! offer. Where a runtime has only LOCAL (origin at the head's starting pose), the floor is estimated: the origin is
//! moved down by a standing eye height, so y = 0 is the floor for a standing player — the best guess without a
//! floor from the runtime.

use openxr as xr;

use super::{xr_err, XrError};

/// Eye height of a standing adult (m): where LOCAL's origin is assumed to sit above the floor.
pub const ESTIMATED_EYE_HEIGHT_M: f32 = 1.6;

/// Which reference space a session uses, and the offset applied to it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlaySpaceChoice {
    pub ty: xr::ReferenceSpaceType,
    /// The space's origin in the chosen reference space: (0, -eye height, 0) for LOCAL.
    pub origin_offset_y_m: f32,
}

/// STAGE when offered, else LOCAL with the estimated floor.
pub fn choose_play_space(offered: &[xr::ReferenceSpaceType]) -> Result<PlaySpaceChoice, XrError> {
    if offered.contains(&xr::ReferenceSpaceType::STAGE) {
        Ok(PlaySpaceChoice {
            ty: xr::ReferenceSpaceType::STAGE,
            origin_offset_y_m: 0.0,
        })
    } else if offered.contains(&xr::ReferenceSpaceType::LOCAL) {
        Ok(PlaySpaceChoice {
            ty: xr::ReferenceSpaceType::LOCAL,
            origin_offset_y_m: -ESTIMATED_EYE_HEIGHT_M,
        })
    } else {
        Err(XrError::Unsupported("a STAGE or LOCAL reference space".into()))
    }
}

/// Creates the play space the choice names.
pub fn create_play_space(session: &xr::Session<xr::Vulkan>) -> Result<(xr::Space, PlaySpaceChoice), XrError> {
    let offered = session
        .enumerate_reference_spaces()
        .map_err(xr_err("xrEnumerateReferenceSpaces"))?;
    let choice = choose_play_space(&offered)?;
    let pose = xr::Posef {
        orientation: xr::Quaternionf::IDENTITY,
        position: xr::Vector3f {
            x: 0.0,
            y: choice.origin_offset_y_m,
            z: 0.0,
        },
    };
    let space = session
        .create_reference_space(choice.ty, pose)
        .map_err(xr_err("xrCreateReferenceSpace"))?;
    if choice.ty != xr::ReferenceSpaceType::STAGE {
        tracing::warn!("the runtime has no STAGE space: using LOCAL with the floor {ESTIMATED_EYE_HEIGHT_M} m below");
    }
    Ok((space, choice))
}

#[cfg(test)]
mod tests {
    use super::*;
    use xr::ReferenceSpaceType as R;

    #[test]
    fn stage_is_preferred() {
        let c = choose_play_space(&[R::VIEW, R::LOCAL, R::STAGE]).unwrap();
        assert_eq!(c.ty, R::STAGE);
        assert_eq!(c.origin_offset_y_m, 0.0);
    }

    #[test]
    fn local_gets_an_estimated_floor() {
        let c = choose_play_space(&[R::VIEW, R::LOCAL]).unwrap();
        assert_eq!(c.ty, R::LOCAL);
        assert_eq!(c.origin_offset_y_m, -ESTIMATED_EYE_HEIGHT_M);
    }

    #[test]
    fn view_alone_is_refused() {
        assert!(matches!(choose_play_space(&[R::VIEW]), Err(XrError::Unsupported(_))));
    }
}
