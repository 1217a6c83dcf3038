// deploy/internal/spec_keys: the keys each table of paddock.toml accepts — the parser's list, which
// spec_test holds docs/paddock-toml.schema.json to (so the schema editors read cannot drift from it).
//
//   for (std::string_view key : kContainerKeys) ...  // "image", "port", ...
#pragma once

#include <array>
#include <string_view>

namespace paddock::deploy::internal {

inline constexpr std::array<std::string_view, 6> kTopLevelKeys = {"project", "containers", "deploy", "routes",
                                                                  "identity", "environments"};
inline constexpr std::array<std::string_view, 1> kProjectKeys = {"name"};
inline constexpr std::array<std::string_view, 5> kContainerKeys = {"image", "port", "command", "env", "health_check"};
inline constexpr std::array<std::string_view, 3> kHealthCheckKeys = {"path", "interval", "timeout"};
inline constexpr std::array<std::string_view, 4> kDeployKeys = {"replicas", "cpu", "memory", "capacity"};
// [identity]: the token files the identity sidecar writes (ADR D8).
inline constexpr std::array<std::string_view, 1> kIdentityKeys = {"audiences"};
// A route written as a table: "/admin" = { container = "web", access = "private" }.
inline constexpr std::array<std::string_view, 2> kRouteKeys = {"container", "access"};
// An [environments.<name>] table: the top level minus project and environments.
inline constexpr std::array<std::string_view, 3> kEnvironmentKeys = {"deploy", "containers", "routes"};

}  // namespace paddock::deploy::internal
