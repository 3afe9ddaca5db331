//! DCTCP, as Linux 6.1 implements it (net/ipv4/tcp_dctcp.c): Reno's growth,
//! an ECN-driven window cut of `cwnd * alpha / 2` where alpha is an EWMA of
//! the fraction of CE-marked deliveries per window of data, and a Reno
//! halving on packet loss. Without ECN the connection falls back to Reno
//! (Linux's "dctcp-reno" ops).

use super::classic::{Window, WindowEvent, WindowRule};
use super::reno::RenoRule;
use super::{CaState, CcEvent, CcInit, CcParams, CcState, Conn, RateSample};
use crate::units::Time;
use serde::{Deserialize, Serialize};

/// `DCTCP_MAX_ALPHA`: alpha is a fraction of 1024.
const MAX_ALPHA: u32 = 1024;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DctcpConfig {
    /// EWMA gain g = 2^-shift_g (`dctcp_shift_g`, default 4 = 1/16).
    pub shift_g: u32,
    /// Initial alpha, out of 1024 (`dctcp_alpha_on_init`, default 1024).
    pub alpha_on_init: u32,
    /// Set alpha to its maximum on an RTO (the `dctcp_clamp_alpha_on_loss`
    /// option of Linux 3.18 to 5.0; 6.1 no longer has it). Off by default.
    pub clamp_alpha_on_loss: bool,
}

impl Default for DctcpConfig {
    fn default() -> Self {
        DctcpConfig {
            shift_g: 4,
            alpha_on_init: MAX_ALPHA,
            clamp_alpha_on_loss: false,
        }
    }
}

impl CcParams for DctcpConfig {
    fn validate(&self) -> Result<(), String> {
        if self.shift_g > 10 {
            return Err(format!(
                "shift_g = {} is out of range: allowed 0 to 10 (g = 2^-shift_g)",
                self.shift_g
            ));
        }
        if self.alpha_on_init > MAX_ALPHA {
            return Err(format!(
                "alpha_on_init = {} is out of range: allowed 0 to 1024 (alpha x 1024)",
                self.alpha_on_init
            ));
        }
        Ok(())
    }
}

pub struct DctcpRule {
    shift_g: u32,
    clamp_alpha_on_loss: bool,
    /// ECN was negotiated; otherwise this is Linux's `dctcp_reno`.
    ecn: bool,
    /// `dctcp_alpha`, out of 1024.
    alpha: u32,
    /// The observation window ends when snd_una reaches this segment.
    next_seq: u32,
    /// `tp->delivered` and `tp->delivered_ce` when the window began.
    old_delivered: u32,
    old_delivered_ce: u32,
    /// cwnd at the last reduction (kept for Linux's undo; reported only).
    loss_cwnd: u32,
    /// The last data packet the receiver saw was CE-marked.
    ce_state: bool,
}

impl DctcpRule {
    /// `dctcp_init`: with ECN, alpha starts at `alpha_on_init` and the first
    /// observation window at the current send point; without, Reno.
    pub fn new(cfg: &DctcpConfig, init: &CcInit) -> Self {
        DctcpRule {
            shift_g: cfg.shift_g,
            clamp_alpha_on_loss: cfg.clamp_alpha_on_loss,
            ecn: init.ecn_enabled,
            alpha: cfg.alpha_on_init.min(MAX_ALPHA),
            // Nothing has been sent or delivered yet.
            next_seq: 0,
            old_delivered: 0,
            old_delivered_ce: 0,
            loss_cwnd: 0,
            ce_state: false,
        }
    }

    /// alpha as a fraction in [0, 1].
    pub fn alpha(&self) -> f64 {
        self.alpha as f64 / MAX_ALPHA as f64
    }

    /// `dctcp_reset`: begin a new observation window.
    fn reset(&mut self, conn: &Conn) {
        self.next_seq = conn.snd_nxt;
        self.old_delivered = conn.delivered as u32;
        self.old_delivered_ce = conn.delivered_ce as u32;
    }

    /// `dctcp_update_alpha`: once a window of data is ACKed,
    /// alpha = (1 - g) alpha + g F with F the CE-marked fraction delivered.
    fn update_alpha(&mut self, conn: &Conn) {
        // `!before(snd_una, next_seq)`.
        if (conn.snd_una.wrapping_sub(self.next_seq) as i32) < 0 {
            return;
        }
        let mut delivered_ce = (conn.delivered_ce as u32).wrapping_sub(self.old_delivered_ce);
        let mut alpha = self.alpha;
        // `min_not_zero(alpha, alpha >> g)`: a small alpha decays straight to 0.
        let decay = alpha >> self.shift_g;
        alpha -= if decay == 0 { alpha } else { decay };
        if delivered_ce != 0 {
            let delivered = (conn.delivered as u32).wrapping_sub(self.old_delivered);
            delivered_ce <<= 10 - self.shift_g;
            delivered_ce /= delivered.max(1);
            alpha = (alpha + delivered_ce).min(MAX_ALPHA);
        }
        self.alpha = alpha;
        self.reset(conn);
    }

    /// `dctcp_react_to_loss`: a loss halves like Reno.
    fn react_to_loss(&mut self, cwnd: u32, w: &mut Window) {
        self.loss_cwnd = cwnd;
        w.ssthresh = (cwnd >> 1).max(2);
    }
}

impl WindowRule for DctcpRule {
    /// `dctcp_ssthresh`: cwnd - cwnd * alpha / 2 (Linux `tcp_reno_ssthresh`
    /// without ECN). This is the whole cut for ECN (CWR); for a loss,
    /// `set_state` replaces it with a halving, as Linux does.
    fn ssthresh(&mut self, _now: Time, w: &Window, _conn: &Conn) -> u32 {
        if !self.ecn {
            return (w.cwnd >> 1).max(2);
        }
        self.loss_cwnd = w.cwnd;
        let cut = ((w.cwnd as u64 * self.alpha as u64) >> 11) as u32;
        (w.cwnd - cut).max(2)
    }

    /// `tcp_reno_cong_avoid`.
    fn cong_avoid(&mut self, now: Time, w: &mut Window, acked: u32, conn: &Conn) {
        RenoRule::linux().cong_avoid(now, w, acked, conn);
    }

    /// `dctcp_update_alpha` (`in_ack_event`), on every ACK before any
    /// window change. Linux reads `tp->delivered` there before this ACK's
    /// cumulatively ACKed packets are counted; here `conn` already counts
    /// them, so they fall in the window they completed rather than the next.
    fn in_ack_event(&mut self, _now: Time, _w: &Window, _rs: &RateSample, conn: &Conn) {
        if self.ecn {
            self.update_alpha(conn);
        }
    }

    /// `dctcp_state`.
    fn set_state(&mut self, _now: Time, from: CaState, to: CaState, w: &mut Window, _conn: &Conn) {
        if !self.ecn {
            return;
        }
        match to {
            CaState::Recovery if from != CaState::Recovery => {
                let cwnd = w.cwnd;
                self.react_to_loss(cwnd, w);
            }
            CaState::Loss if self.clamp_alpha_on_loss => self.alpha = MAX_ALPHA,
            _ => {}
        }
    }

    /// `dctcp_cwnd_event`: track the receiver's CE state. The ACK policy
    /// that goes with it (an immediate ACK when the CE state flips) belongs
    /// to the receiver in the TCP core.
    fn cwnd_event(&mut self, _now: Time, ev: WindowEvent, w: &mut Window, _conn: &Conn) {
        if !self.ecn {
            return;
        }
        match ev {
            WindowEvent::Core(CcEvent::EcnIsCe) => self.ce_state = true,
            WindowEvent::Core(CcEvent::EcnNoCe) => self.ce_state = false,
            // `tcp_enter_loss` raises it after the new ssthresh, with cwnd
            // not yet reset.
            WindowEvent::Loss => {
                let cwnd = w.cwnd;
                self.react_to_loss(cwnd, w);
            }
            WindowEvent::Core(
                CcEvent::TxStart | CcEvent::CwndRestart { .. } | CcEvent::TlpRecovery { .. },
            )
            | WindowEvent::CompleteCwr => {}
        }
    }

    fn write_state(&self, out: &mut CcState) {
        out.num(
            "dctcp_alpha",
            if self.ecn { self.alpha() } else { f64::NAN },
        );
        out.num("dctcp_ce_state", if self.ce_state { 1.0 } else { 0.0 });
    }
}

/// The registry's entry for `cc = "dctcp"` (`cc::Algorithm`).
impl crate::cc::Algorithm for DctcpConfig {
    const NAME: &'static str = "dctcp";
    const REFERENCE: &'static str = "Linux net/ipv4/tcp_dctcp.c; RFC 8257";
    fn build(&self, init: &crate::cc::CcInit, _flow: u32) -> crate::cc::AnyCc {
        crate::cc::AnyCc::Dctcp(crate::cc::classic::Classic::new(
            DctcpRule::new(self, init),
            init,
        ))
    }
    fn ecn(&self) -> crate::cc::EcnUse {
        crate::cc::EcnUse::NEEDED
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::classic::{Classic, INFINITE_SSTHRESH};
    use crate::cc::{CcConfig, CongestionControl};
    use crate::units::Dur;

    const MSS: u32 = 1448;

    /// Feeds a `Classic<DctcpRule>` ACKs of one packet each, `marked` of
    /// them carrying a CE echo, with delivered/delivered_ce counted as
    /// `tp->delivered` and `tp->delivered_ce` would be.
    struct Driver {
        cc: Classic<DctcpRule>,
        now: Time,
        snd_una: u32,
        delivered: u64,
        delivered_ce: u64,
    }

    fn init(ecn: bool) -> CcInit {
        CcInit {
            now: Time::ZERO,
            mss: MSS,
            init_cwnd: 10,
            srtt: None,
            seed: 1,
            ecn_enabled: ecn,
        }
    }

    impl Driver {
        fn new(cfg: DctcpConfig, ecn: bool) -> Driver {
            let init = init(ecn);
            Driver {
                cc: Classic::new(DctcpRule::new(&cfg, &init), &init),
                now: Time::ZERO,
                snd_una: 0,
                delivered: 0,
                delivered_ce: 0,
            }
        }

        fn cwnd(&self) -> u32 {
            self.cc.win.cwnd
        }

        fn conn(&self) -> Conn {
            let cwnd = self.cc.win.cwnd;
            Conn {
                mss: MSS,
                init_cwnd: 10,
                in_flight: cwnd,
                packets_out: cwnd,
                delivered: self.delivered,
                delivered_ce: self.delivered_ce,
                lost: 0,
                delivered_mstamp: self.now,
                srtt: Some(Dur::from_ms(1)),
                min_rtt: Some(Dur::from_ms(1)),
                ca_state: CaState::Open,
                is_cwnd_limited: true,
                max_packets_out: cwnd,
                app_limited: false,
                next_departure: self.now,
                snd_una: self.snd_una,
                snd_nxt: self.snd_una + cwnd,
                ecn_enabled: true,
                paced: false,
                sent_since_state_change: 0,
                data_segs_out: 0,
                highest_sack: 0,
            }
        }

        fn ack(&mut self, ce: bool) {
            self.now += Dur::from_us(10);
            self.snd_una += 1;
            self.delivered += 1;
            self.delivered_ce += ce as u64;
            let rs = RateSample {
                delivered: 1,
                delivered_ce: ce as i64,
                interval_us: 1000,
                rtt_us: 1000,
                acked_sacked: 1,
                snd_una_advanced: true,
                is_ece: ce,
                ..RateSample::default()
            };
            let conn = self.conn();
            self.cc.on_ack(self.now, &rs, &conn);
        }

        /// `n` ACKs in which every `1/frac`-th is CE-marked, spread evenly.
        fn acks(&mut self, n: u32, frac: f64) {
            let mut credit = 0.0;
            for _ in 0..n {
                credit += frac;
                let ce = credit >= 1.0;
                if ce {
                    credit -= 1.0;
                }
                self.ack(ce);
            }
        }

        fn enter(&mut self, from: CaState, to: CaState) {
            let conn = self.conn();
            self.cc.on_state_change(self.now, from, to, &conn);
        }
    }

    #[test]
    fn alpha_starts_at_alpha_on_init() {
        let d = Driver::new(DctcpConfig::default(), true);
        assert_eq!(d.cc.rule.alpha, 1024);
        let cfg = DctcpConfig {
            alpha_on_init: 0,
            ..DctcpConfig::default()
        };
        assert_eq!(Driver::new(cfg, true).cc.rule.alpha, 0);
    }

    #[test]
    fn alpha_converges_to_the_marked_fraction() {
        for frac in [0.0, 0.1, 0.25, 0.5, 1.0] {
            let mut d = Driver::new(DctcpConfig::default(), true);
            // Hold cwnd still so each observation window is 40 packets.
            d.cc.win.cwnd = 40;
            d.cc.win.clamp = 40;
            d.acks(40 * 200, frac);
            let alpha = d.cc.rule.alpha();
            // With g = 1/16 the integer EWMA settles within 16/1024 above F.
            assert!(
                alpha >= frac - 1.0 / 1024.0 && alpha <= frac + 16.0 / 1024.0,
                "F = {frac}: alpha = {alpha}"
            );
        }
    }

    #[test]
    fn alpha_moves_by_g_per_window() {
        // One fully marked window from alpha = 0: alpha = g x 1024 = 64.
        let cfg = DctcpConfig {
            alpha_on_init: 0,
            ..DctcpConfig::default()
        };
        let mut d = Driver::new(cfg, true);
        d.cc.win.clamp = 10;
        // The first ACK closes the (empty) window opened at init.
        d.ack(false);
        assert_eq!(d.cc.rule.alpha, 0);
        assert_eq!(d.cc.rule.next_seq, 11);
        for _ in 0..10 {
            d.ack(true);
        }
        assert_eq!(d.cc.rule.alpha, 64);
        // An unmarked window decays it by alpha/16; below 16 it drops to 0.
        d.acks(10, 0.0);
        assert_eq!(d.cc.rule.alpha, 60);
        d.cc.rule.alpha = 15;
        d.acks(10, 0.0);
        assert_eq!(d.cc.rule.alpha, 0);
    }

    #[test]
    fn ecn_cut_is_proportional_to_alpha() {
        for (alpha, want) in [(1024u32, 50u32), (512, 75), (256, 88), (0, 100)] {
            let mut d = Driver::new(DctcpConfig::default(), true);
            d.cc.win.cwnd = 100;
            d.cc.rule.alpha = alpha;
            d.enter(CaState::Open, CaState::Cwr);
            // ssthresh = cwnd - cwnd x alpha / 2048.
            assert_eq!(d.cc.win.ssthresh, want, "alpha {alpha}");
            d.enter(CaState::Cwr, CaState::Open);
            assert_eq!(d.cwnd(), want);
        }
    }

    #[test]
    fn loss_halves_like_reno_whatever_alpha() {
        let mut d = Driver::new(DctcpConfig::default(), true);
        d.cc.win.cwnd = 100;
        d.cc.rule.alpha = 64;
        d.enter(CaState::Open, CaState::Recovery);
        assert_eq!(d.cc.win.ssthresh, 50);
        assert_eq!(d.cc.rule.loss_cwnd, 100);
        // An ECN reduction that turns into a loss halves the current cwnd.
        let mut d = Driver::new(DctcpConfig::default(), true);
        d.cc.win.cwnd = 100;
        d.cc.rule.alpha = 256;
        d.enter(CaState::Open, CaState::Cwr);
        assert_eq!(d.cc.win.ssthresh, 88);
        d.cc.win.cwnd = 90;
        d.enter(CaState::Cwr, CaState::Recovery);
        assert_eq!(d.cc.win.ssthresh, 45);
    }

    #[test]
    fn rto_halves_the_window_it_interrupted() {
        for clamp in [false, true] {
            let mut d = Driver::new(
                DctcpConfig {
                    clamp_alpha_on_loss: clamp,
                    ..DctcpConfig::default()
                },
                true,
            );
            d.cc.win.cwnd = 100;
            d.cc.rule.alpha = 128;
            d.enter(CaState::Open, CaState::Loss);
            assert_eq!(d.cc.win.ssthresh, 50);
            assert_eq!(d.cwnd(), 101); // in_flight + 1, in_flight = old cwnd here
            assert_eq!(d.cc.rule.alpha, if clamp { 1024 } else { 128 });
        }
    }

    #[test]
    fn growth_is_renos() {
        let mut d = Driver::new(DctcpConfig::default(), true);
        d.acks(10, 0.0);
        assert_eq!(d.cwnd(), 20); // slow start
        d.cc.win.ssthresh = 20;
        d.acks(20, 0.0);
        assert_eq!(d.cwnd(), 21); // one per window
    }

    #[test]
    fn without_ecn_it_is_reno() {
        let mut d = Driver::new(DctcpConfig::default(), false);
        d.cc.win.cwnd = 100;
        d.acks(100, 0.3);
        assert_eq!(d.cc.rule.alpha, 1024); // never updated
        d.cc.win.cwnd = 100;
        d.enter(CaState::Open, CaState::Cwr);
        assert_eq!(d.cc.win.ssthresh, 50);
        let mut out = CcState::default();
        d.cc.write_state(&mut out);
        assert!(
            matches!(out.entries.iter().find(|(n, _)| *n == "dctcp_alpha"),
            Some((_, crate::cc::StateValue::Num(x))) if x.is_nan())
        );
    }

    #[test]
    fn ce_events_track_the_receiver_state() {
        let mut d = Driver::new(DctcpConfig::default(), true);
        let conn = d.conn();
        d.cc.on_event(d.now, CcEvent::EcnIsCe, &conn);
        assert!(d.cc.rule.ce_state);
        d.cc.on_event(d.now, CcEvent::EcnNoCe, &conn);
        assert!(!d.cc.rule.ce_state);
        assert_eq!(d.cc.win.ssthresh, INFINITE_SSTHRESH);
    }

    #[test]
    fn config_defaults_and_errors() {
        let cfg = CcConfig::parse("dctcp", &serde_json::Value::Null).unwrap();
        assert_eq!(cfg, CcConfig::Dctcp(DctcpConfig::default()));
        assert_eq!(cfg.name(), "dctcp");
        let json = cfg.params_json();
        assert_eq!(json["shift_g"], 4);
        assert_eq!(json["alpha_on_init"], 1024);
        assert_eq!(json["clamp_alpha_on_loss"], false);
        let err = |v: serde_json::Value| CcConfig::parse("dctcp", &v).unwrap_err();
        let e = err(serde_json::json!({ "shift_g": 11 }));
        assert!(e.contains("shift_g") && e.contains("0 to 10"), "{e}");
        let e = err(serde_json::json!({ "alpha_on_init": 1025 }));
        assert!(
            e.contains("alpha_on_init") && e.contains("0 to 1024"),
            "{e}"
        );
        let e = err(serde_json::json!({ "g": 0.0625 }));
        assert!(e.contains('g'), "{e}");
    }
}
