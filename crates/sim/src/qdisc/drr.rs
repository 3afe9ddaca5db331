//! DRR++'s two lists of flow queues (RFC 8290 section 4.2): the scheduler
//! sch_fq_codel, sch_fq_pie and sch_fq share (their `new_flows` and
//! `old_flows`). A queue that gets a packet while off the lists joins the
//! new list; the head of the new list is served before the old one's; a
//! head that used its quantum moves to the old list's tail; a head found
//! empty leaves, except that a new flow passes through the old list once
//! when that list is not empty, so it cannot starve the old flows by
//! coming back new. The quantum itself (deficit, credit) is each
//! discipline's.

use std::collections::VecDeque;

#[derive(Default)]
pub(crate) struct FlowLists {
    new: VecDeque<u32>,
    old: VecDeque<u32>,
}

impl FlowLists {
    /// The queue to serve next, and whether it heads the new list.
    pub fn head(&self) -> Option<(bool, usize)> {
        if let Some(&i) = self.new.front() {
            Some((true, i as usize))
        } else {
            self.old.front().map(|&i| (false, i as usize))
        }
    }

    pub fn add_new(&mut self, idx: usize) {
        self.new.push_back(idx as u32);
    }

    pub fn add_old(&mut self, idx: usize) {
        self.old.push_back(idx as u32);
    }

    /// Take the head off its list.
    pub fn pop(&mut self, from_new: bool) {
        if from_new {
            self.new.pop_front();
        } else {
            self.old.pop_front();
        }
    }

    /// The head used its quantum: to the old list's tail.
    pub fn rotate(&mut self, from_new: bool) {
        let (_, idx) = self.head().expect("a head to rotate");
        self.pop(from_new);
        self.add_old(idx);
    }

    /// The head's queue is empty: it leaves the lists (false), or, new with
    /// old flows waiting, passes through the old list once (true).
    pub fn retire(&mut self, from_new: bool) -> bool {
        let (_, idx) = self.head().expect("a head to retire");
        self.pop(from_new);
        if from_new && !self.old.is_empty() {
            self.add_old(idx);
            true
        } else {
            false
        }
    }

    pub fn is_empty(&self) -> bool {
        self.new.is_empty() && self.old.is_empty()
    }
}
