//! Deliberately wrong models, to prove that the conformance guard fails when
//! a model constant is wrong (tests/test_mutants.py): each changes one
//! thing the kernel does, as a bug would. Not part of the user surface (no
//! scenario field selects one): the embedding sets one for the whole process
//! (`_core._set_mutant`), and every world built afterwards has it; `None`
//! is the model. Read only where a flow is built, never per packet.

use std::sync::atomic::{AtomicU8, Ordering};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Mutant {
    None = 0,
    /// CUBIC cuts to 0.5 of its window (`beta` 512/1024, not 717).
    CubicBetaHalf,
    /// Reno grows two segments a round (`tcp_cong_avoid_ai` with w = cwnd/2).
    RenoAiDouble,
    /// BBRv1's ProbeBW gain cycle is 1.0 throughout: it never probes.
    BbrFlatGain,
    /// Receivers ACK every segment (no delayed ACKs).
    NoDelack,
    /// Receivers send no SACK blocks.
    NoSack,
}

impl Mutant {
    pub const ALL: [Mutant; 5] = [
        Mutant::CubicBetaHalf,
        Mutant::RenoAiDouble,
        Mutant::BbrFlatGain,
        Mutant::NoDelack,
        Mutant::NoSack,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Mutant::None => "none",
            Mutant::CubicBetaHalf => "cubic_beta_half",
            Mutant::RenoAiDouble => "reno_ai_double",
            Mutant::BbrFlatGain => "bbr_flat_gain",
            Mutant::NoDelack => "no_delack",
            Mutant::NoSack => "no_sack",
        }
    }

    pub fn parse(s: &str) -> Option<Mutant> {
        std::iter::once(Mutant::None)
            .chain(Mutant::ALL)
            .find(|m| m.name() == s)
    }
}

static MUTANT: AtomicU8 = AtomicU8::new(Mutant::None as u8);

/// Every world built from now on has `m` (`Mutant::None`: the model).
pub fn set(m: Mutant) {
    MUTANT.store(m as u8, Ordering::SeqCst);
}

/// The mutant worlds are built with now.
pub fn get() -> Mutant {
    let v = MUTANT.load(Ordering::SeqCst);
    std::iter::once(Mutant::None)
        .chain(Mutant::ALL)
        .find(|m| *m as u8 == v)
        .unwrap_or(Mutant::None)
}

/// Whether `m` is the mutant worlds are built with now.
pub fn is(m: Mutant) -> bool {
    get() == m
}
