//! The one declaration of the Kafka APIs Shale serves: per API its key, the versions accepted
//! and advertised, the authorization Kafka's authorizer checks for it, and its handler.
//! ApiVersions, admission (`connection.rs`), the README's table and dispatch are all derived
//! from it (`dispatch.rs` holds the macro), so what is advertised is exactly what is handled.
//!
//! The `access` lists record Kafka's documentation ("Operations and Resources on Protocols");
//! a comment says when Kafka makes a check conditional. `authorize` says where Shale checks
//! them when an authorizer is configured (`authorization::Enforcement`): before the handler
//! for a check on the cluster alone (the `else` answer of a refused request), or in the
//! handler, per resource, as Kafka's KafkaApis does.

use std::sync::Arc;

use crate::broker::Broker;
use crate::dispatch::{answered, codec_owned, declare_apis, reply, reply_if};
use crate::groups;
use crate::handlers;
use crate::replication;
use crate::request::RequestContext;
use crate::share;
use crate::txn;

pub use crate::dispatch::ApiEntry;

// Version ranges follow the reference Apache Kafka 4.4 broker. Where kafka-protocol 0.18
// (Kafka 4.1's specs) cannot carry a version, shale-protocol's codec generated from Kafka
// 4.4's specs does (the `newer` routes); the README says which ranges still differ from
// Kafka 4.4 and why. The order is the order ApiVersions lists them in.
declare_apis! {
    (broker: &Arc<Broker>, ctx: &RequestContext, request, code);

    // Produce advertises min 0 like Kafka (KAFKA-18659): older librdkafka stops compressing when
    // the advertised minimum is 3. Versions 0-2 are still refused.
    Produce 3..=13, advertised from 0
        access [
            Write on Topic,
            // Only a transactional producer (transactional.id set).
            Write on TransactionalId,
            // Listed by Kafka's documentation for an idempotent producer; since KIP-679 Kafka
            // checks it at InitProducerId, not here.
            IdempotentWrite on Cluster,
        ]
        authorize [in handler]
        handler reply_if(handlers::produce::handle(broker, ctx, request).await);
    // Consumer fetches that can be answered from the segment files skip this route
    // (`connection.rs` writes them with sendfile); the rest come here.
    Fetch 4..=18
        access [
            // A consumer, on each topic it fetches.
            Read on Topic,
            // A follower (replica id set).
            ClusterAction on Cluster,
        ]
        authorize [in handler]
        handler reply(handlers::fetch::handle(broker, ctx, request).await);
    // 11: EARLIEST_PENDING_UPLOAD (-6, KIP-1023), the same wire layout as 10.
    ListOffsets 1..=11
        access [Describe on Topic]
        authorize [in handler]
        handler reply(handlers::list_offsets::handle(broker, ctx, request));
    Metadata 0..=13
        access [
            Describe on Topic,
            // Topic auto-creation: checked first.
            Create on Cluster,
            // Topic auto-creation without Create on the cluster.
            Create on Topic,
        ]
        authorize [in handler]
        handler reply(handlers::metadata::handle(broker, ctx, request).await);
    // 5: the client names the cluster and node it expects (KIP-1242). Kafka authorizes
    // nothing here: ApiVersions comes before authentication.
    ApiVersions 0..=5
        access []
        authorize [none]
        handler reply(handlers::api_versions::handle(broker, ctx, request, &advertised())),
        newer reply(handlers::api_versions::handle_v5(broker, ctx, request, &advertised()));
    // The exchange itself runs before the connection's first other request
    // (`connection/sasl.rs`); these handlers answer it out of order, after authentication.
    SaslHandshake 0..=1
        access []
        authorize [none]
        handler reply(handlers::sasl::handshake(broker, ctx, request));
    SaslAuthenticate 0..=2
        access []
        authorize [none]
        handler reply(handlers::sasl::authenticate(broker, ctx, request));
    CreateTopics 2..=7
        access [
            // Checked first; without it Kafka checks each topic (no CLUSTER_AUTHORIZATION_FAILED).
            Create on Cluster,
            Create on Topic,
        ]
        authorize [in handler]
        handler reply(handlers::topics::create_topics(broker, ctx, request).await);
    DeleteTopics 1..=6
        access [Delete on Topic]
        authorize [in handler]
        handler reply(handlers::topics::delete_topics(broker, ctx, request).await);
    DeleteRecords 0..=2
        access [Delete on Topic]
        authorize [in handler]
        handler reply(handlers::delete_records::handle(broker, ctx, request));
    InitProducerId 0..=5
        access [
            // With a transactional id.
            Write on TransactionalId,
            // Without one (an idempotent producer); or WRITE on any topic (KIP-679).
            IdempotentWrite on Cluster,
        ]
        authorize [in handler]
        handler reply(handlers::producer_ids::init_producer_id(broker, ctx, request).await);
    OffsetForLeaderEpoch 2..=4
        access [
            // A follower; without it Kafka checks each topic.
            ClusterAction on Cluster,
            Describe on Topic,
        ]
        authorize [in handler]
        handler reply(handlers::list_offsets::offset_for_leader_epoch(broker, ctx, request));
    DescribeConfigs 1..=4
        access [
            // Broker configs.
            DescribeConfigs on Cluster,
            // Topic configs.
            DescribeConfigs on Topic,
            // Group configs (KIP-848).
            DescribeConfigs on Group,
        ]
        authorize [in handler]
        handler reply(handlers::configs::describe(broker, ctx, request));
    AlterConfigs 0..=2
        access [
            // Broker configs.
            AlterConfigs on Cluster,
            // Topic configs.
            AlterConfigs on Topic,
            // Group configs (KIP-848).
            AlterConfigs on Group,
        ]
        authorize [in handler]
        handler reply(handlers::configs::alter(broker, ctx, request).await);
    CreatePartitions 0..=3
        access [Alter on Topic]
        authorize [in handler]
        handler reply(handlers::topics::create_partitions(broker, ctx, request).await);
    IncrementalAlterConfigs 0..=1
        access [
            // Broker configs.
            AlterConfigs on Cluster,
            // Topic configs.
            AlterConfigs on Topic,
            // Group configs (KIP-848).
            AlterConfigs on Group,
        ]
        authorize [in handler]
        handler reply(handlers::configs::incremental_alter(broker, ctx, request).await);
    DescribeCluster 0..=2
        access [Describe on Cluster]
        authorize [in handler]
        handler reply(handlers::cluster::describe_cluster(broker, ctx, request));
    // KIP-966: partitions with their eligible leader replicas, paginated.
    DescribeTopicPartitions 0..=0
        access [Describe on Topic]
        authorize [in handler]
        handler reply(handlers::describe_topic_partitions::handle(broker, ctx, request));
    // Version 5 answers in Shale's own types (a field kafka-protocol's lack).
    DescribeLogDirs 1..=5
        access [
            // Refused with an empty answer, not an error.
            Describe on Cluster,
        ]
        authorize [in handler]
        handler answered(handlers::cluster::describe_log_dirs(broker, ctx, request));
    // The metadata quorum (kafka-metadata-quorum.sh).
    DescribeQuorum 0..=2
        access [Describe on Cluster]
        authorize [Describe on Cluster]
            else { reply(handlers::cluster_refusals::describe_quorum(code)) }
        handler reply(handlers::describe_quorum::handle(broker, ctx, request).await);
    // Client quotas: described from this node's image, altered through the controller,
    // enforced by every broker (`quotas/`). Kafka's tools read them before a user's SCRAM
    // credentials.
    DescribeClientQuotas 0..=1
        access [DescribeConfigs on Cluster]
        authorize [DescribeConfigs on Cluster]
            else { reply(handlers::cluster_refusals::describe_client_quotas(code)) }
        handler reply(handlers::client_quotas::describe(broker, ctx, request));
    AlterClientQuotas 0..=1
        access [AlterConfigs on Cluster]
        authorize [AlterConfigs on Cluster]
            else { reply(handlers::cluster_refusals::alter_client_quotas(&request, code)) }
        handler reply(handlers::client_quotas::alter(broker, ctx, request).await);
    // SCRAM credentials (KIP-554): described from this node's image, altered through the
    // controller.
    DescribeUserScramCredentials 0..=0
        access [Describe on Cluster]
        authorize [Describe on Cluster]
            else { reply(handlers::cluster_refusals::describe_user_scram_credentials(&request, code)) }
        handler reply(handlers::scram_credentials::describe(broker, ctx, request));
    AlterUserScramCredentials 0..=0
        access [Alter on Cluster]
        authorize [Alter on Cluster]
            else { reply(handlers::cluster_refusals::alter_user_scram_credentials(&request, code)) }
        handler reply(handlers::scram_credentials::alter(broker, ctx, request).await);
    DescribeProducers 0..=0
        access [Read on Topic]
        authorize [in handler]
        handler reply(handlers::producer_ids::describe_producers(broker, ctx, request));
    // Replication admin, answered through the controller.
    ElectLeaders 0..=2
        access [
            // As Kafka's documentation lists it.
            ClusterAction on Cluster,
            // What Kafka's controller checks, and Shale with it.
            Alter on Cluster,
        ]
        authorize [Alter on Cluster]
            else { reply(handlers::cluster_refusals::elect_leaders(&request, code)) }
        handler reply(replication::admin::elect_leaders(broker, ctx.version(), request).await);
    AlterPartitionReassignments 0..=1
        access [Alter on Cluster]
        authorize [Alter on Cluster]
            else { reply(handlers::cluster_refusals::alter_partition_reassignments(&request, code)) }
        handler reply(
            replication::admin::alter_partition_reassignments(broker, ctx.version(), request)
                .await,
        );
    ListPartitionReassignments 0..=0
        access [Describe on Cluster]
        authorize [Describe on Cluster]
            else { reply(handlers::cluster_refusals::list_partition_reassignments(&request, code)) }
        handler reply(replication::admin::list_partition_reassignments(broker, request));
    // The classic group coordinator.
    FindCoordinator 0..=6
        access [
            // Looking for a group coordinator.
            Describe on Group,
            // Looking for a transaction coordinator.
            Describe on TransactionalId,
        ]
        authorize [in handler]
        handler reply(groups::find_coordinator::handle(broker, ctx, request).await);
    JoinGroup 0..=9
        access [Read on Group]
        authorize [in handler]
        handler reply(groups::membership::join_group(broker, ctx, request).await);
    SyncGroup 0..=5
        access [Read on Group]
        authorize [in handler]
        handler reply(groups::membership::sync_group(broker, ctx, request).await);
    Heartbeat 0..=4
        access [Read on Group]
        authorize [in handler]
        handler reply(groups::membership::heartbeat(broker, ctx, request).await);
    LeaveGroup 0..=5
        access [Read on Group]
        authorize [in handler]
        handler reply(groups::membership::leave_group(broker, ctx, request).await);
    // 10: topic ids instead of names (KIP-848).
    OffsetCommit 2..=10
        access [
            // The group first, then each topic.
            Read on Group,
            Read on Topic,
        ]
        authorize [in handler]
        handler reply(groups::offsets::offset_commit(broker, ctx, request).await);
    OffsetFetch 1..=10
        access [
            // The group first, then each topic.
            Describe on Group,
            Describe on Topic,
        ]
        authorize [in handler]
        handler reply(groups::offsets::offset_fetch(broker, ctx, request).await);
    DescribeGroups 0..=6
        access [Describe on Group]
        authorize [in handler]
        handler reply(groups::admin::describe_groups(broker, ctx, request).await);
    ListGroups 0..=5
        access [
            // Checked first; without it each group is checked and the ones refused are left
            // out (never CLUSTER_AUTHORIZATION_FAILED).
            Describe on Cluster,
            Describe on Group,
        ]
        authorize [in handler]
        handler reply(groups::admin::list_groups(broker, ctx, request).await);
    // 3: an error message per group; answered in Shale's own types (a field kafka-protocol's
    // lack).
    DeleteGroups 0..=3
        access [Delete on Group]
        authorize [in handler]
        handler answered(groups::admin::delete_groups(broker, ctx, request).await);
    OffsetDelete 0..=0
        access [Delete on Group, Read on Topic]
        authorize [in handler]
        handler reply(groups::offsets::offset_delete(broker, ctx, request).await);
    // The consumer group protocol (KIP-848), in the same coordinator.
    ConsumerGroupHeartbeat 0..=1
        access [
            Read on Group,
            // Each topic named in the subscription.
            Describe on Topic,
        ]
        authorize [in handler]
        handler reply(groups::consumer::consumer_group_heartbeat(broker, ctx, request).await);
    ConsumerGroupDescribe 0..=1
        access [
            Describe on Group,
            // Each topic the group's members subscribe to or are assigned.
            Describe on Topic,
        ]
        authorize [in handler]
        handler reply(groups::consumer::consumer_group_describe(broker, ctx, request).await);
    // The transaction coordinator: versions 5 of AddPartitionsToTxn, EndTxn and
    // TxnOffsetCommit are transaction version 2 (KIP-890), which ApiVersions finalises;
    // TxnOffsetCommit 6 names topics by id, WriteTxnMarkers 2 says each marker's
    // transaction version (KIP-1228).
    ShareGroupHeartbeat 1..=1
        access [
            Read on Group,
            Describe on Topic,
        ]
        authorize [in handler]
        handler reply(groups::share::share_group_heartbeat(broker, ctx, request).await);
    ShareGroupDescribe 1..=1
        access [
            Describe on Group,
            Describe on Topic,
        ]
        authorize [in handler]
        handler reply(groups::share::share_group_describe(broker, ctx, request).await);
    // The codec-owned share APIs decode into shale-protocol's types at every version: only
    // their `newer` route is ever taken.
    ShareFetch 1..=2
        access [
            Read on Group,
            Read on Topic,
        ]
        authorize [in handler]
        handler codec_owned(request),
        newer answered(share::fetch::share_fetch(broker, ctx, request).await);
    ShareAcknowledge 1..=2
        access [
            Read on Group,
            Read on Topic,
        ]
        authorize [in handler]
        handler codec_owned(request),
        newer answered(share::acknowledge::share_acknowledge(broker, ctx, request).await);
    DescribeShareGroupOffsets 0..=1
        access [
            Describe on Group,
            Describe on Topic,
        ]
        authorize [in handler]
        handler codec_owned(request),
        newer answered(groups::share_offsets::describe_share_group_offsets(broker, ctx, request).await);
    AlterShareGroupOffsets 0..=0
        access [
            Read on Group,
            Read on Topic,
        ]
        authorize [in handler]
        handler reply(groups::share_offsets::alter_share_group_offsets(broker, ctx, request).await);
    DeleteShareGroupOffsets 0..=0
        access [
            Delete on Group,
            Read on Topic,
        ]
        authorize [in handler]
        handler reply(groups::share_offsets::delete_share_group_offsets(broker, ctx, request).await);
    // The share-state APIs are sent by brokers to the share coordinator.
    InitializeShareGroupState 0..=0
        access [ClusterAction on Cluster]
        authorize [in handler]
        handler reply(share::state_apis::initialize(broker, ctx, request).await);
    ReadShareGroupState 0..=0
        access [ClusterAction on Cluster]
        authorize [in handler]
        handler reply(share::state_apis::read(broker, ctx, request).await);
    WriteShareGroupState 0..=1
        access [ClusterAction on Cluster]
        authorize [in handler]
        handler codec_owned(request),
        newer answered(share::state_apis::write(broker, ctx, request).await);
    DeleteShareGroupState 0..=0
        access [ClusterAction on Cluster]
        authorize [in handler]
        handler reply(share::state_apis::delete(broker, ctx, request).await);
    ReadShareGroupStateSummary 0..=1
        access [ClusterAction on Cluster]
        authorize [in handler]
        handler codec_owned(request),
        newer answered(share::state_apis::read_summary(broker, ctx, request).await);
    AddPartitionsToTxn 0..=5
        access [
            // The transactional id first, then each topic.
            Write on TransactionalId,
            Write on Topic,
        ]
        authorize [in handler]
        handler reply(txn::handlers::add_partitions_to_txn(broker, ctx, request).await);
    AddOffsetsToTxn 0..=4
        access [
            // The transactional id first, then the group.
            Write on TransactionalId,
            Read on Group,
        ]
        authorize [in handler]
        handler reply(txn::handlers::add_offsets_to_txn(broker, ctx, request).await);
    EndTxn 0..=5
        access [Write on TransactionalId]
        authorize [in handler]
        handler reply(txn::handlers::end_txn(broker, ctx, request).await);
    TxnOffsetCommit 0..=6
        access [Write on TransactionalId, Read on Group, Read on Topic]
        authorize [in handler]
        handler reply(txn::handlers::txn_offset_commit(broker, ctx, request).await),
        newer answered(txn::topic_ids::txn_offset_commit(broker, ctx, request).await);
    // ACLs: created and deleted through the controller, described from this broker's image.
    DescribeAcls 1..=3
        access [Describe on Cluster]
        authorize [Describe on Cluster]
            else { handlers::acls::refused(
                handlers::acls::describe_is_malformed(&request),
                handlers::cluster_refusals::describe_acls(code),
            ) }
        handler handlers::acls::describe_acls(broker, request);
    CreateAcls 1..=3
        access [Alter on Cluster]
        authorize [Alter on Cluster]
            else { handlers::acls::refused(
                handlers::acls::create_is_malformed(&request),
                handlers::cluster_refusals::create_acls(&request, code),
            ) }
        handler handlers::acls::create_acls(broker, request).await;
    DeleteAcls 1..=3
        access [Alter on Cluster]
        authorize [Alter on Cluster]
            else { handlers::acls::refused(
                handlers::acls::delete_is_malformed(&request),
                handlers::cluster_refusals::delete_acls(&request, code),
            ) }
        handler handlers::acls::delete_acls(broker, request).await;
    WriteTxnMarkers 1..=2
        access [
            // Kafka's documentation lists both; its broker allows either.
            Alter on Cluster,
            ClusterAction on Cluster,
        ]
        authorize [in handler]
        handler reply(txn::admin::write_txn_markers(broker, ctx, request).await),
        newer reply(txn::admin::write_txn_markers_v2(broker, ctx, request).await);
    DescribeTransactions 0..=0
        access [Describe on TransactionalId]
        authorize [in handler]
        handler reply(txn::admin::describe_transactions(broker, ctx, request));
    ListTransactions 0..=2
        access [
            // Transactional ids refused are left out of the answer.
            Describe on TransactionalId,
        ]
        authorize [in handler]
        handler reply(txn::admin::list_transactions(broker, ctx, request));
}

/// Finds the entry for a raw API key.
pub fn lookup(api_key: i16) -> Option<&'static ApiEntry> {
    API_TABLE.iter().find(|e| e.key as i16 == api_key)
}

/// `(key, min, max)` triples as ApiVersions advertises them.
pub fn advertised() -> Vec<(i16, i16, i16)> {
    API_TABLE
        .iter()
        .map(|e| (e.key as i16, e.advertised_min, e.max))
        .collect()
}

/// The table as Markdown, for the README (kept in sync by a test).
pub fn markdown_table() -> String {
    let mut out = String::from(
        "| key | API | versions served | advertised | Kafka's authorization | checked |\n\
         |---|---|---|---|---|---|\n",
    );
    let mut entries: Vec<&ApiEntry> = API_TABLE.iter().collect();
    entries.sort_by_key(|e| e.key as i16);
    for e in entries {
        let access = if e.access.is_empty() {
            "none".to_string()
        } else {
            e.access
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        out.push_str(&format!(
            "| {} | {:?} | {}-{} | {}-{} | {} | {} |\n",
            e.key as i16,
            e.key,
            e.accepted_min,
            e.max,
            e.advertised_min,
            e.max,
            access,
            e.enforcement
        ));
    }
    out
}

#[cfg(test)]
#[path = "api_table_tests.rs"]
mod tests;
