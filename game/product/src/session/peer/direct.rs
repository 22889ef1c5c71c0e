//! Direct links between guests, for their avatars. Through the host a guest's hand crosses two links and waits
//! for the host's next packet between them; over a link of their own it crosses one, so another guest draws it
//! about a trip and a send interval sooner.
//!
//! The host introduces every pair of guests in the game to each other: it makes the pair's keys
//! (`Endpoint::direct_link_keys`) and sends each of the two, in the header of its own sealed messages until they
//! are acked, the other's address as the host sees it and the keys as that guest uses them. Each guest then opens
//! the link (`Endpoint::open_direct`) in link slot `player − 1` and sends its own avatar on it with every message,
//! coded against the avatars the other acked as on any link, and nothing else: no cube states, no claims, no game
//! inputs. Authority stays with the host: a guest takes only the sender's own avatar from a direct link, and only
//! into its jitter buffer; the claims in a hand, and the hands of a player whose direct link is silent, still come
//! through the host.
//!
//! While a player's direct link is live ([`DIRECT_LIVE_S`]) its avatar is played out from that link alone: the
//! host's relay of the same samples comes a hop later and would only widen the jitter the buffer measures. A link
//! that never carries anything (a NAT that lets nothing in) times out like any connection, and the relay takes over.

use super::*;

/// Both directions' keys of a direct link, by player order: the first half seals what the lower player sends, the
/// second what the higher one sends.
pub(super) type DirectKeys = [u8; 2 * DIRECT_KEY_BYTES];

/// A player whose avatar came over its direct link within this long (s) is played out from that link only. Several
/// send intervals and a lost packet or two; far less than the transport's timeout.
pub const DIRECT_LIVE_S: f64 = 0.5;

fn halves(keys: &DirectKeys) -> ([u8; DIRECT_KEY_BYTES], [u8; DIRECT_KEY_BYTES]) {
    let mut low = [0; DIRECT_KEY_BYTES];
    let mut high = [0; DIRECT_KEY_BYTES];
    low.copy_from_slice(&keys[..DIRECT_KEY_BYTES]);
    high.copy_from_slice(&keys[DIRECT_KEY_BYTES..]);
    (low, high)
}

impl Peer {
    /// Host: the introduction the next message to the guest on link `slot` carries: the first other guest in the
    /// game it has not acked one to, with the pair's keys (made now when the pair has none).
    pub(super) fn introduction_for(&mut self, slot: usize) -> Option<Introduction> {
        if !self.is_host || !self.direct_links {
            return None;
        }
        // A guest is welcomed at once and its hello judged when it comes (it may never come: it is sent until the
        // welcome arrives, and can be lost); only a refused one is not in the game.
        let in_game = |l: &&Link| !matches!(l.admission, Admission::Refused(_));
        let to = self.links[slot].as_ref().filter(in_game)?.player;
        for other in (0..self.links.len()).filter(|&o| o != slot) {
            let Some(o) = self.links[other].as_ref().filter(in_game) else {
                continue;
            };
            let (player, peer) = (o.player, o.peer);
            let Some(addr) = self.endpoint.peer_addr(peer) else {
                continue;
            };
            let (low, high) = (usize::from(to.min(player)) - 1, usize::from(to.max(player)) - 1);
            let keys = match self.pair_keys[low][high] {
                Some(keys) => keys,
                None => match self.endpoint.direct_link_keys() {
                    Ok(keys) => *self.pair_keys[low][high].insert(keys),
                    Err(e) => {
                        tracing::warn!("no keys for a direct link between guests: {e}");
                        return None;
                    }
                },
            };
            if self.links[slot].as_ref()?.introduced[usize::from(player) - 1] == Some(keys) {
                continue;
            }
            let (lower_sends, higher_sends) = halves(&keys);
            let (send_key, receive_key) = if to < player {
                (lower_sends, higher_sends)
            } else {
                (higher_sends, lower_sends)
            };
            return Some(Introduction {
                player,
                addr,
                send_key,
                receive_key,
            });
        }
        None
    }

    /// Host: the guest on link `slot` acked the message of transport `sequence`; if it carried an introduction,
    /// that one is done.
    pub(super) fn introduction_acked(&mut self, slot: usize, sequence: u16) {
        let Some(link) = self.links.get_mut(slot).and_then(Option::as_mut) else {
            return;
        };
        let player = std::mem::take(&mut link.introduction_sequences[usize::from(sequence)]);
        if player == 0 {
            return;
        }
        let (low, high) = (link.player.min(player), link.player.max(player));
        link.introduced[usize::from(player) - 1] = self.pair_keys[usize::from(low) - 1][usize::from(high) - 1];
    }

    /// Host: `player` left; its pairs' keys go, so that a guest who takes its seat is introduced afresh.
    pub(super) fn forget_introductions(&mut self, player: u8) {
        let p = usize::from(player) - 1;
        for other in 0..MAX_PLAYERS {
            self.pair_keys[p.min(other)][p.max(other)] = None;
        }
        for link in self.links.iter_mut().flatten() {
            link.introduced[p] = None;
        }
    }

    /// Guest: the host introduced another guest. The direct link to it opens, unless it is open with these keys
    /// already, or was (keys are never used twice: the packet counters would start again).
    pub(super) fn take_introduction(&mut self, introduction: &Introduction, now_s: f64) {
        let player = introduction.player;
        if !self.direct_links || self.is_host || player < 2 || player == self.table.me() {
            return;
        }
        let slot = usize::from(player) - 1;
        let mut keys = [0; 2 * DIRECT_KEY_BYTES];
        keys[..DIRECT_KEY_BYTES].copy_from_slice(&introduction.send_key);
        keys[DIRECT_KEY_BYTES..].copy_from_slice(&introduction.receive_key);
        if self.direct_keys.get(slot).is_none_or(|k| *k == Some(keys)) {
            return;
        }
        // New keys for this seat: another guest took it.
        self.close_direct(player, now_s);
        let peer = PeerId(slot as u8);
        let (send, receive) = (&introduction.send_key, &introduction.receive_key);
        if !self.endpoint.open_direct(now_s, peer, introduction.addr, send, receive) {
            return;
        }
        let mut link = Link::new(peer, player, self.cube_count as usize);
        link.sender.measure_demand = self.measure_demand;
        self.links[slot] = Some(link);
        self.direct_keys[slot] = Some(keys);
        tracing::info!(player, addr = %introduction.addr, "a direct link to another guest opened");
    }

    /// Guest: the direct link to `player` closes (the player left, or the host is gone), with a goodbye.
    pub(super) fn close_direct(&mut self, player: u8, now_s: f64) {
        let slot = usize::from(player).wrapping_sub(1);
        if self.is_host || slot == 0 || slot >= self.links.len() {
            return;
        }
        if let Some(link) = self.links[slot].take() {
            self.endpoint.disconnect(now_s, link.peer);
        }
        self.direct_heard_at_s[slot] = None;
    }

    /// Guest: the transport closed the direct link on `peer` (the other guest said goodbye, or it timed out).
    pub(super) fn direct_closed(&mut self, peer: PeerId) {
        let slot = usize::from(peer.0);
        if let Some(link) = self.links.get_mut(slot).and_then(Option::take) {
            tracing::info!(player = link.player, "a direct link closed");
        }
        if let Some(heard) = self.direct_heard_at_s.get_mut(slot) {
            *heard = None;
        }
    }

    /// Guest: a message on the direct link `peer`. Only the sender's own avatar is taken, into its jitter buffer;
    /// a reject notice (the other could not read a message of ours) makes our next ones absolute. True when read.
    pub(super) fn on_direct(&mut self, peer: PeerId, message: Message<'_>, now_s: f64) -> bool {
        if !self.welcomed || self.host_gone.is_some() {
            return false;
        }
        let Some(link) = self.links.get_mut(usize::from(peer.0)).and_then(Option::as_mut) else {
            return false;
        };
        match message {
            Message::State { header, .. } => {
                link.avatars_received.insert(header.sender_step, &header.avatars);
                let player = link.player;
                let sample = header
                    .avatar(player)
                    .filter(|s| s.avatar.is_plausible(DESKTOP_HAND_REACH_M));
                if let Some(sample) = sample {
                    if !self.direct_live(player, now_s) {
                        // Until now through the host, a hop later: those arrivals are not this link's jitter.
                        self.remote.forget_offsets(player);
                    }
                    self.remote.push(player, sample, now_s);
                    self.direct_heard_at_s[usize::from(player) - 1] = Some(now_s);
                }
                true
            }
            Message::RejectNotice(bytes) => {
                if let Ok(refused) = read_reject_notice(bytes) {
                    if link.reject_notices.is_new(refused) {
                        link.avatars_sent.forget_all();
                    }
                }
                true
            }
            _ => false,
        }
    }

    /// Guest: whether `player`'s avatar comes over a live direct link (its relay through the host is then not
    /// played out).
    pub(super) fn direct_live(&self, player: u8, now_s: f64) -> bool {
        usize::from(player)
            .checked_sub(1)
            .and_then(|s| self.direct_heard_at_s.get(s).copied().flatten())
            .is_some_and(|t| now_s - t <= DIRECT_LIVE_S)
    }

    /// Guest: the players whose avatars come over a live direct link (bit `p − 1` for player `p`).
    pub(super) fn directly_heard(&self, now_s: f64) -> u8 {
        (1..=MAX_AUTHORITY)
            .filter(|&p| self.direct_live(p, now_s))
            .fold(0, |mask, p| mask | 1 << (p - 1))
    }

    /// Guest: the players it has a direct link open to (bit `p − 1` for player `p`).
    pub fn direct_links_open(&self) -> u8 {
        if self.is_host {
            return 0;
        }
        self.links
            .iter()
            .skip(1)
            .flatten()
            .fold(0, |mask, l| mask | 1 << (l.player - 1))
    }
}
