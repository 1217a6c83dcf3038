# agent_deps_check (registered by cmake/AgentDeps.cmake): what `paddock agent` links.
#   cmake -DNM=nm -DARCHIVES="target=path,…" -P agent_deps_check.cmake
# ARCHIVES is the link closure of paddock_cli_agent (the `paddock agent` command). Fails when
#   - the closure holds a library outside the allow-list below (an ECS owner, the API front, a
#     service, the in-process control, the protocol's server side), or
#   - an archive of it references a symbol of the control plane: the API front and its services,
#     the ECS owners, the security groups, the in-process control, the store's SQLite engine
#     (except paddock_cli_agent, whose node-local image index is an SQLite file, and the store
#     library itself).
cmake_minimum_required(VERSION 3.20)

set(allowed
  paddock_cli_agent           # agent_command.cc, host_checks.cc, state_lock.cc
  paddock_agent               # the node agent
  paddock_agent_protocol      # the vocabulary and wire forms it exchanges
  paddock_agent_remote        # the protocol's client (RemoteControl, registration, cluster puller)
  paddock_agent_images paddock_agent_metadata paddock_agent_net paddock_agent_runtime
  paddock_aws_sigv4           # signing its calls (not the front)
  paddock_ecs_taskdef_rules   # the pure definition checks the agent repeats at launch
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

if(checked LESS 5)
  list(APPEND failures "only ${checked} archives checked: the closure was not computed")
endif()
if(failures)
  list(JOIN failures "\n  " text)
  message(FATAL_ERROR "the agent's dependency rule is broken (docs/architecture.md):\n  ${text}")
endif()
message(STATUS "agent_deps_check: ${checked} archives of `paddock agent`, none referencing the control plane")
