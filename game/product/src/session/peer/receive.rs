//! Receiving: the endpoint's events (joins, hellos, goodbyes, timeouts) and each state message — welcome,
//! presence, avatars and game inputs from its header, then its cube updates (`judge`).

use super::simulate::wake_dynamic;
use super::*;

impl Peer {
    /// Handles everything the endpoint has for us: connections, acks, messages (judged on the host, accepted or
    /// ignored on a guest).
    pub fn receive(&mut self, now_s: f64) -> Result<(), PeerError> {
        self.clock_s = self.clock_s.max(now_s);
        while let Some(event) = self.endpoint.pop_event() {
            match event {
                EndpointEvent::Connected { peer } if self.is_host => {
                    if let Some(slot) = self.links.get_mut(usize::from(peer.0)) {
                        let mut link = Link::new(peer, guest_player(peer), self.cube_count as usize);
                        link.sender.measure_demand = self.measure_demand;
                        self.present |= 1 << (link.player - 1);
                        *slot = Some(link);
                    }
                }
                EndpointEvent::Disconnected { peer, reason } if self.is_host => {
                    tracing::info!(peer = peer.0, ?reason, "a guest left");
                    self.guest_left(peer)?;
                }
                EndpointEvent::Disconnected { peer, .. } if !self.is_host && peer.0 != 0 => self.direct_closed(peer),
                EndpointEvent::Disconnected { reason, .. } if self.host_gone.is_none() && !self.left => {
                    let how = match reason {
                        DisconnectReason::TimedOut => HostGone::TimedOut,
                        DisconnectReason::Closed | DisconnectReason::HostShutdown => HostGone::Left,
                    };
                    tracing::warn!(?reason, "{}", how.name());
                    self.host_gone = Some((how, now_s));
                    self.forget_everyone()?;
                }
                EndpointEvent::Received { peer, sequence } => {
                    // Copied out of the endpoint (which `on_message` may send on) into a buffer kept for reuse.
                    let mut data = std::mem::take(&mut self.receive_buf);
                    data.clear();
                    data.extend_from_slice(self.endpoint.payload());
                    let read = self.on_message(peer, &data, now_s);
                    self.receive_buf = data;
                    if read? {
                        self.endpoint.accept(peer, sequence);
                    }
                }
                EndpointEvent::Acked { peer, sequence } => {
                    if let Some(link) = self.link_mut(peer) {
                        if let Some(s) = link.sender_sequence[usize::from(sequence)].take() {
                            link.sender.on_acked(s);
                        }
                        link.avatars_sent.on_acked(sequence);
                        if link.welcome_sequences[usize::from(sequence)] {
                            link.welcome_acked = true;
                        }
                    }
                    if self.is_host {
                        self.introduction_acked(usize::from(peer.0), sequence);
                    }
                }
                EndpointEvent::Lost { peer, sequence } => {
                    if let Some(link) = self.link_mut(peer) {
                        link.sender_sequence[usize::from(sequence)] = None;
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The link slot of the connection `peer`: the endpoint's slot (on a guest, 0 is the host and the others its
    /// direct links).
    pub(super) fn slot_of(&self, peer: PeerId) -> usize {
        usize::from(peer.0)
    }

    pub(super) fn link_mut(&mut self, peer: PeerId) -> Option<&mut Link> {
        let slot = self.slot_of(peer);
        self.links.get_mut(slot).and_then(|l| l.as_mut())
    }

    /// Rule 9: a guest left or timed out.
    pub(super) fn guest_left(&mut self, peer: PeerId) -> Result<(), PeerError> {
        let Some(link) = self.links.get_mut(usize::from(peer.0)).and_then(|l| l.take()) else {
            return Ok(());
        };
        self.present &= !(1u8 << (link.player - 1));
        self.forget_introductions(link.player);
        self.remote.forget(link.player);
        self.game_inputs[usize::from(link.player - 1)] = None;
        let mut returned = Vec::new();
        self.table.release_player(link.player, |c| returned.push(c));
        for c in returned {
            wake_dynamic(&mut self.world, BodyId(c))?;
        }
        Ok(())
    }

    /// The host is gone: the other players' avatars go (nobody plays them now), and the cubes in their hands fall
    /// where they are.
    pub(super) fn forget_everyone(&mut self) -> Result<(), PeerError> {
        let me = self.table.me();
        for player in (1..=MAX_AUTHORITY).filter(|&p| p != me) {
            self.close_direct(player, self.clock_s);
            self.forget_player(player)?;
        }
        self.present = if me == DEFAULT_AUTHORITY { 0 } else { 1 << (me - 1) };
        Ok(())
    }

    /// Player `player` is no longer in the game (as the host says): its avatar is no longer played out and the
    /// cubes its hands held here are let go.
    pub(super) fn forget_player(&mut self, player: u8) -> Result<(), PeerError> {
        self.remote.forget(player);
        if let Some(input) = self.game_inputs.get_mut(usize::from(player).wrapping_sub(1)) {
            *input = None;
        }
        for cube in 0..self.cube_count {
            if self.table.holder(cube) == player {
                self.table.set_holder(cube, NOBODY);
                let id = BodyId(cube);
                if self.world.kind(id)? == BodyKind::Kinematic {
                    self.set_kind_keeping_rest(id, BodyKind::Dynamic)?;
                }
            }
        }
        Ok(())
    }

    /// Reads and applies one message; true when it was read (the transport then acks it, and the sender may code
    /// against it), false when it was refused.
    pub(super) fn on_message(&mut self, peer: PeerId, data: &[u8], now_s: f64) -> Result<bool, PeerError> {
        let read = {
            let ring = self
                .links
                .get(self.slot_of(peer))
                .and_then(|l| l.as_ref())
                .map(|l| &l.avatars_received);
            read_message(data, self.cube_count, |step| ring.and_then(|r| r.get(step)))
        };
        let message = match read {
            Ok(m) => m,
            Err(e) => {
                tracing::debug!("message refused: {e}");
                self.refuse(RejectReason::Malformed);
                if let (MessageError::MissingAvatarBaseline(_), Some(link)) = (e, self.link_mut(peer)) {
                    // A message we could not read (it is not acked): tell the sender, which then codes absolute.
                    link.receiver.rejected_packets += 1;
                    let count = link.receiver.rejected_packets as u16;
                    let link_peer = link.peer;
                    let mut notice = [0u8; REJECT_NOTICE_BYTES];
                    if let Ok(n) = write_reject_notice(&mut notice, count) {
                        let _ = self.endpoint.send(now_s, link_peer, &notice[..n]);
                    }
                }
                return Ok(false);
            }
        };
        if !self.is_host && peer.0 != 0 {
            return Ok(self.on_direct(peer, message, now_s));
        }
        match message {
            Message::Hello(hello) => return Ok(self.on_hello(peer, &hello)),
            Message::Refused(refusal) if !self.is_host && !self.welcomed => {
                let host = refusal.scene;
                return Err(match refusal.reason {
                    RefusalReason::Version => PeerError::VersionRefused {
                        ours: self.protocol_version,
                        host: refusal.version,
                    },
                    RefusalReason::Scene => PeerError::SceneRefused {
                        ours: Box::new(self.scene),
                        host: Box::new(host),
                    },
                });
            }
            Message::Refused(_) => return Ok(false),
            Message::Legacy if self.is_host => {
                tracing::warn!(
                    peer = peer.0,
                    addr = ?self.endpoint.peer_addr(peer),
                    "a guest of an older build (game protocol 1, no version) tried to join: disconnected; this \
                     host speaks protocol {PROTOCOL_VERSION}"
                );
                self.endpoint.disconnect(now_s, peer);
                self.guest_left(peer)?;
                return Ok(false);
            }
            Message::Legacy => return Err(PeerError::HostTooOld),
            Message::State { .. } if self.is_host && self.link_refused(peer) => return Ok(false),
            Message::RejectNotice(bytes) => {
                if let (Ok(refused), Some(link)) = (read_reject_notice(bytes), self.link_mut(peer)) {
                    if link.reject_notices.is_new(refused) {
                        link.sender.resync();
                        link.avatars_sent.forget_all();
                    }
                }
            }
            Message::State { header, body } => {
                if !self.is_host {
                    self.take_welcome(&header)?;
                    if !self.welcomed && (self.scene_mismatch.is_some() || self.protocol_version != PROTOCOL_VERSION) {
                        // Not this guest's game: nothing here is applied; the host's refusal, naming its scene, is
                        // on its way (`NetPlay` waits for it).
                        return Ok(false);
                    }
                }
                let (is_host, step) = (self.is_host, self.step);
                let Some(link) = self.link_mut(peer) else {
                    return Ok(false);
                };
                // Kept whatever the body holds: the sender will code against this message once it is acked.
                link.avatars_received.insert(header.sender_step, &header.avatars);
                let lag = link.clock.arrived(step, header.sender_step);
                if let Some(theirs) = header.lag_floor {
                    link.clock.heard(theirs);
                }
                let age_steps = link.clock.age(lag).unwrap_or(0);
                if let Err(e) = link.receiver.read(body) {
                    tracing::debug!("state body refused: {e}");
                    let mut notice = [0u8; REJECT_NOTICE_BYTES];
                    let count = link.receiver.rejected_packets as u16;
                    let link_peer = link.peer;
                    self.refuse(RejectReason::Malformed);
                    if let Ok(n) = write_reject_notice(&mut notice, count) {
                        let _ = self.endpoint.send(now_s, link_peer, &notice[..n]);
                    }
                    return Ok(false);
                }
                // Headers are ordered by the sender's step (wrap-safe over 32 bits): held cubes come from the newest
                // only.
                let newer = link
                    .newest_header_step
                    .is_none_or(|s| (header.sender_step.wrapping_sub(s) as i32) > 0);
                let mut gap = 0.0;
                if newer {
                    link.newest_header_step = Some(header.sender_step);
                    gap = link.newest_header_at_s.replace(now_s).map_or(0.0, |last| now_s - last);
                }
                if newer && is_host {
                    link.hears_directly = header.hears_directly.unwrap_or(0);
                }
                let player = link.player;
                if gap > STALL_GAP_S && !self.is_host {
                    tracing::warn!(gap_s = gap, "the host's game stood still");
                    self.stats.seconds_stalled += gap;
                }
                if newer {
                    self.stats.newest_states += 1;
                    self.stats.newest_state_age_steps += lag.max(0) as u64;
                }
                if newer && !self.is_host {
                    self.take_presence(header.present)?;
                }
                if let Some(introduction) = header.introduction.filter(|_| !self.is_host && self.welcomed) {
                    self.take_introduction(&introduction, now_s);
                }
                self.take_avatars(player, &header, newer, now_s)?;
                if newer && self.welcomed {
                    self.take_game_inputs(player, &header);
                }
                self.take_updates(peer, player, age_steps)?;
            }
        }
        Ok(true)
    }

    /// Guest: who the host says is in the game; a player who left is forgotten here.
    pub(super) fn take_presence(&mut self, present: Option<u8>) -> Result<(), PeerError> {
        let Some(now) = present else { return Ok(()) };
        let gone = self.present & !now;
        self.present = now;
        let me = self.table.me();
        for player in (1..=MAX_AUTHORITY).filter(|&p| gone & (1 << (p - 1)) != 0 && p != me) {
            tracing::info!(player, "a player left the game");
            self.close_direct(player, self.clock_s);
            self.forget_player(player)?;
        }
        Ok(())
    }

    /// Host: whether the guest on `peer` was refused (its hello named another version or scene).
    pub(super) fn link_refused(&self, peer: PeerId) -> bool {
        self.links
            .get(usize::from(peer.0))
            .and_then(|l| l.as_ref())
            .is_some_and(|l| matches!(l.admission, Admission::Refused(_)))
    }

    /// Host: a guest's hello. Its version and scene must be the host's; otherwise it is refused (every step, naming
    /// the host's own), and the host says so in its log. True when read.
    pub(super) fn on_hello(&mut self, peer: PeerId, hello: &Hello) -> bool {
        if !self.is_host {
            return false;
        }
        let ours = self.scene;
        let addr = self.endpoint.peer_addr(peer);
        let Some(link) = self.links.get_mut(usize::from(peer.0)).and_then(|l| l.as_mut()) else {
            return false;
        };
        if link.admission != Admission::Waiting {
            return true;
        }
        match judge_hello(hello, &ours) {
            None => {
                link.admission = Admission::Welcomed;
                tracing::info!(player = link.player, ?addr, scene = %hello.scene, "a guest joined");
            }
            Some(reason) => {
                link.admission = Admission::Refused(Refusal {
                    version: PROTOCOL_VERSION,
                    scene: ours,
                    reason,
                });
                tracing::warn!(
                    ?addr,
                    guest_version = hello.version,
                    guest_scene = %hello.scene,
                    host_version = PROTOCOL_VERSION,
                    host_scene = %ours,
                    "refused a guest: {}",
                    match reason {
                        RefusalReason::Version => "another version of Tumble",
                        RefusalReason::Scene => "another scene",
                    }
                );
            }
        }
        true
    }

    pub(super) fn refuse(&mut self, reason: RejectReason) {
        if self.is_host {
            self.stats.rejected.add(reason);
        } else if reason == RejectReason::Malformed {
            self.stats.malformed += 1;
        }
    }

    pub(super) fn take_welcome(&mut self, header: &StateHeader) -> Result<(), PeerError> {
        let Some(w) = header.welcome else { return Ok(()) };
        if self.welcomed || self.protocol_version != PROTOCOL_VERSION {
            // (A guest pretending to be of another build cannot read this build's welcome, as such a guest could not.)
            return Ok(());
        }
        if w.cube_count != self.cube_count || w.scene_checksum != self.scene_checksum {
            // Another scene: not welcomed. The host's refusal names it (see `scene_mismatch_error`).
            self.scene_mismatch = Some(w);
            return Ok(());
        }
        // A fresh table for the player index the host gave, keeping the cubes pinned from the start (rule 10).
        let mut table = AuthorityTable::new(self.cube_count as usize, w.player, false);
        for cube in 0..self.cube_count {
            match self.table.pinned_to(cube) {
                NOBODY => {}
                player => table.pin(cube, player),
            }
        }
        self.table = table;
        self.welcomed = true;
        self.welcomed_at_step = self.step;
        Ok(())
    }

    /// The avatars in a message from `from_player`'s connection. Every avatar is played out (the host: only those
    /// it accepts); the newest message's (`newer`) also carry claims: the cubes in their hands, judged (host) or
    /// accepted (guest) like cube states, and releases (a cube the sender's side held that no avatar names now).
    ///
    /// The host takes only the sender's own slot (the sender is known by its connection: an avatar in another
    /// slot is impersonation, refused), refuses an implausible avatar whole, and relays an avatar only when it
    /// and every cube in its hands were accepted.
    pub(super) fn take_avatars(
        &mut self,
        from_player: u8,
        header: &StateHeader,
        newer: bool,
        now_s: f64,
    ) -> Result<(), PeerError> {
        if !self.is_host {
            let me = self.table.me();
            for player in (1..=MAX_AUTHORITY).filter(|&p| p != me) {
                // A player heard directly is played out from its own link, a hop sooner than this relay.
                if let Some(sample) = header.avatar(player).filter(|_| !self.direct_live(player, now_s)) {
                    self.remote.push(player, sample, now_s);
                }
            }
            if newer {
                for player in (1..=MAX_AUTHORITY).filter(|&p| p != me) {
                    if let Some(sample) = header
                        .avatar(player)
                        .filter(|s| s.avatar.is_plausible(DESKTOP_HAND_REACH_M))
                    {
                        self.take_held(player, &sample.avatar)?;
                    }
                }
                self.release_unnamed(from_player, header)?;
            }
            return Ok(());
        }
        let own = header.avatar(from_player);
        if !newer {
            // Out of order: too old for claims, still a sample of the hands to play out.
            if let Some(sample) = own.filter(|s| s.avatar.is_plausible(DESKTOP_HAND_REACH_M)) {
                self.remote.push(from_player, sample, now_s);
            }
            return Ok(());
        }
        for player in (1..=MAX_AUTHORITY).filter(|&p| p != from_player) {
            if header.avatar(player).is_some() {
                self.refuse(RejectReason::NotSender);
            }
        }
        if let Some(sample) = own {
            if !sample.avatar.is_plausible(DESKTOP_HAND_REACH_M) {
                self.refuse(RejectReason::BadPose);
                return Ok(());
            }
            if self.take_held(from_player, &sample.avatar)? {
                self.remote.accept(from_player, sample, now_s);
            } else {
                // A claim in its hands was refused: not relayed, but the hands are where they are (a cube is drawn
                // in a hand only where the table says that hand holds it). Left out, the sample would count as a
                // lost one and lengthen the delay.
                self.remote.push(from_player, sample, now_s);
            }
        }
        self.release_unnamed(from_player, header)
    }

    /// The game inputs of a newer message from `from_player`: the host takes only the sender's own slot (as with
    /// avatars), a guest every slot but its own.
    pub(super) fn take_game_inputs(&mut self, from_player: u8, header: &StateHeader) {
        let me = self.table.me();
        for (p, input) in header.game_inputs.iter().enumerate() {
            let player = p as u8 + 1;
            let mine = if self.is_host {
                player == from_player
            } else {
                player != me
            };
            if mine {
                self.game_inputs[p] = *input;
            }
        }
    }
}
