//! The broker's producer ids: blocks the controller hands out (AllocateProducerIds), so ids
//! stay unique across restarts and across brokers.

use shale_metadata::{ControllerRequest, ControllerResponse, MetadataError};
use shale_txn::ProducerIdAllocator;
use tokio::sync::Mutex;

use crate::core::BrokerCore;

/// The broker's current block of producer ids.
#[derive(Debug, Default)]
pub struct ProducerIdSource {
    allocator: Mutex<ProducerIdAllocator>,
}

impl ProducerIdSource {
    /// The next unused producer id, fetching a new block from the controller when needed.
    pub async fn next(&self, core: &BrokerCore) -> Result<i64, MetadataError> {
        let mut allocator = self.allocator.lock().await;
        if let Some(id) = allocator.next() {
            return Ok(id);
        }
        let broker_epoch = core
            .image()
            .broker(core.node_id())
            .map(|b| b.broker_epoch)
            .unwrap_or(-1);
        match core
            .metadata
            .submit(ControllerRequest::AllocateProducerIds {
                broker_id: core.node_id(),
                broker_epoch,
            })
            .await?
        {
            ControllerResponse::AllocateProducerIds(Ok(block)) => {
                allocator
                    .add_block(block.first_producer_id, block.len)
                    .map_err(|e| MetadataError::InvalidRequest(e.to_string()))?;
                allocator.next().ok_or_else(|| {
                    MetadataError::InvalidRequest("empty producer id block".to_string())
                })
            }
            ControllerResponse::AllocateProducerIds(Err(e)) => Err(e),
            other => Err(MetadataError::InvalidRequest(format!(
                "unexpected controller answer {other:?}"
            ))),
        }
    }
}
