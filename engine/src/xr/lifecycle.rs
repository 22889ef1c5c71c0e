//! The session lifecycle as plain data. The runtime drives it with state-change events; each change may ask the
//! application for something: READY → begin the session (start the frame loop), STOPPING → end it, EXITING or
//! LOSS_PENDING → tear everything down. Input counts only while FOCUSED (another app or the runtime's menu has
//! the controllers otherwise); frames are submitted while the session is running (READY through STOPPING).

/// OpenXR session states, in the order a session normally walks them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum SessionState {
    #[default]
    Unknown,
    Idle,
    Ready,
    Synchronized,
    Visible,
    Focused,
    Stopping,
    LossPending,
    Exiting,
}

impl SessionState {
    pub fn from_xr(state: openxr::SessionState) -> SessionState {
        use openxr::SessionState as S;
        match state {
            S::IDLE => SessionState::Idle,
            S::READY => SessionState::Ready,
            S::SYNCHRONIZED => SessionState::Synchronized,
            S::VISIBLE => SessionState::Visible,
            S::FOCUSED => SessionState::Focused,
            S::STOPPING => SessionState::Stopping,
            S::LOSS_PENDING => SessionState::LossPending,
            S::EXITING => SessionState::Exiting,
            _ => SessionState::Unknown,
        }
    }

    /// The OpenXR name, e.g. "FOCUSED", for reports.
    pub fn name(self) -> &'static str {
        match self {
            SessionState::Unknown => "UNKNOWN",
            SessionState::Idle => "IDLE",
            SessionState::Ready => "READY",
            SessionState::Synchronized => "SYNCHRONIZED",
            SessionState::Visible => "VISIBLE",
            SessionState::Focused => "FOCUSED",
            SessionState::Stopping => "STOPPING",
            SessionState::LossPending => "LOSS_PENDING",
            SessionState::Exiting => "EXITING",
        }
    }

    /// How far into a session this state is: FOCUSED is the most engaged; the way-out states count as none.
    fn engagement(self) -> u8 {
        match self {
            SessionState::Idle => 1,
            SessionState::Ready => 2,
            SessionState::Synchronized => 3,
            SessionState::Visible => 4,
            SessionState::Focused => 5,
            _ => 0,
        }
    }
}

/// What a state change asks of the application.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LifecycleAction {
    None,
    /// `xrBeginSession`, then run the frame loop.
    Begin,
    /// Stop submitting frames and `xrEndSession`.
    End,
    /// Destroy the session and the instance; the runtime is going away or done with us.
    Exit,
}

/// Where the session is and where it has been.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lifecycle {
    pub state: SessionState,
    /// The most engaged state reached (FOCUSED beats VISIBLE beats ...).
    pub max_state: SessionState,
    /// Between `xrBeginSession` and `xrEndSession`: the frame loop runs.
    pub running: bool,
    /// The application asked to leave (`xrRequestExitSession` sent, or nothing to end).
    pub exit_requested: bool,
    pub exiting: bool,
    /// The runtime lost the session or its instance (LOSS_PENDING, instance loss pending) without the application
    /// asking to leave: a headset unplugged, the runtime restarting. The application may make a new session.
    pub lost: bool,
}

impl Lifecycle {
    /// Takes a state-change event; returns what the application must do about it.
    pub fn on_state_changed(&mut self, state: SessionState) -> LifecycleAction {
        self.state = state;
        if state.engagement() > self.max_state.engagement() {
            self.max_state = state;
        }
        match state {
            SessionState::Ready if !self.running => {
                self.running = true;
                LifecycleAction::Begin
            }
            SessionState::Stopping if self.running => {
                self.running = false;
                LifecycleAction::End
            }
            SessionState::Exiting | SessionState::LossPending => {
                self.running = false;
                self.exiting = true;
                self.lost |= state == SessionState::LossPending && !self.exit_requested;
                LifecycleAction::Exit
            }
            _ => LifecycleAction::None,
        }
    }

    /// The instance is about to be lost (the runtime is shutting down): leave at once.
    pub fn on_instance_loss_pending(&mut self) -> LifecycleAction {
        self.running = false;
        self.exiting = true;
        self.lost |= !self.exit_requested;
        LifecycleAction::Exit
    }

    /// Controller input belongs to us only while focused; otherwise hands hold still and grips stay open.
    pub fn input_active(&self) -> bool {
        self.state == SessionState::Focused
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lost session (or instance) is one the application may make again; an exit it asked for is not lost.
    #[test]
    fn loss_is_told_apart_from_an_asked_exit() {
        let mut l = Lifecycle::default();
        l.on_state_changed(SessionState::Ready);
        l.on_state_changed(SessionState::Focused);
        assert_eq!(l.on_state_changed(SessionState::LossPending), LifecycleAction::Exit);
        assert!(l.lost && l.exiting && !l.running);
        let mut l = Lifecycle::default();
        l.on_state_changed(SessionState::Ready);
        assert_eq!(l.on_instance_loss_pending(), LifecycleAction::Exit);
        assert!(l.lost);
        let mut l = Lifecycle::default();
        l.on_state_changed(SessionState::Ready);
        l.exit_requested = true;
        l.on_state_changed(SessionState::Stopping);
        l.on_state_changed(SessionState::Exiting);
        assert!(!l.lost && l.exiting);
    }

    #[test]
    fn a_normal_session_begins_on_ready_ends_on_stopping_and_exits() {
        let mut l = Lifecycle::default();
        assert_eq!(l.on_state_changed(SessionState::Idle), LifecycleAction::None);
        assert_eq!(l.on_state_changed(SessionState::Ready), LifecycleAction::Begin);
        assert!(l.running);
        assert_eq!(l.on_state_changed(SessionState::Synchronized), LifecycleAction::None);
        assert_eq!(l.on_state_changed(SessionState::Visible), LifecycleAction::None);
        assert!(!l.input_active(), "visible is not focused: input is someone else's");
        assert_eq!(l.on_state_changed(SessionState::Focused), LifecycleAction::None);
        assert!(l.input_active());
        assert_eq!(l.on_state_changed(SessionState::Visible), LifecycleAction::None);
        assert!(!l.input_active(), "losing focus stops input");
        assert_eq!(l.on_state_changed(SessionState::Synchronized), LifecycleAction::None);
        assert_eq!(l.on_state_changed(SessionState::Stopping), LifecycleAction::End);
        assert!(!l.running);
        assert_eq!(l.on_state_changed(SessionState::Idle), LifecycleAction::None);
        assert_eq!(l.on_state_changed(SessionState::Exiting), LifecycleAction::Exit);
        assert!(l.exiting);
        assert_eq!(
            l.max_state,
            SessionState::Focused,
            "the way out does not count as progress"
        );
    }

    #[test]
    fn a_session_can_restart_after_stopping() {
        let mut l = Lifecycle::default();
        l.on_state_changed(SessionState::Ready);
        assert_eq!(l.on_state_changed(SessionState::Stopping), LifecycleAction::End);
        assert_eq!(l.on_state_changed(SessionState::Idle), LifecycleAction::None);
        assert_eq!(l.on_state_changed(SessionState::Ready), LifecycleAction::Begin);
        assert!(l.running);
    }

    #[test]
    fn loss_pending_exits_from_any_state() {
        let mut l = Lifecycle::default();
        l.on_state_changed(SessionState::Ready);
        l.on_state_changed(SessionState::Focused);
        assert_eq!(l.on_state_changed(SessionState::LossPending), LifecycleAction::Exit);
        assert!(!l.running && l.exiting && !l.input_active());
        let mut l = Lifecycle::default();
        assert_eq!(l.on_instance_loss_pending(), LifecycleAction::Exit);
        assert!(l.exiting);
    }

    #[test]
    fn max_state_is_the_most_engaged_state_reached() {
        let mut l = Lifecycle::default();
        l.on_state_changed(SessionState::Idle);
        l.on_state_changed(SessionState::Ready);
        l.on_state_changed(SessionState::Synchronized);
        assert_eq!(l.max_state, SessionState::Synchronized);
        l.on_state_changed(SessionState::Stopping);
        assert_eq!(l.max_state, SessionState::Synchronized);
        assert_eq!(l.max_state.name(), "SYNCHRONIZED");
    }
}
