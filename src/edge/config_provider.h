// edge/config_provider: a provider of dynamic configuration other than ecs — the file provider
// (edge/file_provider.h) and the http provider (edge/http_provider.h). Each keeps its last good
// configuration, checked by CheckDynamic (edge/dynamic.h), and calls its wake callback when that
// configuration changes; the edge (edge/edge.h) reads Current() on every rebuild and hands it to
// BuildRuntime under name() ("file", "http"), beside "ecs".
//
//   std::unique_ptr<edge::ConfigProvider> p = std::make_unique<edge::FileProvider>(options);
//   p->SetWake([&] { edge.Wake(); });
//   RETURN_IF_ERROR(p->Start());                 // the first read, then the watch
//   StatusOr<boost::json::object> c = p->Current();
#pragma once

#include <functional>
#include <string>

#include <boost/json/object.hpp>

#include "common/status.h"

namespace paddock::edge {

class ConfigProvider {
 public:
  virtual ~ConfigProvider() = default;
  // The provider's name as names are qualified with it ("file" -> "web@file").
  virtual std::string name() const = 0;
  // The last good configuration. Before any read succeeded: kUnavailable with the last error.
  virtual StatusOr<boost::json::object> Current() const = 0;
  // Called (from the provider's thread) after each change of Current(). Set before Start.
  virtual void SetWake(std::function<void()> wake) = 0;
  // Reads once on the caller's thread (a failure is logged and kept, not returned: the provider
  // goes on watching, as Traefik's), then watches or polls on a thread of its own. An error only
  // for options that can never work.
  virtual Status Start() = 0;
  // Stops the thread; idempotent. Current() stays readable.
  virtual void Stop() = 0;
};

}  // namespace paddock::edge
