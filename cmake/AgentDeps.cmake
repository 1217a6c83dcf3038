# The agent's dependency rule (docs/architecture.md): `paddock agent` — the node agent, the
# protocol's client and the command itself — links no ECS owner, no API front, and the store only
# for its node-local image index. paddock_add_agent_deps_check() registers the ctest
# `agent_deps_check`, which fails when that stops being true: the command's link closure must stay
# within an allow-list, and none of those archives may reference an owner's, the front's or the
# in-process control's symbols (cmake/agent_deps_check.cmake, over `nm --undefined-only`), and
# the agent's sources include no control-plane header.
# Called once every module's targets exist (src/CMakeLists.txt).

# The paddock_* targets `target` links, transitively (itself included), into `out`.
function(_paddock_link_closure target out)
  set(seen "")
  set(queue ${target})
  while(queue)
    list(POP_FRONT queue t)
    if(NOT TARGET ${t} OR NOT t MATCHES "^paddock_" OR t IN_LIST seen)
      continue()
    endif()
    list(APPEND seen ${t})
    get_target_property(deps ${t} INTERFACE_LINK_LIBRARIES)
    if(deps)
      list(APPEND queue ${deps})
    endif()
  endwhile()
  set(${out} ${seen} PARENT_SCOPE)
endfunction()

function(paddock_add_agent_deps_check)
  if(NOT PADDOCK_TESTS OR NOT TARGET paddock_cli_agent)
    return()
  endif()
  _paddock_link_closure(paddock_cli_agent closure)
  set(archives "")
  foreach(t ${closure})
    list(APPEND archives "${t}=$<TARGET_FILE:${t}>")
  endforeach()
  list(JOIN archives "," archives)
  add_test(NAME agent_deps_check
           COMMAND ${CMAKE_COMMAND} -DNM=${CMAKE_NM} "-DARCHIVES=${archives}" -DSOURCE_DIR=${PROJECT_SOURCE_DIR}/src
                   -P ${PROJECT_SOURCE_DIR}/cmake/agent_deps_check.cmake)
endfunction()
