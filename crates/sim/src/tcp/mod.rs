//! TCP modelled on Linux: sender (transmit loop, pacing, ACK processing,
//! recovery), receiver (delayed ACKs, SACK, window growth), the retransmission scoreboard,
//! RACK-TLP, RTT estimation and delivery-rate sampling.

pub mod delack;
pub mod push;
pub mod rack;
pub mod rate;
pub mod rcvbuf;
pub mod receiver;
pub mod rtt;
pub mod scoreboard;
pub mod sender;
