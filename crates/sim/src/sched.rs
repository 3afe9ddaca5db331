//! The event queue, keyed by (time, insertion sequence), so events at the
//! same instant fire in the order they were scheduled and a run never
//! depends on the queue's internals: the pop order is the total order of
//! the keys, whatever structure holds them (`tests/golden.rs` holds the
//! results of the binary heap this replaced, bit for bit).
//!
//! The structure is a calendar queue (Brown, "Calendar queues", CACM 1988)
//! in the form of a hierarchical timing wheel: 512 slots of 16.4 us cover
//! the next 8.4 ms, each slot an unsorted list; the current slot's events
//! are sorted once when the clock reaches it. Events beyond that horizon
//! (RTO and loss-probe timers, long RTTs) wait in a coarse wheel of 64
//! rounds of 8.4 ms (537 ms), one unsorted list per round with its earliest
//! key, and join the fine wheel when the clock reaches their round; later
//! ones in a binary heap. Bitmaps of occupied slots and rounds find the next
//! one in a few word operations however sparse the events are. A
//! simulation clock only moves forward, so an event is never scheduled
//! before the current slot.
//!
//! Measured against the binary heap it replaced (whole process, `make
//! bench`): 10 CUBIC flows at 1 Gbit/s 0.77x, 1,000 flows at 10 Gbit/s
//! 0.80x; the heap's pops had been a quarter of the run time (about nine
//! cache-missing levels per pop with 10 flows, sixteen with 10,000). The
//! coarse wheel, counted with cachegrind against the wheel-and-heap: 10,000
//! flows 2.1% fewer instructions and 4.5% fewer misses of a 4 MiB cache,
//! 10 flows 0.4% more instructions (no wall-clock figure yet). The fine
//! wheel had 4096 slots (67 ms) until 2026-11-28: every slot's list is
//! written again one turn later, so the memory a turn cycles through grows
//! with the turn's length (10 CUBIC flows at 10 Gbit/s: about 30 events of
//! 32 bytes a slot, 4 MB a turn of 4096 slots, beyond this machine's 2 MiB
//! L2), and a push wrote to a cold line. 512 slots: 10 flows at 10 Gbit/s
//! 0.95x, at 1 Gbit/s 0.96x, 10 Prague flows 0.945x (whole bench
//! processes, medians of 11-15 A/B pairs); 100 Mbit/s, 100 Gbit/s and
//! 1,000-10,000 flows within 0.95-1.01x. 256 slots gave the same for 10
//! flows, 1024 less; slots of 8.2 or 32.8 us instead of 16.4 no better.

use crate::units::Time;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// log2 of a slot's width in ns: 16.4 us.
const SHIFT: u32 = 14;
/// Slots in the wheel: 512 x 16.4 us = 8.4 ms ahead of the current slot.
const SLOTS: usize = 512;
const MASK: u64 = SLOTS as u64 - 1;
const WORDS: usize = SLOTS / 64;
// One summary word covers every word of the bitmap.
const _: () = assert!(WORDS <= 64 && SLOTS.is_multiple_of(64));
/// log2 of the fine slots in a round: a round is one turn of the wheel.
const ROUND_SHIFT: u32 = SLOTS.trailing_zeros();
/// Rounds in the coarse wheel (one bitmap word): 64 x 8.4 ms = 537 ms.
const ROUNDS: u64 = 64;

/// The slot of a key (time << 64 | sequence).
fn slot_of(key: u128) -> u64 {
    ((key >> 64) as u64) >> SHIFT
}

/// An event beyond the wheel's horizon, ordered by key alone.
struct Far<E>(u128, E);
impl<E> PartialEq for Far<E> {
    fn eq(&self, o: &Self) -> bool {
        self.0 == o.0
    }
}
impl<E> Eq for Far<E> {}
impl<E> PartialOrd for Far<E> {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Far<E> {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.0.cmp(&o.0)
    }
}

pub struct EventQueue<E> {
    /// The wheel: slot s (time >> SHIFT) at position s & MASK, for the
    /// slots after `cur_slot` up to the horizon, unsorted.
    slots: Vec<Vec<(u128, E)>>,
    /// Bit p of word p/64: position p holds events.
    bits: [u64; WORDS],
    /// Bit w: word w of `bits` is not zero.
    summary: u64,
    /// The current slot's events, sorted by key, largest first.
    cur: Vec<(u128, E)>,
    cur_slot: u64,
    /// The coarse wheel: round r (fine slot >> ROUND_SHIFT) at position
    /// r % ROUNDS, for the events beyond the fine wheel's horizon in the
    /// rounds from the current one to ROUNDS - 1 after it, unsorted, with
    /// the round's earliest key.
    rounds: Vec<(u128, Vec<(u128, E)>)>,
    /// Bit r % ROUNDS: round r holds events.
    round_bits: u64,
    /// Events beyond the coarse wheel, moved into `cur` when their slot comes.
    far: BinaryHeap<Reverse<Far<E>>>,
    len: usize,
    seq: u64,
    popped: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            slots: (0..SLOTS).map(|_| Vec::new()).collect(),
            bits: [0; WORDS],
            summary: 0,
            cur: Vec::new(),
            cur_slot: 0,
            rounds: (0..ROUNDS).map(|_| (u128::MAX, Vec::new())).collect(),
            round_bits: 0,
            far: BinaryHeap::new(),
            len: 0,
            seq: 0,
            popped: 0,
        }
    }

    /// Schedule `ev` at `at`, which must not be before the current slot
    /// (the clock never runs backwards).
    pub fn push(&mut self, at: Time, ev: E) {
        let key = ((at.0 as u128) << 64) | self.seq as u128;
        self.seq += 1;
        self.len += 1;
        let slot = at.0 >> SHIFT;
        assert!(
            slot >= self.cur_slot,
            "event scheduled before the current one"
        );
        if slot == self.cur_slot {
            // Largest first: the new key goes after every larger key. Found
            // from the end (the earliest events), where an event this close
            // usually lands: as many steps as the move `insert` makes.
            let mut at = self.cur.len();
            while at > 0 && self.cur[at - 1].0 < key {
                at -= 1;
            }
            self.cur.insert(at, (key, ev));
        } else if slot - self.cur_slot < SLOTS as u64 {
            self.put_fine(slot, key, ev);
        } else if (slot >> ROUND_SHIFT) - (self.cur_slot >> ROUND_SHIFT) < ROUNDS {
            let r = ((slot >> ROUND_SHIFT) % ROUNDS) as usize;
            let (min, list) = &mut self.rounds[r];
            *min = (*min).min(key);
            list.push((key, ev));
            self.round_bits |= 1 << r;
        } else {
            self.far.push(Reverse(Far(key, ev)));
        }
    }

    /// Put an event of a later slot within the horizon into the fine wheel.
    fn put_fine(&mut self, slot: u64, key: u128, ev: E) {
        let p = (slot & MASK) as usize;
        self.slots[p].push((key, ev));
        self.bits[p / 64] |= 1 << (p % 64);
        self.summary |= 1 << (p / 64);
    }

    /// The earliest occupied round of the coarse wheel: its number.
    fn next_round(&self) -> Option<u64> {
        if self.round_bits == 0 {
            return None;
        }
        // Rounds from the current one on, in time order: rotate so that
        // the current round's position is bit 0.
        let cur = self.cur_slot >> ROUND_SHIFT;
        let k = self
            .round_bits
            .rotate_right((cur % ROUNDS) as u32)
            .trailing_zeros();
        Some(cur + k as u64)
    }

    /// The first occupied position at or after `from`, wrapping around.
    fn next_occupied(&self, from: usize) -> Option<usize> {
        let w = from / 64;
        let here = self.bits[w] & (!0u64 << (from % 64));
        if here != 0 {
            return Some(w * 64 + here.trailing_zeros() as usize);
        }
        let later = self.summary & (!0u64).checked_shl(w as u32 + 1).unwrap_or(0);
        let w = if later != 0 {
            later.trailing_zeros() as usize
        } else if self.summary != 0 {
            self.summary.trailing_zeros() as usize
        } else {
            return None;
        };
        Some(w * 64 + self.bits[w].trailing_zeros() as usize)
    }

    /// Make `cur` hold the next slot's events (if any), sorted. Inline:
    /// asked twice an event (`peek_time`, `pop`), it usually finds them.
    #[inline]
    fn advance(&mut self) -> bool {
        !self.cur.is_empty() || self.next_slot()
    }

    /// `advance` when the current slot is spent: move to the next occupied one.
    #[inline(never)]
    fn next_slot(&mut self) -> bool {
        if self.len == 0 {
            return false;
        }
        let cur_pos = self.cur_slot & MASK;
        let wheel = self
            .next_occupied(((cur_pos + 1) & MASK) as usize)
            .map(|p| self.cur_slot + ((p as u64).wrapping_sub(cur_pos) & MASK));
        // The coarse wheel's earliest event, unless the wheel's comes
        // before that round even starts.
        let round = self
            .next_round()
            .filter(|&r| wheel.is_none_or(|w| w >= r << ROUND_SHIFT));
        let coarse = round.map(|r| slot_of(self.rounds[(r % ROUNDS) as usize].0));
        let far = self.far.peek().map(|e| slot_of(e.0 .0));
        let next = [wheel, coarse, far]
            .into_iter()
            .flatten()
            .min()
            .expect("len > 0");
        self.cur_slot = next;
        if wheel == Some(next) {
            let p = (next & MASK) as usize;
            std::mem::swap(&mut self.cur, &mut self.slots[p]);
            self.bits[p / 64] &= !(1 << (p % 64));
            if self.bits[p / 64] == 0 {
                self.summary &= !(1 << (p / 64));
            }
        }
        // The clock entered the earliest occupied round: its events all
        // lie within the horizon now (none before `next`, the earliest of
        // all), so they join the wheel, or `cur` for this slot.
        if let Some(r) = round.filter(|&r| r == next >> ROUND_SHIFT) {
            let r = (r % ROUNDS) as usize;
            let mut list = std::mem::take(&mut self.rounds[r].1);
            self.rounds[r].0 = u128::MAX;
            self.round_bits &= !(1 << r);
            for (key, ev) in list.drain(..) {
                let slot = slot_of(key);
                if slot == next {
                    self.cur.push((key, ev));
                } else {
                    self.put_fine(slot, key, ev);
                }
            }
            self.rounds[r].1 = list; // keep its capacity
        }
        while let Some(Reverse(Far(key, _))) = self.far.peek() {
            if slot_of(*key) != next {
                break;
            }
            let Reverse(Far(key, ev)) = self.far.pop().expect("peeked");
            self.cur.push((key, ev));
        }
        self.cur.sort_unstable_by_key(|e| Reverse(e.0));
        true
    }

    pub fn pop(&mut self) -> Option<(Time, E)> {
        if !self.advance() {
            return None;
        }
        let (key, ev) = self.cur.pop().expect("advanced");
        self.len -= 1;
        self.popped += 1;
        Some((Time((key >> 64) as u64), ev))
    }

    /// The time of the next event.
    pub fn peek_time(&mut self) -> Option<Time> {
        if !self.advance() {
            return None;
        }
        self.cur.last().map(|e| Time((e.0 >> 64) as u64))
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// The `k`-th event after the next one within the current slot, if
    /// the slot holds it (a hint for prefetching: events pushed later into
    /// this slot may come before it).
    pub fn peek_ahead(&self, k: usize) -> Option<&E> {
        let n = self.cur.len();
        if k < n {
            Some(&self.cur[n - 1 - k].1)
        } else {
            None
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Events popped so far (the benchmark's "events").
    pub fn processed(&self) -> u64 {
        self.popped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn pops_in_time_order() {
        let mut q = EventQueue::new();
        for (t, v) in [(30, 'c'), (10, 'a'), (20, 'b')] {
            q.push(Time(t), v);
        }
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, v)| v)).collect();
        assert_eq!(order, vec!['a', 'b', 'c']);
    }

    #[test]
    fn ties_resolve_in_insertion_order() {
        let mut q = EventQueue::new();
        for i in 0..1000u32 {
            q.push(Time(5), i);
        }
        q.push(Time(4), 9999);
        assert_eq!(q.pop(), Some((Time(4), 9999)));
        for i in 0..1000u32 {
            assert_eq!(q.pop(), Some((Time(5), i)));
        }
        assert!(q.pop().is_none());
        assert_eq!(q.processed(), 1001);
    }

    /// Against a sorted reference, as a simulation uses a queue: pops
    /// interleaved with pushes at or after the current time, with many
    /// ties and times far apart.
    #[test]
    fn same_order_as_a_sorted_reference() {
        let mut rng = Rng::stream(7, "sched-test");
        let mut q = EventQueue::new();
        let mut reference: std::collections::BTreeMap<(u64, u64), u32> = Default::default();
        let mut seq = 0u64;
        let mut now = 0u64;
        let mut push =
            |q: &mut EventQueue<u32>, r: &mut std::collections::BTreeMap<_, _>, t: u64, v: u32| {
                q.push(Time(t), v);
                r.insert((t, seq), v);
                seq += 1;
            };
        for v in 0..100u32 {
            push(&mut q, &mut reference, rng.next_u64() % 1000, v);
        }
        for step in 0..200_000u32 {
            if reference.is_empty() || rng.next_u64() % 100 < 48 {
                let dt = match rng.next_u64() % 6 {
                    0 => 0,
                    1 => rng.next_u64() % 10,
                    2 => rng.next_u64() % 1_000_000,
                    // The fine wheel's horizon and the coarse wheel's rounds.
                    3 => rng.next_u64() % 200_000_000,
                    4 => rng.next_u64() % 5_000_000_000,
                    _ => rng.next_u64() % (1 << 40),
                };
                push(&mut q, &mut reference, now + dt, step);
            } else {
                let (&(t, s), &v) = reference.iter().next().unwrap();
                reference.remove(&(t, s));
                assert_eq!(q.peek_time(), Some(Time(t)));
                assert_eq!(q.pop(), Some((Time(t), v)));
                now = t;
            }
            assert_eq!(q.len(), reference.len());
        }
    }
}
