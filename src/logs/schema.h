// The store tables the CloudWatch Logs owner (logs::LogGroups) keeps. They live in the node's
// second store, <state-dir>/logs.db (its own writer thread and group commit), so log ingest never
// queues behind ECS writes. Keys are store/key.h tuples; values JSON unless said.
#pragma once

#include "store/schema.h"

namespace paddock::logs {

inline constexpr store::TableDef kTables[] = {
    // (account, region, group name) -> group: id (u64, node-unique), creation time, retention
    // days (0: never expire), kms key id, class.
    {"logs_groups", 1},
    // (account, region, group id, stream name) -> stream: id (node-unique), creation time, first
    // and last event timestamps, last ingestion time, stored bytes, next event sequence number.
    {"logs_streams", 1},
    // (account, region, group id, last event timestamp, stream name) -> "" (DescribeLogStreams
    // orderBy LastEventTime; a stream without events is at timestamp 0).
    {"logs_streams_by_last_event", 1},
    // (group id, stream id, timestamp ms, sequence) -> ingestion time (8 bytes, big-endian) then
    // the message's bytes. No account prefix: group ids are node-unique and every delete goes by group.
    {"logs_events", 1},
    // (account, region, group name, tag key) -> tag value.
    {"logs_tags", 1},
    // "next_id" -> the next group or stream id (decimal).
    {"logs_counters", 1},
    // (group id) -> "": groups deleted whose events are still being removed (PurgeDeletedGroups).
    {"logs_deleted_groups", 1},
};
inline constexpr store::ModuleSchema kSchema{"logs", 1, kTables};

}  // namespace paddock::logs
