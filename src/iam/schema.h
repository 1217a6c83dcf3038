// The store tables iam/ owns (store/schema.h says how modules declare them).
#pragma once

#include "store/schema.h"

namespace paddock::iam {

inline constexpr store::TableDef kTables[] = {
    // accounts and access keys (iam/accounts.h)
    {"accounts", 1},      // (account) -> Account
    {"access_keys", 1},   // (access_key_id) -> AccessKey
    {"account_keys", 1},  // (account, access_key_id) -> ""            index
    // roles, users, policies (issue 11); layouts in iam/directory.h
    {"user_access_keys", 10},     // (account, lowercased user name, access_key_id) -> ""   index: a user's keys
    {"iam_roles", 10},            // (account, lowercased name) -> Role JSON
    {"iam_users", 10},            // (account, lowercased name) -> User JSON
    {"iam_policies", 10},         // (account, lowercased name) -> ManagedPolicy JSON (customer-managed)
    {"iam_policy_versions", 10},  // (account, lowercased policy name, version number) -> {document, createdAt}
    {"iam_inline", 10},           // (account, "role"|"user", lowercased principal, policy name) -> document
    {"iam_attached", 10},         // (account, "role"|"user", lowercased principal, policy arn) -> ""
    {"iam_attachments", 10},      // (account, policy arn, "role"|"user", lowercased principal) -> ""   index
    {"iam_boundaries", 10},       // (account, policy arn, "role"|"user", lowercased principal) -> ""   index
};
// Versions up to 9 are the store-wide versions from before per-module versions.
inline constexpr store::ModuleSchema kSchema{"iam", 10, kTables};

}  // namespace paddock::iam
