//! A run stepped from outside (`World::advance`, as a learning agent steps
//! it between actions) is the same run as one in a single go.

mod common;
use ccarena_sim::scenario::normalize_json;
use ccarena_sim::units::{Dur, Time};
use ccarena_sim::world::World;
use serde_json::json;

#[test]
fn stepping_in_any_steps_gives_the_same_bits_as_one_run() {
    let j = json!({
        "duration": "3s", "seed": 4,
        "bottleneck": {"rate": "20Mbps", "buffer": "1BDP"},
        "path": {"rtt": "20ms", "loss": "0.5%"},
        "flows": [{"cc": "cubic", "count": 2}, {"cc": "bbr1", "rtt": "50ms", "start": "0.5s"}]
    });
    let sc = normalize_json(&j.to_string()).unwrap();
    let whole = common::sim(j);
    for step_ms in [7u64, 100, 1000] {
        let mut w = World::new(&sc);
        let mut t = Time::ZERO;
        let mut steps = 0;
        while w.advance(t) {
            t += Dur::from_ms(step_ms);
            steps += 1;
        }
        assert!(steps >= 3000 / step_ms, "{steps} steps of {step_ms} ms");
        common::assert_identical(&whole, &w.into_results(), &format!("steps of {step_ms} ms"));
    }
}
