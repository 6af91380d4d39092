//! Calls from the broker to the metadata controller: submitted, answered once this broker's
//! partitions reflect the outcome, and bounded by the request's timeout as Kafka bounds them.

use std::future::Future;
use std::time::Duration;

use shale_metadata::{ControllerRequest, ControllerResponse, MetadataError};

use crate::core::BrokerCore;

/// Submits a controller request and waits until local partitions reflect its outcome.
pub async fn submit_and_apply(
    broker: &BrokerCore,
    request: ControllerRequest,
) -> Result<ControllerResponse, MetadataError> {
    let response = broker.metadata.submit(request).await?;
    let offset = broker.metadata.image().offset;
    broker.wait_reconciled(offset).await;
    Ok(response)
}

/// Bounds a controller call by its request's `timeout_ms`, as Kafka bounds CreateTopics,
/// DeleteTopics, CreatePartitions, ElectLeaders and AlterPartitionReassignments: past it the
/// answer is REQUEST_TIMED_OUT (the change may still complete). A timeout of zero or less sets
/// no bound.
pub async fn within_timeout_ms<T>(
    timeout_ms: i32,
    call: impl Future<Output = Result<T, MetadataError>>,
) -> Result<T, MetadataError> {
    let Ok(timeout_ms @ 1..) = u64::try_from(timeout_ms) else {
        return call.await;
    };
    tokio::time::timeout(Duration::from_millis(timeout_ms), call)
        .await
        .unwrap_or(Err(MetadataError::RequestTimedOut))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A controller call that answers after `delay`.
    async fn answers_after(delay: Duration) -> Result<(), MetadataError> {
        tokio::time::sleep(delay).await;
        Ok(())
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_past_its_timeout_is_answered_request_timed_out() {
        let outcome = within_timeout_ms(500, answers_after(Duration::from_secs(60))).await;
        assert_eq!(outcome, Err(MetadataError::RequestTimedOut));
        let outcome = within_timeout_ms(500, answers_after(Duration::from_millis(499))).await;
        assert_eq!(outcome, Ok(()));
    }

    #[tokio::test(start_paused = true)]
    async fn a_timeout_of_zero_or_less_sets_no_bound() {
        for timeout_ms in [0, -1, i32::MIN] {
            let outcome =
                within_timeout_ms(timeout_ms, answers_after(Duration::from_secs(600))).await;
            assert_eq!(outcome, Ok(()), "timeout_ms {timeout_ms}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_call_keeps_its_own_error() {
        let failed = async { Err::<(), _>(MetadataError::NotController) };
        assert_eq!(
            within_timeout_ms(500, failed).await,
            Err(MetadataError::NotController)
        );
    }
}
