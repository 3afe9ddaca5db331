//! `[topology]` shorthands and the names and delays of `[[links]]`.

use super::raw::{RawLink, RawScenario};
use super::{duration_at, err, ScenarioError};
use crate::units::Dur;

/// Upper bound on a parking lot's hops.
const MAX_HOPS: i64 = 64;

/// Replace `[topology]` by what it stands for: the dumbbell's
/// `[bottleneck]`, or a parking lot's `[[links]]` hop1..hopN (each with the
/// topology's link fields). True when it made links.
pub(super) fn expand_topology(raw: &mut RawScenario) -> Result<bool, ScenarioError> {
    let Some(t) = raw.topology.take() else {
        return Ok(false);
    };
    if raw.bottleneck.is_some() || raw.links.is_some() {
        return err(
            "topology",
            "give [topology] or [bottleneck] or [[links]], not two of them",
        );
    }
    if t.link.name.is_some() {
        return err(
            "topology.name",
            "a topology names its links itself (hop1, hop2, ...)",
        );
    }
    if let Some(d) = &t.link.delay {
        duration_at("topology.delay", d)?;
    }
    match t.kind.as_deref() {
        Some("dumbbell") => {
            if t.hops.is_some() || t.link.delay.is_some() {
                let field = if t.hops.is_some() { "hops" } else { "delay" };
                return err(
                    format!("topology.{field}"),
                    "the dumbbell has one link and its delays are the flows' own",
                );
            }
            raw.bottleneck = Some(t.link.queue);
            Ok(false)
        }
        Some("parking_lot") => {
            let hops = t.hops.unwrap_or(3);
            if !(1..=MAX_HOPS).contains(&hops) {
                return err(
                    "topology.hops",
                    format!("{hops} hops: a parking lot has 1..{MAX_HOPS}"),
                );
            }
            raw.links = Some(
                (1..=hops)
                    .map(|k| RawLink {
                        name: Some(format!("hop{k}")),
                        ..t.link.clone()
                    })
                    .collect(),
            );
            Ok(true)
        }
        Some(other) => err(
            "topology.kind",
            format!("unknown topology {other:?}; expected \"dumbbell\" or \"parking_lot\""),
        ),
        None => err("topology.kind", "missing: \"dumbbell\" or \"parking_lot\""),
    }
}

/// The names and delays of `[[links]]`, read before the flows (whose
/// routes name links and whose base RTTs include the links' delays).
pub(super) struct LinkNames {
    pub(super) names: Vec<String>,
    pub(super) delays: Vec<Dur>,
}

/// Upper bound on `[[links]]` (a route is checked link by link per flow).
const MAX_LINKS: usize = 1_000;

impl LinkNames {
    pub(super) fn read(links: Option<&[RawLink]>) -> Result<LinkNames, ScenarioError> {
        let mut net = LinkNames {
            names: vec![],
            delays: vec![],
        };
        let Some(links) = links else { return Ok(net) };
        if links.is_empty() {
            return err("links", "an empty list: give at least one [[links]] table");
        }
        if links.len() > MAX_LINKS {
            return err(
                "links",
                format!("{} links: at most {MAX_LINKS}", links.len()),
            );
        }
        for (k, l) in links.iter().enumerate() {
            let name = match &l.name {
                None => format!("link{k}"),
                Some(n) => {
                    let ok = !n.is_empty()
                        && n.len() <= 32
                        && n.chars()
                            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c));
                    if !ok {
                        return err(
                            format!("links[{k}].name"),
                            format!(
                                "{n:?}: a link's name is 1-32 letters, digits, '_', '-' or '.'"
                            ),
                        );
                    }
                    n.clone()
                }
            };
            if net.names.contains(&name) {
                return err(
                    format!("links[{k}].name"),
                    format!("{name:?} names two links"),
                );
            }
            let delay = match &l.delay {
                None => Dur::ZERO,
                Some(d) => duration_at(&format!("links[{k}].delay"), d)?,
            };
            net.names.push(name);
            net.delays.push(delay);
        }
        Ok(net)
    }

    /// A flow's `route` as link indices: every name a link, none twice.
    pub(super) fn route(
        &self,
        at: &str,
        route: Option<&[String]>,
    ) -> Result<Vec<u32>, ScenarioError> {
        match (route, self.names.is_empty()) {
            (None, true) => Ok(vec![]),
            (Some(_), true) => err(
                at,
                "a route needs a network: define its links with [[links]] (the dumbbell's [bottleneck] has no route)",
            ),
            (None, false) => err(
                at,
                format!(
                    "missing: with [[links]], every flow names the links it crosses in order, e.g. route = [{:?}]",
                    self.names[0]
                ),
            ),
            (Some([]), false) => err(at, "an empty route: name at least one link"),
            (Some(names), false) => {
                let mut out: Vec<u32> = Vec::with_capacity(names.len());
                for (k, n) in names.iter().enumerate() {
                    let Some(l) = self.names.iter().position(|x| x == n) else {
                        return err(
                            format!("{at}[{k}]"),
                            format!("unknown link {n:?}; the links are {}", self.names.join(", ")),
                        );
                    };
                    if out.contains(&(l as u32)) {
                        return err(
                            format!("{at}[{k}]"),
                            format!("{n:?} is crossed twice"),
                        );
                    }
                    out.push(l as u32);
                }
                Ok(out)
            }
        }
    }
}
