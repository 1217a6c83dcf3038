# agent_deps_check (registered by cmake/AgentDeps.cmake): what `paddock agent` links.
#   cmake -DNM=nm -DARCHIVES="target=path,…" -DSOURCE_DIR=src -P agent_deps_check.cmake
# ARCHIVES is the link closure of paddock_cli_agent (the `paddock agent` command). Fails when
#   - the closure holds a library outside the allow-list below (an ECS owner, the API front, a
#     service, the in-process control, the protocol's server side), or
#   - an archive of it references a symbol of the control plane: the API front and its services,
#     the ECS owners, the security groups, the in-process control, the store's SQLite engine
#     (except paddock_cli_agent, whose node-local image index is an SQLite file, and the store
#     library itself), or
#   - a source of the agent side (src/agent and its parts but inprocess/ and remote/server/, and
#     src/cli/agent_command.cc) includes a control-plane header: anything of ecs/, aws/, store/,
#     vpc/, iam/, sts/, sched/, registry/ but the pure data and checks both sides share.
cmake_minimum_required(VERSION 3.20)

set(allowed
  paddock_cli_agent           # agent_command.cc, host_checks.cc, state_lock.cc
  paddock_agent               # the node agent
  paddock_agent_protocol      # the vocabulary and wire forms it exchanges
  paddock_agent_remote        # the protocol's client (RemoteControl, registration, cluster puller)
  paddock_agent_images paddock_agent_metadata paddock_agent_net paddock_agent_runtime
  paddock_aws_sigv4           # signing its calls (not the front)
  paddock_aws_client          # the signed JSON client its calls go through (aws/json_client.h)
  paddock_aws_eventstream     # the client's event-stream codec (aws/eventstream.h): pure framing
  paddock_ecs_taskdef_rules   # the pure definition checks the agent repeats at launch
  paddock_ecs_error_details   # ECS's error details those checks name (pure)
  paddock_dns paddock_dns_codec # the DNS server of awsvpc tasks (agent/dns_service): no control plane
  paddock_http paddock_common
  paddock_store)              # the image index only (agent/images); see docs/architecture.md

# Demangled names of the control plane's code, as they appear in `nm -C` output.
set(forbidden
  "paddock::aws::ApiFront"
  "paddock::aws::JsonService"
  "paddock::ecs::task::Tasks::"
  "paddock::ecs::instance::ContainerInstances::"
  "paddock::ecs::cluster::Clusters::"
  "paddock::ecs::taskdef::TaskDefinitions::"
  "paddock::vpc::SecurityGroups::"
  "paddock::agent::InProcessControl::"
  "paddock::agent::remote::AgentService::")
set(sqlite "paddock::store::SqliteStore")

string(REPLACE "," ";" archives "${ARCHIVES}")
set(failures "")
set(checked 0)
foreach(entry ${archives})
  string(FIND "${entry}" "=" eq)
  string(SUBSTRING "${entry}" 0 ${eq} target)
  math(EXPR from "${eq} + 1")
  string(SUBSTRING "${entry}" ${from} -1 path)
  if(NOT target IN_LIST allowed)
    list(APPEND failures "`paddock agent` links ${target} (${path})")
    continue()
  endif()
  if(NOT EXISTS "${path}")
    list(APPEND failures "${target}: ${path} is not built")
    continue()
  endif()
  execute_process(COMMAND ${NM} -C --undefined-only "${path}" OUTPUT_VARIABLE undefined
                  RESULT_VARIABLE rc ERROR_QUIET)
  if(NOT rc EQUAL 0)
    list(APPEND failures "${target}: nm failed on ${path}")
    continue()
  endif()
  math(EXPR checked "${checked} + 1")
  set(patterns ${forbidden})
  if(NOT target STREQUAL "paddock_cli_agent" AND NOT target STREQUAL "paddock_store")
    list(APPEND patterns ${sqlite})
  endif()
  foreach(p ${patterns})
    string(FIND "${undefined}" "${p}" at)
    if(NOT at EQUAL -1)
      list(APPEND failures "${target} references ${p}")
    endif()
  endforeach()
endforeach()

# Headers of the control plane's folders the agent side may include: pure data and pure checks.
set(shared_headers
  "ecs/taskdef/host_grants.h" "ecs/taskdef/container_values.h"  # paddock_ecs_taskdef_rules
  "aws/sigv4.h" "aws/credentials.h" "aws/errors.h"               # paddock_aws_sigv4
  "aws/json_client.h"                                             # paddock_aws_client
  "vpc/policy.h")                                                # header-only data
if(SOURCE_DIR)
  file(GLOB agent_sources
       "${SOURCE_DIR}/agent/*.h" "${SOURCE_DIR}/agent/*.cc" "${SOURCE_DIR}/agent/protocol/*"
       "${SOURCE_DIR}/agent/remote/*.h" "${SOURCE_DIR}/agent/remote/*.cc"
       "${SOURCE_DIR}/agent/metadata/*.h" "${SOURCE_DIR}/agent/metadata/*.cc"
       "${SOURCE_DIR}/agent/net/*.h" "${SOURCE_DIR}/agent/net/*.cc"
       "${SOURCE_DIR}/agent/runtime/*.h" "${SOURCE_DIR}/agent/runtime/*.cc"
       "${SOURCE_DIR}/cli/agent_command.cc")
  list(FILTER agent_sources EXCLUDE REGEX "(_test|_bench)\\.cc$")
  foreach(f ${agent_sources})
    file(STRINGS "${f}" includes REGEX "^#include \"(ecs|aws|store|vpc|iam|sts|sched|registry)/")
    foreach(line ${includes})
      string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" header "${line}")
      if(header IN_LIST shared_headers)
        continue()
      endif()
      # `paddock agent`'s node-local image index is an SQLite file (docs/architecture.md).
      if(f MATCHES "cli/agent_command.cc$" AND header STREQUAL "store/sqlite/sqlite_store.h")
        continue()
      endif()
      file(RELATIVE_PATH rel "${SOURCE_DIR}" "${f}")
      list(APPEND failures "${rel} includes ${header}")
    endforeach()
  endforeach()
  list(LENGTH agent_sources n)
  if(n LESS 20)
    list(APPEND failures "only ${n} agent sources found under ${SOURCE_DIR}")
  endif()
endif()

if(checked LESS 5)
  list(APPEND failures "only ${checked} archives checked: the closure was not computed")
endif()
if(failures)
  list(JOIN failures "\n  " text)
  message(FATAL_ERROR "the agent's dependency rule is broken (docs/architecture.md):\n  ${text}")
endif()
message(STATUS "agent_deps_check: ${checked} archives of `paddock agent`, none referencing the control plane")
