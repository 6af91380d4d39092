//! Connections between the nodes of a cluster, secured as the configuration says (`config::peer`):
//! dialling another broker's inter-broker listener or a controller listener over TLS and SASL
//! (`dial`, with Kafka's SASL client exchange in `sasl_client`), and the controller port's
//! side, which lets only authenticated nodes in (`controller_port`, with the SASL server
//! exchange in `sasl_server`).
//!
//! Below the broker, the handlers and the replication layer: all of them dial through here.

mod controller_port;
mod dial;
mod frames;
mod sasl_client;
mod sasl_server;

pub use controller_port::ControllerPortSecurity;
pub use dial::dial_secured;
