//! Windowed min/max filters: Kathleen Nichols' algorithm as Linux
//! lib/win_minmax.c uses it (three samples: best, 2nd best, 3rd best within
//! the window), for TCP's min RTT and for BBR's bandwidth and min-RTT
//! filters. The window is in whatever unit the caller counts: time in ns,
//! or packet-timed rounds.

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Sample {
    t: u64,
    v: u64,
}

/// Running min or max of `v` over the last `win` units of `t`.
#[derive(Clone, Debug)]
pub struct MinMax {
    s: [Sample; 3],
    is_max: bool,
}

impl MinMax {
    pub fn new_max() -> Self {
        MinMax {
            s: [Sample::default(); 3],
            is_max: true,
        }
    }

    pub fn new_min() -> Self {
        MinMax {
            s: [Sample { t: 0, v: u64::MAX }; 3],
            is_max: false,
        }
    }

    /// Current best value.
    pub fn get(&self) -> u64 {
        self.s[0].v
    }

    /// Forget everything and start over from one sample.
    pub fn reset(&mut self, t: u64, v: u64) -> u64 {
        let s = Sample { t, v };
        self.s = [s; 3];
        v
    }

    fn better_or_equal(&self, a: u64, b: u64) -> bool {
        if self.is_max {
            a >= b
        } else {
            a <= b
        }
    }

    /// Age the window: expire samples older than `win`, keeping the three
    /// samples spread over the window (`minmax_subwin_update`).
    fn subwin_update(&mut self, win: u64, val: Sample) -> u64 {
        let dt = val.t.wrapping_sub(self.s[0].t);
        if dt > win {
            // The best expired: promote 2nd and 3rd, and take the new sample as 3rd.
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = val;
            if val.t.wrapping_sub(self.s[0].t) > win {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = val;
            }
        } else if self.s[1].t == self.s[0].t && dt > win / 4 {
            // A quarter of the window has passed without a 2nd choice: take one.
            self.s[1] = val;
            self.s[2] = val;
        } else if self.s[2].t == self.s[1].t && dt > win / 2 {
            // Half the window has passed without a 3rd choice: take one.
            self.s[2] = val;
        }
        self.s[0].v
    }

    /// Add the sample `v` taken at `t`; returns the filter's value.
    pub fn update(&mut self, win: u64, t: u64, v: u64) -> u64 {
        let val = Sample { t, v };
        if self.better_or_equal(v, self.s[0].v) || t.wrapping_sub(self.s[2].t) > win {
            // A new best, or nothing left in the window.
            return self.reset(t, v);
        }
        if self.better_or_equal(v, self.s[1].v) {
            self.s[1] = val;
            self.s[2] = val;
        } else if self.better_or_equal(v, self.s[2].v) {
            self.s[2] = val;
        }
        self.subwin_update(win, val)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_filter_forgets_after_the_window() {
        let mut f = MinMax::new_max();
        f.update(10, 0, 100);
        assert_eq!(f.update(10, 5, 50), 100);
        assert_eq!(f.update(10, 9, 60), 100);
        // At t = 11 the 100 has aged out; the best left is 60.
        assert_eq!(f.update(10, 11, 40), 60);
        assert_eq!(f.update(10, 30, 10), 10);
    }

    #[test]
    fn min_filter_tracks_the_minimum() {
        let mut f = MinMax::new_min();
        assert_eq!(f.update(100, 0, 20), 20);
        assert_eq!(f.update(100, 10, 25), 20);
        assert_eq!(f.update(100, 20, 15), 15);
        assert_eq!(f.update(100, 130, 30), 30);
    }
}
