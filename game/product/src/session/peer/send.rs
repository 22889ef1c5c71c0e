//! Sending: the peer's own avatar captured, then per connection one state message — header (welcome, presence,
//! avatars, game inputs) and the cubes the priority accumulator picks within the link's budget; a hostile peer's
//! forgeries instead; the bytes each part took and the demand with no budget.

use super::*;

/// A message header carries the sender's lag floor when its step is a multiple of this.
const LAG_FLOOR_EVERY_STEPS: u32 = 30;

impl Peer {
    /// Both sides quantize every body before every step.
    pub fn quantize(&mut self) -> Result<(), PeerError> {
        quantize_world(&mut self.world)?;
        Ok(())
    }

    /// Sends this step's message on every connection.
    pub fn send(&mut self, now_s: f64) -> Result<(), PeerError> {
        self.clock_s = self.clock_s.max(now_s);
        if self.left || self.host_gone.is_some() {
            return Ok(());
        }
        // Every step, so that a sample between packets can carry the trail of the steps since the last.
        self.capture_own_avatar();
        if !self.step.is_multiple_of(u64::from(self.send_every_steps)) {
            return Ok(());
        }
        if !self.is_host && !self.welcomed {
            // Until the host welcomes it, a guest says who it is: its protocol version and its scene.
            let hello = Hello {
                version: self.protocol_version,
                scene: self.scene,
            };
            let n = write_hello(&mut self.message_buf, &hello).map_err(MessageError::from)?;
            if let Err(e) = self.endpoint.send(now_s, PeerId(0), &self.message_buf[..n]) {
                tracing::debug!("hello not sent: {e}");
            }
            return Ok(());
        }
        for slot in 0..self.links.len() {
            if self.links[slot].is_some() {
                self.send_on(slot, now_s)?;
            }
        }
        Ok(())
    }

    /// This player's avatar this step, with the cubes in its hands (those the table says it holds), stamped
    /// with this step. A dedicated host or a guest not yet welcomed has none; an avatar the wire cannot carry (a
    /// hand outside the play space) leaves the last one in place, so held cubes stay held.
    pub(super) fn capture_own_avatar(&mut self) {
        let me = self.table.me();
        if !self.welcomed || me == DEFAULT_AUTHORITY {
            self.own_avatar = None;
            return;
        }
        let held = HandSide::BOTH.map(|side| {
            let h = self.interaction.hand(side).held?;
            (self.table.holder(h.body.0) == me).then(|| (h.body.0, h.offset, self.table.stamp(h.body.0)))
        });
        let mut avatar = self.avatar;
        if !self.send_head {
            avatar.head = Pose::IDENTITY;
        }
        // A lossy link (any of this peer's, by the share of its packets not acked) is worth the previous sample's
        // position again in every trail; a clean one is not.
        let lossy = self
            .links
            .iter()
            .flatten()
            .filter_map(|l| self.endpoint.stats(l.peer))
            .any(|s| s.loss_pct >= REPEAT_PREVIOUS_LOSS_PCT);
        match WireAvatar::from_avatar(&avatar, held) {
            Ok(avatar) => {
                let now = trail_positions(&avatar);
                let path: [_; TRAIL_STEPS + 1] = std::array::from_fn(|k| {
                    let back = self.step.checked_sub(k as u64 + 1)?;
                    let (at, positions) = self.own_path[back as usize % self.own_path.len()]?;
                    (at == back).then_some(positions)
                });
                let slot = self.step as usize % self.own_path.len();
                self.own_path[slot] = Some((self.step, now));
                self.own_avatar = Some(AvatarSample {
                    step: self.step as u32,
                    avatar,
                    trail: match (self.send_trails, self.repeat_previous_samples && lossy) {
                        (false, _) => AvatarTrail::default(),
                        (true, true) => AvatarTrail::between(&now, &path, self.send_every_steps),
                        (true, false) => AvatarTrail::between(&now, &path, self.send_every_steps).without_previous(),
                    },
                })
            }
            Err(e) => tracing::debug!("own avatar not sendable, the last one stands: {e}"),
        }
    }

    /// The avatars a message to `to_player` carries: a guest its own; the host its own and the newest accepted
    /// avatar of every other guest, never the receiver's own, with only the held cubes the host's table gives
    /// that player (the host's word is final).
    pub(super) fn avatars_for(&self, to_player: u8) -> AvatarSet {
        let mut set = NO_AVATARS;
        let me = self.table.me();
        if let Some(own) = self.own_avatar {
            set[usize::from(me) - 1] = Some(own);
        }
        if !self.is_host {
            return set;
        }
        for player in 1..=MAX_AUTHORITY {
            if player == to_player || player == me {
                continue;
            }
            let Some(mut sample) = self.remote.newest(player).copied() else {
                continue;
            };
            for hand in &mut sample.avatar.hands {
                if hand.held.is_some_and(|h| self.table.holder(h.cube) != player) {
                    hand.held = None;
                }
            }
            set[usize::from(player) - 1] = Some(sample);
        }
        set
    }

    /// The game inputs a message to `to_player` carries: this player's own; on the host also every other guest's
    /// newest, never the receiver's own.
    pub(super) fn game_inputs_for(&self, to_player: u8) -> [Option<u8>; 4] {
        let mut out = [None; 4];
        let me = self.table.me();
        if let Some(own) = usize::from(me).checked_sub(1).and_then(|s| out.get_mut(s)) {
            *own = self.own_game_input;
        }
        if self.is_host {
            for (p, input) in self.game_inputs.iter().enumerate() {
                if p + 1 != usize::from(to_player) && p + 1 != usize::from(me) {
                    out[p] = *input;
                }
            }
        }
        out
    }

    pub(super) fn send_on(&mut self, slot: usize, now_s: f64) -> Result<(), PeerError> {
        if self.is_host {
            let link = self.links[slot].as_ref().expect("checked by the caller");
            match link.admission {
                // Welcomed at once, the hello judged when it comes (a guest checks the welcome's scene itself, and
                // a guest of another build cannot read it): joining costs no extra round trip.
                Admission::Waiting | Admission::Welcomed => {}
                Admission::Refused(refusal) => {
                    // Said every step until the guest leaves (it does as soon as one arrives) or times out.
                    let n = write_refusal(&mut self.message_buf, &refusal).map_err(MessageError::from)?;
                    let _ = self.endpoint.send(now_s, link.peer, &self.message_buf[..n]);
                    return Ok(());
                }
            }
        }
        if self.hostile && self.welcomed {
            return self.send_forged(slot, now_s);
        }
        let (player, welcome_acked) = {
            let link = self.links[slot].as_ref().expect("checked by the caller");
            (link.player, link.welcome_acked)
        };
        // A guest's direct link to another guest carries its avatar alone.
        let direct = !self.is_host && slot != 0;
        let introduction = self.introduction_for(slot);
        let step = self.step as u32;
        let baseline = self.links[slot]
            .as_ref()
            .and_then(|l| l.avatars_sent.baseline(step))
            .map(|(age, set)| (age, *set));
        let mut avatars = self.avatars_for(player);
        if let Some(link) = self.links[slot]
            .as_mut()
            .filter(|_| self.is_host && self.hold_directly_heard)
        {
            hold_directly_heard(&mut avatars, link.hears_directly, &mut link.relayed_while_direct);
        }
        // With a baseline, an older acked set too — avatars are then coded against their motion carried on — unless
        // every avatar is its baseline's, on schedule or held (a bit or two each: the prior's age would cost more than it saves).
        let moving = baseline.is_some_and(|(age, base)| {
            avatars.iter().zip(base.iter()).any(|(a, b)| match (a, b) {
                (Some(a), Some(b)) => a.avatar != b.avatar || (a.step != b.step.wrapping_add(age) && a.step != b.step),
                (Some(_), None) => true,
                (None, _) => false,
            })
        });
        let prior = self.links[slot]
            .as_ref()
            .and_then(|l| l.avatars_sent.prior(step))
            .map(|(age, set)| (age, *set))
            .filter(|_| moving);
        let mut header = StateHeader {
            sender_step: step,
            welcome: None,
            introduction,
            avatar_baseline_age: baseline.map(|(age, _)| age),
            avatar_prior_age: prior.map(|(age, _)| age),
            avatars,
            present: self.is_host.then_some(self.present),
            hears_directly: (!self.is_host && !direct)
                .then(|| self.directly_heard(now_s))
                .filter(|&mask| mask != 0),
            game_inputs: if direct {
                [None; 4]
            } else {
                self.game_inputs_for(player)
            },
            // Three times a second: enough for the other side to follow its counter's offset from ours.
            lag_floor: self.links[slot]
                .as_ref()
                .and_then(|l| l.clock.floor())
                .filter(|_| !direct && step.is_multiple_of(LAG_FLOOR_EVERY_STEPS)),
        };
        if self.is_host && !welcome_acked {
            header.welcome = Some(Welcome {
                player,
                cube_count: self.cube_count,
                scene_checksum: self.scene_checksum,
            });
        }
        // The header goes first, avatars included; the state body is written right after it, to what is left of
        // the budget.
        let (head, avatar_bits) = write_header(
            &mut self.message_buf,
            &header,
            self.cube_count,
            baseline.as_ref().map(|(_, set)| set),
            prior.as_ref().map(|(_, set)| set),
        )?;
        let budget = self.link_budget(slot);
        let end = (head + budget.saturating_sub(head).max(MIN_BODY_BYTES)).min(self.message_buf.len());
        let me = self.table.me();
        let is_host = self.is_host;
        let table = &self.table;
        let link = self.links[slot].as_mut().expect("checked by the caller");
        let sequence = link.next_sender_sequence;
        link.next_sender_sequence = sequence.wrapping_add(1);
        if let Some(stats) = self.endpoint.stats(link.peer) {
            link.sender.rest_news_copies = rest_news_copies(stats.loss_pct);
        }
        let sendable = |c: u32| {
            let s = table.stamp(c);
            table.holder(c) == NOBODY
                && if is_host {
                    s.authority != player
                } else {
                    s.authority == me && me != DEFAULT_AUTHORITY
                }
        };
        let n = if direct {
            0
        } else {
            link.sender.write_packet_for(
                &self.world,
                table.stamps(),
                sendable,
                self.step,
                sequence,
                &mut self.message_buf[head..end],
            )?
        };
        let m = head + n;
        link.header_bytes_sent += head as u64;
        link.avatar_bits_sent += avatar_bits as u64;
        match self.endpoint.send(now_s, link.peer, &self.message_buf[..m]) {
            Ok(transport) => {
                link.sender_sequence[usize::from(transport)] = Some(sequence);
                link.welcome_sequences[usize::from(transport)] = header.welcome.is_some();
                link.introduction_sequences[usize::from(transport)] = header.introduction.map_or(0, |i| i.player);
                link.avatars_sent.record_sent(transport, step, &header.avatars);
            }
            Err(e) => tracing::debug!("state message not sent: {e}"),
        }
        Ok(())
    }

    /// The hostile guest's message: a forgery instead of its own state.
    pub(super) fn send_forged(&mut self, slot: usize, now_s: f64) -> Result<(), PeerError> {
        let link = self.links[slot].as_mut().expect("checked by the caller");
        let (header, forged) = match forge(self.step, self.table.me(), &self.table) {
            Forgery::Garbage => {
                let garbage = [MESSAGE_STATE, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];
                let _ = self.endpoint.send(now_s, link.peer, &garbage);
                return Ok(());
            }
            Forgery::Claim { header, cube } => (header, cube),
        };
        let budget = self.link_budget(slot);
        let link = self.links[slot].as_mut().expect("checked by the caller");
        let (head, _) = write_header(&mut self.message_buf, &header, self.cube_count, None, None)?;
        let end = (head + budget).min(self.message_buf.len());
        self.forged_stamps.copy_from_slice(self.table.stamps());
        if let Some((cube, stamp)) = forged {
            self.forged_stamps[cube as usize] = stamp;
        }
        let sequence = link.next_sender_sequence;
        link.next_sender_sequence = sequence.wrapping_add(1);
        let n = link.sender.write_packet_for(
            &self.world,
            &self.forged_stamps,
            |c| forged.is_some_and(|(f, _)| f == c),
            self.step,
            sequence,
            &mut self.message_buf[head..end],
        )?;
        let m = head + n;
        if let Ok(transport) = self.endpoint.send(now_s, link.peer, &self.message_buf[..m]) {
            link.sender_sequence[usize::from(transport)] = Some(sequence);
        }
        Ok(())
    }

    /// The IP and UDP header bytes of each datagram to or from `peer`: 28 over IPv4, 48 over IPv6.
    pub(super) fn ip_udp_bytes(&self, peer: PeerId) -> usize {
        self.endpoint
            .peer_addr(peer)
            .map_or(IP_UDP_HEADER_BYTES, ip_udp_header_bytes)
    }

    /// The state packet's byte budget on the connection to `peer` (less over IPv6, whose headers are longer).
    pub(super) fn packet_budget_for(&self, peer: PeerId) -> usize {
        let ip = self.ip_udp_bytes(peer);
        packet_budget_bytes(
            self.kbps_budget,
            PACKETS_PER_S / self.send_every_steps,
            (ip + CONNECTED_HEADER_BYTES) as u32,
            (MAX_PACKET_BYTES + ip) as u32,
        ) as usize
    }

    /// The message byte budget of the connection in link slot `slot` (0 when there is none: the caller checked).
    pub(super) fn link_budget(&self, slot: usize) -> usize {
        self.links[slot].as_ref().map_or(0, |l| self.packet_budget_for(l.peer))
    }

    /// Per-connection wire bytes so far, sent and received, IP/UDP headers included, by remote player.
    pub fn wire_bytes(&self) -> impl Iterator<Item = (u8, u64, u64)> + '_ {
        self.links.iter().flatten().filter_map(|l| {
            let s = self.endpoint.stats(l.peer)?;
            let header = self.ip_udp_bytes(l.peer) as u64;
            Some((
                l.player,
                s.bytes_sent + s.packets_sent * header,
                s.bytes_received + s.packets_received * header,
            ))
        })
    }

    /// From now on every connection also measures its demand: what it would send with no budget.
    pub fn measure_demand(&mut self) {
        self.measure_demand = true;
        for link in self.links.iter_mut().flatten() {
            link.sender.measure_demand = true;
        }
    }

    /// Per connection, what this peer sent, by part.
    pub fn sent_breakdown(&self) -> impl Iterator<Item = SentBytes> + '_ {
        self.links.iter().flatten().filter_map(|l| {
            let s = self.endpoint.stats(l.peer)?;
            let wire = s.bytes_sent + s.packets_sent * self.ip_udp_bytes(l.peer) as u64;
            let (cubes, header) = (l.sender.body_bytes, l.header_bytes_sent);
            let avatars = (l.avatar_bits_sent / 8).min(header);
            Some(SentBytes {
                to: l.player,
                cubes,
                avatars,
                header: header - avatars,
                rest: wire.saturating_sub(cubes + header),
                packets: s.packets_sent,
            })
        })
    }

    /// Per connection: the remote player and the wire bytes this peer would have sent it with no budget (the
    /// bytes sent, with the state bodies replaced by what they would have been). Zero unless measured.
    pub fn demand_wire_bytes(&self) -> impl Iterator<Item = (u8, u64)> + '_ {
        self.links.iter().flatten().filter_map(|l| {
            let s = self.endpoint.stats(l.peer)?;
            let wire = s.bytes_sent + s.packets_sent * self.ip_udp_bytes(l.peer) as u64;
            let demand = (wire + l.sender.demand_bytes).saturating_sub(l.sender.body_bytes);
            Some((l.player, if l.sender.measure_demand { demand } else { 0 }))
        })
    }
}

/// Host: in the avatars for a guest, each player the guest hears directly (`hears_directly`, bit `p − 1`) gets the
/// sample last relayed to it again (`relayed`), its trail dropped, until that player's held cubes change: the guest
/// plays that player's hands from the direct link and takes only the claims from this relay, and the sample of the
/// guest's baseline again is two bits where a moving one costs a hundred or more.
fn hold_directly_heard(avatars: &mut AvatarSet, hears_directly: u8, relayed: &mut AvatarSet) {
    for (p, (avatar, last)) in avatars.iter_mut().zip(relayed.iter_mut()).enumerate() {
        let heard = hears_directly & (1 << p) != 0;
        let Some(newest) = avatar.as_mut().filter(|_| heard) else {
            *last = None;
            continue;
        };
        let held = |a: &WireAvatar| a.hands.map(|h| h.held);
        match last {
            // A player standing still: the newest, on schedule against the baseline, is one bit.
            Some(kept) if kept.avatar == newest.avatar => *kept = *newest,
            // Its trail is dropped: a trail costs bits in every message it rides in.
            Some(kept) if held(&kept.avatar) == held(&newest.avatar) => {
                *newest = AvatarSample {
                    trail: AvatarTrail::default(),
                    ..*kept
                }
            }
            _ => {
                newest.trail = AvatarTrail::default();
                *last = Some(*newest);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::codec::avatar_state::WireHeld;

    fn sample(step: u32, x: f32, held: Option<u32>) -> AvatarSample {
        let mut avatar = Avatar::default();
        avatar.hands[1].tracked = true;
        avatar.hands[1].pose.position = Vec3::new(x, 1.2, 0.0);
        let mut wire = WireAvatar::from_avatar(&avatar, [None, None]).unwrap();
        wire.hands[1].held = held.map(|cube| WireHeld {
            cube,
            ..WireHeld::default()
        });
        AvatarSample {
            step,
            avatar: wire,
            ..AvatarSample::default()
        }
    }

    #[test]
    fn an_avatar_heard_directly_is_relayed_again_as_it_was_until_its_held_cubes_change() {
        let mut kept = NO_AVATARS;
        let relay = |newest: [Option<AvatarSample>; 4], heard: u8, kept: &mut AvatarSet| {
            let mut avatars = newest;
            hold_directly_heard(&mut avatars, heard, kept);
            avatars
        };
        // Player 3 is heard directly, player 4 is not.
        let first = relay(
            [None, None, Some(sample(30, 0.1, None)), Some(sample(30, 0.1, None))],
            0b0100,
            &mut kept,
        );
        assert_eq!(first[2].map(|s| s.step), Some(30));
        let moved = relay(
            [None, None, Some(sample(33, 0.2, None)), Some(sample(33, 0.2, None))],
            0b0100,
            &mut kept,
        );
        assert_eq!(moved[2], first[2], "heard directly: the sample relayed before, again");
        assert_eq!(moved[3].map(|s| s.step), Some(33), "not heard directly: the newest");
        let grabbed = relay([None, None, Some(sample(36, 0.3, Some(7))), None], 0b0100, &mut kept);
        assert_eq!(grabbed[2].map(|s| s.step), Some(36), "a grab goes at once");
        assert_eq!(grabbed[2].and_then(|s| s.avatar.hands[1].held).map(|h| h.cube), Some(7));
        let unheard = relay([None, None, Some(sample(39, 0.4, Some(7))), None], 0, &mut kept);
        assert_eq!(
            unheard[2].map(|s| s.step),
            Some(39),
            "a direct link gone quiet: the newest again"
        );
        assert_eq!(kept, NO_AVATARS);
    }
}
